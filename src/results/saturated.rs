//! The saturation stop (docs/metrics.md, "The saturation stop"): over a series whose load
//! rises step by step (a sweep's steps, a search's doubling probes, the SLO controller's
//! escalation windows), a step is saturated when, against the step before it, throughput no
//! longer rises (by less than [`RISE_MIN`]) while the median TTFT or the mean in flight grows
//! (by at least [`GROWTH_MIN`]), or when its error fraction rose by at least
//! [`ERROR_RISE_MIN`]. With `--stop-saturated on` escalation stops there; the steps above it
//! are saved as `skipped`, never as failed.
//!
//! Pure: reads each step's figures ([`StepFigures`]), computes no statistic of records.

use serde::{Deserialize, Serialize};

use crate::results::stats::RunSummary;

/// Throughput must rise by at least this share over the step before to count as rising.
pub const RISE_MIN: f64 = 0.05;
/// The median TTFT or the mean in flight grows when it rises by at least this share.
pub const GROWTH_MIN: f64 = 0.25;
/// The error fraction rises when it gains at least this much (5 points).
pub const ERROR_RISE_MIN: f64 = 0.05;

/// What the detector reads of one step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepFigures {
    /// The step's load (rate or concurrency).
    pub load: f64,
    /// Completed requests per second.
    pub throughput: f64,
    /// Median TTFT, ms (`None`: no request completed).
    pub ttft_p50_ms: Option<f64>,
    /// Mean requests in flight (Little's law: throughput × mean end-to-end latency).
    pub in_flight: Option<f64>,
    /// Failed / (completed + failed); 0 with no request.
    pub error_fraction: f64,
}

impl StepFigures {
    /// A finished run's figures (its summary `s`) at `load`.
    pub fn of(load: f64, s: &RunSummary) -> StepFigures {
        let n = s.completed + s.failed;
        let e2el_s = s.e2el_ms.as_ref().map(|d| d.mean / 1e3);
        StepFigures {
            load,
            throughput: s.request_throughput,
            ttft_p50_ms: s.ttft_ms.as_ref().map(|d| d.median),
            in_flight: e2el_s.map(|e| e * s.request_throughput),
            error_fraction: if n > 0 {
                s.failed as f64 / n as f64
            } else {
                0.0
            },
        }
    }
}

/// Where escalation stopped and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SaturationStop {
    /// The saturated step's index in its series (0-based) and its load.
    pub step: usize,
    pub load: f64,
    /// The step before it, against which it was judged.
    pub previous_load: f64,
    /// The rule and its numbers, in words.
    pub evidence: String,
}

/// Whether `now` is saturated against `before` (the step below it), and the evidence.
pub fn judge(before: &StepFigures, now: &StepFigures) -> Option<String> {
    let err_rise = now.error_fraction - before.error_fraction;
    if err_rise >= ERROR_RISE_MIN {
        return Some(format!(
            "error fraction rose from {:.1}% to {:.1}% (by at least {:.0} points)",
            before.error_fraction * 100.0,
            now.error_fraction * 100.0,
            ERROR_RISE_MIN * 100.0
        ));
    }
    let rise = if before.throughput > 0.0 {
        now.throughput / before.throughput - 1.0
    } else {
        f64::INFINITY
    };
    if rise >= RISE_MIN || !rise.is_finite() {
        return None;
    }
    let grew = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if a > 0.0 => (b / a - 1.0 >= GROWTH_MIN).then_some((a, b)),
        _ => None,
    };
    let flat = format!(
        "throughput {:.3}/s -> {:.3}/s ({:+.1}%, under +{:.0}%)",
        before.throughput,
        now.throughput,
        rise * 100.0,
        RISE_MIN * 100.0
    );
    if let Some((a, b)) = grew(before.ttft_p50_ms, now.ttft_p50_ms) {
        return Some(format!(
            "{flat} while median TTFT grew {a:.1} ms -> {b:.1} ms (by at least {:.0}%)",
            GROWTH_MIN * 100.0
        ));
    }
    if let Some((a, b)) = grew(before.in_flight, now.in_flight) {
        return Some(format!(
            "{flat} while mean in flight grew {a:.2} -> {b:.2} (by at least {:.0}%)",
            GROWTH_MIN * 100.0
        ));
    }
    None
}

/// The first saturated step of `steps` (by load ascending, as run), judged against the step
/// before it; `None` while every step still gains.
pub fn detect(steps: &[StepFigures]) -> Option<SaturationStop> {
    steps.windows(2).enumerate().find_map(|(i, w)| {
        (w[1].load > w[0].load)
            .then(|| judge(&w[0], &w[1]))
            .flatten()
            .map(|evidence| SaturationStop {
                step: i + 1,
                load: w[1].load,
                previous_load: w[0].load,
                evidence,
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(load: f64, throughput: f64, ttft: f64, errors: f64) -> StepFigures {
        StepFigures {
            load,
            throughput,
            ttft_p50_ms: Some(ttft),
            in_flight: Some(load),
            error_fraction: errors,
        }
    }

    /// Throughput doubling with load is never saturated; flat throughput with TTFT growing
    /// is, at the first such step; a 5-point error rise is, whatever the throughput.
    #[test]
    fn the_first_flat_step_with_growing_ttft_is_saturated() {
        let rising = [step(1.0, 1.0, 10.0, 0.0), step(2.0, 2.0, 10.0, 0.0)];
        assert_eq!(detect(&rising), None);
        let mut s = rising.to_vec();
        s.push(step(4.0, 4.0, 11.0, 0.0));
        s.push(step(8.0, 4.1, 30.0, 0.0));
        s.push(step(16.0, 4.1, 90.0, 0.0));
        let stop = detect(&s).unwrap();
        assert_eq!((stop.step, stop.load, stop.previous_load), (3, 8.0, 4.0));
        assert!(
            stop.evidence
                .contains("median TTFT grew 11.0 ms -> 30.0 ms"),
            "{}",
            stop.evidence
        );
        // Flat throughput with TTFT and in flight steady (a measurement wobble) is not
        // saturation.
        let (a, mut b) = (step(4.0, 4.0, 11.0, 0.0), step(8.0, 4.0, 12.0, 0.0));
        b.in_flight = a.in_flight;
        assert_eq!(detect(&[a, b]), None);
        // In flight growing (a closed loop beyond the slots) is, without TTFT.
        let mut a = step(4.0, 4.0, 11.0, 0.0);
        let mut b = step(8.0, 4.0, 11.0, 0.0);
        (a.ttft_p50_ms, b.ttft_p50_ms) = (None, None);
        assert!(judge(&a, &b)
            .unwrap()
            .contains("mean in flight grew 4.00 -> 8.00"));
        let e = judge(&step(1.0, 1.0, 10.0, 0.01), &step(2.0, 2.0, 10.0, 0.07)).unwrap();
        assert!(e.contains("error fraction rose from 1.0% to 7.0%"), "{e}");
        // A load that did not rise is never judged.
        assert_eq!(
            detect(&[step(4.0, 4.0, 1.0, 0.0), step(4.0, 1.0, 9.0, 0.5)]),
            None
        );
    }
}
