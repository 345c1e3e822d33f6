//! A run's figures ([`RunSummary`]) and what computing them needs besides the records
//! ([`SummaryOptions`]). `summarizer.rs` computes them in one pass over the records; this file
//! holds the figures and the questions asked of them, and imports nothing from it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::audio::AudioSummary;
use super::breakdown::TtftBreakdown;
use super::cache::PrefixCacheRates;
use super::distribution::Distribution;
use super::media::MediaSummary;
use super::reasoning::ReasoningFigures;
use super::structured::StructuredFigures;
use super::turns::{ConversationTotals, TurnTtft};
use crate::config::{Metric, Slo};

/// What `summarize` needs besides the records.
#[derive(Clone, Debug)]
pub struct SummaryOptions {
    pub percentiles: Vec<f64>,
    pub goodput: Vec<Slo>,
    /// The simulated server's clock speed-up (`--time-scale`): every measured duration is
    /// multiplied by it, so figures read in the simulated server's time. 1 for real servers.
    pub time_scale: f64,
    /// `--goodput valid_output:1`: a good request's structured answer is also valid.
    pub valid_output: bool,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            percentiles: vec![99.0],
            goodput: Vec::new(),
            time_scale: 1.0,
            valid_output: false,
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
    /// Σ prompt tokens over successful requests (summed without wrapping; at most 2^64 − 1).
    pub total_input_tokens: u64,
    /// Σ N over successful requests (summed without wrapping; at most 2^64 − 1).
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
    /// Time to second token, ms, and output tokens/s per user (1000 / TPOT), over successful
    /// requests with at least 2 output tokens (docs/metrics.md, "Time to second token").
    #[serde(default)]
    pub ttst_ms: Option<Distribution>,
    #[serde(default)]
    pub output_tps_per_user: Option<Distribution>,
    /// First output chunk − scheduled send, ms: TTFT with client-side queueing included.
    pub ttft_from_scheduled_ms: Option<Distribution>,
    /// When the client began the request (a new connection's setup, else the first byte's
    /// write) − scheduled send, ms, over every measured request: the client's own queueing.
    pub schedule_lag_ms: Option<Distribution>,
    /// Measured requests that opened a new connection, and that reused a kept-alive one
    /// (requests over a transport that cannot tell are in neither).
    #[serde(default)]
    pub new_connections: u64,
    #[serde(default)]
    pub reused_connections: u64,
    /// A new connection's setup (TCP connect, and TLS where timed), ms, over the measured
    /// requests that opened one.
    #[serde(default)]
    pub connection_setup_ms: Option<Distribution>,
    /// First output chunk − when the client began the request, ms, over successful requests:
    /// TTFT with a new connection's setup included (the cold-start figure; vLLM's client,
    /// which opens a connection per request, reports this as TTFT).
    #[serde(default)]
    pub ttft_with_setup_ms: Option<Distribution>,
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
    /// Successful requests whose body ended cleanly after the chunk that ended the answer,
    /// without the API's terminator (`done_marker: false`; docs/metrics.md, "How a stream
    /// ends").
    #[serde(default)]
    pub completed_without_done_marker: u64,
    /// Measured requests whose server reported a number that contradicts what the client saw
    /// (docs/metrics.md, "Numbers a server reports"), and how many had each kind.
    #[serde(default)]
    pub implausible_usage: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub implausible_usage_by_field: BTreeMap<String, u64>,
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
    /// Where TTFT went, part by part, over successful requests (docs/metrics.md).
    #[serde(default)]
    pub ttft_breakdown: TtftBreakdown,
    /// Prefix-cache hit rate, designed and measured (`cache.rs`); absent when neither is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<PrefixCacheRates>,
    /// Multi-turn runs: TTFT by turn index (`turns.rs`); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ttft_by_turn: Vec<TurnTtft>,
    /// Multi-turn runs: per-conversation totals (`turns.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversations: Option<ConversationTotals>,
    /// Runs of an API that answers each input of a request (embeddings): Σ inputs over
    /// successful requests (`total_input_sequences`, servebench's: vLLM's embeddings result
    /// has no input count beside `total_input_tokens`), and that over the duration
    /// (`input_sequence_throughput`); absent for generation runs (docs/metrics.md,
    /// "Embeddings").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_input_sequences: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_sequence_throughput: Option<f64>,
    /// Reasoning and answer phases (`reasoning.rs`); absent when no successful
    /// request reasoned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningFigures>,
    /// Tokens per output chunk (a speculating server's chunks carry several),
    /// over the chunks of successful requests whose per-chunk counts are known (TGI,
    /// llama.cpp, vLLM's continuous usage); absent when none are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_chunk: Option<Distribution>,
    /// Runs that ask for structured output or tool calls (`--structured-output`): the
    /// answers' validity and the tool-call figures (`structured.rs`; docs/metrics.md,
    /// "Structured output and tool calls"); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<StructuredFigures>,
    /// Runs that sent images: their figures (`media.rs`; docs/metrics.md, "Images in chat").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<MediaSummary>,
    /// Runs that sent audio: its seconds and real-time factors (`audio.rs`; docs/metrics.md,
    /// "Audio and transcriptions").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<AudioSummary>,
    /// The server's own account of its requests, read from its answers (`server_account.rs`;
    /// docs/metrics.md, "The server's account"); absent when no answer carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_account: Option<super::server_account::ServerAccount>,
}

impl RunSummary {
    /// The distribution of a latency metric.
    pub fn metric(&self, m: Metric) -> Option<&Distribution> {
        match m {
            Metric::Ttft => self.ttft_ms.as_ref(),
            Metric::Tpot => self.tpot_ms.as_ref(),
            Metric::Itl => self.itl_ms.as_ref(),
            Metric::E2el => self.e2el_ms.as_ref(),
            Metric::Ttst => self.ttst_ms.as_ref(),
            Metric::OutputTpsPerUser => self.output_tps_per_user.as_ref(),
        }
    }

    /// The figures (their field names) whose percentiles came from an HDR histogram.
    pub fn hdr_figures(&self) -> Vec<&'static str> {
        let all = [
            ("ttft_ms", &self.ttft_ms),
            ("tpot_ms", &self.tpot_ms),
            ("itl_ms", &self.itl_ms),
            ("e2el_ms", &self.e2el_ms),
            ("ttst_ms", &self.ttst_ms),
            ("output_tps_per_user", &self.output_tps_per_user),
            ("ttft_from_scheduled_ms", &self.ttft_from_scheduled_ms),
            ("schedule_lag_ms", &self.schedule_lag_ms),
            ("connection_setup_ms", &self.connection_setup_ms),
            ("ttft_with_setup_ms", &self.ttft_with_setup_ms),
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
