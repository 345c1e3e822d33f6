//! The measurement's own health: the client's event-loop lag and CPU, the simulator's late
//! chunks, and the verdict with its reasons.

use std::fmt::Write as _;

use super::lines::{line, num};
use crate::results::document::BenchResult;

/// The validity lines, when the result has them.
pub(super) fn lines(out: &mut String, result: &BenchResult) {
    if let Some(v) = &result.validity {
        if let Some(lag) = &v.event_loop_lag_ms {
            num(out, "Event-loop lag max (ms):", lag.max);
        }
        line(
            out,
            "Client CPU:",
            format!(
                "{:.2} s ({:.0}% of {} cores)",
                v.client_cpu_s,
                100.0 * v.client_cpu_utilisation,
                v.cores
            ),
        );
        if let Some(stats) = &v.server_stats {
            if let Some(late) = stats.get("late_chunks") {
                // An engine preset's chunks of one model step leave together, so many leave
                // more than 1 ms after the step; only the exact mode's lateness is judged.
                let engine =
                    stats.get("mode").and_then(serde_json::Value::as_str) == Some("engine");
                let note = if engine {
                    " (engine model: reported, not judged)"
                } else {
                    ""
                };
                line(
                    out,
                    "Simulator chunks late > 1 ms:",
                    format!("{late}{note}"),
                );
            }
        }
        if let Some(k) = result.config.routing.max_prefill_concurrency {
            let why = format!("at most {k} between sent and first token: the gate hides server queueing from the server's view and moves it into client queue (TTFT from scheduled still counts it)");
            line(out, "Prefill gate:", why);
        }
        line(out, "Measurement:", v.verdict.as_str());
        for reason in &v.reasons {
            let _ = writeln!(out, "  {reason}");
        }
    }
}
