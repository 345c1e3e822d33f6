//! How the run ended: failed requests by kind, what was in flight at the end, whether it
//! stopped early or is incomplete (and why), and its goodput against the SLOs.

use super::lines::{line, num};
use crate::results::document::BenchResult;

/// Failures, the end of the window, completeness and goodput.
pub(super) fn lines(out: &mut String, result: &BenchResult) {
    let s = &result.summary;
    let c = &result.config;
    let missing = (result.merged_from.as_ref())
        .map(|m| crate::config::shard::list(&m.missing, m.count))
        .unwrap_or_default();
    line(out, "Failed requests:", s.failed);
    for (kind, n) in &s.failures_by_kind {
        line(out, &format!("  {kind}:"), n);
    }
    if let Some(e) = &result.window_end {
        let what = if e.cancel_mode {
            "--duration-cancel"
        } else {
            "drained within --grace"
        };
        line(
            out,
            "In flight at the end:",
            format!(
                "{} ({what}: {} finished, {} cancelled)",
                e.in_flight, e.drained, e.cancelled
            ),
        );
    }
    if let Some(why) = &result.stopped_early {
        line(out, "Stopped early:", why);
    }
    if !result.complete {
        let windowed = result.config.load.shape.window_s().is_some();
        let cause = if result.stopped_early.is_some() {
            "stopped early".to_string()
        } else if result.error.is_some() && result.records_lost > 0 {
            // docs/metrics.md, "Records lost".
            format!(
                "the records file could not be written; {} measured requests' records lost",
                result.records_lost
            )
        } else if result.error.is_some() {
            "the records file could not be written".to_string()
        } else if !missing.is_empty() {
            format!("shards {missing} missing")
        } else if windowed && result.window_end.is_none() {
            "stopped before the end of its time window".to_string()
        } else if result.unsent_by.stopped > 0 || s.failures_by_kind.contains_key("cancelled") {
            "stopped".to_string()
        } else {
            "not every planned request was sent".to_string()
        };
        // docs/metrics.md, "Every planned request is accounted for".
        let reasons = result.unsent_by.describe();
        let unsent = match (result.unsent, result.planned, reasons.is_empty()) {
            (0, _, _) => String::new(),
            (n, Some(p), false) => format!("; {n} of {p} planned requests never sent: {reasons}"),
            (n, Some(p), true) => format!("; {n} of {p} planned requests never sent"),
            (n, None, _) => format!("; {n} requests never sent"),
        };
        let why = format!("no ({cause}{unsent})");
        line(out, "Run complete:", why);
    }
    if let (Some(good), Some(g)) = (s.good_requests, s.request_goodput) {
        let slos: Vec<String> = c
            .goodput
            .iter()
            .map(|x| format!("{}<={}ms", x.metric.key(), x.max_ms))
            .chain(c.goodput_valid_output.then(|| "valid_output".to_string()))
            .collect();
        line(out, "Goodput SLOs:", slos.join(" "));
        // Recomputed from the records under SLOs the run was not measured under: said so.
        if let Some(j) = &result.rejudged {
            line(out, "Goodput re-judged:", j.describe());
        }
        let pct = if s.completed + s.failed > 0 {
            100.0 * good as f64 / (s.completed + s.failed) as f64
        } else {
            0.0
        };
        line(out, "Good requests:", format!("{good} ({pct:.1}% of all)"));
        num(out, "Request goodput (req/s):", g);
    }
}
