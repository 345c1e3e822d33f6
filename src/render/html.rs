//! `servebench report FILE --html OUT.html` (or `--format html`): one self-contained HTML page
//! for a result, a sweep or an import — the tables and every chart of `plot` as inline SVG. No
//! scripts, no external fonts, styles or images, nothing fetched: the file can be mailed or
//! archived.
//!
//! It renders what `view`, `report` and `plot` produce; it computes nothing (the page is
//! printed through `render::print`, which writes it where asked). To add a section, append it
//! in [`page`] (escape every string that came from a file with [`esc`]).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::render::error::{DrawError, RenderError};
use crate::render::format::{fmt_load, fmt_value};
use crate::views::model::View;

/// Escapes text for HTML content and attribute values (`escape::html`).
pub use crate::render::escape::html as esc;

const STYLE: &str = "body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
td,th{border:1px solid #ddd;padding:3px 7px;text-align:right;white-space:nowrap}
td:first-child,th:first-child{text-align:left}th{background:#f4f4f4}
.wide{overflow-x:auto}.note{color:#8a4b00}figure{margin:16px 0}
svg{max-width:100%;height:auto;border:1px solid #eee}pre{background:#f7f7f7;padding:8px;overflow-x:auto}";

/// The whole page. `text_report` (a servebench result's text report) is shown verbatim.
pub fn page(view: &View, text_report: Option<&str>) -> Result<String, RenderError> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>servebench: {}</title><style>{STYLE}</style></head><body>\n",
        esc(&view.label)
    );
    let _ = writeln!(h, "<h1>servebench report: {}</h1>", esc(&view.label));
    let _ = writeln!(
        h,
        "<p>Source: <code>{}</code> ({}); servebench {}.</p>",
        esc(&view.path.display().to_string()),
        esc(&view.format),
        env!("CARGO_PKG_VERSION")
    );
    for n in &view.notes {
        let _ = writeln!(h, "<p class=\"note\">Note: {}</p>", esc(n));
    }
    if let Some(t) = text_report {
        let _ = writeln!(h, "<h2>Report</h2>\n<pre>{}</pre>", esc(t));
    }
    for s in &view.series {
        let _ = writeln!(h, "<h2 id=\"series\">{}</h2>", esc(&s.name));
        let keys: BTreeSet<_> = s.steps.iter().flat_map(|st| st.metrics.keys()).collect();
        let _ = write!(
            h,
            "<div class=\"wide\"><table class=\"steps\"><tr><th>metric</th>"
        );
        for st in &s.steps {
            let v = st.load_value(s.parameter).map_or("?".into(), fmt_load);
            let _ = write!(h, "<th>{} {}</th>", esc(s.parameter.as_str()), esc(&v));
        }
        h.push_str("</tr>\n");
        for k in keys {
            let _ = write!(h, "<tr><td>{}</td>", esc(&k.name()));
            for st in &s.steps {
                let v = st.metric(k).map_or("—".into(), |v| fmt_value(k, v));
                let _ = write!(h, "<td>{v}</td>");
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table></div>\n");
        if let Some(c) = crate::views::cliff::cliff(s.parameter, &s.steps) {
            let _ = writeln!(h, "<p class=\"cliff\">{}</p>", esc(&c.line()));
        }
        for st in &s.steps {
            for n in &st.notes {
                let v = st.load_value(s.parameter).map_or("?".into(), fmt_load);
                let _ = writeln!(
                    h,
                    "<p class=\"note\">{} {}: {}</p>",
                    esc(s.parameter.as_str()),
                    esc(&v),
                    esc(n)
                );
            }
        }
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
    let views = std::slice::from_ref(view);
    use crate::render::plot::{adapters, chart, draw, jobs};
    let mut figures = Vec::new();
    let drawn = |name: &str, svg: Result<String, DrawError>| {
        svg.map_err(|source| RenderError::Draw {
            what: format!("the chart {name} of the HTML page"),
            source,
        })
    };
    for c in chart::charts(views)
        .into_iter()
        .chain(adapters::charts(views))
        .chain(jobs::charts(views))
    {
        figures.push((c.name.clone(), drawn(&c.name, draw::chart_svg(&c))?));
    }
    for b in chart::breakdowns(views) {
        figures.push((b.name.clone(), drawn(&b.name, draw::stacked_svg(&b))?));
    }
    for t in chart::timelines(views) {
        figures.push((t.name.clone(), drawn(&t.name, draw::timeline_svg(&t))?));
    }
    if !figures.is_empty() {
        h.push_str("<h2>Charts</h2>\n");
    }
    for (name, svg) in figures {
        let _ = writeln!(
            h,
            "<figure class=\"chart\" id=\"{}\">{svg}</figure>",
            esc(&name)
        );
    }
    h.push_str(&crate::render::html_slices::section(view)?);
    h.push_str("</body></html>\n");
    Ok(h)
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
        let h = page(&v, None).unwrap();
        assert_eq!(h.matches("<svg").count(), 7);
        assert!(h.contains("767.92"));
        for external in ["<script", "<link", "src=", "@import", "url("] {
            assert!(!h.contains(external), "{external}");
        }
    }
}
