//! Pure statistics: every figure servebench prints is computed here, from records (and from the
//! server metrics scraped during a run), and only here.
//!
//! The definitions are in `docs/metrics.md`; each function names the one it implements.
//! No async, no I/O, no formatting. Inputs are [`RequestRecord`]s; outputs are plain numbers in
//! the units their names carry (`_ms`, `_s`, per second).
//!
//! Percentiles use one method everywhere: linear interpolation between order statistics
//! (numpy's default `linear` method, so the same samples give the numbers vLLM prints).
//!
//! To add a figure: define it in `docs/metrics.md`, compute it in [`summarize`], add a field to
//! [`RunSummary`] (with `#[serde(default)]`), and test it against a hand-computed value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{Metric, Slo};
use crate::measure::record::{RequestRecord, TokenSource};

const NS_PER_MS: f64 = 1_000_000.0;
const NS_PER_S: f64 = 1_000_000_000.0;

/// The `p`-th percentile (0..=100) of `sorted` (ascending), by linear interpolation between
/// the closest ranks: rank = p/100 × (n − 1). `None` for no samples.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    (!sorted.is_empty()).then(|| interpolate(sorted.len() as u64, p, |k| sorted[k as usize]))
}

/// Linear interpolation between the order statistics (`at(k)`: the k-th smallest of `n > 0`
/// samples, from 0) around rank p/100 × (n − 1): the one percentile method of [`percentile`],
/// also applied to a histogram's order statistics.
fn interpolate(n: u64, p: f64, at: impl Fn(u64) -> f64) -> f64 {
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
        Some(Distribution {
            count: samples.len() as u64,
            mean,
            median: pct(50.0),
            std: var.sqrt(),
            min: samples[0],
            max: samples[samples.len() - 1],
            percentiles: ps.iter().map(|&p| (p, pct(p))).collect(),
            percentile_method: PercentileMethod::Exact,
        })
    }

    /// The value at percentile `p`, if it was requested.
    pub fn at(&self, p: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|(q, _)| *q == p)
            .map(|(_, v)| *v)
    }
}

/// Per-request figures of one successful request (definitions in `docs/metrics.md`).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestMetrics {
    /// First output chunk − send.
    pub ttft_ns: u64,
    /// First output chunk − scheduled send (includes client-side queueing).
    pub ttft_from_scheduled_ns: u64,
    /// Last output chunk − send.
    pub e2el_ns: u64,
    /// N, output tokens, from the record's one source.
    pub output_tokens: u64,
    /// (E2EL − TTFT) / (N − 1), milliseconds; `None` when N < 2.
    pub tpot_ms: Option<f64>,
    /// N / E2EL, tokens per second.
    pub output_throughput: f64,
}

impl RequestMetrics {
    /// The figures of a successful record with at least one output chunk; `None` otherwise.
    pub fn of(r: &RequestRecord) -> Option<RequestMetrics> {
        if !r.is_ok() {
            return None;
        }
        let first = r.first_chunk_ns()?;
        let last = r.last_chunk_ns()?;
        let ttft_ns = first.saturating_sub(r.sent_ns);
        let e2el_ns = last.saturating_sub(r.sent_ns);
        let n = r.output_tokens.unwrap_or(r.chunk_ns.len() as u64);
        let tpot_ms = (n >= 2).then(|| (e2el_ns - ttft_ns) as f64 / NS_PER_MS / (n - 1) as f64);
        let output_throughput = if e2el_ns > 0 {
            n as f64 / (e2el_ns as f64 / NS_PER_S)
        } else {
            0.0
        };
        Some(RequestMetrics {
            ttft_ns,
            ttft_from_scheduled_ns: first.saturating_sub(r.scheduled_ns),
            e2el_ns,
            output_tokens: n,
            tpot_ms,
            output_throughput,
        })
    }

    /// The figures in a clock `k` times slower (the simulated server's time, `--time-scale`).
    pub fn scaled(self, k: f64) -> RequestMetrics {
        if k == 1.0 {
            return self;
        }
        let ns = |x: u64| (x as f64 * k) as u64;
        RequestMetrics {
            ttft_ns: ns(self.ttft_ns),
            ttft_from_scheduled_ns: ns(self.ttft_from_scheduled_ns),
            e2el_ns: ns(self.e2el_ns),
            output_tokens: self.output_tokens,
            tpot_ms: self.tpot_ms.map(|t| t * k),
            output_throughput: self.output_throughput / k,
        }
    }

    /// True when the request meets every SLO. A TPOT SLO cannot be broken by a one-token
    /// request (TPOT is undefined for it).
    pub fn meets(&self, slos: &[Slo]) -> bool {
        slos.iter().all(|slo| {
            let value = match slo.metric {
                Metric::Ttft => Some(self.ttft_ns as f64 / NS_PER_MS),
                Metric::E2el => Some(self.e2el_ns as f64 / NS_PER_MS),
                Metric::Tpot => self.tpot_ms,
                Metric::Itl => None,
            };
            value.is_none_or(|v| v <= slo.max_ms)
        })
    }
}

/// What the server said about its own timing of one request (llama.cpp's `timings` object),
/// read from the record's verbatim `server_timings`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerTimings {
    /// `predicted_per_token_ms`: decode time per output token, ms; `None` when absent, not a
    /// finite number, or when the server predicted fewer than 2 tokens (then it is not a
    /// per-token time: llama.cpp reports 0).
    pub decode_per_token_ms: Option<f64>,
    /// `prompt_ms`: prompt processing time, ms.
    pub prompt_ms: Option<f64>,
}

impl ServerTimings {
    /// Reads the figures from a record; all `None` when it has no server timings.
    pub fn of(r: &RequestRecord) -> ServerTimings {
        let Some(t) = r.server_timings.as_ref() else {
            return ServerTimings::default();
        };
        let num = |key: &str| {
            t.get(key)
                .and_then(serde_json::Value::as_f64)
                .filter(|v| v.is_finite())
        };
        let enough_tokens = num("predicted_n").is_none_or(|n| n >= 2.0);
        ServerTimings {
            decode_per_token_ms: num("predicted_per_token_ms").filter(|_| enough_tokens),
            prompt_ms: num("prompt_ms"),
        }
    }
}

/// Inter-chunk gaps of a record, nanoseconds: `chunk[i] − chunk[i−1]`.
pub fn itl_gaps_ns(r: &RequestRecord) -> impl Iterator<Item = u64> + '_ {
    r.chunk_ns.windows(2).map(|w| w[1].saturating_sub(w[0]))
}

/// Per-token ITL samples of a record, nanoseconds, when its per-chunk token counts are known:
/// the first chunk's extra tokens arrived with the first token (gaps of 0), and chunk i ≥ 1
/// with k tokens contributes k gaps of (chunk[i] − chunk[i−1]) / k. So there are N − 1
/// samples summing to E2EL − TTFT: their mean over a request is its TPOT.
pub fn itl_per_token_ns(r: &RequestRecord) -> impl Iterator<Item = f64> + '_ {
    let counts = r
        .chunk_tokens
        .as_deref()
        .filter(|c| c.len() == r.chunk_ns.len() && !c.is_empty());
    let first = counts.map_or(0, |c| c[0].saturating_sub(1) as usize);
    let gaps = counts.into_iter().flat_map(move |c| {
        c[1..]
            .iter()
            .zip(r.chunk_ns.windows(2))
            .flat_map(|(&k, w)| {
                let k = k.max(1);
                let g = w[1].saturating_sub(w[0]) as f64 / k as f64;
                std::iter::repeat_n(g, k as usize)
            })
    });
    std::iter::repeat_n(0.0, first).chain(gaps)
}

/// What `summarize` needs besides the records.
#[derive(Clone, Debug)]
pub struct SummaryOptions {
    pub percentiles: Vec<f64>,
    pub goodput: Vec<Slo>,
    /// The simulated server's clock speed-up (`--time-scale`): every measured duration is
    /// multiplied by it, so figures read in the simulated server's time. 1 for real servers.
    pub time_scale: f64,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            percentiles: vec![99.0],
            goodput: Vec::new(),
            time_scale: 1.0,
        }
    }
}

/// Everything computed over one run (one load step).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Successful measured requests.
    pub completed: u64,
    /// Failed measured requests.
    pub failed: u64,
    /// Failed requests by kind (`FailureKind::as_str`).
    pub failures_by_kind: BTreeMap<String, u64>,
    /// First scheduled send → last request end, seconds.
    pub duration_s: f64,
    /// Σ prompt tokens over successful requests.
    pub total_input_tokens: u64,
    /// Σ N over successful requests.
    pub total_output_tokens: u64,
    /// completed / duration.
    pub request_throughput: f64,
    /// Requests meeting every SLO / duration; `None` when no SLO was given.
    pub request_goodput: Option<f64>,
    /// Requests meeting every SLO.
    pub good_requests: Option<u64>,
    /// total_output_tokens / duration.
    pub output_throughput: f64,
    /// (total_input_tokens + total_output_tokens) / duration.
    pub total_token_throughput: f64,
    /// Milliseconds, over successful requests (ITL: over all gaps of all successful requests).
    pub ttft_ms: Option<Distribution>,
    pub tpot_ms: Option<Distribution>,
    pub itl_ms: Option<Distribution>,
    pub e2el_ms: Option<Distribution>,
    /// First output chunk − scheduled send, ms: TTFT with client-side queueing included.
    pub ttft_from_scheduled_ms: Option<Distribution>,
    /// Actual send − scheduled send, ms, over every measured request.
    pub schedule_lag_ms: Option<Distribution>,
    /// Time to the first reasoning chunk and to the first answer chunk, ms, over successful
    /// requests that had one (reasoning models).
    #[serde(default)]
    pub time_to_first_reasoning_ms: Option<Distribution>,
    #[serde(default)]
    pub time_to_first_answer_ms: Option<Distribution>,
    /// Successful requests by the source of their output count.
    pub output_token_sources: BTreeMap<String, u64>,
    /// Successful requests by the source of their prompt count.
    #[serde(default)]
    pub input_token_sources: BTreeMap<String, u64>,
    /// Requests where the server's and the tokenizer's output counts differ.
    pub output_count_disagreements: u64,
    /// Output chunks of successful requests (ITL samples = chunks − completed).
    pub total_output_chunks: u64,
    /// The server's own decode time per output token (llama.cpp `timings.predicted_per_token_ms`),
    /// ms, over successful requests that reported it with at least 2 predicted tokens.
    #[serde(default)]
    pub server_decode_per_token_ms: Option<Distribution>,
    /// The server's own prompt processing time (llama.cpp `timings.prompt_ms`), ms, over
    /// successful requests that reported it.
    #[serde(default)]
    pub server_prompt_ms: Option<Distribution>,
    /// Per request, TPOT − the server's decode time per token, ms: what the client side (network,
    /// HTTP, servebench) adds to each token. Over requests that have both.
    #[serde(default)]
    pub tpot_minus_server_decode_ms: Option<Distribution>,
    /// Prompt lengths servebench built (exact under its tokenizer), tokens, successful requests.
    #[serde(default)]
    pub input_len_requested: Option<Distribution>,
    /// Prompt lengths the server counted (usage), tokens: shows chat-template overhead.
    #[serde(default)]
    pub input_len_server: Option<Distribution>,
    /// Requests whose server prompt count differs from the built length.
    #[serde(default)]
    pub input_len_disagreements: u64,
    /// Max output tokens asked for, and N received, over successful requests.
    #[serde(default)]
    pub output_len_requested: Option<Distribution>,
    #[serde(default)]
    pub output_len_received: Option<Distribution>,
    /// Per-token ITL, ms: each chunk's gap spread over its tokens (see docs/metrics.md), over
    /// successful requests whose per-chunk token counts are known.
    #[serde(default)]
    pub itl_per_token_ms: Option<Distribution>,
}

impl RunSummary {
    /// The distribution of a latency metric.
    pub fn metric(&self, m: Metric) -> Option<&Distribution> {
        match m {
            Metric::Ttft => self.ttft_ms.as_ref(),
            Metric::Tpot => self.tpot_ms.as_ref(),
            Metric::Itl => self.itl_ms.as_ref(),
            Metric::E2el => self.e2el_ms.as_ref(),
        }
    }

    /// The figures (their field names) whose percentiles came from an HDR histogram.
    pub fn hdr_figures(&self) -> Vec<&'static str> {
        let all = [
            ("ttft_ms", &self.ttft_ms),
            ("tpot_ms", &self.tpot_ms),
            ("itl_ms", &self.itl_ms),
            ("e2el_ms", &self.e2el_ms),
            ("ttft_from_scheduled_ms", &self.ttft_from_scheduled_ms),
            ("schedule_lag_ms", &self.schedule_lag_ms),
            (
                "time_to_first_reasoning_ms",
                &self.time_to_first_reasoning_ms,
            ),
            ("time_to_first_answer_ms", &self.time_to_first_answer_ms),
            (
                "server_decode_per_token_ms",
                &self.server_decode_per_token_ms,
            ),
            ("server_prompt_ms", &self.server_prompt_ms),
            (
                "tpot_minus_server_decode_ms",
                &self.tpot_minus_server_decode_ms,
            ),
            ("input_len_requested", &self.input_len_requested),
            ("input_len_server", &self.input_len_server),
            ("output_len_requested", &self.output_len_requested),
            ("output_len_received", &self.output_len_received),
            ("itl_per_token_ms", &self.itl_per_token_ms),
        ];
        all.into_iter()
            .filter(|(_, d)| d.as_ref().is_some_and(|d| !d.percentile_method.is_exact()))
            .map(|(name, _)| name)
            .collect()
    }
}

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
const HDR_UNITS: f64 = 1e6;

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
        Distribution {
            count: self.n,
            mean: self.mean,
            median: pct(50.0),
            std: (self.m2 / self.n as f64).sqrt(),
            min: self.min,
            max: self.max,
            percentiles: ps.iter().map(|&p| (p, pct(p))).collect(),
            percentile_method: PercentileMethod::Hdr,
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

/// Computes a [`RunSummary`] over the measured (non-warm-up) records.
pub fn summarize<'a>(
    records: impl IntoIterator<Item = &'a RequestRecord>,
    opts: &SummaryOptions,
) -> RunSummary {
    let mut s = Summarizer::new(opts);
    records.into_iter().for_each(|r| s.add(r));
    s.finish()
}

/// A [`RunSummary`] computed as records arrive, in memory bounded by [`EXACT_SAMPLES_MAX`] per
/// metric: add records one at a time (warm-ups are skipped), merge summarizers of disjoint
/// record sets, then finish.
#[derive(Clone, Debug)]
pub struct Summarizer {
    opts: SummaryOptions,
    completed: u64,
    failed: u64,
    failures_by_kind: BTreeMap<String, u64>,
    first_scheduled: u64,
    last_end: u64,
    total_input_tokens: u64,
    total_output_tokens: u64,
    good: u64,
    output_token_sources: BTreeMap<String, u64>,
    input_token_sources: BTreeMap<String, u64>,
    disagreements: u64,
    total_output_chunks: u64,
    in_disagree: u64,
    ttft: SampleSet,
    tpot: SampleSet,
    itl: SampleSet,
    e2el: SampleSet,
    ttft_sched: SampleSet,
    lag: SampleSet,
    first_reasoning: SampleSet,
    first_answer: SampleSet,
    server_decode: SampleSet,
    server_prompt: SampleSet,
    tpot_minus_decode: SampleSet,
    in_req: SampleSet,
    in_server: SampleSet,
    out_req: SampleSet,
    out_got: SampleSet,
    itl_token: SampleSet,
}

impl Summarizer {
    pub fn new(opts: &SummaryOptions) -> Summarizer {
        Summarizer::with_exact_limit(opts, EXACT_SAMPLES_MAX)
    }

    /// A summarizer whose metrics keep up to `limit` exact samples each (tests use small ones).
    pub fn with_exact_limit(opts: &SummaryOptions, limit: usize) -> Summarizer {
        let set = || SampleSet::with_limit(limit);
        Summarizer {
            opts: opts.clone(),
            completed: 0,
            failed: 0,
            failures_by_kind: BTreeMap::new(),
            first_scheduled: u64::MAX,
            last_end: 0,
            total_input_tokens: 0,
            total_output_tokens: 0,
            good: 0,
            output_token_sources: BTreeMap::new(),
            input_token_sources: BTreeMap::new(),
            disagreements: 0,
            total_output_chunks: 0,
            in_disagree: 0,
            ttft: set(),
            tpot: set(),
            itl: set(),
            e2el: set(),
            ttft_sched: set(),
            lag: set(),
            first_reasoning: set(),
            first_answer: set(),
            server_decode: set(),
            server_prompt: set(),
            tpot_minus_decode: set(),
            in_req: set(),
            in_server: set(),
            out_req: set(),
            out_got: set(),
            itl_token: set(),
        }
    }

    /// The simulated server's clock speed-up, 1 when unset.
    fn time_scale(&self) -> f64 {
        if self.opts.time_scale > 0.0 {
            self.opts.time_scale
        } else {
            1.0
        }
    }

    pub fn add(&mut self, r: &RequestRecord) {
        if r.warmup {
            return;
        }
        let k = self.time_scale();
        // `ms` converts figures already in the server's time (scaled `RequestMetrics`); `ms_k`
        // converts raw record times.
        let ms = |ns: u64| ns as f64 / NS_PER_MS;
        let ms_k = |ns: u64| ns as f64 * k / NS_PER_MS;
        self.first_scheduled = self.first_scheduled.min(r.scheduled_ns);
        self.last_end = self.last_end.max(r.end_ns);
        self.lag.add(ms_k(r.sent_ns.saturating_sub(r.scheduled_ns)));
        let Some(m) = RequestMetrics::of(r).map(|m| m.scaled(k)) else {
            self.failed += 1;
            let kind = r.outcome.failure_kind().map_or("no_output", |k| k.as_str());
            *self.failures_by_kind.entry(kind.to_string()).or_insert(0) += 1;
            return;
        };
        self.completed += 1;
        self.total_input_tokens += r.prompt_tokens.unwrap_or(0);
        self.total_output_tokens += m.output_tokens;
        self.total_output_chunks += r.chunk_ns.len() as u64;
        self.ttft.add(ms(m.ttft_ns));
        self.ttft_sched.add(ms(m.ttft_from_scheduled_ns));
        self.e2el.add(ms(m.e2el_ns));
        self.tpot.extend(m.tpot_ms);
        self.itl.extend(itl_gaps_ns(r).map(ms_k));
        if self.opts.goodput.is_empty() || m.meets(&self.opts.goodput) {
            self.good += 1;
        }
        if let Some(t) = r.first_reasoning_ns {
            self.first_reasoning.add(ms_k(t.saturating_sub(r.sent_ns)));
        }
        if let Some(t) = r.first_answer_ns.filter(|_| r.first_reasoning_ns.is_some()) {
            self.first_answer.add(ms_k(t.saturating_sub(r.sent_ns)));
        }
        let source = r.output_tokens_source.unwrap_or(TokenSource::ChunkCount);
        *self
            .output_token_sources
            .entry(source.as_str().to_string())
            .or_insert(0) += 1;
        if let Some(source) = r.prompt_tokens_source {
            *self
                .input_token_sources
                .entry(source.as_str().to_string())
                .or_insert(0) += 1;
        }
        self.disagreements += r.output_count_disagrees() as u64;
        self.in_req.extend(r.input_len_requested.map(|n| n as f64));
        if r.prompt_tokens_source == Some(TokenSource::ServerUsage) {
            self.in_server.extend(r.prompt_tokens.map(|n| n as f64));
            self.in_disagree += (r.input_len_requested.is_some()
                && r.prompt_tokens != r.input_len_requested) as u64;
        }
        self.out_req
            .extend(r.output_len_requested.map(|n| n as f64));
        self.out_got.add(m.output_tokens as f64);
        self.itl_token
            .extend(itl_per_token_ns(r).map(|g| g * k / NS_PER_MS));
        let server = ServerTimings::of(r);
        self.server_prompt.extend(server.prompt_ms);
        if let Some(decode) = server.decode_per_token_ms {
            self.server_decode.add(decode);
            self.tpot_minus_decode.extend(m.tpot_ms.map(|t| t - decode));
        }
    }

    /// Adds everything `other` was given (same options), as if each record had been added here.
    pub fn merge(&mut self, other: Summarizer) {
        let add_counts = |a: &mut BTreeMap<String, u64>, b: BTreeMap<String, u64>| {
            b.into_iter()
                .for_each(|(k, n)| *a.entry(k).or_insert(0) += n)
        };
        self.completed += other.completed;
        self.failed += other.failed;
        add_counts(&mut self.failures_by_kind, other.failures_by_kind);
        self.first_scheduled = self.first_scheduled.min(other.first_scheduled);
        self.last_end = self.last_end.max(other.last_end);
        self.total_input_tokens += other.total_input_tokens;
        self.total_output_tokens += other.total_output_tokens;
        self.good += other.good;
        add_counts(&mut self.output_token_sources, other.output_token_sources);
        add_counts(&mut self.input_token_sources, other.input_token_sources);
        self.disagreements += other.disagreements;
        self.total_output_chunks += other.total_output_chunks;
        self.in_disagree += other.in_disagree;
        self.ttft.merge(other.ttft);
        self.tpot.merge(other.tpot);
        self.itl.merge(other.itl);
        self.e2el.merge(other.e2el);
        self.ttft_sched.merge(other.ttft_sched);
        self.lag.merge(other.lag);
        self.first_reasoning.merge(other.first_reasoning);
        self.first_answer.merge(other.first_answer);
        self.server_decode.merge(other.server_decode);
        self.server_prompt.merge(other.server_prompt);
        self.tpot_minus_decode.merge(other.tpot_minus_decode);
        self.in_req.merge(other.in_req);
        self.in_server.merge(other.in_server);
        self.out_req.merge(other.out_req);
        self.out_got.merge(other.out_got);
        self.itl_token.merge(other.itl_token);
    }

    /// Measured requests added so far, successful or not.
    pub fn measured(&self) -> u64 {
        self.completed + self.failed
    }

    pub fn finish(self) -> RunSummary {
        let ps = &self.opts.percentiles;
        let duration_s = if self.last_end > self.first_scheduled {
            (self.last_end - self.first_scheduled) as f64 * self.time_scale() / NS_PER_S
        } else {
            0.0
        };
        let per_s = |x: f64| {
            if duration_s > 0.0 {
                x / duration_s
            } else {
                0.0
            }
        };
        let has_slos = !self.opts.goodput.is_empty();
        let (input, output) = (self.total_input_tokens, self.total_output_tokens);
        RunSummary {
            completed: self.completed,
            failed: self.failed,
            failures_by_kind: self.failures_by_kind,
            duration_s,
            total_input_tokens: input,
            total_output_tokens: output,
            request_throughput: per_s(self.completed as f64),
            request_goodput: has_slos.then(|| per_s(self.good as f64)),
            good_requests: has_slos.then_some(self.good),
            output_throughput: per_s(output as f64),
            total_token_throughput: per_s((input + output) as f64),
            ttft_ms: self.ttft.finish(ps),
            tpot_ms: self.tpot.finish(ps),
            itl_ms: self.itl.finish(ps),
            e2el_ms: self.e2el.finish(ps),
            ttft_from_scheduled_ms: self.ttft_sched.finish(ps),
            schedule_lag_ms: self.lag.finish(ps),
            time_to_first_reasoning_ms: self.first_reasoning.finish(ps),
            time_to_first_answer_ms: self.first_answer.finish(ps),
            output_token_sources: self.output_token_sources,
            input_token_sources: self.input_token_sources,
            output_count_disagreements: self.disagreements,
            total_output_chunks: self.total_output_chunks,
            server_decode_per_token_ms: self.server_decode.finish(ps),
            server_prompt_ms: self.server_prompt.finish(ps),
            tpot_minus_server_decode_ms: self.tpot_minus_decode.finish(ps),
            input_len_requested: self.in_req.finish(ps),
            input_len_server: self.in_server.finish(ps),
            input_len_disagreements: self.in_disagree,
            output_len_requested: self.out_req.finish(ps),
            output_len_received: self.out_got.finish(ps),
            itl_per_token_ms: self.itl_token.finish(ps),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::{FailureKind, Outcome};
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    /// A successful record: sent at `sent` ms, chunks at the given ms, N tokens from usage.
    fn rec(sent: u64, chunks: &[u64], n: u64) -> RequestRecord {
        RequestRecord {
            scheduled_ns: sent * MS,
            sent_ns: sent * MS,
            chunk_ns: chunks.iter().map(|c| c * MS).collect(),
            end_ns: chunks.last().copied().unwrap_or(sent) * MS + MS,
            output_tokens: Some(n),
            output_tokens_source: Some(TokenSource::ServerUsage),
            prompt_tokens: Some(10),
            prompt_tokens_source: Some(TokenSource::ServerUsage),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn percentile_matches_numpy_linear() {
        // numpy.percentile([1, 2, 3, 4], [0, 25, 50, 90, 99, 100]) =
        // [1.0, 1.75, 2.5, 3.7, 3.97, 4.0]
        let s = [1.0, 2.0, 3.0, 4.0];
        let expect = [
            (0.0, 1.0),
            (25.0, 1.75),
            (50.0, 2.5),
            (90.0, 3.7),
            (99.0, 3.97),
            (100.0, 4.0),
        ];
        for (p, v) in expect {
            assert!((percentile(&s, p).unwrap() - v).abs() < 1e-12, "p{p}");
        }
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
    }

    #[test]
    fn distribution_uses_population_std() {
        // numpy.std([2, 4, 4, 4, 5, 5, 7, 9]) = 2.0
        let mut s = vec![2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let d = Distribution::of(&mut s, &[50.0]).unwrap();
        assert_eq!(d.mean, 5.0);
        assert_eq!(d.std, 2.0);
        assert_eq!(d.median, 4.5);
        assert_eq!(d.at(50.0), Some(4.5));
    }

    #[test]
    fn hand_computed_request_metrics() {
        // Sent at 0; chunks at 100, 110, 130 ms; 5 tokens (chunks carried several).
        let r = rec(0, &[100, 110, 130], 5);
        let m = RequestMetrics::of(&r).unwrap();
        assert_eq!(m.ttft_ns, 100 * MS);
        assert_eq!(m.e2el_ns, 130 * MS);
        assert_eq!(m.tpot_ms, Some(30.0 / 4.0));
        assert!((m.output_throughput - 5.0 / 0.130).abs() < 1e-9);
        assert_eq!(itl_gaps_ns(&r).collect::<Vec<_>>(), vec![10 * MS, 20 * MS]);
    }

    #[test]
    fn per_token_itl_spreads_each_gap_over_its_tokens() {
        // Chunks at 100, 110, 130 ms carrying 2, 1, 4 tokens (N = 7).
        let mut r = rec(0, &[100, 110, 130], 7);
        r.chunk_tokens = Some(vec![2, 1, 4]);
        let got: Vec<f64> = itl_per_token_ns(&r).map(|g| g / NS_PER_MS).collect();
        assert_eq!(got, vec![0.0, 10.0, 5.0, 5.0, 5.0, 5.0]);
        // N − 1 samples whose mean is TPOT; per-chunk ITL is unchanged.
        let tpot = RequestMetrics::of(&r).unwrap().tpot_ms.unwrap();
        assert!((got.iter().sum::<f64>() / got.len() as f64 - tpot).abs() < 1e-12);
        assert_eq!(itl_gaps_ns(&r).count(), 2);
        // Unknown per-chunk counts: no per-token samples.
        r.chunk_tokens = None;
        assert_eq!(itl_per_token_ns(&r).count(), 0);
    }

    #[test]
    fn one_token_request_has_no_tpot_and_passes_tpot_slo() {
        let m = RequestMetrics::of(&rec(0, &[40], 1)).unwrap();
        assert_eq!(m.tpot_ms, None);
        let slo = Slo {
            metric: Metric::Tpot,
            max_ms: 1.0,
        };
        assert!(m.meets(&[slo]));
    }

    #[test]
    fn hand_computed_summary() {
        let mut failed = rec(5, &[], 0);
        failed.outcome = Outcome::failed(FailureKind::HttpStatus, "HTTP 500");
        failed.end_ns = 300 * MS;
        let mut warm = rec(0, &[1, 2], 2);
        warm.warmup = true;
        warm.end_ns = 10_000 * MS; // would stretch the duration if it counted
        let records = vec![
            rec(0, &[100, 110, 130], 5),
            rec(0, &[200, 220], 3),
            failed,
            warm,
        ];
        let slos = vec![Slo {
            metric: Metric::Ttft,
            max_ms: 150.0,
        }];
        let s = summarize(
            &records,
            &SummaryOptions {
                percentiles: vec![50.0, 99.0],
                goodput: slos.clone(),
                time_scale: 1.0,
            },
        );
        // The same records from a simulator at --time-scale 10: every duration reads 10×
        // longer, token counts do not change.
        let slow = summarize(
            &records,
            &SummaryOptions {
                percentiles: vec![50.0],
                goodput: slos,
                time_scale: 10.0,
            },
        );
        assert!((slow.duration_s - 3.0).abs() < 1e-9);
        assert_eq!(slow.ttft_ms.as_ref().unwrap().mean, 1500.0);
        assert_eq!(slow.tpot_ms.as_ref().unwrap().mean, 87.5);
        assert!((slow.output_throughput - 8.0 / 3.0).abs() < 1e-9);
        assert_eq!(slow.total_output_tokens, 8);
        assert_eq!(
            slow.good_requests,
            Some(0),
            "TTFT 1000 and 2000 ms both break ttft:150"
        );
        assert_eq!((s.completed, s.failed), (2, 1));
        assert_eq!(s.failures_by_kind.get("http_status"), Some(&1));
        // Duration: first scheduled (0) → last end (failed request ended at 300 ms).
        assert!((s.duration_s - 0.3).abs() < 1e-12);
        assert_eq!(s.total_output_tokens, 8);
        assert_eq!(s.total_input_tokens, 20);
        assert!((s.output_throughput - 8.0 / 0.3).abs() < 1e-9);
        assert!((s.request_throughput - 2.0 / 0.3).abs() < 1e-9);
        assert!((s.total_token_throughput - 28.0 / 0.3).abs() < 1e-9);
        assert_eq!(s.good_requests, Some(1));
        assert!((s.request_goodput.unwrap() - 1.0 / 0.3).abs() < 1e-9);
        let ttft = s.ttft_ms.as_ref().unwrap();
        assert_eq!((ttft.mean, ttft.median), (150.0, 150.0));
        // TPOT: 30/4 = 7.5 and 20/2 = 10.
        assert_eq!(s.tpot_ms.as_ref().unwrap().mean, 8.75);
        // ITL pooled: 10, 20, 20.
        let itl = s.itl_ms.as_ref().unwrap();
        assert_eq!((itl.count, itl.median), (3, 20.0));
        assert!((itl.mean - 50.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.e2el_ms.as_ref().unwrap().mean, 175.0);
        assert_eq!(s.schedule_lag_ms.as_ref().unwrap().count, 3);
    }

    #[test]
    fn server_timings_are_summarized_next_to_tpot() {
        let timed = |chunks: &[u64], n: u64, timings: serde_json::Value| RequestRecord {
            server_timings: Some(timings),
            ..rec(0, chunks, n)
        };
        let records = vec![
            // TPOT 30/3 = 10 ms; the server says 9.5 ms per token.
            timed(
                &[50, 60, 70, 80],
                4,
                serde_json::json!({"prompt_ms": 40.0, "predicted_n": 4, "predicted_per_token_ms": 9.5}),
            ),
            // TPOT 40/4 = 10 ms; the server says 8.0.
            timed(
                &[20, 30, 40, 50, 60],
                5,
                serde_json::json!({"prompt_ms": 10.0, "predicted_per_token_ms": 8.0}),
            ),
            // One predicted token: llama.cpp reports 0 per token, which is not a decode time.
            timed(
                &[30],
                1,
                serde_json::json!({"prompt_ms": 25.0, "predicted_n": 1, "predicted_per_token_ms": 0.0}),
            ),
            // No timings at all (another server).
            rec(0, &[10, 20], 2),
        ];
        let s = summarize(&records, &SummaryOptions::default());
        let decode = s.server_decode_per_token_ms.as_ref().unwrap();
        assert_eq!((decode.count, decode.median), (2, 8.75));
        let prompt = s.server_prompt_ms.as_ref().unwrap();
        assert_eq!((prompt.count, prompt.median), (3, 25.0));
        let diff = s.tpot_minus_server_decode_ms.as_ref().unwrap();
        assert_eq!((diff.count, diff.min, diff.max), (2, 0.5, 2.0));
        let none = summarize(&[rec(0, &[10, 20], 2)], &SummaryOptions::default());
        assert_eq!(none.server_decode_per_token_ms, None);
        assert_eq!(none.tpot_minus_server_decode_ms, None);
    }

    /// Records with varied latencies (two tokens per chunk on every other one, a failure
    /// every 17th, server timings every 5th so some TPOT − decode differences are negative).
    fn varied_records(n: u64) -> Vec<RequestRecord> {
        (0..n)
            .map(|i| {
                let ttft = 20 + (i * 7919) % 500;
                let chunks: Vec<u64> = (0..1 + i % 6)
                    .map(|c| i + ttft + c * (3 + i % 11))
                    .collect();
                let mut r = rec(i, &chunks, chunks.len() as u64 + i % 3);
                r.chunk_tokens = (i % 2 == 0).then(|| vec![1; chunks.len()]);
                if i % 17 == 0 {
                    r.outcome = Outcome::failed(FailureKind::Timeout, "slow");
                }
                if i % 5 == 0 {
                    let decode = (i % 13) as f64;
                    r.server_timings = Some(serde_json::json!({"predicted_per_token_ms": decode}));
                }
                r
            })
            .collect()
    }

    fn distributions(s: &RunSummary) -> Vec<Option<&Distribution>> {
        vec![
            s.ttft_ms.as_ref(),
            s.tpot_ms.as_ref(),
            s.itl_ms.as_ref(),
            s.e2el_ms.as_ref(),
            s.schedule_lag_ms.as_ref(),
            s.tpot_minus_server_decode_ms.as_ref(),
            s.output_len_received.as_ref(),
            s.itl_per_token_ms.as_ref(),
        ]
    }

    #[test]
    fn summarizer_merge_equals_adding_everything() {
        let records = varied_records(400);
        let opts = SummaryOptions {
            percentiles: vec![50.0, 90.0, 99.0],
            ..SummaryOptions::default()
        };
        let whole = summarize(&records, &opts);
        let mut a = Summarizer::new(&opts);
        let mut b = Summarizer::new(&opts);
        records.iter().take(150).for_each(|r| a.add(r));
        records.iter().skip(150).for_each(|r| b.add(r));
        a.merge(b);
        assert_eq!(a.finish(), whole, "exact mode: bit-identical");

        // HDR mode (limit 50): same counts and percentiles; moments equal up to rounding.
        let hdr = |rs: &[RequestRecord]| {
            let mut s = Summarizer::with_exact_limit(&opts, 50);
            rs.iter().for_each(|r| s.add(r));
            s
        };
        let all = hdr(&records).finish();
        let mut a = hdr(&records[..150]);
        a.merge(hdr(&records[150..]));
        let merged = a.finish();
        assert_eq!(
            (merged.completed, merged.failed),
            (all.completed, all.failed)
        );
        for (m, w) in distributions(&merged).into_iter().zip(distributions(&all)) {
            let (m, w) = (m.unwrap(), w.unwrap());
            assert_eq!(m.percentile_method, PercentileMethod::Hdr);
            assert_eq!((m.count, m.min, m.max), (w.count, w.min, w.max));
            assert_eq!((m.median, &m.percentiles), (w.median, &w.percentiles));
            assert!((m.mean - w.mean).abs() <= 1e-9 * w.mean.abs().max(1.0));
            assert!((m.std - w.std).abs() <= 1e-9 * w.std.max(1.0));
        }
    }

    #[test]
    fn hdr_percentiles_are_within_the_stated_bound_of_exact_ones() {
        let records = varied_records(3000);
        let opts = SummaryOptions {
            percentiles: vec![0.0, 1.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 100.0],
            ..SummaryOptions::default()
        };
        let exact = summarize(&records, &opts);
        let mut s = Summarizer::with_exact_limit(&opts, 100);
        records.iter().for_each(|r| s.add(r));
        let hdr = s.finish();
        let samples = metric_samples(&records);
        let all = distributions(&hdr).into_iter().zip(distributions(&exact));
        for ((h, e), mut sorted) in all.zip(samples) {
            let (h, e) = (h.unwrap(), e.unwrap());
            assert_eq!(e.percentile_method, PercentileMethod::Exact);
            assert_eq!(h.percentile_method, PercentileMethod::Hdr);
            assert_eq!((h.count, h.min, h.max), (e.count, e.min, e.max));
            assert!((h.mean - e.mean).abs() <= 1e-9 * e.mean.abs().max(1.0));
            assert!((h.std - e.std).abs() <= 1e-9 * e.std.max(1.0));
            // The bound of docs/metrics.md: relative to the larger of the two order
            // statistics interpolated between, plus half a histogram unit of rounding.
            sorted.sort_unstable_by(f64::total_cmp);
            assert_eq!(sorted.len() as u64, e.count);
            let pairs = std::iter::once((50.0, h.median, e.median)).chain(
                h.percentiles
                    .iter()
                    .zip(&e.percentiles)
                    .map(|(a, b)| (a.0, a.1, b.1)),
            );
            for (p, got, want) in pairs {
                let rank = p / 100.0 * (sorted.len() - 1) as f64;
                let scale = sorted[rank.floor() as usize]
                    .abs()
                    .max(sorted[rank.ceil() as usize].abs());
                let bound = HDR_RELATIVE_ERROR * scale + 0.5 / HDR_UNITS;
                assert!(
                    (got - want).abs() <= bound,
                    "p{p}: {got} vs {want} (bound {bound})"
                );
            }
        }
        assert!(exact.hdr_figures().is_empty());
        assert_eq!(hdr.hdr_figures().len(), 11, "{:?}", hdr.hdr_figures());
        assert!(hdr.tpot_minus_server_decode_ms.unwrap().min < 0.0);
    }

    /// Every sample of each metric of `distributions`, in the same order (time scale 1).
    fn metric_samples(records: &[RequestRecord]) -> Vec<Vec<f64>> {
        let ok = |f: &dyn Fn(&RequestRecord, &RequestMetrics) -> Vec<f64>| -> Vec<f64> {
            records
                .iter()
                .filter_map(|r| RequestMetrics::of(r).map(|m| f(r, &m)))
                .flatten()
                .collect()
        };
        vec![
            ok(&|_, m| vec![m.ttft_ns as f64 / NS_PER_MS]),
            ok(&|_, m| m.tpot_ms.into_iter().collect()),
            ok(&|r, _| itl_gaps_ns(r).map(|g| g as f64 / NS_PER_MS).collect()),
            ok(&|_, m| vec![m.e2el_ns as f64 / NS_PER_MS]),
            records
                .iter()
                .map(|r| (r.sent_ns - r.scheduled_ns) as f64 / NS_PER_MS)
                .collect(),
            ok(&|r, m| {
                let d = ServerTimings::of(r).decode_per_token_ms;
                m.tpot_ms.zip(d).map(|(t, d)| t - d).into_iter().collect()
            }),
            ok(&|_, m| vec![m.output_tokens as f64]),
            ok(&|r, _| itl_per_token_ns(r).map(|g| g / NS_PER_MS).collect()),
        ]
    }

    proptest! {
        /// The invariants of docs/metrics.md hold for any successful record:
        /// TTFT + Σ ITL = E2EL exactly; TPOT × (N − 1) + TTFT = E2EL; throughput = N / E2EL.
        #[test]
        fn invariants_hold(sent in 0u64..1_000_000_000, gaps in proptest::collection::vec(0u64..50_000_000, 1..200), extra in 0u64..50) {
            let mut t = sent;
            let chunk_ns: Vec<u64> = gaps.iter().map(|g| { t += g; t }).collect();
            let n = chunk_ns.len() as u64 + extra;
            let r = RequestRecord { sent_ns: sent, scheduled_ns: sent, end_ns: t, chunk_ns, output_tokens: Some(n), ..RequestRecord::default() };
            let m = RequestMetrics::of(&r).unwrap();
            prop_assert_eq!(m.ttft_ns + itl_gaps_ns(&r).sum::<u64>(), m.e2el_ns);
            if let Some(tpot) = m.tpot_ms {
                let rebuilt = tpot * (n - 1) as f64 + m.ttft_ns as f64 / NS_PER_MS;
                prop_assert!((rebuilt - m.e2el_ns as f64 / NS_PER_MS).abs() < 1e-6);
            }
            if m.e2el_ns > 0 {
                prop_assert!((m.output_throughput * m.e2el_ns as f64 / NS_PER_S - n as f64).abs() < 1e-6);
            }
        }

        #[test]
        fn percentiles_are_monotone(mut xs in proptest::collection::vec(-1e6f64..1e6, 1..100), a in 0f64..100.0, b in 0f64..100.0) {
            xs.sort_unstable_by(f64::total_cmp);
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(percentile(&xs, lo).unwrap() <= percentile(&xs, hi).unwrap());
        }
    }
}
