//! Named engine presets for the simulated server (`servebench sim --preset NAME`,
//! `servebench run --sim-preset NAME`). The parameter table and the assumptions behind each
//! preset are in the module doc of `sim` and in the README; the calibration against the
//! seeds is in `docs/performance.md` (`bench/calibrate.sh` re-measures it).
//!
//! To add a preset: add a variant, its name in [`Preset::name`] and [`Preset::ALL`], its
//! engine in [`Preset::engine`], and a row in the documentation tables.

use std::time::Duration;

use super::cost::{EngineConfig, SchedulerKind};
use super::error::SimConfigError;
use super::metrics::MetricsFlavor;

/// A named configuration of the simulated server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Preset {
    /// The exact schedule (`ttft`, `itl`): ground truth for accuracy measurements.
    #[default]
    Exact,
    /// Hugging Face TGI serving Llama-3.1-405B-Instruct, calibrated on seed 001.
    TgiLlama405b,
    /// vLLM serving Llama-3.1-405B-Instruct, calibrated on seed 002.
    VllmLlama405b,
    /// vLLM serving Llama-3.1-8B-Instruct (FP8 weights) on one RTX 4090 (24 GB).
    VllmLlama8bRtx4090,
    /// llama.cpp's server, Llama-3.1-8B-Instruct Q4_K_M, 4 slots, on one RTX 4090.
    LlamacppLlama8bRtx4090,
}

const fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

const fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

const fn ns(v: u64) -> Duration {
    Duration::from_nanos(v)
}

impl Preset {
    pub const ALL: [Preset; 5] = [
        Preset::Exact,
        Preset::TgiLlama405b,
        Preset::VllmLlama405b,
        Preset::VllmLlama8bRtx4090,
        Preset::LlamacppLlama8bRtx4090,
    ];

    /// The preset `servebench run` uses for its built-in server by default.
    pub const RUN_DEFAULT: Preset = Preset::VllmLlama8bRtx4090;

    pub fn name(self) -> &'static str {
        match self {
            Preset::Exact => "exact",
            Preset::TgiLlama405b => "tgi-llama-405b",
            Preset::VllmLlama405b => "vllm-llama-405b",
            Preset::VllmLlama8bRtx4090 => "vllm-llama-8b-rtx4090",
            Preset::LlamacppLlama8bRtx4090 => "llamacpp-llama-8b-rtx4090",
        }
    }

    /// Which metric names `/metrics` serves.
    pub fn metrics_flavor(self) -> MetricsFlavor {
        match self {
            Preset::LlamacppLlama8bRtx4090 => MetricsFlavor::Llamacpp,
            _ => MetricsFlavor::Vllm,
        }
    }

    /// The engine model, or `None` for the exact schedule.
    pub fn engine(self) -> Option<EngineConfig> {
        Some(match self {
            Preset::Exact => return None,
            Preset::TgiLlama405b => EngineConfig {
                scheduler: SchedulerKind::PrefillFirst {
                    max_waiting_steps: 20,
                    waiting_served_ratio: 1.2,
                },
                max_num_seqs: 768,
                max_batched_tokens: 45_000,
                kv_capacity_tokens: 300_000,
                max_model_len: 131_072,
                step_overhead: ms(48),
                prefill_per_token: us(340),
                decode_per_seq: us(580),
                prefill_attention_per_pair: ns(70),
                decode_attention_per_token: ns(600),
                frontend_latency: ms(53),
                mean_output_tokens: Some(57),
                queue_timeout: None,
            },
            Preset::VllmLlama405b => EngineConfig {
                scheduler: SchedulerKind::ChunkedPrefill,
                max_num_seqs: 256,
                max_batched_tokens: 512,
                kv_capacity_tokens: 300_000,
                max_model_len: 131_072,
                step_overhead: ms(48),
                prefill_per_token: us(850),
                decode_per_seq: us(850),
                prefill_attention_per_pair: ns(71),
                decode_attention_per_token: ns(600),
                frontend_latency: ms(200),
                mean_output_tokens: Some(59),
                queue_timeout: None,
            },
            Preset::VllmLlama8bRtx4090 => EngineConfig {
                scheduler: SchedulerKind::ChunkedPrefill,
                max_num_seqs: 256,
                max_batched_tokens: 2048,
                kv_capacity_tokens: 90_000,
                max_model_len: 32_768,
                step_overhead: ms(12),
                prefill_per_token: us(80),
                decode_per_seq: us(80),
                prefill_attention_per_pair: ns(3),
                decode_attention_per_token: ns(140),
                frontend_latency: ms(5),
                mean_output_tokens: Some(256),
                queue_timeout: None,
            },
            Preset::LlamacppLlama8bRtx4090 => EngineConfig {
                scheduler: SchedulerKind::ChunkedPrefill,
                max_num_seqs: 4,
                max_batched_tokens: 2048,
                kv_capacity_tokens: 16_384,
                max_model_len: 4096,
                step_overhead: ms(7),
                prefill_per_token: us(120),
                decode_per_seq: us(300),
                prefill_attention_per_pair: ns(3),
                decode_attention_per_token: ns(140),
                frontend_latency: ms(1),
                mean_output_tokens: Some(256),
                queue_timeout: None,
            },
        })
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Preset {
    type Err = SimConfigError;
    fn from_str(s: &str) -> Result<Self, SimConfigError> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
                SimConfigError::Unknown {
                    what: "preset",
                    name: s.to_string(),
                    expected: format!("one of: {}", names.join(", ")),
                }
            })
    }
}
