//! The prefix-cache cliff (docs/metrics.md, "The prefix-cache cliff"): over a
//! series that varies the number of distinct prefixes (`--num-prefixes 1,2,...,64` at a fixed
//! load), the first step, by number of prefixes, where the server's measured hit rate falls
//! below half of the hit rate the workload designed: there the working set outgrew the cache.
//!
//! Reads the steps' figures (`designed_prefix_hit_rate`, `measured_prefix_hit_rate`, mean TTFT)
//! and pairs each step with the one before it; computes no statistic.

use crate::config::figure::RunFigure;
use crate::config::metric::{MetricKey, Stat};
use crate::config::sweep::LoadParameter;
use crate::config::Metric;
use crate::views::model::Step;

/// A measured hit rate below this share of the designed one marks the cliff (a search over
/// prefixes passes a probe by the same rule).
pub const CLIFF_SHARE: f64 = crate::config::search::PREFIX_HIT_SHARE;

/// One step's hit rates, by its number of prefixes.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheStep {
    pub num_prefixes: f64,
    pub designed: f64,
    pub measured: f64,
    pub mean_ttft_ms: Option<f64>,
}

/// The cliff: the step where the cache stopped holding the working set, and the last step
/// before it, when there is one.
#[derive(Clone, Debug, PartialEq)]
pub struct Cliff {
    pub at: CacheStep,
    pub before: Option<CacheStep>,
}

impl Cliff {
    /// The one line the reports print: `Prefix-cache cliff at num_prefixes 16: ...`.
    pub fn line(&self) -> String {
        let pct = |v: f64| format!("{:.1}%", v * 100.0);
        let mut out = format!(
            "Prefix-cache cliff at num_prefixes {}: measured hit rate {} against designed {}",
            fmt(self.at.num_prefixes),
            pct(self.at.measured),
            pct(self.at.designed)
        );
        if let Some(b) = &self.before {
            out.push_str(&format!(
                " (num_prefixes {}: measured {}, designed {})",
                fmt(b.num_prefixes),
                pct(b.measured),
                pct(b.designed)
            ));
            if let (Some(t0), Some(t1)) = (b.mean_ttft_ms, self.at.mean_ttft_ms) {
                out.push_str(&format!("; mean TTFT {t0:.2} → {t1:.2} ms"));
            }
        }
        out
    }
}

fn fmt(v: f64) -> String {
    crate::views::model::fmt_load(v)
}

/// Each step's hit rates, by number of prefixes; steps without both rates are left out.
pub fn cache_steps(steps: &[Step]) -> Vec<CacheStep> {
    let mut out: Vec<CacheStep> = (steps.iter())
        .filter_map(|s| {
            Some(CacheStep {
                num_prefixes: s.load_value(LoadParameter::NumPrefixes)?,
                designed: s.metric(RunFigure::DesignedPrefixHitRate)?,
                measured: s.metric(RunFigure::MeasuredPrefixHitRate)?,
                mean_ttft_ms: s.metric(MetricKey::new(Stat::Mean, Metric::Ttft)),
            })
        })
        .collect();
    out.sort_by(|a, b| a.num_prefixes.total_cmp(&b.num_prefixes));
    out
}

/// The cliff of a series over `num_prefixes`; `None` for another parameter, or when every
/// step's measured hit rate stays at or above half of its designed one.
pub fn cliff(parameter: LoadParameter, steps: &[Step]) -> Option<Cliff> {
    if parameter != LoadParameter::NumPrefixes {
        return None;
    }
    let steps = cache_steps(steps);
    let i =
        (steps.iter()).position(|s| s.designed > 0.0 && s.measured < CLIFF_SHARE * s.designed)?;
    Some(Cliff {
        at: steps[i].clone(),
        before: i.checked_sub(1).map(|b| steps[b].clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::model::Load;

    fn step(p: u64, designed: f64, measured: f64) -> Step {
        let mut s = Step {
            load: Load {
                num_prefixes: Some(p),
                ..Load::default()
            },
            ..Step::default()
        };
        s.metrics
            .insert(RunFigure::DesignedPrefixHitRate.into(), designed);
        s.metrics
            .insert(RunFigure::MeasuredPrefixHitRate.into(), measured);
        s
    }

    #[test]
    fn the_cliff_is_the_first_step_below_half_its_design() {
        let steps = [step(16, 0.7, 0.1), step(2, 0.9, 0.9), step(8, 0.8, 0.45)];
        let c = cliff(LoadParameter::NumPrefixes, &steps).unwrap();
        assert_eq!(c.at.num_prefixes, 16.0);
        assert_eq!(c.before.unwrap().num_prefixes, 8.0);
        assert_eq!(cliff(LoadParameter::NumPrompts, &steps), None);
        let none = [step(2, 0.9, 0.9), step(4, 0.0, 0.0)];
        assert_eq!(cliff(LoadParameter::NumPrefixes, &none), None);
        let first = cliff(LoadParameter::NumPrefixes, &[step(1, 0.5, 0.0)]).unwrap();
        assert_eq!((first.at.num_prefixes, first.before), (1.0, None));
    }
}
