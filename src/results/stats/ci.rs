//! 95% confidence intervals from a run's own samples (docs/metrics.md, "Confidence
//! intervals").
//!
//! - A mean: the t interval, mean ± t₀.₉₇₅,ₙ₋₁ · s/√n, with s the sample standard deviation.
//!   It rests on the central limit theorem: requests independent of one another, and enough of
//!   them for the mean to be near-normal (with heavy tails, such as TTFT under queueing, more
//!   than the usual 30).
//! - A percentile: the distribution-free order-statistic interval [x₍ⱼ₎, x₍ₖ₎], whose ranks
//!   come from the Binomial(n, p) count of samples below the true percentile (its normal
//!   approximation, widened by one rank above). It assumes only independent samples from one
//!   continuous distribution; with too few samples for the ranks to fall inside 1..n (p99
//!   needs about 400) there is no interval. Past the exact-sample limit the order statistics
//!   come from the HDR histogram, within its stated error.
//!
//! The quantiles are hand-written (a table of t and the normal's 1.96): a statistics crate for
//! two numbers would cost the build more than it saves.

/// The normal distribution's 97.5% quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Student's t 97.5% quantiles for 1..=30 degrees of freedom; past 30 the normal's is within
/// 2%, and past 120 within 0.5%.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

fn t95(df: u64) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T95[df as usize - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => Z95,
    }
}

/// The 95% interval of a mean of `n` samples whose population standard deviation (ddof 0, as
/// a [`super::Distribution`] keeps it) is `std_pop`; `None` for fewer than 2 samples.
pub fn mean_ci95(n: u64, mean: f64, std_pop: f64) -> Option<[f64; 2]> {
    if n < 2 || !mean.is_finite() || !std_pop.is_finite() {
        return None;
    }
    let s = std_pop * (n as f64 / (n - 1) as f64).sqrt();
    let half = t95(n - 1) * s / (n as f64).sqrt();
    Some([mean - half, mean + half])
}

/// The 95% interval of the `p`-th percentile (0..=100) of `sorted` (ascending), from two of
/// its order statistics; `None` when there are too few samples for one.
pub fn percentile_ci95(sorted: &[f64], p: f64) -> Option<[f64; 2]> {
    percentile_ci95_by(sorted.len() as u64, p, |k| sorted[k as usize])
}

/// As [`percentile_ci95`], for `n` samples whose k-th smallest (from 0) is `at(k)` (an HDR
/// histogram's order statistics, within its stated error).
pub fn percentile_ci95_by(n: u64, p: f64, at: impl Fn(u64) -> f64) -> Option<[f64; 2]> {
    let n = n as f64;
    let q = (p / 100.0).clamp(0.0, 1.0);
    let spread = Z95 * (n * q * (1.0 - q)).sqrt();
    // 1-based ranks j < k with P(x₍ⱼ₎ ≤ true percentile ≤ x₍ₖ₎) ≈ 95%.
    let j = (n * q - spread).floor();
    let k = (n * q + spread).ceil() + 1.0;
    if j < 1.0 || k > n || spread == 0.0 {
        return None;
    }
    Some([at(j as u64 - 1), at(k as u64 - 1)])
}

/// The 95% interval of a ratio estimator R = Σy / Σx over independent clusters (requests),
/// from the sums kept by [`RatioSums`]: how the pooled ITL mean (all gaps of all requests) is
/// judged, since the gaps of one request are not independent of one another.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RatioSums {
    pub n: u64,
    pub y: f64,
    pub x: f64,
    pub yy: f64,
    pub xx: f64,
    pub xy: f64,
}

impl RatioSums {
    /// Adds one cluster: its total `y` over its `x` units.
    pub fn add(&mut self, y: f64, x: f64) {
        self.n += 1;
        self.y += y;
        self.x += x;
        self.yy += y * y;
        self.xx += x * x;
        self.xy += x * y;
    }

    pub fn merge(&mut self, o: RatioSums) {
        self.n += o.n;
        self.y += o.y;
        self.x += o.x;
        self.yy += o.yy;
        self.xx += o.xx;
        self.xy += o.xy;
    }

    /// The interval of Σy/Σx (the delta method: Var R ≈ Σ(yᵢ − R xᵢ)² / ((n − 1) n x̄²)).
    pub fn ci95(&self) -> Option<[f64; 2]> {
        if self.n < 2 || self.x <= 0.0 {
            return None;
        }
        let n = self.n as f64;
        let r = self.y / self.x;
        let residual = (self.yy - 2.0 * r * self.xy + r * r * self.xx).max(0.0);
        let xbar = self.x / n;
        let se = (residual / ((n - 1.0) * n)).sqrt() / xbar;
        let half = t95(self.n - 1) * se;
        Some([r - half, r + half])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistic_ranks_for_100_samples() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        // Ranks ⌊nq − 1.96√(nq(1−q))⌋ and ⌈nq + 1.96√(nq(1−q))⌉ + 1 (1-based).
        // p50: n·q = 50, spread 1.96·5 = 9.8 → ranks 40 and 60 + 1.
        assert_eq!(percentile_ci95(&sorted, 50.0), Some([40.0, 61.0]));
        // p90: 90 ± 1.96·3 = 5.88 → ranks 84 and 96 + 1.
        assert_eq!(percentile_ci95(&sorted, 90.0), Some([84.0, 97.0]));
        // p99 needs more samples than 100.
        assert_eq!(percentile_ci95(&sorted, 99.0), None);
        let many: Vec<f64> = (1..=1000).map(f64::from).collect();
        // p99 of 1,000: 990 ± 1.96·3.146 = 6.17 → ranks 983 and 997 + 1.
        assert_eq!(percentile_ci95(&many, 99.0), Some([983.0, 998.0]));
    }

    #[test]
    fn mean_interval_by_hand() {
        // Samples 1..=4: mean 2.5, population std √1.25, s = √(5/3), t(3) = 3.182.
        let half = 3.182 * (5.0f64 / 3.0).sqrt() / 2.0;
        let [lo, hi] = mean_ci95(4, 2.5, 1.25f64.sqrt()).unwrap();
        assert!((lo - (2.5 - half)).abs() < 1e-12 && (hi - (2.5 + half)).abs() < 1e-12);
        assert_eq!(mean_ci95(1, 2.0, 0.0), None);
    }

    /// Coverage, seeded: about 95% of intervals from samples of a known distribution hold
    /// its true mean and median (bounded: 400 trials).
    #[test]
    fn intervals_cover_the_truth_about_95_percent_of_the_time() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let (mut mean_in, mut median_in) = (0, 0);
        let trials = 400;
        for _ in 0..trials {
            // Exponential with mean 1 (median ln 2): skewed, as latencies are.
            let mut v: Vec<f64> = (0..200)
                .map(|_| -(1.0 - rng.random::<f64>()).ln())
                .collect();
            v.sort_unstable_by(f64::total_cmp);
            let mean = v.iter().sum::<f64>() / 200.0;
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 200.0;
            let [lo, hi] = mean_ci95(200, mean, var.sqrt()).unwrap();
            mean_in += usize::from(lo <= 1.0 && 1.0 <= hi);
            let [lo, hi] = percentile_ci95(&v, 50.0).unwrap();
            median_in += usize::from(lo <= 2f64.ln() && 2f64.ln() <= hi);
        }
        for (what, inside) in [("mean", mean_in), ("median", median_in)] {
            let share = inside as f64 / trials as f64;
            assert!((0.91..=0.99).contains(&share), "{what}: {share}");
        }
    }

    #[test]
    fn ratio_interval_of_equal_clusters_is_the_mean_interval() {
        // Clusters of one unit each: R is the mean of y, and its interval the t interval.
        let ys = [1.0, 2.0, 3.0, 4.0];
        let mut r = RatioSums::default();
        ys.iter().for_each(|&y| r.add(y, 1.0));
        let [lo, hi] = r.ci95().unwrap();
        let [mlo, mhi] = mean_ci95(4, 2.5, 1.25f64.sqrt()).unwrap();
        assert!((lo - mlo).abs() < 1e-9 && (hi - mhi).abs() < 1e-9);
    }
}
