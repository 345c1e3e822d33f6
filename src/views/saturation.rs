//! The saturation point of a sweep (docs/metrics.md, "The saturation point"): over a series
//! that raises the load (`--request-rate` or `--max-concurrency` values), the lowest load whose
//! output throughput reaches [`SATURATION_SHARE`] of the sweep's highest; past it more load
//! buys latency, not throughput. When only the highest load reaches it, the sweep did not
//! find the point: throughput was still rising.
//!
//! Reads the steps' figures (`output_throughput`, `p99_ttft_ms`); computes no statistic.

use crate::config::figure::RunFigure;
use crate::config::metric::{MetricKey, Stat};
use crate::config::sweep::LoadParameter;
use crate::config::Metric;
use crate::views::model::{fmt_load, Step};

/// A step whose output throughput reaches this share of the sweep's highest is saturated.
pub const SATURATION_SHARE: f64 = 0.95;

/// One step as the saturation line names it.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadPoint {
    pub load: f64,
    pub output_throughput: f64,
    pub p99_ttft_ms: Option<f64>,
}

/// What a sweep says of its saturation.
#[derive(Clone, Debug, PartialEq)]
pub enum Saturation {
    /// The lowest saturated load, the sweep's highest throughput, and the next load's step.
    At {
        parameter: LoadParameter,
        at: LoadPoint,
        max_throughput: f64,
        next: LoadPoint,
    },
    /// Only the highest load reached the share: throughput was still rising.
    NotReached {
        parameter: LoadParameter,
        highest: LoadPoint,
    },
}

/// The saturation point of `steps` over `parameter`; `None` when the parameter is not a load
/// that raises throughput, or fewer than three steps have an output throughput.
pub fn saturation(parameter: LoadParameter, steps: &[Step]) -> Option<Saturation> {
    if !matches!(
        parameter,
        LoadParameter::RequestRate | LoadParameter::MaxConcurrency
    ) {
        return None;
    }
    let p99 = MetricKey::new(Stat::Percentile(99.0), Metric::Ttft);
    let mut points: Vec<LoadPoint> = steps
        .iter()
        .filter_map(|s| {
            Some(LoadPoint {
                load: s.load_value(parameter).filter(|v| !v.is_nan())?,
                output_throughput: s
                    .metric(RunFigure::OutputThroughput)
                    .filter(|v| v.is_finite() && *v >= 0.0)?,
                p99_ttft_ms: s.metric(p99),
            })
        })
        .collect();
    if points.len() < 3 {
        return None;
    }
    points.sort_by(|a, b| a.load.total_cmp(&b.load));
    let max = points
        .iter()
        .map(|p| p.output_throughput)
        .fold(0.0, f64::max);
    if max <= 0.0 {
        return None;
    }
    let i = points
        .iter()
        .position(|p| p.output_throughput >= SATURATION_SHARE * max)?;
    match points.get(i + 1) {
        Some(next) => Some(Saturation::At {
            parameter,
            at: points[i].clone(),
            max_throughput: max,
            next: next.clone(),
        }),
        None => Some(Saturation::NotReached {
            parameter,
            highest: points[i].clone(),
        }),
    }
}

impl Saturation {
    /// The one line the first screen shows.
    pub fn line(&self) -> String {
        let ttft = |p: &LoadPoint| {
            p.p99_ttft_ms
                .map(|t| format!(", P99 TTFT {t:.2} ms"))
                .unwrap_or_default()
        };
        match self {
            Saturation::At {
                parameter,
                at,
                max_throughput,
                next,
            } => format!(
                "Saturation point: {} {} — output throughput {:.2} tokens/s, {:.0}% of the \
                 sweep's highest ({:.2} tokens/s){}; at {} {}: {:.2} tokens/s{}",
                parameter.as_str(),
                fmt_load(at.load),
                at.output_throughput,
                100.0 * at.output_throughput / max_throughput,
                max_throughput,
                ttft(at),
                parameter.as_str(),
                fmt_load(next.load),
                next.output_throughput,
                ttft(next)
            ),
            Saturation::NotReached { parameter, highest } => format!(
                "Saturation point not reached: output throughput was still rising at the \
                 highest load, {} {} ({:.2} tokens/s{})",
                parameter.as_str(),
                fmt_load(highest.load),
                highest.output_throughput,
                ttft(highest)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RequestRate;

    fn step(rate: f64, tput: f64, p99: f64) -> Step {
        let mut s = Step::default();
        s.load.request_rate = Some(RequestRate::PerSecond(rate));
        s.metrics.insert(RunFigure::OutputThroughput.into(), tput);
        let k = MetricKey::new(Stat::Percentile(99.0), Metric::Ttft);
        s.metrics.insert(k.into(), p99);
        s
    }

    #[test]
    fn the_lowest_load_within_five_percent_of_the_highest_throughput() {
        // 100, 190, 290, 300, 298 tokens/s: 95% of 300 is 285, first reached at rate 4.
        let steps = [
            step(1.0, 100.0, 20.0),
            step(8.0, 298.0, 900.0),
            step(2.0, 190.0, 21.0),
            step(4.0, 290.0, 40.0),
            step(6.0, 300.0, 300.0),
        ];
        let s = saturation(LoadParameter::RequestRate, &steps).unwrap();
        let Saturation::At {
            at,
            next,
            max_throughput,
            ..
        } = &s
        else {
            panic!("{s:?}");
        };
        assert_eq!(
            (at.load, at.output_throughput, *max_throughput),
            (4.0, 290.0, 300.0)
        );
        assert_eq!(next.load, 6.0);
        assert_eq!(
            s.line(),
            "Saturation point: request_rate 4 — output throughput 290.00 tokens/s, 97% of the \
             sweep's highest (300.00 tokens/s), P99 TTFT 40.00 ms; at request_rate 6: 300.00 \
             tokens/s, P99 TTFT 300.00 ms"
        );
    }

    #[test]
    fn still_rising_at_the_highest_load_is_not_a_saturation_point() {
        let steps = [
            step(1.0, 100.0, 20.0),
            step(2.0, 200.0, 21.0),
            step(4.0, 400.0, 22.0),
        ];
        let s = saturation(LoadParameter::RequestRate, &steps).unwrap();
        assert!(matches!(s, Saturation::NotReached { .. }), "{s:?}");
        assert!(
            s.line().starts_with("Saturation point not reached"),
            "{}",
            s.line()
        );
        // Too few steps, or a parameter that is not a load: no claim.
        assert_eq!(saturation(LoadParameter::RequestRate, &steps[..2]), None);
        assert_eq!(saturation(LoadParameter::NumPrompts, &steps), None);
    }
}
