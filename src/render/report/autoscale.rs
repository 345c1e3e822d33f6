//! The "Autoscaler" block (`--load-shape`, `--replicas-metric`, `--replicas-file`;
//! docs/metrics.md, "Autoscaler benchmarks"): the run's replica-hours, mean replicas and
//! their cost, SLO attainment over the run, over-provisioning, the recovery after each burst
//! and after each dip of the attainment below its target, then a row per window: the shape's rate, offered and achieved load, attainment, replicas
//! and the replicas the load needed.

use std::fmt::Write as _;

use super::lines::{line, rule};
use crate::results::autoscale::{AutoscaleFigures, AutoscaleWindow};
use crate::results::document::BenchResult;

/// A number to `d` places, or "-".
fn fixed(v: Option<f64>, d: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.d$}"))
}

/// The run's lines.
fn run_lines(out: &mut String, a: &AutoscaleFigures) {
    let pct = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{:.1}", v * 100.0));
    line(out, "SLO attainment, whole run (%):", pct(a.attainment));
    line(
        out,
        "Attainment target (%):",
        format!("{:.1}", a.attainment_target * 100.0),
    );
    if let Some(s) = &a.replicas {
        line(out, "Replicas from:", &s.source);
        line(out, "Replica-hours:", fixed(a.replica_hours, 6));
        line(out, "Mean replicas:", fixed(a.mean_replicas, 3));
        line(out, "Replica series coverage (%):", pct(a.replica_coverage));
        if s.failures > 0 {
            let first = s.errors.first().map_or("", String::as_str);
            line(
                out,
                "Replica polls failed (gaps):",
                format!("{} ({first})", s.failures),
            );
        }
    }
    if a.cost.is_some() {
        line(out, "Replica cost (USD):", fixed(a.cost, 4));
    }
    if a.over_provisioned_replica_hours.is_some() {
        line(
            out,
            "Over-provisioned replica-hours:",
            fixed(a.over_provisioned_replica_hours, 6),
        );
    }
    for r in &a.recoveries {
        let label = format!("Recovery after burst at {:.1} s (s):", r.burst_start_s);
        let value = match r.recovery_s {
            Some(s) if r.dipped => format!("{s:.2}"),
            Some(_) => "0 (never below target)".into(),
            None => "not recovered".into(),
        };
        line(out, &label, value);
    }
    dip_lines(out, a);
}

/// The most dips the block names one by one (the rest are counted).
const MAX_DIP_LINES: usize = 20;

/// Every dip of the windows' attainment below the target, with its recovery.
fn dip_lines(out: &mut String, a: &AutoscaleFigures) {
    for d in a.dips.iter().take(MAX_DIP_LINES) {
        let label = format!("Recovery after dip at {:.1} s (s):", d.start_s);
        let value = d
            .recovery_s
            .map_or_else(|| "not recovered".into(), |s| format!("{s:.2}"));
        line(out, &label, value);
    }
    if a.dips.len() > MAX_DIP_LINES {
        let more = format!(
            "{} more (the result's `dips`)",
            a.dips.len() - MAX_DIP_LINES
        );
        line(out, "Dips below target:", more);
    }
}

/// The table's row of one window.
fn row(w: &AutoscaleWindow) -> [String; 7] {
    [
        format!("{:.1}-{:.1}", w.start_s, w.end_s),
        fixed(w.shape_rps, 2),
        format!("{:.2}", w.offered_rps),
        format!("{:.2}", w.achieved_rps),
        w.attainment
            .map_or_else(|| "-".into(), |a| format!("{:.1}", a * 100.0)),
        fixed(w.replicas, 2),
        fixed(w.needed_replicas, 0),
    ]
}

/// The block, when the result is an autoscaler benchmark.
pub(super) fn block(out: &mut String, result: &BenchResult) {
    let Some(a) = &result.autoscale else {
        return;
    };
    out.push_str(&rule("Autoscaler", '-'));
    run_lines(out, a);
    if a.windows.is_empty() {
        line(out, "Windows:", "none (no measured request)");
        return;
    }
    let head = [
        "window (s)",
        "shape/s",
        "offered/s",
        "done/s",
        "attain %",
        "replicas",
        "needed",
    ];
    let _ = writeln!(out, "{}", head.map(|h| format!("{h:>11}")).join(""));
    for w in &a.windows {
        let _ = writeln!(out, "{}", row(w).map(|c| format!("{c:>11}")).join(""));
    }
}
