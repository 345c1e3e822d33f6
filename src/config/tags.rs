//! What a user says about a run that servebench cannot measure: its name, free-form facts,
//! the server's price and its accelerators (`--label`, `--metadata`, `--cost-per-hour`,
//! `--gpus`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::{ConfigError, ValueError};

/// The most accelerators `--gpus` takes: more than any deployment serving one endpoint.
pub const MAX_GPUS: u32 = 1_000_000;

/// Saved in the config (its keys at the config's top level) and kept by `merge`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tags {
    /// `--label`: the run's name in the report, `compare`, `plot` and the HTML report (the
    /// file's name otherwise); vLLM's `label`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `--metadata KEY=VALUE` (repeatable): facts such as the GPU or the server's version;
    /// vLLM's `--metadata`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// `--cost-per-hour`: what the server costs, USD per hour (a GPU-hour times the GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_hour: Option<f64>,
    /// `--gpus`: how many accelerators serve the endpoint, for output tokens/s per GPU
    /// (docs/metrics.md, "Pareto front"); unknown when absent (figures are then per server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u32>,
}

impl Tags {
    /// The run's display name: the label, else `fallback`, then the metadata in brackets.
    pub fn name(&self, fallback: &str) -> String {
        let name = self.label.as_deref().unwrap_or(fallback);
        if self.metadata.is_empty() {
            return name.to_string();
        }
        format!("{name} [{}]", self.metadata_text())
    }

    /// `key=value, key=value`.
    pub fn metadata_text(&self) -> String {
        let pairs: Vec<String> = (self.metadata.iter())
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        pairs.join(", ")
    }

    /// Checks the values; the error names the flag that is wrong.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(c) = self.cost_per_hour.filter(|c| !(c.is_finite() && *c > 0.0)) {
            let why = format!("{c} is not a price in USD (> 0)");
            return Err(ConfigError::invalid("--cost-per-hour", why));
        }
        if let Some(g) = self.gpus.filter(|g| !(1..=MAX_GPUS).contains(g)) {
            let why = format!(
                "{g} is not a count of accelerators serving the endpoint (1 to {MAX_GPUS})"
            );
            return Err(ConfigError::invalid("--gpus", why));
        }
        if self.label.as_deref().is_some_and(|l| l.trim().is_empty()) {
            return Err(ConfigError::invalid("--label", "is empty"));
        }
        if let Some(k) = self.metadata.keys().find(|k| is_result_key(k)) {
            let instead = match k.as_str() {
                "label" => "give the run's name with --label",
                _ => "name the fact otherwise",
            };
            return Err(ConfigError::invalid(
                "--metadata",
                format!("'{k}' is a key of the result itself (a metadata key would replace it or be lost): {instead}"),
            ));
        }
        Ok(())
    }
}

/// The result document's own top-level keys besides the metadata (saved beside them, as vLLM
/// does): servebench's fields, vLLM's run figures, `label` and the per-request arrays.
const RESULT_KEYS: [&str; 86] = [
    "schema_version",
    "servebench_version",
    "started_at",
    "complete",
    "planned",
    "unsent",
    "unsent_by",
    "error",
    "records_lost",
    "stopped_early",
    "steady_state",
    "slices",
    "buckets",
    "mix",
    "jobs",
    "join",
    "rejudged",
    "hooks",
    "per_adapter",
    "per_endpoint",
    "window_end",
    "records_file",
    "config",
    "summary",
    "validity",
    "server_metrics",
    "timebase",
    "merged_from",
    "cost",
    "energy",
    "autoscale",
    "adaptive",
    "date",
    "backend",
    "model_id",
    "tokenizer_id",
    "num_prompts",
    "request_rate",
    "burstiness",
    "max_concurrency",
    "duration",
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
    "total_input_sequences",
    "input_sequence_throughput",
    "total_reasoning_tokens",
    "total_answer_tokens",
    "reasoning_share",
    "reasoning_throughput",
    "answer_throughput",
    "spec_decode_acceptance_rate",
    "spec_decode_acceptance_length",
    "spec_decode_num_drafts",
    "spec_decode_draft_tokens",
    "spec_decode_accepted_tokens",
    "spec_decode_per_position_acceptance_rates",
    "correct_rate(%)",
    "json_rate(%)",
    "mean_tool_call_ttft_ms",
    "mean_tool_call_tokens",
    "total_images",
    "mean_media_tokens_per_request",
    "media_tokens_per_image",
    "total_videos",
    "media_tokens_per_video",
    "mean_request_bytes",
    "mean_upload_ms",
    "p99_upload_ms",
    "total_input_audio_s",
    "rtfx",
    "mean_request_rtfx",
    "median_request_rtfx",
    "label",
    "input_lens",
    "output_lens",
    "ttfts",
    "itls",
    "generated_texts",
    "errors",
    "per_request_arrays_omitted",
];

/// True when `key` is a key of the result document itself ([`RESULT_KEYS`], a statistic such
/// as `p99_ttft_ms`, or its `ci95_` interval), which a `--metadata` key may not be.
pub fn is_result_key(key: &str) -> bool {
    RESULT_KEYS.contains(&key)
        || key.starts_with("ci95_")
        || key.parse::<crate::config::metric::MetricKey>().is_ok()
}

/// One `--metadata` value: `KEY=VALUE`, a non-empty key.
pub fn parse_pair(s: &str) -> Result<(String, String), ValueError> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(ValueError::Pair(s.to_string())),
    }
}

/// What the run cost (`--cost-per-hour`), per million tokens (docs/metrics.md, "Cost").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// USD per hour, as given.
    pub usd_per_hour: f64,
    /// `usd_per_hour × duration_s / 3600`: the server's time over the benchmark's duration.
    pub usd: f64,
    /// `usd / output tokens × 1e6`.
    pub usd_per_1m_output_tokens: Option<f64>,
    /// `usd / (input + output tokens) × 1e6`.
    pub usd_per_1m_total_tokens: Option<f64>,
}

impl Cost {
    pub fn of(usd_per_hour: f64, duration_s: f64, input_tokens: u64, output_tokens: u64) -> Cost {
        let usd = usd_per_hour * duration_s / 3600.0;
        let per_1m = |tokens: u64| (tokens > 0).then(|| usd / tokens as f64 * 1e6);
        Cost {
            usd_per_hour,
            usd,
            usd_per_1m_output_tokens: per_1m(output_tokens),
            usd_per_1m_total_tokens: per_1m(input_tokens + output_tokens),
        }
    }
}

/// Energy over the measured window, from a DCGM exporter's GPU power (docs/metrics.md,
/// "Cost and energy").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Energy {
    /// Mean of the sampled GPU power (all GPUs), W.
    pub gpu_power_mean_w: f64,
    /// `gpu_power_mean_w × duration_s`, J.
    pub joules: f64,
    /// `joules / output tokens`.
    pub joules_per_output_token: Option<f64>,
    /// Mean GPU utilisation over the samples, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_util_mean_pct: Option<f64>,
}

impl Energy {
    pub fn of(power_w: f64, util: Option<f64>, duration_s: f64, output_tokens: u64) -> Energy {
        let joules = power_w * duration_s;
        Energy {
            gpu_power_mean_w: power_w,
            joules,
            joules_per_output_token: (output_tokens > 0).then(|| joules / output_tokens as f64),
            gpu_util_mean_pct: util,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_per_million_tokens_by_hand() {
        // $36/h for 100 s is $1; 250,000 output and 750,000 input tokens.
        let c = Cost::of(36.0, 100.0, 750_000, 250_000);
        assert!((c.usd - 1.0).abs() < 1e-12);
        assert!((c.usd_per_1m_output_tokens.unwrap() - 4.0).abs() < 1e-12);
        assert!((c.usd_per_1m_total_tokens.unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(Cost::of(1.0, 1.0, 0, 0).usd_per_1m_output_tokens, None);
        // 700 W for 10 s over 3,500 tokens: 2 J each.
        let e = Energy::of(700.0, Some(50.0), 10.0, 3_500);
        assert!((e.joules - 7_000.0).abs() < 1e-9);
        assert!((e.joules_per_output_token.unwrap() - 2.0).abs() < 1e-12);
    }

    #[test]
    fn names_and_bad_values() {
        let mut t = Tags::default();
        assert_eq!(t.name("file"), "file");
        t.label = Some("tgi-2.3".into());
        t.metadata.insert("gpu".into(), "H100".into());
        t.metadata.insert("tp".into(), "8".into());
        assert_eq!(t.name("file"), "tgi-2.3 [gpu=H100, tp=8]");
        assert_eq!(
            parse_pair("gpu=H100=x"),
            Ok(("gpu".into(), "H100=x".into()))
        );
        assert!(parse_pair("=x").is_err() && parse_pair("gpu").is_err());
        t.cost_per_hour = Some(-1.0);
        assert_eq!(t.validate().unwrap_err().option(), "--cost-per-hour");
        t.cost_per_hour = None;
        for bad in [0, MAX_GPUS + 1] {
            t.gpus = Some(bad);
            assert_eq!(t.validate().unwrap_err().option(), "--gpus", "{bad}");
        }
        t.gpus = Some(8);
        assert!(t.validate().is_ok());
        for key in [
            "label",
            "completed",
            "p99_ttft_ms",
            "ci95_mean_tpot_ms",
            "config",
        ] {
            let mut t = t.clone();
            t.metadata.insert(key.into(), "x".into());
            let err = t.validate().unwrap_err();
            let why = err.to_string();
            assert!(err.option() == "--metadata" && why.contains(key), "{why}");
        }
        assert!(t.validate().is_ok());
    }
}
