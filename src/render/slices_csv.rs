//! A result's time slices as CSV (`report RESULT --time-slice S --format csv`): a row per
//! window, in time order, with the same columns whatever the run had (a figure the run lacks,
//! such as goodput without SLOs or the server's queue where no answer carried it, is an empty
//! cell), so a spreadsheet or a script reads every sliced run alike. Latency columns are
//! `FIGURE.count`, `.mean`, `.p50`, `.p90`, `.p99` and `.too_few` (`true` when the window had
//! samples but fewer than the percentiles need); `failures_by_kind` is `kind:n` pairs
//! separated by spaces.

use crate::render::escape::csv_cell;
use crate::results::stats::slices::{SliceStat, Slices, Window};

/// The columns, in order.
pub const HEAD: [&str; 37] = [
    "slice_s",
    "start_s",
    "end_s",
    "started",
    "completed",
    "failed",
    "failures_by_kind",
    "in_flight",
    "output_tokens",
    "output_throughput",
    "request_throughput",
    "good_requests",
    "request_goodput",
    "ttft_ms.count",
    "ttft_ms.mean",
    "ttft_ms.p50",
    "ttft_ms.p90",
    "ttft_ms.p99",
    "ttft_ms.too_few",
    "itl_ms.count",
    "itl_ms.mean",
    "itl_ms.p50",
    "itl_ms.p90",
    "itl_ms.p99",
    "itl_ms.too_few",
    "e2el_ms.count",
    "e2el_ms.mean",
    "e2el_ms.p50",
    "e2el_ms.p90",
    "e2el_ms.p99",
    "e2el_ms.too_few",
    "server_queue_ms.count",
    "server_queue_ms.mean",
    "server_queue_ms.p50",
    "server_queue_ms.p90",
    "server_queue_ms.p99",
    "server_queue_ms.too_few",
];

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// A stat's six cells (all empty when the run has no such figure).
fn stat(s: Option<&SliceStat>, row: &mut Vec<String>) {
    row.push(s.map_or(String::new(), |s| s.count.to_string()));
    for v in [
        s.and_then(|s| s.mean),
        s.and_then(|s| s.p50),
        s.and_then(|s| s.p90),
        s.and_then(|s| s.p99),
    ] {
        row.push(opt(v));
    }
    row.push(s.map_or(String::new(), |s| s.too_few.to_string()));
}

fn row(seconds: f64, w: &Window) -> Vec<String> {
    let kinds: Vec<String> = (w.failures_by_kind.iter())
        .map(|(k, n)| format!("{k}:{n}"))
        .collect();
    let mut row = vec![
        seconds.to_string(),
        w.start_s.to_string(),
        w.end_s.to_string(),
        w.started.to_string(),
        w.completed.to_string(),
        w.failed.to_string(),
        kinds.join(" "),
        w.in_flight.to_string(),
        w.output_tokens.to_string(),
        w.output_throughput.to_string(),
        w.request_throughput.to_string(),
        w.good_requests.map_or(String::new(), |g| g.to_string()),
        opt(w.request_goodput),
    ];
    for s in [&w.ttft_ms, &w.itl_ms, &w.e2el_ms] {
        stat(Some(s), &mut row);
    }
    stat(w.server_queue_ms.as_ref(), &mut row);
    row
}

/// The slices' CSV: [`HEAD`], then a row per window.
pub fn slices(slices: &Slices) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(HEAD);
    for window in &slices.windows {
        // Writing to memory cannot fail.
        let cells = row(slices.seconds, window);
        let _ = w.write_record(cells.iter().map(|c| csv_cell(c).into_owned()));
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}
