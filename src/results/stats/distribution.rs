//! One set of samples summarized ([`Distribution`]), and the one percentile method:
//! linear interpolation between order statistics (numpy's default `linear`).

use serde::{Deserialize, Serialize};

use super::ci;

pub(super) const NS_PER_MS: f64 = 1_000_000.0;
pub(super) const NS_PER_S: f64 = 1_000_000_000.0;

/// The `p`-th percentile (0..=100) of `sorted` (ascending), by linear interpolation between
/// the closest ranks: rank = p/100 × (n − 1). `None` for no samples.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    (!sorted.is_empty()).then(|| interpolate(sorted.len() as u64, p, |k| sorted[k as usize]))
}

/// Linear interpolation between the order statistics (`at(k)`: the k-th smallest of `n > 0`
/// samples, from 0) around rank p/100 × (n − 1): the one percentile method of [`percentile`],
/// also applied to a histogram's order statistics.
pub(super) fn interpolate(n: u64, p: f64, at: impl Fn(u64) -> f64) -> f64 {
    let rank = (p / 100.0).clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = rank.floor() as u64;
    let hi = rank.ceil() as u64;
    let frac = rank - lo as f64;
    let (a, b) = (at(lo), at(hi));
    a + (b - a) * frac
}

/// Mean, median, population standard deviation (numpy's default, ddof = 0), extremes and the
/// requested percentiles of one set of samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    pub count: u64,
    pub mean: f64,
    pub median: f64,
    pub std: f64,
    pub min: f64,
    pub max: f64,
    /// `(p, value)` for each requested percentile, in the order requested.
    pub percentiles: Vec<(f64, f64)>,
    /// How the median and percentiles were computed: exactly (absent from the document), or
    /// from an HDR histogram for a metric with more than [`EXACT_SAMPLES_MAX`] samples.
    #[serde(default, skip_serializing_if = "PercentileMethod::is_exact")]
    pub percentile_method: PercentileMethod,
    /// 95% confidence intervals ([`super::ci`]): of the mean, the median and each requested
    /// percentile, where one exists (too few samples, or HDR percentiles: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_mean: Option<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_median: Option<[f64; 2]>,
    /// `(p, [low, high])` for the requested percentiles that have one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ci95_percentiles: Vec<(f64, [f64; 2])>,
}

/// How a [`Distribution`]'s median and percentiles were computed (docs/metrics.md,
/// "Percentiles of very large runs").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PercentileMethod {
    /// From every sample, sorted.
    #[default]
    Exact,
    /// From an HDR histogram at 3 significant digits: within [`HDR_RELATIVE_ERROR`].
    Hdr,
}

impl PercentileMethod {
    pub fn is_exact(&self) -> bool {
        *self == PercentileMethod::Exact
    }
}

impl Distribution {
    /// Describes `samples` (any order; sorted in place). `None` when there are none.
    pub fn of(samples: &mut [f64], ps: &[f64]) -> Option<Distribution> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable_by(f64::total_cmp);
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let var = samples.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        let pct = |p| percentile(samples, p).unwrap_or(f64::NAN);
        let sorted = &*samples;
        Some(Distribution {
            count: samples.len() as u64,
            mean,
            median: pct(50.0),
            std: var.sqrt(),
            min: samples[0],
            max: samples[samples.len() - 1],
            percentiles: ps.iter().map(|&p| (p, pct(p))).collect(),
            percentile_method: PercentileMethod::Exact,
            ci95_mean: ci::mean_ci95(samples.len() as u64, mean, var.sqrt()),
            ci95_median: ci::percentile_ci95(sorted, 50.0),
            ci95_percentiles: ps
                .iter()
                .filter_map(|&p| Some((p, ci::percentile_ci95(sorted, p)?)))
                .collect(),
        })
    }

    /// The 95% interval of `stat` (mean, median or a requested percentile), if there is one.
    pub fn ci95(&self, stat: crate::config::metric::Stat) -> Option<[f64; 2]> {
        use crate::config::metric::Stat;
        match stat {
            Stat::Mean => self.ci95_mean,
            Stat::Median => self.ci95_median,
            Stat::Percentile(p) => self
                .ci95_percentiles
                .iter()
                .find(|(q, _)| *q == p)
                .map(|(_, ci)| *ci),
            _ => None,
        }
    }

    /// The value at percentile `p`, if it was requested.
    pub fn at(&self, p: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|(q, _)| *q == p)
            .map(|(_, v)| *v)
    }
}
