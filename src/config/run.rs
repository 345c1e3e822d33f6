//! The run configuration: [`RunConfig`], everything about one run, resolved, serializable
//! and embedded in every result document (secrets, such as API keys and header values, are
//! not). Its rules are `rules.rs`'s (`RunConfig::validate`, whose one caller is
//! `valid::ValidConfig::new`: a run takes only a `ValidConfig`).
//!
//! To add an option: add the field with `#[serde(default)]` (old result files must still load),
//! validate it in `rules.rs`, and set it in `cli`.

use serde::{Deserialize, Serialize};

use super::backend::BackendKind;
use super::load::LoadSpec;
use super::metric::Metric;
use super::mix_spec::{Mix, MixAlone};
use super::slo::{JobSlo, Slo};
use super::workload::WorkloadSpec;
use super::{audio, defaults, hooks, lora, structured, tags, url};

/// Everything about one run, resolved and validated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub backend: BackendKind,
    pub base_url: String,
    pub endpoint: String,
    pub model: String,
    /// Names of extra headers sent (values are not saved: they often hold secrets).
    #[serde(default)]
    pub header_names: Vec<String>,
    #[serde(default)]
    pub extra_body: Option<serde_json::Value>,
    #[serde(default)]
    pub ignore_eos: bool,
    #[serde(default)]
    pub insecure: bool,
    pub load: LoadSpec,
    pub workload: WorkloadSpec,
    /// Percentiles reported for each metric in `percentile_metrics`.
    pub metric_percentiles: Vec<f64>,
    pub percentile_metrics: Vec<Metric>,
    #[serde(default)]
    pub goodput: Vec<Slo>,
    /// True when the server was servebench's own simulator.
    #[serde(default)]
    pub simulated: bool,
    #[serde(default)]
    pub save_generated_text: bool,
    /// Find the run's steady window and report its figures beside the whole run's
    /// (`--steady-state auto`, the default; docs/metrics.md, "Steady state").
    /// Saved only when off, so configs saved before it read and write back unchanged.
    #[serde(default = "defaults::yes", skip_serializing_if = "defaults::is_yes")]
    pub steady_state: bool,
    /// `--time-slice S`: the run's figures also per window of S seconds (docs/metrics.md,
    /// "Time slices"); absent when not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_slice_s: Option<f64>,
    /// `--bucket-by`: the run's figures also per bucket of a request's length (docs/metrics.md,
    /// "Figures by length bucket"); absent when not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_by: Option<super::buckets::BucketBy>,
    /// The built-in server's time scale: its clock ran this many times faster than real
    /// time (1 for real servers and old results).
    #[serde(default = "default_time_scale")]
    pub time_scale: f64,
    /// The built-in server's preset (`None` for real servers and old results).
    #[serde(default)]
    pub sim_preset: Option<String>,
    /// Largest SSE line or event accepted from the server, bytes.
    #[serde(default = "defaults::max_event_bytes")]
    pub max_event_bytes: u64,
    /// Most bytes of an error response's body read, bytes.
    #[serde(default = "defaults::max_error_body_bytes")]
    pub max_error_body_bytes: u64,
    /// Most bytes of each request's generated text kept (`save_generated_text`).
    #[serde(default = "defaults::max_generated_text_bytes")]
    pub max_generated_text_bytes: u64,
    /// Most bytes of a whole (non-streamed) answer read (`--max-answer-size`); `None`: the
    /// default, [`RunConfig::max_answer_bytes`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_answer_size: Option<u64>,
    /// Inputs each request carries, for an API that answers each (`--embedding-batch-size`).
    #[serde(default = "defaults::one", skip_serializing_if = "defaults::is_one")]
    pub inputs_per_request: u32,
    /// A rerank request's query length (`--rerank-query-len`); `None`: the documents'
    /// (`workload::rerank`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_query_len: Option<u64>,
    /// The LoRA adapters requests are sent to, each request's `model` drawn by weight
    /// (`--lora-modules`); empty: every request to `model`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lora_modules: Vec<lora::LoraModule>,
    /// The header each request's id is sent in (`--request-id-header`, lowercase; its syntax
    /// is checked by the flag's parser); `None`: no id is sent (and older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id_header: Option<String>,
    /// Send each request's W3C `traceparent` (derived from its id), so a server that traces
    /// puts its spans under the client's exported ones (`--otel-file`, `--otel-endpoint`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub propagate_trace: bool,
    /// `--structured-output`: every answer asked as JSON of a schema, or as a tool call, and
    /// checked (`structured.rs`); absent for a plain text run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<structured::StructuredOutput>,
    /// `--goodput valid_output:1`: a good request's structured answer is also valid.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub goodput_valid_output: bool,
    /// `--goodput jct:MS`: the job SLOs of an agentic run (docs/metrics.md, "Job goodput").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_goodput: Vec<JobSlo>,
    /// `--label`, `--metadata`, `--cost-per-hour`.
    #[serde(default, flatten)]
    pub tags: tags::Tags,
    /// `--mix FILE`: the run's classes of requests, sharing its load (`mix.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<Mix>,
    /// `--probe-request-rate`: probes per second beside a mix's load (`drive::mix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_request_rate: Option<f64>,
    /// `--mix-alone`: each class of the mix also run alone after the mixed run, or (in such a
    /// run's own config) the one class it runs (`mix.rs`, `drive::mix_alone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix_alone: Option<MixAlone>,
    /// `--audio-duration-s`, a transcription run's synthetic clips' length (`audio.rs`).
    #[serde(default, rename = "audio_duration_s", with = "audio::secs")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audio_duration: Option<std::time::Duration>,
    /// `--hook`, `--reset-prefix-cache`, `--profile`, `--hook-errors`: the calls made on the
    /// server at named points of the session (`hooks.rs`).
    #[serde(default, skip_serializing_if = "hooks::Hooks::is_empty")]
    pub hooks: hooks::Hooks,
    /// An autoscaler benchmark's settings (`--replicas-metric`, `--replicas-file`,
    /// `--cost-per-replica-hour`, ...; `autoscale.rs`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscale: Option<super::autoscale::AutoscaleSpec>,
    /// `--max-prefill-concurrency` and several endpoints (`--base-url` more than once,
    /// `--balance`, `--affinity`, `--session-header`, `--failover`): `routing.rs`.
    #[serde(default, skip_serializing_if = "super::routing::Routing::is_default")]
    pub routing: super::routing::Routing,
}

fn default_time_scale() -> f64 {
    1.0
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            backend: BackendKind::Openai,
            base_url: "http://127.0.0.1:8000".into(),
            endpoint: BackendKind::Openai.default_endpoint().into(),
            model: "servebench-sim".into(),
            header_names: Vec::new(),
            extra_body: None,
            ignore_eos: false,
            insecure: false,
            load: LoadSpec::default(),
            workload: WorkloadSpec::default(),
            metric_percentiles: vec![99.0],
            percentile_metrics: vec![Metric::Ttft, Metric::Tpot, Metric::Itl],
            goodput: Vec::new(),
            simulated: false,
            save_generated_text: false,
            steady_state: true,
            time_slice_s: None,
            bucket_by: None,
            time_scale: 1.0,
            sim_preset: None,
            max_event_bytes: defaults::max_event_bytes(),
            max_error_body_bytes: defaults::max_error_body_bytes(),
            max_generated_text_bytes: defaults::max_generated_text_bytes(),
            max_answer_size: None,
            inputs_per_request: 1,
            rerank_query_len: None,
            lora_modules: Vec::new(),
            structured: None,
            goodput_valid_output: false,
            job_goodput: Vec::new(),
            tags: tags::Tags::default(),
            mix: None,
            probe_request_rate: None,
            mix_alone: None,
            audio_duration: None,
            request_id_header: Some("x-request-id".into()),
            propagate_trace: false,
            hooks: hooks::Hooks::default(),
            autoscale: None,
            routing: super::routing::Routing::default(),
        }
    }
}

impl RunConfig {
    /// The full URL requests are sent to (as saved: redacted where the user's held secrets).
    pub fn url(&self) -> String {
        url::join_url(&self.base_url, &self.endpoint)
    }

    /// Most bytes of a whole (non-streamed) answer read: `--max-answer-size`, 64 MiB unless
    /// given.
    pub fn max_answer_bytes(&self) -> u64 {
        self.max_answer_size.unwrap_or(64 << 20)
    }
}
