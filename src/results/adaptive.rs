//! The SLO controller's figures (`run --adaptive`), saved as the result's `adaptive` section:
//! every window with its load, phase, requests, goodput interval and verdict (the series a
//! plot reads), the sustained load with its bracket and interval, the saturation stop and
//! the loads it skipped. What each means: docs/metrics.md, "The SLO controller".

use serde::{Deserialize, Serialize};

use crate::config::adaptive::AdaptiveSpec;
use crate::results::saturated::SaturationStop;
use crate::results::wilson::wilson95;

/// What a window was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Raising the load by the factor while windows pass.
    Escalate,
    /// Between the last pass and the first fail.
    Bisect,
    /// The same load again: the window before was undecided.
    Extend,
    /// The confirming hold at the highest passing load.
    Hold,
    /// After a failing window, at a lower load until the requests in flight fall back (not
    /// judged).
    Recover,
    /// After a judged window's sends, until its requests end (not judged).
    Settle,
    /// After the controller ended, the sends already due (not judged).
    End,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Escalate => "escalate",
            Phase::Bisect => "bisect",
            Phase::Extend => "extend",
            Phase::Hold => "hold",
            Phase::Recover => "recover",
            Phase::Settle => "settle",
            Phase::End => "end",
        }
    }

    /// Whether a window of this phase is judged.
    pub fn judged(self) -> bool {
        matches!(
            self,
            Phase::Escalate | Phase::Bisect | Phase::Extend | Phase::Hold
        )
    }
}

/// A judged window's verdict: by goodput's 95% Wilson interval against the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The interval's lower end is at least the target.
    Pass,
    /// The interval's upper end is below the target.
    Fail,
    /// The interval holds the target: extended once, then a fail.
    Undecided,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Undecided => "undecided",
        }
    }
}

/// `good` of `total` against `target`: the verdict and the 95% Wilson interval (none, and
/// undecided, without a request).
pub fn judge(good: u64, total: u64, target: f64) -> (Verdict, Option<(f64, f64)>) {
    let ci = wilson95(good, total);
    let v = match ci {
        Some((lo, _)) if lo >= target => Verdict::Pass,
        Some((_, hi)) if hi < target => Verdict::Fail,
        _ => Verdict::Undecided,
    };
    (v, ci)
}

/// One window of the controller's run. Times are seconds from the measured load's start
/// (the simulator's time with `--time-scale`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub phase: Phase,
    pub load: f64,
    pub start_s: f64,
    pub end_s: f64,
    /// Requests sent in the window (a request belongs to the window it was sent in).
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    /// Completed requests that met every SLO.
    pub good: u64,
    /// Sent but not ended when the window was judged: counted as not good.
    pub unfinished: u64,
    /// good / sent.
    pub good_fraction: Option<f64>,
    /// The 95% Wilson interval of the good fraction (an extension's: pooled with the window
    /// it extends).
    pub good_fraction_ci95: Option<(f64, f64)>,
    /// A judged window's verdict (an undecided one extended and then undecided again is a
    /// fail).
    pub verdict: Option<Verdict>,
    /// Completed requests per second over the window's length.
    pub throughput: f64,
    pub ttft_p50_ms: Option<f64>,
    /// Mean requests in flight (Little's law: throughput × mean end-to-end latency).
    pub in_flight: Option<f64>,
}

/// The controller's outcome and its windows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveFigures {
    pub spec: AdaptiveSpec,
    /// The highest load whose hold passed: the sustained load.
    pub sustained: Option<f64>,
    /// The hold's good-fraction interval.
    pub sustained_ci95: Option<(f64, f64)>,
    /// The highest passing and lowest failing judged loads.
    pub last_pass: Option<f64>,
    pub first_fail: Option<f64>,
    /// Where escalation stopped at saturation, and the loads it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation: Option<SaturationStop>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<f64>,
    /// What happened, in order, in words (a failed hold and its step back, a stop).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The controller ran to its end (not stopped, not out of windows).
    pub complete: bool,
    /// Wall-clock seconds from the measured load's start to the controller's end.
    pub controller_s: f64,
    pub windows: Vec<Window>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 of 100 good passes 0.9 (lower end 0.963); 80 of 100 fails (upper end 0.87); 18
    /// of 20 holds 0.9 inside its interval: undecided.
    #[test]
    fn a_window_is_judged_by_its_interval_not_its_point() {
        assert_eq!(judge(100, 100, 0.9).0, Verdict::Pass);
        assert_eq!(judge(80, 100, 0.9).0, Verdict::Fail);
        assert_eq!(judge(18, 20, 0.9).0, Verdict::Undecided);
        // 20 of 20 is a perfect point, but too few to pass 0.9 (lower end 0.84).
        assert_eq!(judge(20, 20, 0.9).0, Verdict::Undecided);
        assert_eq!(judge(0, 0, 0.9), (Verdict::Undecided, None));
    }
}
