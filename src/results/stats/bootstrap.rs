//! The percentile bootstrap: 95% intervals of a statistic of independent units (a job's
//! completion time over jobs) by resampling the units with replacement (docs/metrics.md,
//! "Job intervals: the bootstrap over jobs").
//!
//! Each resample draws n of the n samples, uniformly with replacement, from a generator with
//! a fixed seed (the same samples always give the same interval); the statistic of each of
//! the resamples is computed with the one percentile method (`distribution::percentile`), and
//! the interval is the 2.5th and 97.5th percentiles of those values. A resample is kept as
//! counts per sample of the sorted input, so every statistic of it (the mean, any
//! percentile) is read in one pass, O(n) per resample, with no sort.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::distribution::{interpolate, percentile};

/// Resamples drawn: enough for the 2.5th and 97.5th percentiles of 1,000 values to be stable
/// to a few percent of the interval's width.
pub const RESAMPLES: usize = 1000;

/// The generator's seed: fixed, so an interval is a function of its samples.
pub const SEED: u64 = 0x6a6f_6273;

/// The fewest samples given an interval: below it a resample is too often made of a few
/// repeated values for its spread to mean anything.
pub const MIN_SAMPLES: usize = 10;

/// The most samples drawn in all (samples × resamples): past it, fewer resamples (down to
/// [`MIN_RESAMPLES`]), so a run of very many jobs is not held up for minutes.
pub const MAX_DRAWS: usize = 200_000_000;

/// The fewest resamples, however many samples.
pub const MIN_RESAMPLES: usize = 200;

/// A statistic whose interval is wanted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Statistic {
    Mean,
    /// The p-th percentile, 0..=100 (50: the median).
    Percentile(f64),
}

/// How many resamples `n` samples get.
pub fn resamples(n: usize) -> usize {
    RESAMPLES.min((MAX_DRAWS / n.max(1)).max(MIN_RESAMPLES))
}

/// The 95% interval of each of `stats` of `samples` (any order), `None` for every one when
/// there are fewer than [`MIN_SAMPLES`] or a sample is not finite.
pub fn intervals(samples: &[f64], stats: &[Statistic]) -> Vec<Option<[f64; 2]>> {
    let n = samples.len();
    if n < MIN_SAMPLES || samples.iter().any(|x| !x.is_finite()) {
        return vec![None; stats.len()];
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let b = resamples(n);
    let mut rng = StdRng::seed_from_u64(SEED);
    let mut counts = vec![0u32; n];
    let mut values: Vec<Vec<f64>> = vec![Vec::with_capacity(b); stats.len()];
    for _ in 0..b {
        counts.iter_mut().for_each(|c| *c = 0);
        for _ in 0..n {
            counts[rng.random_range(0..n)] += 1;
        }
        for (s, out) in stats.iter().zip(values.iter_mut()) {
            out.push(statistic(&sorted, &counts, *s));
        }
    }
    values
        .into_iter()
        .map(|mut v| {
            v.sort_unstable_by(f64::total_cmp);
            Some([percentile(&v, 2.5)?, percentile(&v, 97.5)?])
        })
        .collect()
}

/// `stat` of the resample that holds `counts[i]` copies of `sorted[i]` (counts summing to
/// `sorted.len()`).
fn statistic(sorted: &[f64], counts: &[u32], stat: Statistic) -> f64 {
    let n = sorted.len();
    match stat {
        Statistic::Mean => {
            let sum: f64 = (sorted.iter().zip(counts))
                .map(|(x, &c)| x * f64::from(c))
                .sum();
            sum / n as f64
        }
        Statistic::Percentile(p) => interpolate(n as u64, p, |k| kth(sorted, counts, k)),
    }
}

/// The k-th smallest (from 0) of the resample.
fn kth(sorted: &[f64], counts: &[u32], k: u64) -> f64 {
    let mut seen = 0u64;
    for (x, &c) in sorted.iter().zip(counts) {
        seen += u64::from(c);
        if seen > k {
            return *x;
        }
    }
    sorted[sorted.len() - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sample equal: every resample is the same, so is the interval.
    #[test]
    fn equal_samples_give_a_point_interval() {
        let v = vec![7.0; 20];
        let got = intervals(&v, &[Statistic::Mean, Statistic::Percentile(99.0)]);
        assert_eq!(got, vec![Some([7.0, 7.0]), Some([7.0, 7.0])]);
    }

    /// Too few samples, or one that is not a number: no interval.
    #[test]
    fn too_few_or_non_finite_samples_have_none() {
        let few: Vec<f64> = (0..MIN_SAMPLES - 1).map(|i| i as f64).collect();
        assert_eq!(intervals(&few, &[Statistic::Mean]), vec![None]);
        let mut bad: Vec<f64> = (0..50).map(|i| i as f64).collect();
        bad[3] = f64::NAN;
        assert_eq!(intervals(&bad, &[Statistic::Mean]), vec![None]);
    }

    /// The same samples in any order give the same intervals (the seed is fixed), and the
    /// mean's interval holds the mean and is about the t interval's width.
    #[test]
    fn seeded_order_free_and_near_the_t_interval() {
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        let mut rev = v.clone();
        rev.reverse();
        let stats = [Statistic::Mean, Statistic::Percentile(50.0)];
        assert_eq!(intervals(&v, &stats), intervals(&rev, &stats));
        let [lo, hi] = intervals(&v, &stats)[0].unwrap();
        assert!(lo < 100.5 && 100.5 < hi, "{lo} {hi}");
        // t interval: 100.5 ± 1.97 · 57.88 / √200 = ± 8.07.
        let width = hi - lo;
        assert!((12.0..20.0).contains(&width), "{width}");
    }

    /// A resample's k-th smallest walks the counts.
    #[test]
    fn kth_of_counts() {
        let sorted = [1.0, 2.0, 3.0];
        let counts = [0, 2, 1];
        let got: Vec<f64> = (0..3).map(|k| kth(&sorted, &counts, k)).collect();
        assert_eq!(got, [2.0, 2.0, 3.0]);
        assert_eq!(statistic(&sorted, &counts, Statistic::Mean), 7.0 / 3.0);
    }

    /// Coverage, seeded: about 95% of the intervals of samples of a known distribution hold
    /// its true mean and median (bounded: 200 trials of 100 samples).
    #[test]
    fn intervals_cover_the_truth_about_95_percent_of_the_time() {
        let mut rng = StdRng::seed_from_u64(11);
        let (mut mean_in, mut median_in) = (0, 0);
        let trials = 200;
        for _ in 0..trials {
            let v: Vec<f64> = (0..100)
                .map(|_| -(1.0 - rng.random::<f64>()).ln())
                .collect();
            let got = intervals(&v, &[Statistic::Mean, Statistic::Percentile(50.0)]);
            let [lo, hi] = got[0].unwrap();
            mean_in += usize::from(lo <= 1.0 && 1.0 <= hi);
            let [lo, hi] = got[1].unwrap();
            median_in += usize::from(lo <= 2f64.ln() && 2f64.ln() <= hi);
        }
        for (what, inside) in [("mean", mean_in), ("median", median_in)] {
            let share = inside as f64 / trials as f64;
            assert!((0.88..=0.99).contains(&share), "{what}: {share}");
        }
    }
}
