//! The simulator's configuration: [`SimConfig`] (schedule, model, faults, engine, time scale)
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

use super::engine::EngineConfig;
use super::error::SimConfigError;
use super::faults::FaultConfig;
use super::metrics::MetricsFlavor;
use super::presets::Preset;

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
    /// Limits of the HTTP/1.1 layer against slow or hostile clients (see [`HttpLimits`]).
    pub limits: HttpLimits,
    /// The share of structured answers (a schema's JSON, a tool call) that are invalid, by
    /// an exact rule (`structured.rs`). Default 0.
    pub invalid_output_rate: f64,
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
            limits: HttpLimits::default(),
            invalid_output_rate: 0.0,
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
        if !(0.0..=1.0).contains(&self.invalid_output_rate) {
            let rule = format!("must be between 0 and 1, got {}", self.invalid_output_rate);
            return Err(SimConfigError::setting("invalid_output_rate", rule));
        }
        self.limits.validate()?;
        self.faults.validate()
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
        self
    }
}
