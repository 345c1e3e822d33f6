//! An autoscaler benchmark's figures (docs/metrics.md, "Autoscaler benchmarks"): per window of
//! the run's time slices, the SLO attainment, the load (the shape's rate, offered and
//! achieved) and the replicas (time-weighted); for the run, replica-hours, their cost, the
//! attainment, the time to recover after each burst and after every dip of the attainment
//! below its target (any shape), and the replica-hours above the load's need. Pure: computed
//! from the slices (`stats::slices`), the load's shape and the replica series
//! (`drive::replicas` polls it, a `--replicas-file` gives it).

use serde::{Deserialize, Serialize};

use crate::config::autoscale::{AutoscaleSpec, RateCurve};
use crate::results::stats::slices::Slices;

/// The most replica samples one run keeps (later polls are counted, not kept).
pub const MAX_REPLICA_SAMPLES: usize = 100_000;

/// One reading of the replica count: seconds of server time from the start of the measured
/// load, and the count, absent where the reading failed (a gap, never filled in).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplicaSample {
    pub at_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<f64>,
}

/// The replica count over a run: each reading holds until the next (a failed one starts a
/// gap that lasts until the next good one).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplicaSeries {
    /// Where it came from: `prometheus URL QUERY` or `file NAME`.
    pub source: String,
    /// Seconds (server time) between two polls; absent for a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_s: Option<f64>,
    pub samples: Vec<ReplicaSample>,
    /// Polls that failed (each a gap in `samples`), and their distinct messages (the first 5).
    #[serde(default)]
    pub failures: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Polls past [`MAX_REPLICA_SAMPLES`], not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ReplicaSeries {
    /// The integral of the replica count over `[a, b)` (replica-seconds) and the seconds of
    /// it the series knows (outside its gaps, from its first reading on).
    pub fn integral(&self, a: f64, b: f64) -> (f64, f64) {
        let (mut area, mut known) = (0.0, 0.0);
        for (i, s) in self.samples.iter().enumerate() {
            let Some(r) = s.replicas else { continue };
            let end = self.samples.get(i + 1).map_or(f64::INFINITY, |n| n.at_s);
            let (lo, hi) = (s.at_s.max(a), end.min(b));
            if hi > lo {
                area += r * (hi - lo);
                known += hi - lo;
            }
        }
        (area, known)
    }
}

/// One window's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AutoscaleWindow {
    pub start_s: f64,
    pub end_s: f64,
    /// The load shape's mean rate over the window (what was asked), requests/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape_rps: Option<f64>,
    /// Requests sent in the window over its width (offered).
    pub offered_rps: f64,
    /// Requests completed in the window over its width (achieved).
    pub achieved_rps: f64,
    /// Requests that ended in the window and met every SLO over all that ended in it
    /// (completed or failed); absent without SLOs or when none ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attainment: Option<f64>,
    /// The time-weighted mean replica count over the part of the window the series knows;
    /// absent when it knows none of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<f64>,
    /// `ceil(offered_rps / --replica-capacity)`: the replicas the offered load needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needed_replicas: Option<f64>,
}

/// The time the service took to recover after one burst.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// When the burst started, seconds from the start.
    pub burst_start_s: f64,
    /// Whether a window from the burst's on fell below the target.
    pub dipped: bool,
    /// From the burst's start to the start of the first window after the dip back at or
    /// above the target (0 without a dip); absent when none was before the next burst or the
    /// run's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_s: Option<f64>,
}

/// One dip of the windowed SLO attainment below the target, whatever the load's shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dip {
    /// The start of the first window below the target, seconds from the start.
    pub start_s: f64,
    /// From `start_s` to the start of the first window after it back at or above the target;
    /// absent when none came before the run's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_s: Option<f64>,
}

/// The figures of an autoscaler benchmark.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AutoscaleFigures {
    /// The windows' width, seconds (the time slices').
    pub window_s: f64,
    pub attainment_target: f64,
    pub windows: Vec<AutoscaleWindow>,
    /// Good over measured requests over the whole run; absent without SLOs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attainment: Option<f64>,
    /// The integral of the replica count over the run, hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_hours: Option<f64>,
    /// Replica-hours over the hours the series knows: the mean replica count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_replicas: Option<f64>,
    /// The share of the run's time the series knows (1: no gap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_coverage: Option<f64>,
    /// Replica-hours times `--cost-per-replica-hour`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Σ over windows of max(0, replicas − needed) × width, hours (with `--replica-capacity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_provisioned_replica_hours: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recoveries: Vec<Recovery>,
    /// Every dip of the windows' attainment below the target and its recovery (any shape).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dips: Vec<Dip>,
    /// The replica series itself, for charts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<ReplicaSeries>,
}

/// What the figures are computed from.
pub struct AutoscaleInputs<'a> {
    pub spec: &'a AutoscaleSpec,
    pub curve: Option<&'a RateCurve>,
    pub slices: Option<&'a Slices>,
    pub series: Option<ReplicaSeries>,
    /// The run's span, seconds of server time (the summary's duration).
    pub span_s: f64,
    /// The time sends were scheduled in (the load shape's window): bursts start before it.
    pub window_s: Option<f64>,
}

/// The figures (see the module doc and docs/metrics.md).
pub fn compute(inputs: AutoscaleInputs<'_>) -> AutoscaleFigures {
    let AutoscaleInputs {
        spec,
        curve,
        slices,
        series,
        span_s,
        window_s,
    } = inputs;
    let capacity = spec.replica_capacity;
    let mut windows = Vec::new();
    let (mut good, mut ended, mut sloed) = (0u64, 0u64, false);
    for w in slices.map_or(&[][..], |s| &s.windows) {
        let width = w.end_s - w.start_s;
        let per_s = |n: u64| if width > 0.0 { n as f64 / width } else { 0.0 };
        let n_ended = w.completed + w.failed;
        if let Some(g) = w.good_requests {
            sloed = true;
            good += g;
            ended += n_ended;
        }
        let offered = per_s(w.started);
        let replicas = series.as_ref().and_then(|s| {
            let (area, known) = s.integral(w.start_s, w.end_s);
            (known > 0.0).then(|| area / known)
        });
        windows.push(AutoscaleWindow {
            start_s: w.start_s,
            end_s: w.end_s,
            shape_rps: curve.map(|c| c.mean_rate(w.start_s, w.end_s)),
            offered_rps: offered,
            achieved_rps: per_s(w.completed),
            attainment: (w.good_requests)
                .filter(|_| n_ended > 0)
                .map(|g| g as f64 / n_ended as f64),
            replicas,
            needed_replicas: capacity.map(|c| (offered / c).ceil()),
        });
    }
    let hours = |x: f64| x / 3600.0;
    let (area, known) = match &series {
        Some(s) if span_s > 0.0 => s.integral(0.0, span_s),
        _ => (0.0, 0.0),
    };
    let replica_hours = series.as_ref().map(|_| hours(area));
    let over = capacity.zip(series.as_ref()).map(|_| {
        let excess = windows.iter().filter_map(|w| {
            let (r, need) = (w.replicas?, w.needed_replicas?);
            Some((r - need).max(0.0) * (w.end_s - w.start_s))
        });
        hours(excess.sum())
    });
    let target = spec.attainment_target;
    let sent_until = window_s.map_or(span_s, |w| w.min(span_s));
    let bursts = curve.map_or(Vec::new(), |c| c.burst_starts(sent_until));
    let (recoveries, dips) = if sloed {
        (
            recoveries(&windows, &bursts, target, span_s),
            dips(&windows, target),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    AutoscaleFigures {
        window_s: slices.map_or(0.0, |s| s.seconds),
        attainment_target: target,
        attainment: (sloed && ended > 0).then(|| good as f64 / ended as f64),
        replica_hours,
        mean_replicas: (known > 0.0).then(|| area / known),
        replica_coverage: series
            .as_ref()
            .map(|_| if span_s > 0.0 { known / span_s } else { 0.0 }),
        cost: replica_hours
            .zip(spec.cost_per_replica_hour)
            .map(|(h, p)| h * p),
        over_provisioned_replica_hours: over,
        recoveries,
        dips,
        windows,
        replicas: series,
    }
}

/// Each burst's recovery: over the windows from the one holding its start to the next
/// burst's start (or the run's end), the first below `target` is the dip, and the first at
/// or above it after the dip the recovery, timed from the burst's start to that window's
/// start. Windows without an attainment (none ended) are skipped.
pub fn recoveries(
    windows: &[AutoscaleWindow],
    bursts: &[f64],
    target: f64,
    span_s: f64,
) -> Vec<Recovery> {
    let mut out = Vec::with_capacity(bursts.len());
    for (i, &b) in bursts.iter().enumerate() {
        let until = bursts.get(i + 1).copied().unwrap_or(span_s.max(b));
        let mut judged = windows
            .iter()
            .filter(|w| w.end_s > b && w.start_s < until)
            .filter_map(|w| w.attainment.map(|a| (w.start_s, a)));
        let dipped = judged.by_ref().any(|(_, a)| a < target);
        let recovery_s = if dipped {
            judged
                .find(|&(_, a)| a >= target)
                .map(|(s, _)| (s - b).max(0.0))
        } else {
            Some(0.0)
        };
        out.push(Recovery {
            burst_start_s: b,
            dipped,
            recovery_s,
        });
    }
    out
}

/// Every dip of the windows' attainment below `target`: windows without an attainment (none
/// ended) skipped, a dip starts at the first window below the target after one at or above
/// it (or at the first judged window, when that is below), and recovers at the start of the
/// next window at or above it; the time between is its recovery.
pub fn dips(windows: &[AutoscaleWindow], target: f64) -> Vec<Dip> {
    let mut out: Vec<Dip> = Vec::new();
    let mut open: Option<f64> = None;
    for w in windows {
        let Some(a) = w.attainment else { continue };
        match (open, a < target) {
            (None, true) => open = Some(w.start_s),
            (Some(start_s), false) => {
                out.push(Dip {
                    start_s,
                    recovery_s: Some(w.start_s - start_s),
                });
                open = None;
            }
            _ => {}
        }
    }
    if let Some(start_s) = open {
        out.push(Dip {
            start_s,
            recovery_s: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(start_s: f64, attainment: Option<f64>) -> AutoscaleWindow {
        AutoscaleWindow {
            start_s,
            end_s: start_s + 1.0,
            shape_rps: None,
            offered_rps: 0.0,
            achieved_rps: 0.0,
            attainment,
            replicas: None,
            needed_replicas: None,
        }
    }

    #[test]
    fn replica_seconds_are_the_step_function_s_integral_and_gaps_are_not_filled() {
        let s = |at_s, r| ReplicaSample { at_s, replicas: r };
        let series = ReplicaSeries {
            samples: vec![
                s(0.0, Some(1.0)),
                s(10.0, Some(3.0)),
                s(20.0, None),
                s(25.0, Some(2.0)),
            ],
            ..ReplicaSeries::default()
        };
        // 1×10 + 3×10 + (gap 5 s) + 2×5 over [0, 30).
        assert_eq!(series.integral(0.0, 30.0), (50.0, 25.0));
        assert_eq!(series.integral(5.0, 15.0), (20.0, 10.0));
        assert_eq!(series.integral(21.0, 24.0), (0.0, 0.0));
    }

    #[test]
    fn every_dip_below_target_is_timed_to_the_first_window_back_whatever_the_shape() {
        // A sine's two troughs of attainment (made by hand): below the target at 2-4 s and
        // at 7 s to the end; a window with none ended (5 s) neither starts nor ends a dip.
        let a = [
            Some(1.0),
            Some(0.9),
            Some(0.5),
            Some(0.2),
            Some(0.89),
            None,
            Some(0.95),
            Some(0.1),
            None,
            Some(0.4),
        ];
        let windows: Vec<_> = (a.iter().enumerate())
            .map(|(i, &x)| window(i as f64, x))
            .collect();
        let got = dips(&windows, 0.9);
        assert_eq!(
            got,
            [
                Dip {
                    start_s: 2.0,
                    recovery_s: Some(4.0)
                },
                Dip {
                    start_s: 7.0,
                    recovery_s: None
                }
            ]
        );
        // Below from the first judged window: the dip starts there.
        let first_low = [None, Some(0.3), Some(1.0)];
        let windows: Vec<_> = (first_low.iter().enumerate())
            .map(|(i, &x)| window(i as f64, x))
            .collect();
        assert_eq!(
            dips(&windows, 0.9),
            [Dip {
                start_s: 1.0,
                recovery_s: Some(1.0)
            }]
        );
        // Never below, or no attainment at all: no dip.
        assert!(dips(&windows[2..], 0.9).is_empty());
        assert!(dips(&[window(0.0, None)], 0.9).is_empty());
    }

    #[test]
    fn recovery_is_timed_from_the_burst_to_the_first_window_back_at_target() {
        let a = [
            Some(1.0),
            Some(1.0),
            Some(0.5),
            None,
            Some(0.2),
            Some(0.95),
            Some(1.0),
            Some(1.0),
            Some(1.0),
            Some(0.3),
        ];
        let windows: Vec<_> = a
            .iter()
            .enumerate()
            .map(|(i, &x)| window(i as f64, x))
            .collect();
        let r = recoveries(&windows, &[1.5, 7.0, 8.5], 0.9, 10.0);
        // The dip at 2 s, back at 5 s: 3.5 s after the burst at 1.5 s.
        assert_eq!(
            r[0],
            Recovery {
                burst_start_s: 1.5,
                dipped: true,
                recovery_s: Some(3.5)
            }
        );
        // No window below target before the next burst.
        assert_eq!(
            r[1],
            Recovery {
                burst_start_s: 7.0,
                dipped: false,
                recovery_s: Some(0.0)
            }
        );
        // Below target at the run's end: not recovered.
        assert_eq!(
            r[2],
            Recovery {
                burst_start_s: 8.5,
                dipped: true,
                recovery_s: None
            }
        );
    }
}
