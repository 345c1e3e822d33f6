//! The prefix cache's block: the hit rate the workload was built for against the server's.

use super::lines::{line, rule};
use crate::results::document::BenchResult;

/// The prefix-cache hit rate the workload was built to have and the one the server reported
/// (docs/metrics.md, "Prefix-cache hit rate"), and the gap.
pub(super) fn prefix_cache(out: &mut String, result: &BenchResult) {
    let Some(c) = &result.summary.prefix_cache else {
        return;
    };
    out.push_str(&rule("Prefix cache", '-'));
    let pct = |r: Option<f64>, n: u64| {
        r.map_or("unknown".into(), |r| {
            format!("{:.1}% ({n} requests)", r * 100.0)
        })
    };
    line(
        out,
        "Designed hit rate:",
        pct(c.designed_hit_rate, c.designed_requests),
    );
    line(
        out,
        "Measured hit rate:",
        pct(c.measured_hit_rate, c.measured_requests),
    );
    if let (Some(d), Some(m)) = (c.designed_hit_rate, c.measured_hit_rate) {
        line(
            out,
            "Gap (measured - designed):",
            format!("{:+.1} points", (m - d) * 100.0),
        );
    }
}
