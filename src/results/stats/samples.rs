//! One metric's samples, mergeable: exact up to [`EXACT_SAMPLES_MAX`], then an HDR histogram
//! (bounded memory, bounded error).

use super::ci;
use super::distribution::{interpolate, Distribution, PercentileMethod};

/// Samples a metric keeps, exactly, before its percentiles switch to an HDR histogram: a metric
/// with more samples than this (8 MB of them) gets [`PercentileMethod::Hdr`]. Runs of up to a
/// million requests keep exact TTFT, TPOT and E2EL percentiles; only pooled ITL switches there.
pub const EXACT_SAMPLES_MAX: usize = 1_000_000;

/// The bound on an HDR percentile's error, relative to the larger magnitude of the two samples
/// it interpolates between: each order statistic is read as the midpoint of its histogram
/// bucket, at most 1/1024 of the value wide at 3 significant digits (docs/metrics.md).
pub const HDR_RELATIVE_ERROR: f64 = 1.0 / 2048.0;

/// Histogram units per unit of a sample (ms, tokens): values are recorded as integers of 10⁻⁶
/// of their unit (nanoseconds for milliseconds), so rounding adds at most 0.5 × 10⁻⁶.
pub(super) const HDR_UNITS: f64 = 1e6;

/// The largest value a histogram tells apart, in its units: 2^53 (about 290 years in
/// nanoseconds); larger samples count as this (their min, max and mean stay exact). A fixed
/// range keeps each histogram at about 360 KB.
const HDR_MAX_UNITS: u64 = 1 << 53;

/// One metric's samples, mergeable: every sample up to a limit (exact percentiles), then an
/// HDR histogram of them (bounded memory). Count, mean, std, min and max use every sample in
/// both modes.
#[derive(Clone, Debug)]
pub struct SampleSet {
    limit: usize,
    state: SampleState,
}

#[derive(Clone, Debug)]
enum SampleState {
    Exact(Vec<f64>),
    Hdr(Box<HdrSamples>),
}

/// Non-negative samples in `pos`, negated negative ones in `neg`; moments by Welford's method.
#[derive(Clone, Debug)]
struct HdrSamples {
    pos: hdrhistogram::Histogram<u64>,
    neg: hdrhistogram::Histogram<u64>,
    n: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
}

impl HdrSamples {
    fn new() -> HdrSamples {
        let hist = || {
            hdrhistogram::Histogram::new_with_bounds(1, HDR_MAX_UNITS, 3)
                .expect("valid bounds and precision")
        };
        HdrSamples {
            pos: hist(),
            neg: hist(),
            n: 0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    fn add(&mut self, x: f64) {
        let units = (x.abs() * HDR_UNITS).round() as u64; // saturating

        let hist = if x < 0.0 {
            &mut self.neg
        } else {
            &mut self.pos
        };
        hist.saturating_record(units);
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// Chan et al.'s pairwise combination of the moments; histograms add bucket by bucket.
    fn merge(&mut self, o: &HdrSamples) {
        if o.n == 0 {
            return;
        }
        let n = self.n + o.n;
        let delta = o.mean - self.mean;
        self.mean += delta * o.n as f64 / n as f64;
        self.m2 += o.m2 + delta * delta * self.n as f64 * o.n as f64 / n as f64;
        self.n = n;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.pos
            .add(&o.pos)
            .expect("histograms of equal bounds add");
        self.neg
            .add(&o.neg)
            .expect("histograms of equal bounds add");
    }

    /// The k-th smallest sample (from 0), as the midpoint of its bucket, within [min, max].
    fn order_statistic(&self, k: u64) -> f64 {
        let nneg = self.neg.len();
        let (hist, k, sign) = if k < nneg {
            (&self.neg, nneg - 1 - k, -1.0)
        } else {
            (&self.pos, k - nneg, 1.0)
        };
        let mut seen = 0;
        let units = hist
            .iter_recorded()
            .find(|v| {
                seen += v.count_at_value();
                seen > k
            })
            .map_or(0, |v| hist.median_equivalent(v.value_iterated_to()));
        (sign * units as f64 / HDR_UNITS).clamp(self.min, self.max)
    }

    fn distribution(&self, ps: &[f64]) -> Distribution {
        let pct = |p| interpolate(self.n, p, |k| self.order_statistic(k));
        let ci_at = |p| ci::percentile_ci95_by(self.n, p, |k| self.order_statistic(k));
        Distribution {
            count: self.n,
            mean: self.mean,
            median: pct(50.0),
            std: (self.m2 / self.n as f64).sqrt(),
            min: self.min,
            max: self.max,
            percentiles: ps.iter().map(|&p| (p, pct(p))).collect(),
            percentile_method: PercentileMethod::Hdr,
            ci95_mean: ci::mean_ci95(self.n, self.mean, (self.m2 / self.n as f64).sqrt()),
            ci95_median: ci_at(50.0),
            ci95_percentiles: ps.iter().filter_map(|&p| Some((p, ci_at(p)?))).collect(),
        }
    }
}

impl Default for SampleSet {
    fn default() -> Self {
        SampleSet::with_limit(EXACT_SAMPLES_MAX)
    }
}

impl SampleSet {
    /// A set that keeps up to `limit` samples exactly.
    pub fn with_limit(limit: usize) -> SampleSet {
        SampleSet {
            limit,
            state: SampleState::Exact(Vec::new()),
        }
    }

    pub fn add(&mut self, x: f64) {
        match &mut self.state {
            SampleState::Exact(v) => {
                v.push(x);
                if v.len() > self.limit {
                    self.switch_to_hdr();
                }
            }
            SampleState::Hdr(h) => h.add(x),
        }
    }

    /// Adds every sample of `other`, as if each had been added here.
    pub fn merge(&mut self, other: SampleSet) {
        match other.state {
            SampleState::Exact(b) => self.extend(b),
            SampleState::Hdr(mut b) => match &mut self.state {
                SampleState::Hdr(a) => a.merge(&b),
                SampleState::Exact(a) => {
                    a.iter().for_each(|&x| b.add(x));
                    self.state = SampleState::Hdr(b);
                }
            },
        }
    }

    fn switch_to_hdr(&mut self) {
        if let SampleState::Exact(v) = &self.state {
            let mut h = Box::new(HdrSamples::new());
            v.iter().for_each(|&x| h.add(x));
            self.state = SampleState::Hdr(h);
        }
    }

    /// The distribution of the samples (`None` when there are none).
    pub fn finish(self, ps: &[f64]) -> Option<Distribution> {
        match self.state {
            SampleState::Exact(mut v) => Distribution::of(&mut v, ps),
            SampleState::Hdr(h) => Some(h.distribution(ps)),
        }
    }
}

impl Extend<f64> for SampleSet {
    fn extend<I: IntoIterator<Item = f64>>(&mut self, iter: I) {
        iter.into_iter().for_each(|x| self.add(x));
    }
}
