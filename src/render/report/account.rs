//! The report's "Server's account" block: how many requests carried the server's own account
//! of their timing, the client's and network's part of TTFT, the server's queue, prefill,
//! decode and ITL, and the disagreements by kind (docs/metrics.md, "The server's account").

use super::lines::{line, rule};
use crate::results::document::BenchResult;
use crate::results::stats::Distribution;

/// The block; nothing when no answer carried an account.
pub(super) fn block(out: &mut String, result: &BenchResult) {
    let Some(a) = &result.summary.server_account else {
        return;
    };
    out.push_str(&rule("Server's account", '-'));
    let forms: Vec<String> = (a.by_form.seen().iter())
        .map(|(f, n)| format!("{f} {n}"))
        .collect();
    line(
        out,
        "Requests with an account:",
        format!(
            "{} of {} successful{}",
            a.requests_with_account,
            a.successful_requests,
            if forms.is_empty() {
                String::new()
            } else {
                format!(" ({})", forms.join(", "))
            }
        ),
    );
    if a.implausible > 0 {
        line(out, "Implausible accounts (not read):", a.implausible);
    }
    for (name, d) in [
        ("Client+network part of TTFT", &a.client_part_ms),
        ("Server queue", &a.queue_ms),
        ("Server prefill", &a.prefill_ms),
        ("Server decode", &a.decode_ms),
        ("Server ITL", &a.itl_ms),
    ] {
        line(out, &format!("{name} (ms):"), summary(d.as_ref()));
    }
    let counts: Vec<String> = (a.disagreements.all().iter())
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    line(out, "Disagreements:", counts.join(", "));
}

/// `mean / p50 / p90 / p99` of a distribution, or `n/a`.
fn summary(d: Option<&Distribution>) -> String {
    let Some(d) = d else {
        return "n/a".into();
    };
    let at = |p: f64| d.at(p).map_or_else(|| "-".into(), |v| format!("{v:.2}"));
    format!(
        "mean {:.2}, p50 {}, p90 {}, p99 {} (n={})",
        d.mean,
        at(50.0),
        at(90.0),
        at(99.0),
        d.count
    )
}
