//! A trace's figures (docs/metrics.md, "Trace analysis"): its input and output length
//! distributions, its arrival rate in fixed windows, its sessions, its prefix reuse, and the
//! hit rate a least-recently-used prefix cache of given sizes would have. Pure: the trace is
//! read by `read.rs`, the figures printed by `render::trace_stats`.

use serde::Serialize;

use super::error::{TraceFileError, MAX_CACHE_SIZES, MAX_LISTED_WINDOWS};
use super::lru::{hits, Chains};
use super::read::TraceLine;
use crate::config::limits::MAX_WAIT_S;
use crate::results::stats::percentile;

/// What an analysis is asked: the trace's block size, the rate's window, and the cache sizes
/// to simulate (empty: 1/8, 1/4, 1/2 and all of the trace's distinct blocks).
#[derive(Clone, Debug)]
pub struct Spec {
    pub block: u64,
    pub window_s: f64,
    pub cache_blocks: Vec<u64>,
}

impl Spec {
    /// The spec, its values checked.
    pub fn check(self) -> Result<Spec, TraceFileError> {
        if !(1..=super::error::MAX_BLOCK).contains(&self.block) {
            return Err(TraceFileError::BlockSize(self.block));
        }
        if !(self.window_s.is_finite() && (0.001..=MAX_WAIT_S).contains(&self.window_s)) {
            return Err(TraceFileError::Window(self.window_s));
        }
        if self.cache_blocks.len() > MAX_CACHE_SIZES || self.cache_blocks.contains(&0) {
            return Err(TraceFileError::CacheSizes);
        }
        Ok(self)
    }
}

/// Count, mean, p50, p90, p99 and max of one set of lengths (percentiles by linear
/// interpolation, as every percentile servebench prints).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Lengths {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Lengths {
    fn of(values: impl Iterator<Item = u64>) -> Option<Lengths> {
        let mut v: Vec<f64> = values.map(|x| x as f64).collect();
        v.sort_by(f64::total_cmp);
        let p = |q| percentile(&v, q).unwrap_or(0.0);
        (!v.is_empty()).then(|| Lengths {
            count: v.len() as u64,
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p50: p(50.0),
            p90: p(90.0),
            p99: p(99.0),
            max: v[v.len() - 1],
        })
    }
}

/// Requests per second in windows of `window_s` from the first request's time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rate {
    pub window_s: f64,
    /// Windows from the first request's to the last's, both included.
    pub windows: u64,
    /// Requests ÷ (windows × window_s).
    pub mean_per_s: f64,
    /// The busiest window's requests ÷ window_s, and where it starts (s from the first).
    pub peak_per_s: f64,
    pub peak_at_s: f64,
    /// Each window's requests, when there are at most [`MAX_LISTED_WINDOWS`] windows.
    pub per_window: Option<Vec<u64>>,
}

/// Sessions: how many, and the turns (requests) of each.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sessions {
    pub count: u64,
    pub turns: Lengths,
}

/// Prefix reuse over the requests that carry `hash_ids`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reuse {
    pub block_size: u64,
    pub requests: u64,
    pub blocks: u64,
    /// Distinct blocks: distinct chains of ids.
    pub distinct: u64,
    /// Blocks whose chain an earlier request already had ÷ blocks.
    pub reused_block_share: f64,
    /// Prompt tokens of those requests, and the share an unbounded prefix cache would hit
    /// (the designed reuse the replay reports).
    pub prompt_tokens: u64,
    pub reused_token_share: f64,
}

/// The hit rate of an LRU prefix cache of `cache_blocks` blocks: hit tokens ÷ prompt tokens.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CacheRow {
    pub cache_blocks: u64,
    pub hit_tokens: u64,
    pub hit_rate: f64,
}

/// Every figure of one trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceAnalysis {
    pub file: String,
    pub requests: u64,
    /// Last request's time less the first's.
    pub duration_s: f64,
    pub input: Lengths,
    /// Over the requests that give an `output_length`; `None` when none does.
    pub output: Option<Lengths>,
    pub rate: Rate,
    pub sessions: Option<Sessions>,
    pub reuse: Option<Reuse>,
    pub cache: Vec<CacheRow>,
}

/// The figures of `lines` (in time order, as `read` returns them) under `spec`.
pub fn analyze(file: &str, lines: &[TraceLine], spec: &Spec) -> TraceAnalysis {
    let duration_s = lines.last().map_or(0.0, |l| l.at_ms / 1e3);
    let input = Lengths::of(lines.iter().map(|l| l.input)).unwrap_or(Lengths {
        count: 0,
        mean: 0.0,
        p50: 0.0,
        p90: 0.0,
        p99: 0.0,
        max: 0.0,
    });
    let (reuse, cache) = reuse(lines, spec);
    TraceAnalysis {
        file: file.to_string(),
        requests: lines.len() as u64,
        duration_s,
        input,
        output: Lengths::of(lines.iter().filter_map(|l| l.output)),
        rate: rate(lines, spec.window_s),
        sessions: sessions(lines),
        reuse,
        cache,
    }
}

fn rate(lines: &[TraceLine], window_s: f64) -> Rate {
    let w_ms = window_s * 1e3;
    let index = |l: &TraceLine| (l.at_ms / w_ms).floor() as u64;
    let windows = lines.last().map_or(1, |l| index(l) + 1);
    let mut per_window = (windows <= MAX_LISTED_WINDOWS).then(|| vec![0u64; windows as usize]);
    let (mut peak, mut peak_at, mut run, mut run_at) = (0u64, 0u64, 0u64, u64::MAX);
    for l in lines {
        let k = index(l);
        if let Some(p) = per_window.as_mut() {
            p[k as usize] += 1;
        }
        if k != run_at {
            (run, run_at) = (0, k);
        }
        run += 1;
        if run > peak {
            (peak, peak_at) = (run, k);
        }
    }
    Rate {
        window_s,
        windows,
        mean_per_s: lines.len() as f64 / (windows as f64 * window_s),
        peak_per_s: peak as f64 / window_s,
        peak_at_s: peak_at as f64 * window_s,
        per_window,
    }
}

fn sessions(lines: &[TraceLine]) -> Option<Sessions> {
    let n = lines.iter().filter_map(|l| l.session).max()? as usize + 1;
    let mut turns = vec![0u64; n];
    for s in lines.iter().filter_map(|l| l.session) {
        turns[s as usize] += 1;
    }
    Some(Sessions {
        count: n as u64,
        turns: Lengths::of(turns.into_iter())?,
    })
}

/// Prefix reuse and the cache table, over the requests with `hash_ids`.
fn reuse(lines: &[TraceLine], spec: &Spec) -> (Option<Reuse>, Vec<CacheRow>) {
    let with: Vec<&TraceLine> = lines.iter().filter(|l| !l.blocks.is_empty()).collect();
    if with.is_empty() {
        return (None, Vec::new());
    }
    let chains = Chains::new(with.iter().map(|l| l.blocks.as_slice()));
    let blocks: u64 = with.iter().map(|l| l.blocks.len() as u64).sum();
    let distinct = u64::from(chains.distinct);
    let tokens: u64 = with.iter().map(|l| l.input).sum();
    let share = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let unbounded: u64 = hits(&chains, u64::MAX).iter().sum();
    let reuse = Reuse {
        block_size: spec.block,
        requests: with.len() as u64,
        blocks,
        distinct,
        reused_block_share: share(blocks - distinct, blocks),
        prompt_tokens: tokens,
        reused_token_share: share(unbounded, tokens),
    };
    let mut sizes = spec.cache_blocks.clone();
    if sizes.is_empty() {
        sizes = [8, 4, 2, 1].iter().map(|d| (distinct / d).max(1)).collect();
        sizes.dedup();
    }
    let cache = (sizes.into_iter())
        .map(|n| {
            let hit: u64 = hits(&chains, n).iter().sum();
            CacheRow {
                cache_blocks: n,
                hit_tokens: hit,
                hit_rate: share(hit, tokens),
            }
        })
        .collect();
    (Some(reuse), cache)
}
