//! Steady state: the part of a run after its warm-up transient and before its drain, found
//! from the run's own series with MSER-5, and the run's figures over it with batch-means 95%
//! intervals (docs/metrics.md, "Steady state").
//!
//! - The series: output throughput and requests in flight, in equal time bins from the first
//!   send to the last (a hundred bins, each between 10 ms and 1 s wide); TTFT and TPOT, one
//!   value per successful request in the order they were sent.
//! - MSER-5 (White, Cobb and Spratt, 2000, "A comparison of five steady-state truncation
//!   heuristics for simulation"): a series, judged at a resolution of 1% of its median, is cut
//!   into batches of 5 observations, each batch's median Z₁..Zₖ (the method takes means; a
//!   median keeps one delayed request from moving the cut), smoothed by Tukey's running
//!   median of three (Tukey, 1977, "Exploratory Data Analysis": one batch disturbed by a
//!   stall of the machine, as on a busy CI runner, takes its neighbours' level; a transient
//!   held for two batches or more passes unchanged); for each truncation d,
//!   MSER(d) = Σⱼ₌d₊₁..ₖ (Zⱼ − Z̄₍d₎)² / (k − d)²; the warm-up ends after the d that minimises
//!   it, searched over the first half of the series (d ≤ k/2, as the method prescribes: its
//!   statistic over a short tail is small by chance). A minimum at d = k/2, where dropping
//!   more would still lower it, means the series never settled: the run was still ramping.
//!   MSER errs late: a steady batch that happens to lie far from the mean is dropped with the
//!   warm-up; so the batches just before its cut that lie within 3 standard deviations of the
//!   kept batches' mean (at least one resolution step) rejoin the window (on 2,000 simulated
//!   step changes in noise this took the cut within one batch of the true start in 97% of
//!   draws, against 62% without).
//! - The window starts where the last of the four series settled and ends at the last send:
//!   past it no new request replaces a finished one, so the load drains by construction.
//! - A batch-means interval cuts the window's series into 10 batches (fewer for short series,
//!   at least 4) and takes the t interval of the batch means: unlike the per-request interval,
//!   it holds when neighbouring observations are correlated, as they are under queueing.

use std::borrow::Borrow;

use serde::{Deserialize, Serialize};

use super::ci::mean_ci95;
use super::distribution::NS_PER_S;
use super::request::RequestMetrics;
use crate::measure::record::RequestRecord;

/// Observations per MSER batch.
pub const MSER_BATCH: usize = 5;
/// Time bins the run's span is cut into for the throughput and in-flight series.
pub const BINS: u64 = 100;
/// Bounds on a time bin's width.
pub const BIN_MIN_NS: u64 = 10_000_000;
pub const BIN_MAX_NS: u64 = 1_000_000_000;
/// Fewest MSER batches a series needs (a run of fewer is too short to tell).
pub const MIN_BATCHES: usize = 8;
/// The resolution a series is judged at, relative to its median magnitude.
pub const RESOLUTION: f64 = 0.01;
/// Standard deviations of the kept batch means within which a batch just before MSER's cut
/// rejoins the window.
pub const BACK_BAND: f64 = 3.0;
/// Batches of a batch-means interval, at most and at least.
pub const CI_BATCHES: usize = 10;
pub const CI_BATCHES_MIN: usize = 4;

/// What the detection found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SteadyVerdict {
    /// Every series settled within its first half.
    Steady,
    /// Too few observations to tell (fewer than [`MIN_BATCHES`] batches of 5 in a series).
    TooShort,
    /// A series' MSER minimum lies past its first half: the run never settled.
    StillRamping,
}

/// One series' truncation point, by name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settled {
    pub series: String,
    /// Seconds from the first send at which the series settled; `None` when it never did.
    pub at_s: Option<f64>,
}

/// A mean over the window and its batch-means 95% interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowMean {
    pub mean: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95: Option<[f64; 2]>,
}

/// The steady window of a run and its figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    pub verdict: SteadyVerdict,
    /// Where each series settled.
    pub settled: Vec<Settled>,
    /// The window, in seconds from the run's first send (`Steady` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_s: Option<f64>,
    /// The window on the records' clock (their `sent_ns`), for plots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ns: Option<[u64; 2]>,
    /// Successful requests sent inside the window.
    #[serde(default)]
    pub requests: u64,
    /// Output tokens per second, requests in flight, TTFT and TPOT (ms) over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_throughput: Option<WindowMean>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<WindowMean>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<WindowMean>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<WindowMean>,
}

/// `series` rounded to a step of [`RESOLUTION`] times its median magnitude: differences
/// smaller than that are not a transient, and on a series as quiet as the exact simulator's
/// (TTFT within microseconds) they would otherwise decide the cut.
/// Also returns the step (0 when the series has no magnitude).
fn resolved(series: &[f64]) -> (Vec<f64>, f64) {
    let mut mags: Vec<f64> = series.iter().map(|x| x.abs()).collect();
    mags.sort_by(f64::total_cmp);
    let step = mags.get(mags.len() / 2).copied().unwrap_or(0.0) * RESOLUTION;
    if step > 0.0 && step.is_finite() {
        let rounded = series.iter().map(|x| (x / step).round() * step).collect();
        (rounded, step)
    } else {
        (series.to_vec(), 0.0)
    }
}

/// Tukey's running median of three (the ends kept): one batch that a stall disturbed, with
/// its neighbours undisturbed, takes their level; a level held for two batches or more, as a
/// warm-up transient is, passes unchanged.
fn running_median3(z: &[f64]) -> Vec<f64> {
    let mut out = z.to_vec();
    for j in 1..z.len().saturating_sub(1) {
        let mut w = [z[j - 1], z[j], z[j + 1]];
        w.sort_by(f64::total_cmp);
        out[j] = w[1];
    }
    out
}

/// Where MSER-5 truncates `series`: the number of leading observations to drop, or why not.
pub fn mser5(series: &[f64]) -> Result<usize, SteadyVerdict> {
    let (series, step) = resolved(series);
    let z: Vec<f64> = series
        .chunks_exact(MSER_BATCH)
        .map(|b| {
            let mut b = b.to_vec();
            b.sort_by(f64::total_cmp);
            b[MSER_BATCH / 2]
        })
        .collect();
    let raw = z;
    let z = running_median3(&raw);
    let k = z.len();
    if k < MIN_BATCHES {
        return Err(SteadyVerdict::TooShort);
    }
    // Suffix sums give every d's squared deviation in one pass from the end: for the tail
    // z[d..] of n values, Σ(z − z̄)² = Σx² − (Σx)²/n with x = z − c for any c. Only d ≤ k/2
    // are candidates. c is the last batch: equal batches then add exactly nothing, where
    // c = 0 would leave rounding noise to pick the cut among equal minima.
    let half = k / 2;
    let (mut sum, mut sq) = (0.0, 0.0);
    let (mut best_d, mut best_v) = (0, f64::INFINITY);
    for d in (0..k).rev() {
        let x = z[d] - z[k - 1];
        sum += x;
        sq += x * x;
        if d > half {
            continue;
        }
        let n = (k - d) as f64;
        let v = (sq - sum * sum / n).max(0.0) / (n * n);
        // `<=` walking backwards keeps the earliest of equal minima.
        if v <= best_v {
            best_v = v;
            best_d = d;
        }
    }
    // The minimum at the edge of the candidates: dropping more would still help.
    if best_d == half {
        return Err(SteadyVerdict::StillRamping);
    }
    // MSER drops a steady batch that happens to lie far from the mean along with the warm-up
    // (its known late bias); batches just before the cut that lie within BACK_BAND standard
    // deviations of the kept batches' mean are steady by that measure and rejoin the window.
    // The batches as measured, not smoothed: smoothing narrows their spread, and with it the
    // band.
    let kept = &raw[best_d..];
    let n = kept.len() as f64;
    let mean = kept.iter().sum::<f64>() / n;
    let sd = (kept.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    // Kept batches all equal at the resolution have no spread: one resolution step is then
    // the band (a batch one step away is not a transient).
    let band = (BACK_BAND * sd).max(step);
    while best_d > 0 && (raw[best_d - 1] - mean).abs() <= band {
        best_d -= 1;
    }
    Ok(best_d * MSER_BATCH)
}

/// The batch-means 95% interval of the mean of `series`: up to [`CI_BATCHES`] equal batches
/// (at least [`CI_BATCHES_MIN`], of at least 2 observations each), the t interval of their
/// means; `None` for a series too short.
pub fn batch_means_ci95(series: &[f64]) -> Option<[f64; 2]> {
    let batches = CI_BATCHES.min(series.len() / 2);
    if batches < CI_BATCHES_MIN {
        return None;
    }
    let size = series.len() / batches;
    let means: Vec<f64> = series
        .chunks_exact(size)
        .take(batches)
        .map(|b| b.iter().sum::<f64>() / size as f64)
        .collect();
    let n = means.len() as f64;
    let mean = means.iter().sum::<f64>() / n;
    let std_pop = (means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / n).sqrt();
    mean_ci95(means.len() as u64, mean, std_pop)
}

fn window_mean(series: &[f64]) -> Option<WindowMean> {
    (!series.is_empty()).then(|| WindowMean {
        mean: series.iter().sum::<f64>() / series.len() as f64,
        ci95: batch_means_ci95(series),
    })
}

/// One measured request, as the series need it.
struct Point {
    sent_ns: u64,
    id: u64,
    ttft_ms: Option<f64>,
    tpot_ms: Option<f64>,
}

/// The run's time bins, from the first send to the last: output tokens per second and
/// requests in flight (time-weighted) in each.
struct Binned {
    width: u64,
    throughput: Vec<f64>,
    in_flight: Vec<f64>,
}

impl Binned {
    fn new(origin: u64, last_send: u64) -> Binned {
        let span = last_send.saturating_sub(origin).max(1);
        let width = (span / BINS).clamp(BIN_MIN_NS, BIN_MAX_NS);
        let n = span.div_ceil(width) as usize;
        Binned {
            width,
            throughput: vec![0.0; n],
            in_flight: vec![0.0; n],
        }
    }

    /// Adds one record, `m` its metrics (unscaled).
    fn add(&mut self, r: &RequestRecord, m: Option<&RequestMetrics>, origin: u64) {
        let at = |t: u64| (t.saturating_sub(origin) / self.width) as usize;
        if let Some(m) = m {
            let even = m.output_tokens as f64 / r.chunk_ns.len() as f64;
            let per_chunk = r
                .chunk_tokens
                .as_ref()
                .filter(|ts| ts.len() == r.chunk_ns.len());
            for (i, &t) in r.chunk_ns.iter().enumerate() {
                let k = per_chunk.map_or(even, |ts| f64::from(ts[i]));
                if let Some(slot) = self.throughput.get_mut(at(t)) {
                    *slot += k;
                }
            }
        }
        let (mut t, end) = (r.sent_ns.max(origin), r.end_ns.max(r.sent_ns));
        while t < end {
            let b = at(t);
            let Some(slot) = self.in_flight.get_mut(b) else {
                break;
            };
            let upto = end.min(origin + (b as u64 + 1) * self.width);
            *slot += (upto - t) as f64 / self.width as f64;
            t = upto;
        }
    }
}

/// Finds the steady window of a run and its figures. `records` gives the run's records, every
/// time it is called (they are read twice: once for the span of their sends, once for the
/// series), so a records file can be streamed rather than held; warm-ups are skipped.
/// `time_scale` is the simulated server's clock speed-up (`--time-scale`; 1 for a real server).
pub fn detect<R, I>(records: impl Fn() -> I, time_scale: f64) -> SteadyState
where
    R: Borrow<RequestRecord>,
    I: IntoIterator<Item = R>,
{
    let sends = records()
        .into_iter()
        .filter(|r| !r.borrow().warmup)
        .map(|r| r.borrow().sent_ns)
        .fold(None, |s, t| span(s, Some((t, t))));
    let mut d = Detector::new(sends, time_scale);
    records().into_iter().for_each(|r| d.add(r.borrow()));
    d.finish()
}

/// The span (first, last) covering both; `None` when neither is known.
pub fn span(a: Option<(u64, u64)>, b: Option<(u64, u64)>) -> Option<(u64, u64)> {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
        (a, b) => a.or(b),
    }
}

/// The steady-state detection fed a run's records one at a time, in any order, in one pass,
/// once the span of their sends is known (the first and last `sent_ns` of its measured
/// requests, as the run gathered them): a run reads its records file back once for this and
/// everything else it takes from it.
pub struct Detector {
    time_scale: f64,
    /// The first and last send.
    origin: u64,
    last_send: u64,
    points: Vec<Point>,
    binned: Binned,
}

impl Detector {
    /// `sends`: the first and last send of the measured requests; `None` when there were none.
    pub fn new(sends: Option<(u64, u64)>, time_scale: f64) -> Detector {
        let (origin, last_send) = sends.unwrap_or((0, 0));
        Detector {
            time_scale,
            origin,
            last_send,
            points: Vec::new(),
            binned: Binned::new(origin, last_send),
        }
    }

    /// Adds one record; warm-ups are skipped.
    pub fn add(&mut self, r: &RequestRecord) {
        if r.warmup {
            return;
        }
        let m = RequestMetrics::of(r);
        self.binned.add(r, m.as_ref(), self.origin);
        let m = m.map(|m| m.scaled(self.time_scale));
        self.points.push(Point {
            sent_ns: r.sent_ns,
            id: r.id,
            ttft_ms: m.as_ref().map(|m| m.ttft_ns as f64 / 1e6),
            tpot_ms: m.and_then(|m| m.tpot_ms),
        });
    }

    /// The window and its figures.
    pub fn finish(self) -> SteadyState {
        let Detector {
            time_scale,
            origin,
            last_send,
            mut points,
            mut binned,
        } = self;
        points.sort_by_key(|p| (p.sent_ns, p.id));
        let mut state = SteadyState {
            verdict: SteadyVerdict::TooShort,
            settled: Vec::new(),
            start_s: None,
            end_s: None,
            window_ns: None,
            requests: 0,
            output_throughput: None,
            in_flight: None,
            ttft_ms: None,
            tpot_ms: None,
        };
        if points.is_empty() {
            return state;
        }
        let secs_per_bin = binned.width as f64 / NS_PER_S * time_scale;
        binned
            .throughput
            .iter_mut()
            .for_each(|t| *t /= secs_per_bin);
        let ttft: Vec<(u64, f64)> = points
            .iter()
            .filter_map(|p| p.ttft_ms.map(|t| (p.sent_ns, t)))
            .collect();
        let tpot: Vec<(u64, f64)> = points
            .iter()
            .filter_map(|p| p.tpot_ms.map(|t| (p.sent_ns, t)))
            .collect();

        let secs = |t: u64| t.saturating_sub(origin) as f64 / NS_PER_S * time_scale;
        let bin_start = |i: usize| origin + i as u64 * binned.width;
        let values = |s: &[(u64, f64)]| s.iter().map(|(_, v)| *v).collect::<Vec<f64>>();
        let cuts = [
            (
                "output_throughput",
                mser5(&binned.throughput).map(bin_start),
            ),
            ("in_flight", mser5(&binned.in_flight).map(bin_start)),
            ("ttft_ms", mser5(&values(&ttft)).map(|i| ttft[i].0)),
            ("tpot_ms", mser5(&values(&tpot)).map(|i| tpot[i].0)),
        ];
        // Too short outranks still ramping: with too few observations nothing is known.
        state.verdict = if cuts.iter().any(|(_, c)| *c == Err(SteadyVerdict::TooShort)) {
            SteadyVerdict::TooShort
        } else if cuts.iter().any(|(_, c)| c.is_err()) {
            SteadyVerdict::StillRamping
        } else {
            SteadyVerdict::Steady
        };
        state.settled = cuts
            .iter()
            .map(|(name, c)| Settled {
                series: name.to_string(),
                at_s: c.as_ref().ok().map(|&t| secs(t)),
            })
            .collect();
        if state.verdict != SteadyVerdict::Steady {
            return state;
        }
        let start = cuts
            .iter()
            .filter_map(|(_, c)| c.ok())
            .max()
            .unwrap_or(origin);
        let first_bin = ((start - origin) / binned.width) as usize;
        let inside = |s: &[(u64, f64)]| -> Vec<f64> {
            s.iter()
                .filter(|(t, _)| *t >= start)
                .map(|(_, v)| *v)
                .collect()
        };
        state.start_s = Some(secs(start));
        state.end_s = Some(secs(last_send));
        state.window_ns = Some([start, last_send]);
        state.requests = ttft.iter().filter(|(t, _)| *t >= start).count() as u64;
        state.output_throughput = window_mean(&binned.throughput[first_bin..]);
        state.in_flight = window_mean(&binned.in_flight[first_bin..]);
        state.ttft_ms = window_mean(&inside(&ttft));
        state.tpot_ms = window_mean(&inside(&tpot));
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise in [-1, 1): a linear congruential sequence.
    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn mser5_cuts_a_known_warm_up_within_one_batch() {
        for (warm, seed) in [(50, 1), (35, 2), (80, 3), (10, 4), (61, 5)] {
            // A linear climb from 0 to 100 over `warm` observations, then 100 ± 0.5: a
            // settled series as quiet as the exact simulator's.
            let quiet: Vec<f64> = noise(300, seed)
                .into_iter()
                .enumerate()
                .map(|(i, e)| {
                    if i < warm {
                        100.0 * i as f64 / warm as f64
                    } else {
                        100.0 + 0.5 * e
                    }
                })
                .collect();
            let cut = mser5(&quiet).unwrap();
            assert!(
                cut.abs_diff(warm) <= MSER_BATCH,
                "warm-up {warm}: cut at {cut}"
            );
            // Ten times the noise: never early by more than a batch (no warm-up kept), and
            // the window keeps at least half the series.
            let noisy: Vec<f64> = quiet
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    if i < warm {
                        *x
                    } else {
                        100.0 + (x - 100.0) * 10.0
                    }
                })
                .collect();
            let cut = mser5(&noisy).unwrap();
            assert!(
                cut + MSER_BATCH >= warm && cut <= 150,
                "noisy, warm-up {warm}: cut at {cut}"
            );
        }
    }

    #[test]
    fn mser5_finds_most_step_changes_within_one_batch() {
        // 2,000 draws: a level of 90, then 100 from an observation drawn in 10..140 on, with
        // noise of ±5 throughout; the cut lands within one batch of the step in 1,933 of
        // them (1,241 without the step back; docs/metrics.md).
        let draws = 2000;
        let hits = (0..draws as u64)
            .filter(|seed| {
                let e = noise(301, seed * 7 + 13);
                let warm = 10 + ((e[300] + 1.0) * 65.0) as usize;
                let series: Vec<f64> = (0..300)
                    .map(|i| if i < warm { 90.0 } else { 100.0 } + 5.0 * e[i])
                    .collect();
                mser5(&series).is_ok_and(|cut| cut.abs_diff(warm) <= MSER_BATCH)
            })
            .count();
        assert!(hits >= 1900, "{hits} of {draws}");
    }

    #[test]
    fn one_stalled_batch_is_not_a_transient() {
        // The exact simulator's TTFT seen on a busy machine: 50.1 ms, but a stall delayed 3
        // requests of one batch of 5 by 3.5 ms; anywhere in the series, near its middle too.
        for at in [3, 15, 20, 21, 35] {
            let series: Vec<f64> = (0..210)
                .map(|i| {
                    if i / MSER_BATCH == at && i % 5 < 3 {
                        53.6
                    } else {
                        50.1
                    }
                })
                .collect();
            assert_eq!(mser5(&series), Ok(0), "stall in batch {at}");
        }
        // Held for two batches at the start, it is a warm-up.
        let series: Vec<f64> = (0..210)
            .map(|i| if i < 2 * MSER_BATCH { 53.6 } else { 50.1 })
            .collect();
        assert_eq!(mser5(&series), Ok(2 * MSER_BATCH));
    }

    #[test]
    fn mser5_keeps_a_settled_series_and_refuses_a_ramp_or_a_stub() {
        let flat: Vec<f64> = noise(200, 9).into_iter().map(|e| 50.0 + e).collect();
        assert!(mser5(&flat).unwrap() <= 2 * MSER_BATCH);
        let ramp: Vec<f64> = (0..200).map(|i| i as f64).collect();
        assert_eq!(mser5(&ramp), Err(SteadyVerdict::StillRamping));
        assert_eq!(
            mser5(&flat[..MIN_BATCHES * MSER_BATCH - 1]),
            Err(SteadyVerdict::TooShort)
        );
    }

    #[test]
    fn batch_means_interval_is_the_t_interval_of_the_batch_means() {
        // 20 observations, 10 batches of 2: batch means 1, 2, ..., 10.
        let series: Vec<f64> = (1..=10)
            .flat_map(|m| [m as f64 - 0.5, m as f64 + 0.5])
            .collect();
        let [lo, hi] = batch_means_ci95(&series).unwrap();
        // mean 5.5, s = sqrt(82.5/9) = 3.0277, t(9) = 2.262: half-width 2.262 · 3.0277 / √10.
        let half = 2.262 * (82.5f64 / 9.0).sqrt() / 10f64.sqrt();
        assert!((lo - (5.5 - half)).abs() < 1e-9 && (hi - (5.5 + half)).abs() < 1e-9);
        assert_eq!(batch_means_ci95(&series[..7]), None);
    }

    fn record(id: u64, sent_ms: u64, ttft_ms: u64, tokens: u64) -> RequestRecord {
        let sent = sent_ms * 1_000_000;
        let chunks: Vec<u64> = (0..tokens)
            .map(|k| sent + (ttft_ms + 10 * k) * 1_000_000)
            .collect();
        RequestRecord {
            id,
            scheduled_ns: sent,
            sent_ns: sent,
            end_ns: *chunks.last().unwrap(),
            chunk_ns: chunks,
            output_tokens: Some(tokens),
            ..Default::default()
        }
    }

    #[test]
    fn detect_finds_the_end_of_a_slow_start_and_ends_at_the_last_send() {
        // One request every 10 ms for 4 s; the first second's TTFT falls from 500 ms to 20 ms
        // (a cold server), then stays at 20 ms.
        let records: Vec<RequestRecord> = (0..400)
            .map(|i| {
                let ttft = if i < 100 { 500 - 480 * i / 100 } else { 20 };
                record(i, 10 * i, ttft, 10)
            })
            .collect();
        let s = detect(|| &records, 1.0);
        assert_eq!(s.verdict, SteadyVerdict::Steady, "{s:?}");
        let ttft_at = s.settled.iter().find(|x| x.series == "ttft_ms").unwrap();
        let at = ttft_at.at_s.unwrap();
        assert!((at - 1.0).abs() <= 0.05 + 1e-9, "TTFT settled at {at} s");
        assert!(s.start_s.unwrap() >= at);
        assert_eq!(s.end_s, Some(3.99));
        let ttft = s.ttft_ms.as_ref().unwrap();
        assert!((ttft.mean - 20.0).abs() < 1e-9, "{ttft:?}");
        // Ten 10-token requests... each second: 100 requests × 10 tokens = 1000 tokens/s.
        let thr = s.output_throughput.as_ref().unwrap().mean;
        assert!((thr - 1000.0).abs() < 60.0, "throughput {thr}");
    }

    #[test]
    fn one_pass_with_the_span_of_the_sends_finds_what_two_passes_find() {
        let records: Vec<RequestRecord> = (0..400)
            .map(|i| record(i, 10 * i, if i < 100 { 300 - 2 * i } else { 20 }, 10))
            .chain(std::iter::once(RequestRecord {
                warmup: true,
                ..record(400, 5000, 20, 10)
            }))
            .collect();
        let mut d = Detector::new(Some((0, 3_990_000_000)), 1.0);
        records.iter().for_each(|r| d.add(r));
        let one = d.finish();
        assert_eq!(one.verdict, SteadyVerdict::Steady);
        assert_eq!(one, detect(|| &records, 1.0));
        assert_eq!(
            Detector::new(None, 1.0).finish().verdict,
            SteadyVerdict::TooShort
        );
    }

    #[test]
    fn detect_says_when_a_run_is_too_short_or_never_settles() {
        let few: Vec<RequestRecord> = (0..20).map(|i| record(i, 10 * i, 20, 5)).collect();
        assert_eq!(detect(|| &few, 1.0).verdict, SteadyVerdict::TooShort);
        // TTFT climbing for the whole run: a server falling behind.
        let climbing: Vec<RequestRecord> =
            (0..400).map(|i| record(i, 10 * i, 20 + i, 10)).collect();
        assert_eq!(
            detect(|| &climbing, 1.0).verdict,
            SteadyVerdict::StillRamping
        );
        assert_eq!(
            detect(|| &[] as &[RequestRecord], 1.0).verdict,
            SteadyVerdict::TooShort
        );
    }
}
