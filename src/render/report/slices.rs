//! The "Time slices" table (`--time-slice`; docs/metrics.md, "Time slices"): a row per
//! window of the result's `slices`, with its requests, rates, errors, in flight and the p50
//! and p99 of TTFT, ITL and E2EL (the mean and p90 are in the result, its CSV and its HTML
//! charts), the goodput where the run had SLOs and the server's queue where known. A
//! percentile of a window with fewer samples than the slices' minimum reads "too few".

use std::fmt::Write as _;

use super::lines::{line, rule};
use crate::results::document::BenchResult;
use crate::results::stats::slices::{SliceStat, Slices, Window};

/// A cell of one stat: "-" with no samples, "too few" under the minimum.
fn stat(s: &SliceStat, v: Option<f64>) -> String {
    match v {
        Some(v) => format!("{v:.2}"),
        None if s.too_few => "too few".into(),
        None => "-".into(),
    }
}

/// The table's columns: name and the cell of each window.
type Column = (&'static str, fn(&Window) -> String);

fn columns(slices: &Slices) -> Vec<Column> {
    let mut cols: Vec<Column> = vec![
        ("sent", |w| w.started.to_string()),
        ("done", |w| w.completed.to_string()),
        ("failed", |w| w.failed.to_string()),
        ("in flight", |w| w.in_flight.to_string()),
        ("out tok/s", |w| format!("{:.1}", w.output_throughput)),
        ("req/s", |w| format!("{:.2}", w.request_throughput)),
    ];
    let first = slices.windows.first();
    if first.is_some_and(|w| w.request_goodput.is_some()) {
        cols.push(("good/s", |w| {
            w.request_goodput.map_or("-".into(), |g| format!("{g:.2}"))
        }));
    }
    cols.extend::<[Column; 6]>([
        ("TTFT p50", |w| stat(&w.ttft_ms, w.ttft_ms.p50)),
        ("TTFT p99", |w| stat(&w.ttft_ms, w.ttft_ms.p99)),
        ("ITL p50", |w| stat(&w.itl_ms, w.itl_ms.p50)),
        ("ITL p99", |w| stat(&w.itl_ms, w.itl_ms.p99)),
        ("E2EL p50", |w| stat(&w.e2el_ms, w.e2el_ms.p50)),
        ("E2EL p99", |w| stat(&w.e2el_ms, w.e2el_ms.p99)),
    ]);
    if first.is_some_and(|w| w.server_queue_ms.is_some()) {
        cols.push(("queue p50", |w| {
            (w.server_queue_ms.as_ref()).map_or("-".into(), |q| stat(q, q.p50))
        }));
    }
    cols
}

/// The block, when the result has slices.
pub(super) fn table(out: &mut String, result: &BenchResult) {
    let Some(slices) = &result.slices else {
        return;
    };
    out.push_str(&rule(&format!("Time slices ({} s)", slices.seconds), '-'));
    if let Some(n) = slices.too_many_windows {
        line(
            out,
            "Time slices:",
            format!(
                "none kept: the run spans {n} windows of {} s, more than {}; re-slice it with report --time-slice",
                slices.seconds,
                crate::config::limits::MAX_TIME_SLICES
            ),
        );
        return;
    }
    if slices.windows.is_empty() {
        line(out, "Time slices:", "no measured requests");
        return;
    }
    let cols = columns(slices);
    let _ = write!(out, "{:<17}", "window (s)");
    for (name, _) in &cols {
        let _ = write!(out, " {name:>9}");
    }
    out.push('\n');
    for w in &slices.windows {
        let _ = write!(out, "{:<17}", format!("{:.2}-{:.2}", w.start_s, w.end_s));
        for (_, cell) in &cols {
            let _ = write!(out, " {:>9}", cell(w));
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "Latencies are of the requests that ended in the window (ms); tokens where they arrived; \
         a percentile of fewer than {} samples reads \"too few\".",
        slices.min_samples
    );
}
