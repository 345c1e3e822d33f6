//! The validated, serializable run configuration, embedded in every result document.
//!
//! `cli` turns flags into a [`RunConfig`] and its plan makes it a [`valid::ValidConfig`], the
//! only way past [`RunConfig::validate`], which holds every rule on the resolved values (rules between
//! flags that never reach the config, such as a sweep with `--shard`, are the plan's:
//! `cli::plan`). Nothing here knows clap but one `ValueEnum` derive (`RampStrategy`), so
//! `--ramp-up-strategy` lists its values (`--dataset-name`'s are `cli::dataset`'s). Everything
//! a result needs to be reproduced or compared is here; secrets (API keys, header values) are
//! not. Errors: [`error::ConfigError`] (a rule broken), [`error::ValueError`] (text that is not
//! a value), `limits::LimitError` (a bound passed).
//!
//! To add an option: add the field with `#[serde(default)]` (old result files must still load),
//! validate it in [`RunConfig::validate`], and set it in `cli`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub use self::backend::MAX_INPUTS_PER_REQUEST;
pub use self::backend::{AnswerShape, BackendInfo, BackendKind, UnknownBackend};
use self::error::{ConfigError, ValueError};
pub use self::limits::{limit, MAX_PROMPTS, MAX_TOKENS, MAX_WAIT_S};
use self::shape::LoadShape;
use self::shard::Shard;
pub use self::workload::{Dataset, WorkloadSpec, DEFAULT_INPUT_LEN};

pub mod audio;
mod backend;
mod defaults;
pub mod error;
pub mod figure;
pub mod limits;
pub mod lora;
pub mod media;
pub mod metric;
pub mod mix;
pub mod search;
pub mod shape;
pub mod shard;
pub mod structured;
pub mod sweep;
pub mod tags;
pub mod threads;
pub mod url;
pub mod valid;
pub mod workload;

/// Requests per second: a finite rate, or all at once (`inf`, the default, as in the seeds).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(into = "String", try_from = "String")]
pub enum RequestRate {
    #[default]
    Infinite,
    PerSecond(f64),
}

impl fmt::Display for RequestRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestRate::Infinite => f.write_str("inf"),
            RequestRate::PerSecond(r) => write!(f, "{r}"),
        }
    }
}

impl FromStr for RequestRate {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        if s.eq_ignore_ascii_case("inf") {
            return Ok(RequestRate::Infinite);
        }
        match s.parse::<f64>() {
            Ok(r) if r.is_infinite() && r > 0.0 => Ok(RequestRate::Infinite),
            Ok(r) if r.is_finite() && r > 0.0 => Ok(RequestRate::PerSecond(r)),
            _ => Err(ValueError::Rate(s.to_string())),
        }
    }
}

impl From<RequestRate> for String {
    fn from(r: RequestRate) -> String {
        r.to_string()
    }
}

impl TryFrom<String> for RequestRate {
    type Error = ValueError;
    fn try_from(s: String) -> Result<Self, ValueError> {
        s.parse()
    }
}

/// A latency metric that has per-request or per-gap samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Ttft,
    Tpot,
    Itl,
    E2el,
}

impl Metric {
    pub const ALL: [Metric; 4] = [Metric::Ttft, Metric::Tpot, Metric::Itl, Metric::E2el];
    /// The lowercase key used in JSON names (`mean_ttft_ms`) and on the command line.
    pub fn key(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Tpot => "tpot",
            Metric::Itl => "itl",
            Metric::E2el => "e2el",
        }
    }
}

impl FromStr for Metric {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s.trim() {
            "ttft" => Ok(Metric::Ttft),
            "tpot" => Ok(Metric::Tpot),
            "itl" => Ok(Metric::Itl),
            "e2el" => Ok(Metric::E2el),
            other => Err(ValueError::Metric(other.to_string())),
        }
    }
}

/// One service-level objective for goodput: a request is good when every SLO holds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    pub metric: SloMetric,
    /// Upper bound, milliseconds (as on vLLM's command line).
    pub max_ms: f64,
}

/// What a goodput SLO bounds: a per-request latency (`ttft`, `tpot`, `e2el`, saved under
/// [`Metric`]'s names), or the time to the first answer token (`ttfa`, issue 25 §6: a
/// reasoning model's first token of its answer, after its reasoning).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloMetric {
    Ttft,
    Tpot,
    E2el,
    Ttfa,
}

impl SloMetric {
    /// Its name on the command line and in documents.
    pub fn key(self) -> &'static str {
        match self {
            SloMetric::Ttft => "ttft",
            SloMetric::Tpot => "tpot",
            SloMetric::E2el => "e2el",
            SloMetric::Ttfa => "ttfa",
        }
    }
}

impl FromStr for Slo {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        let (name, value) = (s.split_once(':')).ok_or_else(|| ValueError::Slo(s.to_string()))?;
        let metric = match name.trim() {
            "ttfa" => SloMetric::Ttfa,
            other => match (other.parse::<Metric>()).map_err(|_| ValueError::Slo(s.to_string()))? {
                Metric::Ttft => SloMetric::Ttft,
                Metric::Tpot => SloMetric::Tpot,
                Metric::E2el => SloMetric::E2el,
                Metric::Itl => return Err(ValueError::SloOfItl),
            },
        };
        let max_ms: f64 = (value.parse().ok())
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| ValueError::SloBound {
                slo: s.to_string(),
                ms: value.to_string(),
            })?;
        Ok(Slo { metric, max_ms })
    }
}

/// How requests are sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadSpec {
    /// Measured requests (warm-ups not included).
    pub num_prompts: u64,
    pub request_rate: RequestRate,
    /// Gamma shape of inter-arrival times; 1.0 is a Poisson process (vLLM's `--burstiness`).
    pub burstiness: f64,
    /// At most this many requests in flight; `None` means no limit.
    pub max_concurrency: Option<u64>,
    /// Requests sent (one at a time) before the measured run, excluded from every statistic.
    pub num_warmups: u64,
    pub seed: u64,
    /// Per-request time limit, seconds.
    pub timeout_s: f64,
    /// After Ctrl-C, how long in-flight requests may still finish, seconds.
    pub grace_s: f64,
    /// `--shard I/N`: this process sends only its share of the schedule (see `shard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Longest wait for a TCP (and TLS) connection, seconds.
    #[serde(default = "defaults::connect_timeout_s")]
    pub connect_timeout_s: f64,
    /// Longest wait from a request's send to the first byte of its response body, seconds;
    /// `None`: the request timeout (queueing and prefill can be long on a loaded server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_timeout_s: Option<f64>,
    /// Longest silence between two reads of a response body once it started, seconds (a
    /// longer one is a `stall`).
    #[serde(default = "defaults::idle_timeout_s")]
    pub idle_timeout_s: f64,
    /// Time limit of the pre-flight request, seconds.
    #[serde(default = "defaults::preflight_timeout_s")]
    pub preflight_timeout_s: f64,
    /// Duration, ramp, stages and early stop (`shape.rs`); absent: a count at one rate.
    #[serde(default, skip_serializing_if = "LoadShape::is_default")]
    pub shape: LoadShape,
}

impl Default for LoadSpec {
    fn default() -> Self {
        LoadSpec {
            num_prompts: 100,
            request_rate: RequestRate::Infinite,
            burstiness: 1.0,
            max_concurrency: None,
            num_warmups: 0,
            seed: 0,
            timeout_s: 6.0 * 3600.0,
            grace_s: 10.0,
            shard: None,
            connect_timeout_s: defaults::connect_timeout_s(),
            first_byte_timeout_s: None,
            idle_timeout_s: defaults::idle_timeout_s(),
            preflight_timeout_s: defaults::preflight_timeout_s(),
            shape: LoadShape::default(),
        }
    }
}

impl LoadSpec {
    pub fn timeout(&self) -> Duration {
        limit(self.timeout_s)
    }
    pub fn grace(&self) -> Duration {
        limit(self.grace_s)
    }
    pub fn connect_timeout(&self) -> Duration {
        limit(self.connect_timeout_s)
    }
    /// The first-byte limit, the request timeout unless one was given.
    pub fn first_byte_timeout(&self) -> Duration {
        limit(self.first_byte_timeout_s.unwrap_or(self.timeout_s))
    }
    pub fn idle_timeout(&self) -> Duration {
        limit(self.idle_timeout_s)
    }
    pub fn preflight_timeout(&self) -> Duration {
        limit(self.preflight_timeout_s)
    }
    /// The concurrency cap of this process: `max_concurrency`, or a shard's share of it.
    pub fn concurrency_cap(&self) -> Option<u64> {
        let cap = self.max_concurrency?;
        Some(self.shard.map_or(cap, |s| s.concurrency_share(cap)))
    }
}

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
    /// `--label`, `--metadata`, `--cost-per-hour`.
    #[serde(default, flatten)]
    pub tags: tags::Tags,
    /// `--mix FILE`: the run's classes of requests (issue 27 §2; `mix.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<mix::Mix>,
    /// `--probe-request-rate`: probes per second beside a mix's load (`drive::mix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_request_rate: Option<f64>,
    /// `--mix-alone`: each class of the mix also run alone after the mixed run, or (in such a
    /// run's own config) the one class it runs (`mix.rs`, `drive::mix_alone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix_alone: Option<mix::MixAlone>,
    /// `--audio-duration-s`, a transcription run's synthetic clips' length (`audio.rs`).
    #[serde(default, rename = "audio_duration_s", with = "audio::secs")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audio_duration: Option<std::time::Duration>,
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
            tags: tags::Tags::default(),
            mix: None,
            probe_request_rate: None,
            mix_alone: None,
            audio_duration: None,
            request_id_header: Some("x-request-id".into()),
            propagate_trace: false,
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

    /// Checks what a run's flags ask to build before it starts: at most [`MAX_PROMPTS`]
    /// requests (conversations times their turns) and [`limits::MAX_BUILT_TOKENS`] prompt
    /// tokens in all (the synthetic datasets; a file's prompts are as large as the file, a
    /// trace's are checked as it is read).
    fn check_built(&self) -> Result<(), ConfigError> {
        let (load, w) = (&self.load, &self.workload);
        let turns = u64::from(load.shape.turns());
        let requests = load.num_prompts.saturating_mul(turns);
        // Each input of a batch is a prompt built.
        let inputs = u64::from(self.inputs_per_request.max(1));
        // A rerank request's query is one more prompt built, of its own length.
        let (inputs, query_len) = match self.backend.takes_query() {
            true => (inputs + 1, self.rerank_query_len.unwrap_or(0)),
            false => (inputs, 0),
        };
        if requests > MAX_PROMPTS {
            return Err(ConfigError::invalid(
                "--turns",
                format!("{} conversations of {turns} turns are {requests} requests, more than {MAX_PROMPTS}", load.num_prompts),
            ));
        }
        if requests.saturating_mul(inputs) > MAX_PROMPTS {
            return Err(ConfigError::invalid(
                "--embedding-batch-size",
                format!(
                    "{requests} requests of {inputs} inputs are more than {MAX_PROMPTS} prompts"
                ),
            ));
        }
        let Some(longest) = w.dataset.longest_built_prompt() else {
            return Ok(());
        };
        let longest = longest.max(query_len);
        let pool = match load.shape.window_s() {
            Some(_) => requests.max(limits::POOL_MAX),
            None => requests,
        };
        let tokens = (pool.saturating_add(load.num_warmups))
            .saturating_mul(inputs)
            .saturating_mul(longest);
        if tokens > limits::MAX_BUILT_TOKENS {
            return Err(ConfigError::invalid(
                "--num-prompts",
                format!("with --input-len (and --num-warmups, --prefix-len, --embedding-batch-size) it asks for up to {tokens} prompt tokens, more than the {} a run builds before it starts", limits::MAX_BUILT_TOKENS),
            ));
        }
        Ok(())
    }

    /// Checks every field; the error names the option that is wrong. Its one caller is
    /// `valid::ValidConfig::new`: a run takes a `ValidConfig`, so it cannot skip the check.
    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |option: &str, why: String| Err(ConfigError::invalid(option, why));
        self.tags.validate()?;
        if let Some(s) = &self.structured {
            s.validate("--structured-output")?;
            s.check_backend(self.backend)?;
        }
        if self.goodput_valid_output && self.structured.is_none() {
            let why = "valid_output:1 counts valid structured answers: give --structured-output";
            return bad("--goodput", why.into());
        }
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return bad(
                "--base-url",
                format!("'{}' must start with http:// or https://", self.base_url),
            );
        }
        if self.load.num_prompts == 0 {
            return bad("--num-prompts", "must be at least 1".into());
        }
        if !(self.load.burstiness.is_finite() && self.load.burstiness > 0.0) {
            return bad("--burstiness", "must be a positive number".into());
        }
        let finite = self.load.request_rate != RequestRate::Infinite;
        self.load.shape.validate(finite)?;
        if let RequestRate::PerSecond(r) = self.load.request_rate {
            limits::check_rate(r).map_err(|why| ConfigError::limit("--request-rate", why))?;
        }
        if self.load.max_concurrency == Some(0) {
            return bad("--max-concurrency", "must be at least 1".into());
        }
        let shape = &self.load.shape;
        if shape.duration_s.is_some()
            && !finite
            && shape.ramp.is_none()
            && self.load.max_concurrency.is_none()
        {
            return bad(
                "--duration",
                "at --request-rate inf a time window is a closed loop: give --max-concurrency (the streams kept open), or a finite --request-rate (it sent as fast as the client could, hundreds of thousands of requests a second)".into(),
            );
        }
        if !(self.load.timeout_s.is_finite() && self.load.timeout_s > 0.0) {
            return bad("--timeout", "must be a positive number of seconds".into());
        }
        if self.load.timeout_s > MAX_WAIT_S {
            return bad(
                "--timeout",
                format!("must be at most {MAX_WAIT_S} seconds (a week)"),
            );
        }
        if !(self.load.grace_s.is_finite() && self.load.grace_s >= 0.0) {
            return bad("--grace", "must be zero or more seconds".into());
        }
        if self.load.grace_s > MAX_WAIT_S {
            return bad(
                "--grace",
                format!("must be at most {MAX_WAIT_S} seconds (a week)"),
            );
        }
        if self.load.num_prompts > MAX_PROMPTS {
            return bad("--num-prompts", format!("must be at most {MAX_PROMPTS}"));
        }
        if self.load.num_warmups > MAX_PROMPTS {
            return bad("--num-warmups", format!("must be at most {MAX_PROMPTS}"));
        }
        let w = &self.workload;
        w.dataset.check()?;
        self.check_built()?;
        if let Dataset::Trace {
            block_size,
            speedup,
            ..
        } = w.dataset
        {
            let shaped = finite || self.load.shape.sets_schedule();
            shape::validate_trace(shaped, (block_size, speedup))?;
        }
        let conversation = match (w.dataset.multi_turn(), self.load.shape.turns() > 1) {
            (true, _) => Some("--multi-turn"),
            (false, true) => Some("--turns"),
            (false, false) => None,
        };
        let trace = w.dataset.own_schedule().is_some();
        (self.backend).check_request(self.inputs_per_request, conversation, trace)?;
        audio::check(self.backend, &w.dataset, self.audio_duration)?;
        match self.rerank_query_len {
            Some(_) if !self.backend.takes_query() => {
                let why = format!(
                    "--backend {} sends no query: give a rerank backend (rerank, tei-rerank)",
                    self.backend.as_str()
                );
                return bad("--rerank-query-len", why);
            }
            Some(q) if q == 0 || q > MAX_TOKENS => {
                return bad(
                    "--rerank-query-len",
                    format!("must be 1 to {MAX_TOKENS}, got {q}"),
                );
            }
            _ => {}
        }
        if self.backend.takes_query()
            && self.inputs_per_request > 1
            && matches!(w.dataset, Dataset::Jsonl { .. })
        {
            let why = "a jsonl file's lines give each request's query and documents";
            return bad("--rerank-documents", why.into());
        }
        lora::check(&self.lora_modules).map_err(|e| ConfigError::invalid("--lora-modules", e))?;
        if w.dataset.multi_turn() {
            if self.load.shape.turns() > 1 {
                return bad(
                    "--multi-turn",
                    "the conversations give their own turns: not with --turns".into(),
                );
            }
            if self.load.shape.window_s().is_some() {
                return bad(
                    "--multi-turn",
                    "conversations run to their last turn: not with --duration or --stages".into(),
                );
            }
        }
        if !w.dataset.builds_with_words() && w.tokenizer.is_none() {
            return bad(
                "--tokenizer",
                format!("the {} dataset needs the served model's tokenizer (a tokenizer.json, a directory holding one, a GGUF file, or a tiktoken encoding name)", w.dataset),
            );
        }
        if let Some(p) = self
            .metric_percentiles
            .iter()
            .find(|p| !(p.is_finite() && **p > 0.0 && **p <= 100.0))
        {
            return bad("--metric-percentiles", format!("{p} is not in (0, 100]"));
        }
        if let Some(body) = &self.extra_body {
            if !body.is_object() {
                return bad("--extra-body", "must be a JSON object".into());
            }
        }
        if let Some(s) = self.load.shard {
            if s.index >= s.count {
                return bad("--shard", format!("{s}: INDEX must be below COUNT"));
            }
            if self.load.num_prompts < s.count {
                return bad(
                    "--shard",
                    format!(
                        "{} requests cannot be split over {} shards (every shard needs one)",
                        self.load.num_prompts, s.count
                    ),
                );
            }
            if let Some(c) = self.load.max_concurrency.filter(|&c| c < s.count) {
                return bad(
                    "--shard",
                    format!("--max-concurrency {c} cannot be split over {} shards (every shard needs one slot; use at most {c} shards)", s.count),
                );
            }
        }
        let limits = [
            ("--connect-timeout", Some(self.load.connect_timeout_s)),
            ("--first-byte-timeout", self.load.first_byte_timeout_s),
            ("--idle-timeout", Some(self.load.idle_timeout_s)),
            ("--preflight-timeout", Some(self.load.preflight_timeout_s)),
        ];
        for (option, s) in limits {
            if s.is_some_and(|s| !(s.is_finite() && s > 0.0 && s <= MAX_WAIT_S)) {
                let why =
                    format!("must be a number of seconds > 0 and at most {MAX_WAIT_S:.0} (a week)");
                return bad(option, why);
            }
        }
        let sizes = [
            ("--max-event-size", self.max_event_bytes),
            ("--max-error-body", self.max_error_body_bytes),
            ("--max-generated-text", self.max_generated_text_bytes),
            ("--max-answer-size", self.max_answer_bytes()),
        ];
        if let Some((option, _)) = sizes.iter().find(|(_, n)| *n == 0) {
            return bad(option, "must be at least 1 byte".into());
        }
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            return bad("--time-scale", "must be a finite number > 0".into());
        }
        mix::check_config(self)?;
        Ok(())
    }
}

/// What to scrape and how often.
#[derive(Clone, Debug, PartialEq)]
pub struct ScrapeSpec {
    /// The full URL of the metrics endpoint, e.g. `http://127.0.0.1:8000/metrics`.
    pub url: String,
    /// More endpoints sampled with it (a DCGM exporter's, for GPU power and utilisation).
    pub more_urls: Vec<String>,
    /// Time between two scrapes (at least 1 ms; `cli` rejects 0).
    pub interval: Duration,
    /// Do not verify the server's TLS certificate (as `--insecure` for requests).
    pub insecure: bool,
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
