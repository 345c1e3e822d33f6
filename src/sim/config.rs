//! The simulator's configuration: [`SimConfig`] (schedule, model, LoRA adapters, faults,
//! engine, time scale)
//! with its defaults, its validation and its repair.
//!
//! # What it owns
//! The configuration values and their rules only; it starts nothing and reads no clock.
//!
//! # What it must not touch
//! Run-time state (`state.rs`), HTTP (`http1.rs`, `apis/`) and streams (`stream/`) read these
//! values; nothing here may depend on them.
//!
//! # Adding a setting
//! Add the field to [`SimConfig`] with its default in `Default`, a rule in
//! [`SimConfig::validate`] (the message names the field) and, if a bad value could make the
//! server misbehave, a repair in `sanitized`. A `servebench sim` flag goes in `cli.rs`'s
//! `SimArgs`.

use std::time::Duration;

use super::autoscale::AutoscaleConfig;
use super::cost::EngineConfig;
use super::error::SimConfigError;
use super::faults::FaultConfig;
use super::metrics::MetricsFlavor;
use super::presets::Preset;
use super::spec::{SpecDecode, MAX_DRAFT_TOKENS, MAX_PATTERN};

/// Largest token budget a request may ask for (the simulated model's context limit).
pub const MAX_TOKENS_LIMIT: u32 = 1 << 20;

/// Limits of the simulator's HTTP/1.1 layer (`http1.rs`), so that slow or hostile clients
/// (slow heads and bodies, huge heads, endless chunk extensions, thousands of idle
/// connections) cost it bounded time and memory. A request over a limit is answered with the
/// status given and its connection closed; it is counted in `SimStats::rejected_requests`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Most connections open at once. A connection beyond it is answered `503` at once and
    /// closed (counted in `SimStats::refused_connections`); the open ones are not disturbed.
    /// Default 16,384: a 4,096-stream benchmark with room to spare (each connection is a file
    /// descriptor: raise `ulimit -n` to match).
    pub max_connections: usize,
    /// Longest wait for a complete request head (request line and headers), `408` past it:
    /// from the accept for a connection's first request, from the first byte of the head for
    /// the next ones (a kept-alive connection idle between requests is not timed; the
    /// connection cap bounds those). A connection that sent nothing is closed silently.
    /// Default 10 s.
    pub head_timeout: Duration,
    /// Longest wait for a request body once its head is in, `408` past it. Default 60 s (a
    /// body of `max_body_bytes` at 1.2 MB/s).
    pub body_timeout: Duration,
    /// Largest request head, bytes (`431`; at most 100 header fields also). Default 64 KiB.
    pub max_head_bytes: usize,
    /// Largest request body, bytes (`413`), also when chunked. Default 64 MiB (long-context
    /// prompts can be megabytes).
    pub max_body_bytes: usize,
    /// Most bytes of chunk extensions (what follows the size on each chunk-size line) in one
    /// chunked body, all chunks together (`400`). Default 16 KiB, as hyper.
    pub max_chunk_ext_bytes: usize,
    /// Largest trailer section of a chunked body, bytes (`431`). Default 16 KiB, as hyper.
    pub max_trailer_bytes: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_connections: 16_384,
            head_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(60),
            max_head_bytes: 64 << 10,
            max_body_bytes: 64 << 20,
            max_chunk_ext_bytes: 16 << 10,
            max_trailer_bytes: 16 << 10,
        }
    }
}

impl HttpLimits {
    /// Checks the limits; the error message names the offending field.
    pub fn validate(&self) -> Result<(), SimConfigError> {
        let positive = [
            ("max_connections", self.max_connections),
            ("max_head_bytes", self.max_head_bytes),
            ("max_body_bytes", self.max_body_bytes),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(SimConfigError::setting(
                format!("limits.{name}"),
                "must be at least 1",
            ));
        }
        if self.head_timeout.is_zero() || self.body_timeout.is_zero() {
            let both = "limits.head_timeout and limits.body_timeout";
            return Err(SimConfigError::setting(both, "must be > 0"));
        }
        Ok(())
    }
}

/// Configuration of the simulated server.
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// Time from request arrival to the first output chunk. Default 50 ms.
    pub ttft: Duration,
    /// Interval between consecutive output chunks. Default 10 ms.
    pub itl: Duration,
    /// Tokens per content chunk (> 1 simulates speculative decoding). Default 1.
    pub tokens_per_chunk: u32,
    /// Tokens generated when the request does not set a limit. Default 128.
    pub output_tokens: u32,
    /// Whether to report usage / token counts at all. Default true; false makes the client
    /// fall back to counting on its own.
    pub usage: bool,
    /// Model name reported by the server. Default `servebench-sim`.
    pub model: String,
    /// Makes text and faults reproducible. Default 0.
    pub seed: u64,
    /// Fault injection rates.
    pub faults: FaultConfig,
    /// Keep the schedule to sub-millisecond precision with a dedicated timer thread (see
    /// `precise.rs`). Default true; turn off when tokio's clock is paused (tests).
    pub precise_timing: bool,
    /// The preset this configuration came from (reported at `GET /sim/info`).
    pub preset: Preset,
    /// The engine model; `None` is exact mode (the fixed `ttft`/`itl` schedule).
    pub engine: Option<EngineConfig>,
    /// The simulated clock runs this many times faster than real time: every simulated
    /// duration (schedule, engine steps, stalls, queue timeout) is divided by it. Default 1.
    pub time_scale: f64,
    /// Metric names served at `GET /metrics`.
    pub metrics_flavor: MetricsFlavor,
    /// The form of its per-request account (`timings.rs`). Default vLLM's `metrics`.
    pub timings: TimingsShape,
    /// Limits of the HTTP/1.1 layer against slow or hostile clients (see [`HttpLimits`]).
    pub limits: HttpLimits,
    /// A reasoning model: the first R tokens of every answer of the chat,
    /// Anthropic and Responses APIs are reasoning, and the rest the answer (a request's
    /// `sim_reasoning_tokens` sets its own). Default 0.
    pub reasoning_tokens: u32,
    /// Speculative decoding (exact mode only): each chunk after the first is a
    /// step carrying its accepted draft tokens and one more (`spec.rs`), and `/metrics` has
    /// vLLM's `vllm:spec_decode_*` counters. Default none.
    pub spec: Option<SpecDecode>,
    /// LoRA adapters served beside `model`, and what loading one costs; `None`: any `model`
    /// a request names is served (no adapters modelled).
    pub lora: Option<LoraConfig>,
    /// Exact mode: at most this many streams at once, the others queued (`slots.rs`); each
    /// queued request's TTFT is its wait plus `ttft`. Default `None`: no limit.
    pub slots: Option<u32>,
    /// Exact mode's queue served by vLLM's `priority` request field (lower first, then
    /// arrival) instead of first come first served (`--scheduling-policy priority`).
    pub priority_scheduling: bool,
    /// The share of structured answers (a schema's JSON, a tool call, a regex's match, a
    /// choice) that are invalid, by an exact rule (`structured.rs`). Default 0.
    pub invalid_output_rate: f64,
    /// The tool calls of each streamed chat or Messages answer to a request offering tools, 1 to
    /// [`MAX_TOOL_CALLS_PER_ANSWER`] (`structured.rs`; the invalid share stays per answer).
    /// Default 1.
    pub tool_calls_per_answer: u32,
    /// A hostile server's structured answers (`structured.rs`): every streamed regex or
    /// choice answer is its text repeated to this many bytes, every streamed chat answer of a
    /// schema's JSON a document whose first list is filled to this many bytes (its items
    /// each the last value of an `enum`), the worst a checker meets. 0 (the default): off;
    /// at most [`MAX_HOSTILE_ANSWER_BYTES`].
    pub hostile_answer_bytes: u32,
    /// The control endpoints (`/reset_prefix_cache`, `/flush_cache`, `/start_profile`,
    /// `/stop_profile`: `apis/control.rs`) answer this status (400 to 599) and do nothing, as
    /// a server without them does (vLLM without its dev endpoints answers 404). Default
    /// `None`: they do what they say.
    pub control_status: Option<u16>,
    /// Exact mode with `slots`: an autoscaler (`autoscale.rs`) runs the server as replicas of
    /// `slots` slots each. Default none.
    pub autoscale: Option<AutoscaleConfig>,
    /// `--session-header NAME`: every response carries a router's session token in header
    /// NAME, the one the request sent back or a new one (`apis/session.rs`). Default `None`.
    pub session_header: Option<String>,
}

/// The longest hostile answer the simulator writes (`hostile_answer_bytes`).
pub const MAX_HOSTILE_ANSWER_BYTES: u32 = 16 << 20;

/// The most tool calls the simulator makes in one answer.
pub const MAX_TOOL_CALLS_PER_ANSWER: u32 = 16;

/// The most adapters the simulator serves.
pub const MAX_LORAS: usize = 1024;
/// The longest adapter load time.
pub const MAX_LORA_LOAD: Duration = Duration::from_secs(3600);

/// LoRA adapters the simulator serves (vLLM's `--lora-modules`, `--max-loras`): a request
/// whose `model` is neither the base model nor one of `adapters` is answered 404 as vLLM
/// does; a request to an adapter that is not resident loads it first (`load_time` more before
/// its first token; the least recently used resident one is evicted past `max_resident`).
#[derive(Clone, Debug, PartialEq)]
pub struct LoraConfig {
    pub adapters: Vec<String>,
    /// Adapters resident at once (vLLM's `--max-loras`).
    pub max_resident: usize,
    /// The time to load an adapter that is not resident.
    pub load_time: Duration,
}

impl LoraConfig {
    fn validate(&self) -> Result<(), SimConfigError> {
        if self.adapters.is_empty() || self.adapters.len() > MAX_LORAS {
            let rule = format!(
                "must name 1 to {MAX_LORAS} adapters, got {}",
                self.adapters.len()
            );
            return Err(SimConfigError::setting("lora.adapters", rule));
        }
        if self.max_resident < 1 {
            return Err(SimConfigError::setting(
                "lora.max_resident",
                "must be at least 1",
            ));
        }
        if self.load_time > MAX_LORA_LOAD {
            let rule = format!("must be at most an hour, got {:?}", self.load_time);
            return Err(SimConfigError::setting("lora.load_time", rule));
        }
        Ok(())
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            ttft: Duration::from_millis(50),
            itl: Duration::from_millis(10),
            tokens_per_chunk: 1,
            output_tokens: 128,
            usage: true,
            model: "servebench-sim".to_string(),
            seed: 0,
            faults: FaultConfig::default(),
            precise_timing: true,
            preset: Preset::Exact,
            engine: None,
            time_scale: 1.0,
            metrics_flavor: MetricsFlavor::Vllm,
            timings: TimingsShape::Vllm,
            limits: HttpLimits::default(),
            reasoning_tokens: 0,
            spec: None,
            lora: None,
            slots: None,
            priority_scheduling: false,
            invalid_output_rate: 0.0,
            tool_calls_per_answer: 1,
            hostile_answer_bytes: 0,
            control_status: None,
            autoscale: None,
            session_header: None,
        }
    }
}

impl SimConfig {
    /// The default configuration with `preset`'s engine and metric names.
    pub fn from_preset(preset: Preset) -> Self {
        Self {
            preset,
            engine: preset.engine(),
            metrics_flavor: preset.metrics_flavor(),
            ..Self::default()
        }
    }

    /// Checks the configuration; the error message names the offending field.
    pub fn validate(&self) -> Result<(), SimConfigError> {
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            let rule = format!("must be a finite number > 0, got {}", self.time_scale);
            return Err(SimConfigError::setting("time_scale", rule));
        }
        if let Some(engine) = &self.engine {
            engine.validate()?;
        }
        if self.tokens_per_chunk < 1 {
            return Err(SimConfigError::setting(
                "tokens_per_chunk",
                "must be at least 1",
            ));
        }
        if self.output_tokens < 1 {
            return Err(SimConfigError::setting(
                "output_tokens",
                "must be at least 1",
            ));
        }
        if self.output_tokens > MAX_TOKENS_LIMIT {
            let rule = format!(
                "must be at most {MAX_TOKENS_LIMIT}, got {}",
                self.output_tokens
            );
            return Err(SimConfigError::setting("output_tokens", rule));
        }
        if let Some(spec) = &self.spec {
            self.validate_spec(spec)?;
        }
        if self
            .control_status
            .is_some_and(|c| !(400..=599).contains(&c))
        {
            let rule = "must be an error status, 400 to 599";
            return Err(SimConfigError::setting("control_status", rule));
        }
        if self.slots == Some(0) {
            return Err(SimConfigError::setting("slots", "must be at least 1"));
        }
        if self.slots.is_some() && self.engine.is_some() {
            let rule = "are exact mode's: an engine preset queues by its own max_num_seqs";
            return Err(SimConfigError::setting("slots", rule));
        }
        if let Some(a) = &self.autoscale {
            a.validate()?;
            if self.slots.is_none() {
                let rule = "scales exact mode's slots: give slots (per replica) too";
                return Err(SimConfigError::setting("autoscale", rule));
            }
        }
        if self.priority_scheduling && self.slots.is_none() {
            let rule = "orders the queue of exact mode's slots: give slots too";
            return Err(SimConfigError::setting("priority_scheduling", rule));
        }
        if !(0.0..=1.0).contains(&self.invalid_output_rate) {
            let rule = format!("must be between 0 and 1, got {}", self.invalid_output_rate);
            return Err(SimConfigError::setting("invalid_output_rate", rule));
        }
        if !(1..=MAX_TOOL_CALLS_PER_ANSWER).contains(&self.tool_calls_per_answer) {
            let rule = format!(
                "must be between 1 and {MAX_TOOL_CALLS_PER_ANSWER}, got {}",
                self.tool_calls_per_answer
            );
            return Err(SimConfigError::setting("tool_calls_per_answer", rule));
        }
        if self.hostile_answer_bytes > MAX_HOSTILE_ANSWER_BYTES {
            let rule = format!(
                "must be at most {MAX_HOSTILE_ANSWER_BYTES}, got {}",
                self.hostile_answer_bytes
            );
            return Err(SimConfigError::setting("hostile_answer_bytes", rule));
        }
        self.limits.validate()?;
        if let Some(lora) = &self.lora {
            lora.validate()?;
        }
        self.faults.validate()
    }

    /// Speculative decoding's rules: exact mode with one token per chunk, `K` in
    /// 1..=[`MAX_DRAFT_TOKENS`], 1 to [`MAX_PATTERN`] accepted counts, each at most `K`.
    fn validate_spec(&self, spec: &SpecDecode) -> Result<(), SimConfigError> {
        let k = spec.draft_tokens;
        if !(1..=MAX_DRAFT_TOKENS).contains(&k) {
            let rule = format!("must be 1 to {MAX_DRAFT_TOKENS}, got {k}");
            return Err(SimConfigError::setting("spec_draft_tokens", rule));
        }
        if spec.accepted.is_empty() || spec.accepted.len() > MAX_PATTERN {
            let rule = format!(
                "must list 1 to {MAX_PATTERN} accepted counts, got {}",
                spec.accepted.len()
            );
            return Err(SimConfigError::setting("spec_accepted", rule));
        }
        if let Some(a) = spec.accepted.iter().find(|&&a| a > k) {
            let rule = format!("each must be at most spec_draft_tokens ({k}), got {a}");
            return Err(SimConfigError::setting("spec_accepted", rule));
        }
        if self.engine.is_some() {
            let rule = "is simulated in exact mode only (not with an engine preset)";
            return Err(SimConfigError::setting("spec_draft_tokens", rule));
        }
        if self.tokens_per_chunk != 1 {
            let rule = "sets each chunk's tokens: tokens_per_chunk must stay 1";
            return Err(SimConfigError::setting("spec_draft_tokens", rule));
        }
        Ok(())
    }

    /// Repairs values that would make the server misbehave; `validate` rejects them anyway.
    pub(crate) fn sanitized(mut self) -> Self {
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            self.time_scale = 1.0;
        }
        self.tokens_per_chunk = self.tokens_per_chunk.max(1);
        self.output_tokens = self.output_tokens.clamp(1, MAX_TOKENS_LIMIT);
        let (l, d) = (&mut self.limits, HttpLimits::default());
        l.max_connections = l.max_connections.max(1);
        l.max_head_bytes = l.max_head_bytes.max(1);
        l.max_body_bytes = l.max_body_bytes.max(1);
        if l.head_timeout.is_zero() {
            l.head_timeout = d.head_timeout;
        }
        if l.body_timeout.is_zero() {
            l.body_timeout = d.body_timeout;
        }
        if let Some(lora) = &mut self.lora {
            lora.max_resident = lora.max_resident.max(1);
            lora.load_time = lora.load_time.min(MAX_LORA_LOAD);
        }
        self
    }
}

/// The form the simulator gives its own account of each request in (`--timings`, `timings.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TimingsShape {
    #[default]
    Vllm,
    Llamacpp,
    Tgi,
    Sglang,
}

impl TimingsShape {
    pub fn as_str(self) -> &'static str {
        match self {
            TimingsShape::Vllm => "vllm",
            TimingsShape::Llamacpp => "llamacpp",
            TimingsShape::Tgi => "tgi",
            TimingsShape::Sglang => "sglang",
        }
    }
}

impl std::str::FromStr for TimingsShape {
    type Err = SimConfigError;
    fn from_str(s: &str) -> Result<Self, SimConfigError> {
        match s {
            "vllm" => Ok(TimingsShape::Vllm),
            "llamacpp" => Ok(TimingsShape::Llamacpp),
            "tgi" => Ok(TimingsShape::Tgi),
            "sglang" => Ok(TimingsShape::Sglang),
            other => Err(SimConfigError::setting(
                "timings",
                format!("must be vllm, llamacpp, tgi or sglang, got {other:?}"),
            )),
        }
    }
}
