//! The HTML page's "By length" section (`--bucket-by`; docs/metrics.md, "Figures by length
//! bucket"): for each step with buckets, a table with a row per bucket (empty ones too) and
//! the whole run's row last: requests sent and their share, completed, failed, output
//! throughput (tokens/s, over the run's duration), goodput where there were SLOs, and the
//! mean and p99 of TTFT, TPOT and E2EL (ms). Lays out the result's `buckets`; computes nothing.

use std::fmt::Write as _;

use crate::config::figure::{FigureKey, RunFigure};
use crate::config::metric::{Metric, MetricKey, Stat};
use crate::render::escape::html as esc;
use crate::render::format::{fmt_load, fmt_value};
use crate::results::stats::adapters::AdapterFigures;
use crate::results::stats::buckets::Buckets;
use crate::views::model::{Step, View};

/// The section, empty when no step of `view` has buckets.
pub fn section(view: &View) -> String {
    let mut h = String::new();
    let mut first = true;
    for s in &view.series {
        for st in &s.steps {
            let Some(b) = &st.buckets else { continue };
            if first {
                h.push_str("<h2 id=\"buckets\">By length</h2>\n");
                first = false;
            }
            let load = st.load_value(s.parameter).map_or("?".into(), fmt_load);
            let _ = writeln!(
                h,
                "<h3>By {} ({} {})</h3>",
                esc(b.by.field.as_str()),
                esc(s.parameter.as_str()),
                esc(&load)
            );
            table(&mut h, b, st);
        }
    }
    h
}

const HEAD: &str = "<tr><th>bucket (tokens)</th><th>sent</th><th>share (%)</th><th>completed</th>\
<th>failed</th><th>output throughput (tokens/s)</th><th>goodput (requests/s)</th>\
<th>mean TTFT (ms)</th><th>p99 TTFT (ms)</th><th>mean TPOT (ms)</th><th>p99 TPOT (ms)</th>\
<th>mean E2EL (ms)</th><th>p99 E2EL (ms)</th></tr>\n";

/// One step's table: a row per bucket, then the whole run's.
fn table(h: &mut String, b: &Buckets, step: &Step) {
    h.push_str("<div class=\"wide\"><table class=\"buckets\">");
    h.push_str(HEAD);
    for k in &b.buckets {
        let _ = writeln!(
            h,
            "<tr><td>{}</td>{}</tr>",
            esc(&k.label),
            cells(&k.figures)
        );
    }
    // The whole run's row, from the step's own figures.
    let cell = |k: FigureKey| {
        let v = step.metric(&k);
        format!(
            "<td>{}</td>",
            v.map_or_else(|| "—".into(), |v| fmt_value(&k, v))
        )
    };
    let mut whole = String::from("<tr class=\"whole\"><td>whole run</td>");
    let sent = (step.metric(RunFigure::Completed))
        .zip(step.metric(RunFigure::Failed))
        .map_or_else(|| "—".into(), |(a, b)| format!("{}", (a + b) as u64));
    let _ = write!(whole, "<td>{sent}</td><td>100.0</td>");
    for f in [
        RunFigure::Completed,
        RunFigure::Failed,
        RunFigure::OutputThroughput,
        RunFigure::RequestGoodput,
    ] {
        whole.push_str(&cell(f.into()));
    }
    for m in [Metric::Ttft, Metric::Tpot, Metric::E2el] {
        for st in [Stat::Mean, Stat::Percentile(99.0)] {
            whole.push_str(&cell(MetricKey::new(st, m).into()));
        }
    }
    whole.push_str("</tr>\n");
    h.push_str(&whole);
    h.push_str("</table></div>\n");
    if b.below > 0 {
        let _ = writeln!(
            h,
            "<p class=\"note\">{} request(s) below the first edge, in no bucket.</p>",
            b.below
        );
    }
}

/// A bucket's cells after its label.
fn cells(a: &AdapterFigures) -> String {
    let opt = |v: Option<f64>| v.map_or_else(|| "—".into(), |v| format!("{v:.2}"));
    let mut c = format!(
        "<td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td>",
        a.sent,
        100.0 * a.share,
        a.completed,
        a.failed,
        a.output_throughput,
        opt(a.request_goodput)
    );
    for d in [&a.ttft_ms, &a.tpot_ms, &a.e2el_ms] {
        let d = d.as_ref();
        let _ = write!(
            c,
            "<td>{}</td><td>{}</td>",
            opt(d.map(|d| d.mean)),
            opt(d.and_then(|d| d.at(99.0)))
        );
    }
    c
}
