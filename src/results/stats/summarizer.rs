//! Computing a run's figures: [`Summarizer`] takes the records in one pass, in bounded
//! memory, mergeable across disjoint record sets, so a merged shard run equals one process;
//! [`summarize`] is the one-call form. The figures themselves are `summary.rs`'s.

use std::collections::BTreeMap;

use super::audio::AudioSums;
use super::breakdown::BreakdownSets;
use super::cache::CacheSums;
use super::ci::RatioSums;
use super::distribution::{NS_PER_MS, NS_PER_S};
use super::media::MediaSums;
use super::reasoning::ReasoningSums;
use super::request::{itl_gaps_ns, itl_per_token_ns, RequestMetrics, ServerTimings};
use super::samples::{SampleSet, EXACT_SAMPLES_MAX};
use super::second_token::{tps_per_user, ttst_ns};
use super::server_account::AccountSets;
use super::structured::StructuredSums;
use super::turns::{ConversationSums, TurnSets};
use crate::measure::output_check::Verdict;
use crate::measure::record::{RequestRecord, TokenSource};

use super::summary::{RunSummary, SummaryOptions};

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
    /// Token totals, in 128 bits: no sum of u64 counts over a run can wrap them.
    total_input_tokens: u128,
    total_output_tokens: u128,
    good: u64,
    output_token_sources: BTreeMap<String, u64>,
    input_token_sources: BTreeMap<String, u64>,
    disagreements: u64,
    without_done: u64,
    implausible: u64,
    implausible_by_field: BTreeMap<String, u64>,
    total_output_chunks: u64,
    in_disagree: u64,
    ttft: SampleSet,
    tpot: SampleSet,
    itl: SampleSet,
    e2el: SampleSet,
    ttst: SampleSet,
    per_user: SampleSet,
    ttft_sched: SampleSet,
    lag: SampleSet,
    /// Each successful request's ITL gaps, summed, over their count: the ITL mean's interval.
    itl_by_request: RatioSums,
    new_connections: u64,
    reused_connections: u64,
    setup: SampleSet,
    ttft_setup: SampleSet,
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
    breakdown: BreakdownSets,
    account: AccountSets,
    cache: CacheSums,
    turns: TurnSets,
    conversations: ConversationSums,
    /// A request answered per input came (`RequestRecord::inputs`), and Σ its successful
    /// requests' inputs.
    pooled: bool,
    inputs: u128,
    reasoning: ReasoningSums,
    chunk_tokens: SampleSet,
    structured: StructuredSums,
    media: MediaSums,
    audio: AudioSums,
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
            without_done: 0,
            implausible: 0,
            implausible_by_field: BTreeMap::new(),
            total_output_chunks: 0,
            in_disagree: 0,
            ttft: set(),
            tpot: set(),
            itl: set(),
            e2el: set(),
            ttst: set(),
            per_user: set(),
            ttft_sched: set(),
            lag: set(),
            itl_by_request: RatioSums::default(),
            new_connections: 0,
            reused_connections: 0,
            setup: set(),
            ttft_setup: set(),
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
            breakdown: BreakdownSets::new(set),
            account: AccountSets::new(set),
            cache: CacheSums::default(),
            turns: TurnSets::default(),
            conversations: ConversationSums::default(),
            pooled: false,
            inputs: 0,
            reasoning: ReasoningSums::new(set),
            chunk_tokens: set(),
            structured: StructuredSums::default(),
            media: MediaSums::new(set),
            audio: AudioSums::new(set),
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
        self.lag
            .add(ms_k(r.began_ns().saturating_sub(r.scheduled_ns)));
        match r.connection_reused {
            Some(true) => self.reused_connections += 1,
            Some(false) => self.new_connections += 1,
            None => {}
        }
        self.setup.extend(r.setup_ns().map(ms_k));
        if !r.implausible_usage.is_empty() {
            self.implausible += 1;
            for what in &r.implausible_usage {
                *self
                    .implausible_by_field
                    .entry(what.as_str().into())
                    .or_insert(0) += 1;
            }
        }
        self.pooled |= r.inputs.is_some();
        let m = RequestMetrics::of(r).map(|m| m.scaled(k));
        self.conversations
            .add(r, m.as_ref().map(|m| m.output_tokens));
        let Some(m) = m else {
            self.failed += 1;
            let kind = r.outcome.failure_kind().map_or("no_output", |k| k.as_str());
            *self.failures_by_kind.entry(kind.to_string()).or_insert(0) += 1;
            return;
        };
        self.completed += 1;
        self.total_input_tokens += u128::from(r.prompt_tokens.unwrap_or(0));
        self.media.add(r, k);
        self.audio.add(r, m.e2el_ns);
        self.e2el.add(ms(m.e2el_ns));
        let valid = r
            .output_check
            .as_ref()
            .is_some_and(|c| c.verdict == Verdict::Valid);
        if (self.opts.goodput.is_empty() || m.meets(&self.opts.goodput))
            && (valid || !self.opts.valid_output)
        {
            self.good += 1;
        }
        self.add_input_tokens(r);
        // An answer per input (embeddings) is its request latency: no output figure.
        if let Some(n) = r.inputs {
            self.inputs += u128::from(n);
            return;
        }
        self.structured.add(r, m.output_tokens, k);
        self.total_output_tokens += u128::from(m.output_tokens);
        self.total_output_chunks += r.chunk_ns.len() as u64;
        self.ttft.add(ms(m.ttft_ns));
        self.ttft_sched.add(ms(m.ttft_from_scheduled_ns));
        self.ttft_setup.add(ms(m.ttft_with_setup_ns));
        self.breakdown.add(r, &m, k);
        self.account.add(r, &m, k);
        self.cache.add(r);
        self.turns.add(r.turn, ms(m.ttft_ns));
        self.tpot.extend(m.tpot_ms);
        self.ttst.extend(ttst_ns(r, m.output_tokens).map(ms_k));
        self.per_user.extend(tps_per_user(m.tpot_ms));
        let (mut sum, mut n) = (0.0, 0u64);
        self.itl.extend(itl_gaps_ns(r).map(ms_k).inspect(|g| {
            sum += g;
            n += 1;
        }));
        if n > 0 {
            self.itl_by_request.add(sum, n as f64);
        }
        self.reasoning.add(r, m.output_tokens, k);
        if let Some(c) = &r.chunk_tokens {
            self.chunk_tokens.extend(c.iter().map(|&n| f64::from(n)));
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
        self.disagreements += r.output_count_disagrees() as u64;
        self.without_done += (r.done_marker == Some(false)) as u64;
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

    /// A completed request's prompt count: where it came from, and the server's beside the
    /// built one.
    fn add_input_tokens(&mut self, r: &RequestRecord) {
        if let Some(source) = r.prompt_tokens_source {
            *self
                .input_token_sources
                .entry(source.as_str().to_string())
                .or_insert(0) += 1;
        }
        self.in_req.extend(r.input_len_requested.map(|n| n as f64));
        if r.prompt_tokens_source == Some(TokenSource::ServerUsage) {
            self.in_server.extend(r.prompt_tokens.map(|n| n as f64));
            // A request with media: its prompt holds more than its text (`media.rs`).
            self.in_disagree += (r.input_len_requested.is_some()
                && r.request_bytes.is_none()
                && r.prompt_tokens != r.input_len_requested) as u64;
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
        self.without_done += other.without_done;
        self.implausible += other.implausible;
        add_counts(&mut self.implausible_by_field, other.implausible_by_field);
        self.total_output_chunks += other.total_output_chunks;
        self.in_disagree += other.in_disagree;
        self.ttft.merge(other.ttft);
        self.tpot.merge(other.tpot);
        self.itl.merge(other.itl);
        self.e2el.merge(other.e2el);
        self.ttst.merge(other.ttst);
        self.per_user.merge(other.per_user);
        self.ttft_sched.merge(other.ttft_sched);
        self.lag.merge(other.lag);
        self.itl_by_request.merge(other.itl_by_request);
        self.new_connections += other.new_connections;
        self.reused_connections += other.reused_connections;
        self.setup.merge(other.setup);
        self.ttft_setup.merge(other.ttft_setup);
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
        self.breakdown.merge(other.breakdown);
        self.account.merge(other.account);
        self.cache.merge(other.cache);
        self.turns.merge(other.turns);
        self.conversations.merge(other.conversations);
        self.structured.merge(other.structured);
        self.pooled |= other.pooled;
        self.inputs += other.inputs;
        self.reasoning.merge(other.reasoning);
        self.chunk_tokens.merge(other.chunk_tokens);
        self.media.merge(other.media);
        self.audio.merge(other.audio);
    }

    /// Measured requests added so far, successful or not.
    pub fn measured(&self) -> u64 {
        self.completed + self.failed
    }

    pub fn finish(self) -> RunSummary {
        let ps = &self.opts.percentiles;
        let k = self.time_scale();
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
        let has_slos = !self.opts.goodput.is_empty() || self.opts.valid_output;
        let (input, output) = (self.total_input_tokens, self.total_output_tokens);
        let saturated = |n: u128| u64::try_from(n).unwrap_or(u64::MAX);
        RunSummary {
            completed: self.completed,
            failed: self.failed,
            failures_by_kind: self.failures_by_kind,
            duration_s,
            total_input_tokens: saturated(input),
            total_output_tokens: saturated(output),
            request_throughput: per_s(self.completed as f64),
            request_goodput: has_slos.then(|| per_s(self.good as f64)),
            good_requests: has_slos.then_some(self.good),
            output_throughput: per_s(output as f64),
            total_token_throughput: per_s((input + output) as f64),
            ttft_ms: self.ttft.finish(ps),
            tpot_ms: self.tpot.finish(ps),
            itl_ms: self.itl.finish(ps).map(|mut d| {
                // The gaps of one request are not independent: the mean's interval treats
                // requests as the units, and pooled percentiles get none (docs/metrics.md).
                d.ci95_mean = self.itl_by_request.ci95();
                d.ci95_median = None;
                d.ci95_percentiles.clear();
                d
            }),
            e2el_ms: self.e2el.finish(ps),
            ttst_ms: self.ttst.finish(ps),
            output_tps_per_user: self.per_user.finish(ps),
            ttft_from_scheduled_ms: self.ttft_sched.finish(ps),
            schedule_lag_ms: self.lag.finish(ps),
            new_connections: self.new_connections,
            reused_connections: self.reused_connections,
            connection_setup_ms: self.setup.finish(ps),
            ttft_with_setup_ms: self.ttft_setup.finish(ps),
            time_to_first_reasoning_ms: self.first_reasoning.finish(ps),
            time_to_first_answer_ms: self.first_answer.finish(ps),
            output_token_sources: self.output_token_sources,
            input_token_sources: self.input_token_sources,
            output_count_disagreements: self.disagreements,
            completed_without_done_marker: self.without_done,
            implausible_usage: self.implausible,
            implausible_usage_by_field: self.implausible_by_field,
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
            ttft_breakdown: self.breakdown.finish(ps),
            prefix_cache: self.cache.finish(),
            ttft_by_turn: self.turns.finish(ps),
            conversations: self.conversations.finish(ps, k),
            total_input_sequences: self.pooled.then_some(saturated(self.inputs)),
            input_sequence_throughput: self.pooled.then(|| per_s(self.inputs as f64)),
            reasoning: self.reasoning.finish(ps, duration_s),
            // A request's chunks are not independent: no interval (as pooled ITL's).
            tokens_per_chunk: self.chunk_tokens.finish(ps).map(|mut d| {
                d.ci95_mean = None;
                d.ci95_median = None;
                d.ci95_percentiles.clear();
                d
            }),
            structured: self.structured.finish(ps),
            media: self.media.finish(ps),
            audio: self.audio.finish(ps, duration_s),
            server_account: self.account.finish(),
        }
    }
}
