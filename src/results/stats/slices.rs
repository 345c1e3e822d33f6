//! Time slices (`--time-slice S`): a run's figures per window of S seconds from the start of
//! its measured window, beside the whole run's (docs/metrics.md, "Time slices").
//!
//! - The windows: window i is [i·S, (i+1)·S) seconds from the run's first scheduled send (the
//!   start of the summary's `duration_s`); the last one ends at the run's last request end, so
//!   it may be shorter than S, and its rates are over its own width. Times are the records'
//!   times multiplied by the simulated server's time scale, as every figure is.
//! - A request is *started* in the window its first byte was written in (`sent_ns`), and
//!   *ends* in the window its record ended in (`end_ns`): completed when it succeeded, failed
//!   (an error, by kind) otherwise. *In flight* at a window's end: started in it or before, and
//!   not ended in it or before.
//! - Latencies (TTFT, ITL, E2EL, the server's queue) belong to the window their request ended
//!   in: a window's ITL gaps are those of the requests that completed in it.
//! - Output tokens belong to the window their chunk arrived in (a request spanning windows
//!   counts in each the part it streamed there): a chunk carries its own count where the
//!   server gave per-chunk counts summing to the request's N, else N spread evenly over the
//!   request's chunks; so the windows' tokens sum to the run's `total_output_tokens`.
//! - Goodput: requests that completed in the window and met the run's SLOs, over its width.
//! - Percentiles (p50, p90, p99) need [`MIN_PERCENTILE_SAMPLES`] samples in the window; with
//!   fewer the stat is marked `too_few` and has only its count and mean.
//!
//! Slices are computed from the union of a run's records after it (its records file, which
//! every `--client-threads` lane writes into, or a merge's shards on one time axis), so they
//! need no merging and a re-slice of a saved run (`report --time-slice`) gives the same
//! figures.

use std::borrow::Borrow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::distribution::{NS_PER_MS, NS_PER_S};
use super::request::{itl_gaps_ns, RequestMetrics, ServerTimings};
use super::samples::SampleSet;
use super::summary::SummaryOptions;
use crate::config::limits::{check_time_slice, LimitError, MAX_TIME_SLICES};
use crate::measure::output_check::Verdict;
use crate::measure::record::RequestRecord;

/// Fewest samples a window's percentile is computed from: with fewer, a p99 would be the
/// largest of a handful and a p50 one request's value.
pub const MIN_PERCENTILE_SAMPLES: u64 = 10;
/// The percentiles of every sliced latency.
const PS: [f64; 3] = [50.0, 90.0, 99.0];

fn is_false(b: &bool) -> bool {
    !*b
}

/// One latency's figures in one window, ms.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SliceStat {
    /// Samples in the window.
    pub count: u64,
    /// Absent when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    /// Absent when there are fewer than [`MIN_PERCENTILE_SAMPLES`] samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<f64>,
    /// Some samples, but too few for percentiles.
    #[serde(default, skip_serializing_if = "is_false")]
    pub too_few: bool,
}

impl SliceStat {
    fn of(set: SampleSet) -> SliceStat {
        let Some(d) = set.finish(&PS) else {
            return SliceStat::default();
        };
        let enough = d.count >= MIN_PERCENTILE_SAMPLES;
        let at = |p| d.at(p).filter(|_| enough);
        SliceStat {
            count: d.count,
            mean: Some(d.mean),
            p50: at(50.0),
            p90: at(90.0),
            p99: at(99.0),
            too_few: !enough,
        }
    }
}

/// One window's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// The window, seconds from the run's first scheduled send.
    pub start_s: f64,
    pub end_s: f64,
    /// Requests sent in the window.
    pub started: u64,
    /// Requests that ended in the window: successful, and failed (by kind).
    pub completed: u64,
    pub failed: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failures_by_kind: BTreeMap<String, u64>,
    /// Requests in flight at the window's end.
    pub in_flight: u64,
    /// Output tokens whose chunk arrived in the window, and that over its width.
    pub output_tokens: f64,
    pub output_throughput: f64,
    /// Completed requests over the window's width.
    pub request_throughput: f64,
    /// Completed requests that met every SLO, and that over the width; absent without SLOs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good_requests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_goodput: Option<f64>,
    /// Latencies of the requests that completed in the window, ms.
    pub ttft_ms: SliceStat,
    pub itl_ms: SliceStat,
    pub e2el_ms: SliceStat,
    /// The server's queueing (`ServerTimings::queue_ms`), ms; absent when no request of the
    /// run carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_queue_ms: Option<SliceStat>,
}

/// A run's time slices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slices {
    /// S, the windows' width, seconds.
    pub seconds: f64,
    /// [`MIN_PERCENTILE_SAMPLES`] when the slices were computed.
    pub min_samples: u64,
    pub windows: Vec<Window>,
    /// The run spans more than [`MAX_TIME_SLICES`] windows of S: how many; `windows` is then
    /// empty (re-slice coarser with `report --time-slice`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub too_many_windows: Option<u64>,
}

/// What one window gathers.
struct Acc {
    started: u64,
    completed: u64,
    failed: u64,
    failures_by_kind: BTreeMap<String, u64>,
    tokens: f64,
    good: u64,
    ttft: SampleSet,
    itl: SampleSet,
    e2el: SampleSet,
    queue: SampleSet,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            started: 0,
            completed: 0,
            failed: 0,
            failures_by_kind: BTreeMap::new(),
            tokens: 0.0,
            good: 0,
            ttft: SampleSet::default(),
            itl: SampleSet::default(),
            e2el: SampleSet::default(),
            queue: SampleSet::default(),
        }
    }
}

/// The windows being filled: on the records' clock, from `t0`, `width_ns` wide.
struct Windows<'a> {
    t0: u64,
    width_ns: f64,
    k: f64,
    opts: &'a SummaryOptions,
    acc: Vec<Acc>,
    queue_known: bool,
}

impl Windows<'_> {
    /// The window a record time falls in (times past the last window's end are in it).
    fn at(&self, t: u64) -> usize {
        let i = (t.saturating_sub(self.t0) as f64 / self.width_ns).floor();
        (i as usize).min(self.acc.len() - 1)
    }

    fn add(&mut self, r: &RequestRecord) {
        let k = self.k;
        let ms_k = |ns: u64| ns as f64 * k / NS_PER_MS;
        let started = self.at(r.sent_ns);
        self.acc[started].started += 1;
        let ended = self.at(r.end_ns.max(r.sent_ns));
        let Some(m) = RequestMetrics::of(r).map(|m| m.scaled(k)) else {
            let a = &mut self.acc[ended];
            a.failed += 1;
            // As the summary names a failure.
            let kind = r.outcome.failure_kind().map_or("no_output", |k| k.as_str());
            *a.failures_by_kind.entry(kind.to_string()).or_insert(0) += 1;
            return;
        };
        // A good request, as the summary judges it.
        let valid = (r.output_check.as_ref()).is_some_and(|c| c.verdict == Verdict::Valid);
        let good = (self.opts.goodput.is_empty() || m.meets(&self.opts.goodput))
            && (valid || !self.opts.valid_output);
        let ms = |ns: u64| ns as f64 / NS_PER_MS;
        {
            let a = &mut self.acc[ended];
            a.completed += 1;
            a.good += good as u64;
            a.e2el.add(ms(m.e2el_ns));
        }
        // An answer per input (embeddings) has no output figures, as in the summary.
        if r.inputs.is_some() {
            return;
        }
        let n = m.output_tokens as f64;
        let chunks = r.chunk_ns.len();
        let per_chunk = (r.chunk_tokens.as_ref()).filter(|c| {
            c.len() == chunks && c.iter().map(|&t| u64::from(t)).sum::<u64>() == m.output_tokens
        });
        for (i, &t) in r.chunk_ns.iter().enumerate() {
            let tokens = per_chunk.map_or(n / chunks as f64, |c| f64::from(c[i]));
            let w = self.at(t);
            self.acc[w].tokens += tokens;
        }
        let a = &mut self.acc[ended];
        a.ttft.add(ms(m.ttft_ns));
        a.itl.extend(itl_gaps_ns(r).map(ms_k));
        if let Some(q) = ServerTimings::of(r).queue_ms {
            a.queue.add(q);
            self.queue_known = true;
        }
    }

    /// The windows' figures; `span_s` is the run's duration, where the last window ends.
    fn finish(self, seconds: f64, span_s: f64) -> Vec<Window> {
        let has_slos = !self.opts.goodput.is_empty() || self.opts.valid_output;
        let queue_known = self.queue_known;
        let mut in_flight = 0u64;
        let mut out = Vec::with_capacity(self.acc.len());
        for (i, a) in self.acc.into_iter().enumerate() {
            let start_s = i as f64 * seconds;
            let end_s = ((i + 1) as f64 * seconds).min(span_s).max(start_s);
            let width = end_s - start_s;
            let per_s = |x: f64| if width > 0.0 { x / width } else { 0.0 };
            in_flight = (in_flight + a.started).saturating_sub(a.completed + a.failed);
            out.push(Window {
                start_s,
                end_s,
                started: a.started,
                completed: a.completed,
                failed: a.failed,
                failures_by_kind: a.failures_by_kind,
                in_flight,
                output_tokens: a.tokens,
                output_throughput: per_s(a.tokens),
                request_throughput: per_s(a.completed as f64),
                good_requests: has_slos.then_some(a.good),
                request_goodput: has_slos.then(|| per_s(a.good as f64)),
                ttft_ms: SliceStat::of(a.ttft),
                itl_ms: SliceStat::of(a.itl),
                e2el_ms: SliceStat::of(a.e2el),
                server_queue_ms: queue_known.then(|| SliceStat::of(a.queue)),
            });
        }
        out
    }
}

/// Cuts a run into windows of `seconds` (S) and computes each one's figures. `records` gives
/// the run's records each time it is called (they are read twice: once for the run's span,
/// once into the windows), so a records file can be streamed rather than held; warm-ups are
/// skipped. `opts` are the summary's (the SLOs, the time scale). S out of bounds
/// (`limits::check_time_slice`) is refused; a run longer than [`MAX_TIME_SLICES`] windows of
/// S gets none, and says how many it would have.
pub fn slice<R, I>(
    records: impl Fn() -> I,
    seconds: f64,
    opts: &SummaryOptions,
) -> Result<Slices, LimitError>
where
    R: Borrow<RequestRecord>,
    I: IntoIterator<Item = R>,
{
    check_time_slice(seconds)?;
    let k = if opts.time_scale > 0.0 && opts.time_scale.is_finite() {
        opts.time_scale
    } else {
        1.0
    };
    let mut slices = Slices {
        seconds,
        min_samples: MIN_PERCENTILE_SAMPLES,
        windows: Vec::new(),
        too_many_windows: None,
    };
    let (mut t0, mut last) = (u64::MAX, 0u64);
    for r in records() {
        let r = r.borrow();
        if !r.warmup {
            t0 = t0.min(r.scheduled_ns);
            last = last.max(r.end_ns).max(r.sent_ns);
        }
    }
    if t0 == u64::MAX {
        return Ok(slices);
    }
    let span_s = last.saturating_sub(t0) as f64 * k / NS_PER_S;
    let n = ((span_s / seconds).ceil() as u64).max(1);
    if n > MAX_TIME_SLICES {
        slices.too_many_windows = Some(n);
        return Ok(slices);
    }
    let mut w = Windows {
        t0,
        width_ns: seconds * NS_PER_S / k,
        k,
        opts,
        acc: (0..n).map(|_| Acc::new()).collect(),
        queue_known: false,
    };
    for r in records() {
        let r = r.borrow();
        if !r.warmup {
            w.add(r);
        }
    }
    slices.windows = w.finish(seconds, span_s);
    Ok(slices)
}
