//! The engine model's parameters and cost model: what the scheduler (`engine.rs`) is given
//! and what a step costs.
//!
//! # What it owns
//! - [`EngineConfig`]: the engine's limits (`max_num_seqs`, the per-step token budget, the KV
//!   cache capacity, the longest context), its [`SchedulerKind`], its cost model
//!   ([`EngineConfig::step_time`]), its front-end latency and queue timeout, with their
//!   validation and their JSON for `GET /sim/info`.
//! - [`output_length`]: a request's natural output length, drawn from (seed, request number).
//!
//! # What it must not touch
//! No state over time, no clock, no channel: the step loop and its scheduling rules are
//! `engine.rs`'s. Like all of `sim`, nothing of servebench's client side.
//!
//! # Extending it
//! A new cost term is a field of [`EngineConfig`] (a value in every preset, `presets.rs`), a
//! term of [`EngineConfig::step_time`] and its key in [`EngineConfig::to_json`]; a quantity the
//! term needs from the step is counted by `engine.rs`'s `step_duration`.

use std::time::Duration;

use serde_json::{json, Value};

use super::error::SimConfigError;
use super::text::{mix_seed, splitmix64};

/// How the engine forms a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SchedulerKind {
    /// vLLM (V1) and llama.cpp: decodes and prefill chunks share every step's token budget.
    ChunkedPrefill,
    /// Hugging Face TGI: new requests are prefilled in their own step, pausing decodes.
    PrefillFirst {
        /// Decode steps after which waiting requests are prefilled whatever their number
        /// (TGI's `max_waiting_tokens`).
        max_waiting_steps: u32,
        /// Waiting requests are prefilled early when at least this many per running request
        /// can join (TGI's `waiting_served_ratio`).
        waiting_served_ratio: f64,
    },
}

/// The engine's limits and cost model. Durations are simulated time (see `SimConfig::time_scale`).
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    pub scheduler: SchedulerKind,
    /// Most sequences in a batch (vLLM `max_num_seqs`, TGI `max_batch_size`, llama.cpp slots).
    pub max_num_seqs: u32,
    /// Token budget of one step (vLLM `max_num_batched_tokens`; with `PrefillFirst`, TGI's
    /// `max_batch_prefill_tokens`).
    pub max_batched_tokens: u32,
    /// KV cache capacity, tokens (summed over all sequences).
    pub kv_capacity_tokens: u64,
    /// Longest context (prompt + output) a request may ask for; longer ones get HTTP 400.
    pub max_model_len: u32,
    /// Fixed cost of every step (weights read once per forward pass, scheduling, sampling).
    pub step_overhead: Duration,
    /// Cost of one prefilled prompt token (the linear layers).
    pub prefill_per_token: Duration,
    /// Cost of one decoding sequence in a step.
    pub decode_per_seq: Duration,
    /// Prefill attention: cost per (new token × context token before it).
    pub prefill_attention_per_pair: Duration,
    /// Decode attention: cost per context token a decoding sequence holds (KV reads).
    pub decode_attention_per_token: Duration,
    /// Time between a request's arrival and its submission to the engine (HTTP, validation,
    /// tokenization in the API server).
    pub frontend_latency: Duration,
    /// Mean output length of a request that ends at its natural end of sequence; `None`: every
    /// request runs to its token budget. See [`output_length`].
    pub mean_output_tokens: Option<u32>,
    /// Requests never scheduled within this time are rejected with HTTP 503.
    pub queue_timeout: Option<Duration>,
}

impl EngineConfig {
    /// Checks the limits; the message names the field.
    pub fn validate(&self) -> Result<(), SimConfigError> {
        let at_least = |setting: &str, n: u64| {
            SimConfigError::setting(format!("engine.{setting}"), format!("must be at least {n}"))
        };
        if self.max_num_seqs < 1 {
            return Err(at_least("max_num_seqs", 1));
        }
        if self.max_batched_tokens < 1 {
            return Err(at_least("max_batched_tokens", 1));
        }
        if self.max_model_len < 2 {
            return Err(at_least("max_model_len", 2));
        }
        if self.kv_capacity_tokens < u64::from(self.max_model_len) {
            return Err(SimConfigError::setting(
                format!("engine.kv_capacity_tokens ({})", self.kv_capacity_tokens),
                format!(
                    "must hold at least one full context (max_model_len {})",
                    self.max_model_len
                ),
            ));
        }
        if self.mean_output_tokens == Some(0) {
            return Err(at_least("mean_output_tokens", 1));
        }
        if let SchedulerKind::PrefillFirst {
            waiting_served_ratio,
            ..
        } = self.scheduler
        {
            if !(waiting_served_ratio.is_finite() && waiting_served_ratio >= 0.0) {
                let rule = "must be a finite number >= 0";
                return Err(SimConfigError::setting("engine.waiting_served_ratio", rule));
            }
        }
        Ok(())
    }

    /// Duration of a step that prefills `prefill_tokens` tokens, of which the attention work
    /// is `prefill_pairs` (new token × earlier context token) pairs, and decodes
    /// `decode_seqs` sequences holding `decode_context` context tokens in all:
    ///
    /// `step_overhead + prefill_per_token·P + prefill_attention_per_pair·pairs
    ///  + decode_per_seq·D + decode_attention_per_token·context`.
    pub fn step_time(
        &self,
        prefill_tokens: u64,
        prefill_pairs: u64,
        decode_seqs: u64,
        decode_context: u64,
    ) -> Duration {
        let ns = |d: Duration, n: u64| d.as_nanos().saturating_mul(u128::from(n));
        let total = self.step_overhead.as_nanos()
            + ns(self.prefill_per_token, prefill_tokens)
            + ns(self.prefill_attention_per_pair, prefill_pairs)
            + ns(self.decode_per_seq, decode_seqs)
            + ns(self.decode_attention_per_token, decode_context);
        Duration::from_nanos(u64::try_from(total).unwrap_or(u64::MAX))
    }

    /// The parameters as JSON (durations in ms), for `GET /sim/info`.
    pub fn to_json(&self) -> Value {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let scheduler = match self.scheduler {
            SchedulerKind::ChunkedPrefill => json!({"kind": "chunked-prefill"}),
            SchedulerKind::PrefillFirst {
                max_waiting_steps,
                waiting_served_ratio,
            } => json!({
                "kind": "prefill-first",
                "max_waiting_steps": max_waiting_steps,
                "waiting_served_ratio": waiting_served_ratio,
            }),
        };
        json!({
            "scheduler": scheduler,
            "max_num_seqs": self.max_num_seqs,
            "max_batched_tokens": self.max_batched_tokens,
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "max_model_len": self.max_model_len,
            "step_overhead_ms": ms(self.step_overhead),
            "prefill_per_token_ms": ms(self.prefill_per_token),
            "decode_per_seq_ms": ms(self.decode_per_seq),
            "prefill_attention_per_pair_ns": self.prefill_attention_per_pair.as_nanos() as f64,
            "decode_attention_per_token_ns": self.decode_attention_per_token.as_nanos() as f64,
            "frontend_latency_ms": ms(self.frontend_latency),
            "mean_output_tokens": self.mean_output_tokens,
            "queue_timeout_s": self.queue_timeout.map(|d| d.as_secs_f64()),
        })
    }
}

/// The output length of request `request` when it may end at its natural end of sequence:
/// uniform over `[ceil(mean/2), floor(3·mean/2)]` (mean `mean`), drawn from (seed, request
/// number), so runs with the same seed generate the same lengths.
pub(crate) fn output_length(seed: u64, request: u64, mean: u32) -> u32 {
    let lo = mean.div_ceil(2).max(1);
    let hi = (u64::from(mean) * 3 / 2).max(u64::from(lo));
    let span = hi - u64::from(lo) + 1;
    let h = splitmix64(mix_seed(seed, request) ^ 0x5EED_0E05);
    lo + u32::try_from(h % span).unwrap_or(0)
}
