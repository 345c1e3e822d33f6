//! The users block (`--users N --user-gap S`): the users and their gap, the prefix-cache hit
//! rate the run measured beside it, each user's request rate and completed units, the
//! smallest gap a user left and the span of the staggered starts (docs/metrics.md, "Users
//! with a fixed gap").

use super::lines::{line, rule};
use crate::results::document::BenchResult;
use crate::results::stats::users::PerUser;

/// The block, where the run had users.
pub(super) fn lines(out: &mut String, result: &BenchResult) {
    let Some(u) = &result.users else {
        return;
    };
    out.push_str(&rule("Users with a fixed gap", '-'));
    line(
        out,
        "Users / gap (s):",
        format!("{} / {}", u.users, u.gap_s),
    );
    // The run's measured hit rate beside its gap: what a cache kept over that gap.
    let measured = (result.summary.prefix_cache.as_ref()).and_then(|c| c.measured_hit_rate);
    let hit = measured.map_or("not reported by the server".into(), |r| {
        format!("{:.1}%", r * 100.0)
    });
    line(out, "Prefix-cache hit rate at this gap:", hit);
    let spread = |p: &PerUser, d: usize| format!("{:.d$} / {:.d$} / {:.d$}", p.mean, p.min, p.max);
    line(
        out,
        "Req/s per user mean / min / max:",
        spread(&u.request_rate_per_user, 3),
    );
    line(
        out,
        "Units done per user mean/min/max:",
        spread(&u.completed_units_per_user, 1),
    );
    line(
        out,
        "Units taken (completed):",
        format!("{} ({})", u.units_taken, u.units_completed),
    );
    let secs = |v: Option<f64>| v.map_or("-".into(), |s| format!("{s:.3}"));
    line(out, "Smallest gap seen (s):", secs(u.min_observed_gap_s));
    line(out, "Starts spread over (s):", secs(u.start_span_s));
}
