//! The SLO controller's figures (`run --adaptive`), saved as the result's `adaptive` section:
//! every window with its load, phase, requests, goodput interval and verdict (the series a
//! plot reads), the sustained load with its bracket and interval, the saturation stop and
//! the loads it skipped. What each means: docs/metrics.md, "The SLO controller".

use serde::{Deserialize, Serialize};

use crate::config::adaptive::AdaptiveSpec;
use crate::results::saturated::SaturationStop;
use crate::results::wilson::{wilson, wilson95, Z95};

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

/// The normal quantile of an early look (two-sided 99.9%, Haybittle and Peto's interim
/// level): a window looked at after every request that ends, stricter than its final 95%, so
/// the looks before its end add little to the chance of a wrong verdict (docs/metrics.md,
/// "The SLO controller", early decision).
pub const Z_EARLY: f64 = 3.290_526_731_491_926;

/// A window is looked at early only once this many of its requests ended.
pub const MIN_EARLY: u64 = 20;

/// The verdict of `good` of `sent` requests, `unfinished` of them not yet ended, whatever
/// those end as: a pass when the interval at `z` of counting them all not good still passes,
/// a fail when the interval of counting them all good still fails; otherwise undecided.
/// With nothing unfinished it is [`judge`]'s verdict (at `z`).
pub fn bounded(good: u64, unfinished: u64, sent: u64, target: f64, z: f64) -> Verdict {
    match (wilson(good, sent, z), wilson(good + unfinished, sent, z)) {
        (Some((lo, _)), _) if lo >= target => Verdict::Pass,
        (_, Some((_, hi))) if hi < target => Verdict::Fail,
        _ => Verdict::Undecided,
    }
}

/// The early look at a window still running: `good` of `sent`, `ended` of them ended
/// (completed or failed). Decided only from [`MIN_EARLY`] ended requests on, at [`Z_EARLY`],
/// with the requests still running [`bounded`] both ways.
pub fn early(good: u64, ended: u64, sent: u64, target: f64) -> Verdict {
    if ended < MIN_EARLY {
        return Verdict::Undecided;
    }
    bounded(good, sent.saturating_sub(ended), sent, target, Z_EARLY)
}

/// The look at a window's end, before its requests settle: decided at 95% when the requests
/// still running cannot change the verdict (no settle needed then).
pub fn at_end(good: u64, ended: u64, sent: u64, target: f64) -> Verdict {
    bounded(good, sent.saturating_sub(ended), sent, target, Z95)
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
    /// Ended before its length by an early decision (at [`Z_EARLY`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub early: bool,
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

    /// An early look decides only from 20 ended requests, at 99.9%, and counts the requests
    /// still running against the verdict it gives.
    #[test]
    fn an_early_look_is_stricter_and_bounds_the_requests_still_running() {
        // 19 ended, all good: too few to look.
        assert_eq!(early(19, 19, 19, 0.5), Verdict::Undecided);
        // 44 of 44 good passes 0.8 at 99.9% (lower end 0.803); 43 of 43 does not (0.799).
        assert_eq!(early(44, 44, 44, 0.8), Verdict::Pass);
        assert_eq!(early(43, 43, 43, 0.8), Verdict::Undecided);
        // 44 good of 46 sent, 2 still running: counted not good, no pass yet.
        assert_eq!(early(44, 44, 46, 0.8), Verdict::Undecided);
        // 95% would pass 20 of 20 at 0.8 (lower end 0.839); the early look does not.
        assert_eq!(judge(20, 20, 0.8).0, Verdict::Pass);
        assert_eq!(early(20, 20, 20, 0.8), Verdict::Undecided);
        // 10 of 30 ended good, 4 running: even all 4 good (14 of 34, at
        // 99.9%) fails 0.8 (upper end 0.68); a target of 0.6 stays open.
        assert_eq!(early(10, 30, 34, 0.8), Verdict::Fail);
        assert_eq!(early(10, 30, 34, 0.6), Verdict::Undecided);
        // At the window's end, 95%: 21 good of 22, one running, cannot pass 0.8 yet
        // (21 of 22: lower end 0.78) and cannot fail: undecided until it settles.
        assert_eq!(at_end(21, 21, 22, 0.8), Verdict::Undecided);
        assert_eq!(at_end(22, 22, 22, 0.8), Verdict::Pass);
    }

    /// The early looks' cost in wrong verdicts, by simulation: windows of up to 100 requests
    /// whose true good fraction is exactly the target, looked at after every request from the
    /// 20th and finally at 95%. The early looks (at 99.9%) add under one point to each wrong
    /// verdict's rate of the final look alone, and far from the target they end most windows
    /// early (the time they save).
    #[test]
    fn early_looks_barely_add_wrong_verdicts_and_end_clear_windows_early() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let (n, trials, target) = (100u64, 4000, 0.8);
        let mut window = |p: f64, looks: bool| -> (Verdict, u64) {
            let mut good = 0;
            for i in 1..=n {
                good += u64::from(rng.random::<f64>() < p);
                if looks && i < n {
                    let v = early(good, i, i, target);
                    if v != Verdict::Undecided {
                        return (v, i);
                    }
                }
            }
            (judge(good, n, target).0, n)
        };
        let mut rate = |p: f64, looks: bool, v: Verdict| {
            let hits = (0..trials).filter(|_| window(p, looks).0 == v).count();
            hits as f64 / trials as f64
        };
        for wrong in [Verdict::Pass, Verdict::Fail] {
            let (alone, with) = (rate(target, false, wrong), rate(target, true, wrong));
            assert!(
                with - alone < 0.01,
                "{wrong:?}: {alone} alone, {with} with looks"
            );
        }
        // All good or half good: decided by the 50th request.
        assert_eq!(window(1.0, true), (Verdict::Pass, 44));
        let (v, at) = window(0.5, true);
        assert!(v == Verdict::Fail && at <= 50, "{v:?} at {at}");
    }
}
