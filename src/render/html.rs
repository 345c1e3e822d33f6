//! `servebench report FILE --html OUT.html` (or `--format html`): one self-contained HTML page
//! for a result, a sweep or an import, read top to bottom as a person asks: the answer first
//! (`html_first`: headline figures with units and intervals, the verdict, SLO attainment, a
//! sweep's saturation point), then the charts (a run's request timeline, `html_timeline`, and
//! every chart of `plot` as inline SVG), then the text report, and the full table last
//! (`html_table`: every figure, labelled with its unit). No script, no external fonts, styles
//! or images, nothing fetched: the file can be mailed or archived, and it reads at a laptop's
//! width (only the wide tables and the timeline scroll, inside their own boxes).
//!
//! It lays out what `view`, `report` and `plot` produce; it computes nothing (the page is
//! printed through `render::print`, which writes it where asked). [`page`] holds the order: to
//! add a section, write it as a function in a file of its own and call it with one line at the
//! place [`page`] marks for it (escape every string that came from a file with [`esc`]).

use std::fmt::Write as _;

use crate::render::error::RenderError;
use crate::views::model::View;

/// Escapes text for HTML content and attribute values (`escape::html`).
pub use crate::render::escape::html as esc;

pub const STYLE: &str = "*{box-sizing:border-box}
body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px;overflow-wrap:anywhere}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
td,th{border:1px solid #ddd;padding:3px 7px;text-align:right;white-space:nowrap;overflow-wrap:normal}
td:first-child,th:first-child{text-align:left}th{background:#f4f4f4}
.wide{overflow-x:auto;max-width:100%}.note{color:#8a4b00}figure{margin:16px 0}
svg{max-width:100%;height:auto;border:1px solid #eee}pre{background:#f7f7f7;padding:8px;overflow-x:auto;overflow-wrap:normal}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:8px;margin:12px 0}
.card{border:1px solid #ddd;border-radius:4px;padding:8px 10px}.card .label{font-size:13px;color:#555}
.card .value{font-size:1.4em;margin-top:2px}.unit{font-size:.7em;color:#555}.ci{font-size:12px;color:#666;display:block}
td .ci{display:inline}.verdict.ok{color:#1a6b1a}.verdict.bad,td.bad{color:#b00020}td.ok{color:#1a6b1a}
.saturation,.cliff,.slo{font-size:1.05em}.hint{font-size:12px;color:#666}details{margin:12px 0}";

/// What the page needs besides the view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageOptions<'a> {
    /// A servebench result's text report, shown folded after the charts.
    pub text_report: Option<&'a str>,
    /// The request timeline's slow-gap threshold, ms (`report --timeline-itl-ms`).
    pub slow_itl_ms: f64,
}

impl Default for PageOptions<'_> {
    fn default() -> Self {
        PageOptions {
            text_report: None,
            slow_itl_ms: crate::views::timeline::DEFAULT_SLOW_ITL_MS,
        }
    }
}

/// The whole page, in reading order.
pub fn page(view: &View, opts: &PageOptions) -> Result<String, RenderError> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>servebench: {}</title><style>{STYLE}\n{}</style></head><body>\n",
        esc(&view.label),
        crate::render::html_timeline::STYLE
    );
    let _ = writeln!(h, "<h1>servebench report: {}</h1>", esc(&view.label));
    let _ = writeln!(
        h,
        "<p>Source: <code>{}</code> ({}); servebench {}.</p>",
        esc(&view.path.display().to_string()),
        esc(&view.format),
        env!("CARGO_PKG_VERSION")
    );
    // 1. The answer.
    h.push_str(&crate::render::html_first::first_screen(view));
    // 2. The charts. Sections of their own go here, one line each, in this order: the Pareto
    //    front, then the request timeline, the load charts, time slices, the server's account.
    h.push_str(&crate::render::html_pareto::section(std::slice::from_ref(
        view,
    ))?);
    h.push_str(&crate::render::html_timeline::section(
        view,
        opts.slow_itl_ms,
    ));
    charts(&mut h, view)?;
    h.push_str(&crate::render::html_slices::section(view)?);
    h.push_str(&crate::render::html_account::section(view));
    h.push_str(&crate::render::html_buckets::section(view));
    h.push_str(&crate::render::html_autoscale::section(view)?);
    h.push_str(&crate::render::html_adaptive::section(view)?);
    // 3. The text report, folded, and llmperf's requests.
    if let Some(t) = opts.text_report {
        let _ = writeln!(
            h,
            "<h2>Report</h2>\n<details><summary>The text report (as <code>servebench report</code> prints it)</summary><pre>{}</pre></details>",
            esc(t)
        );
    }
    if !view.llmperf_requests.is_empty() {
        let _ = writeln!(
            h,
            "<h2>llmperf per request</h2>\n<pre>{}</pre>",
            esc(&crate::render::report::view::llmperf_table(
                &view.llmperf_requests,
                200
            ))
        );
    }
    // 4. Every figure, labelled, last.
    h.push_str(&crate::render::html_table::full_tables(view));
    h.push_str("</body></html>\n");
    Ok(h)
}

/// Every chart of `plot` for this view (its static timeline excepted: the page draws its own).
fn charts(h: &mut String, view: &View) -> Result<(), RenderError> {
    let views = std::slice::from_ref(view);
    use crate::render::html_figure::{drawn, figure, wrap};
    use crate::render::plot::{adapters, chart, draw, jobs};
    let mut figures = Vec::new();
    for c in chart::charts(views)
        .into_iter()
        .chain(adapters::charts(views))
        .chain(jobs::charts(views))
    {
        figures.push(figure(&c)?);
    }
    for b in chart::breakdowns(views) {
        figures.push(wrap(&b.name, &drawn(&b.name, draw::stacked_svg(&b))?, None));
    }
    if !figures.is_empty() {
        h.push_str("<h2 id=\"charts\">Charts</h2>\n");
    }
    for f in figures {
        h.push_str(&f);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn seed_page_is_self_contained_with_charts() {
        let text = include_str!("../../tests/fixtures/seed001_tgi.txt");
        let v = crate::views::import::parse(Path::new("seed001.txt"), text).unwrap();
        let h = page(&v, &PageOptions::default()).unwrap();
        // Seven charts of the sweep, and the Pareto front's.
        assert_eq!(h.matches("<svg").count(), 8);
        assert!(h.contains("id=\"pareto_front\""));
        assert!(h.contains("767.92"));
        for external in ["<script", "<link", "src=", "@import", "url("] {
            assert!(!h.contains(external), "{external}");
        }
    }
}
