//! The server's own metrics as it exposes them: a parser of the Prometheus text exposition
//! format, and the names vLLM, SGLang, TGI and llama.cpp use, mapped to servebench's common
//! names.
//!
//! - [`parse`]: sample lines `name{label="value",...} value [timestamp]`, `# HELP` / `# TYPE`
//!   and other comments. Pure.
//! - [`parse_known`]: the same for the lines of the names servebench reads ([`known_name`]),
//!   within [`ParseLimits`] (how many series, how long a label): other lines cost a scan of
//!   their name, and a line past a limit is counted, never read whole. What a scrape uses.
//! - [`extract`]: built-in name maps from vLLM, SGLang, TGI and llama.cpp to servebench's
//!   common names (running, waiting, KV-cache usage, prompt and generation token counters),
//!   giving one [`MetricsSample`]. Pure.
//!
//! Sampling during a run is `drive::scrape`; the figures over a run are
//! `results::server_metrics`. To support another server: add its metric names to [`SOURCES`]
//! and a fixture test with a piece of its real `/metrics` text.

use serde::{Deserialize, Serialize};

/// One sample line of the exposition: a series (name and labels) and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct PromSample {
    pub name: String,
    /// Label pairs in the order written, values unescaped.
    pub labels: Vec<(String, String)>,
    pub value: f64,
    /// The optional timestamp, milliseconds since the Unix epoch.
    pub timestamp_ms: Option<i64>,
}

/// What [`parse`] read from one exposition.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<PromSample>,
    /// Lines that are neither samples nor comments: `(line number from 1, why)`.
    pub bad_lines: Vec<(usize, String)>,
    /// Lines [`parse_known`] left unread past its [`ParseLimits`].
    pub over_limit: u64,
}

/// What [`parse_known`] reads of one exposition at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseLimits {
    /// Sample lines read (kept or unreadable); the known lines after them are counted.
    pub max_series: usize,
    /// Bytes of one label's value; a line with a longer one is counted, not read.
    pub max_label_bytes: usize,
}

impl ParseLimits {
    /// A scrape's limits (`drive::scrape`): 10,000 series of the names servebench reads (a
    /// vLLM server with many models and engines has a few hundred), and label values of 4 KiB
    /// (real ones are model names and paths, well under 200 bytes).
    pub const SCRAPE: ParseLimits = ParseLimits {
        max_series: 10_000,
        max_label_bytes: 4 << 10,
    };
}

/// True for the metric names servebench reads: those of [`SOURCES`] and a DCGM exporter's
/// GPU power and utilisation ([`extract_gpu`]).
pub fn known_name(name: &str) -> bool {
    SOURCES.iter().any(|(_, _, n)| *n == name)
        || DCGM_NAMES.contains(&name)
        || SPEC_NAMES.contains(&name)
}

const DCGM_NAMES: [&str; 2] = ["DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL"];

/// Parses the sample lines of [`known_name`]s within `limits`, as [`parse`] does otherwise;
/// every other line costs a scan of its name. Known lines past `max_series`, and lines with a
/// label value over `max_label_bytes`, are counted in `over_limit`, not read.
pub fn parse_known(text: &str, limits: ParseLimits) -> Exposition {
    let mut out = Exposition::default();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start_matches([' ', '\t']);
        let name_end = t.find(|c: char| !is_name_char(c)).unwrap_or(t.len());
        if !known_name(&t[..name_end]) {
            continue;
        }
        if out.samples.len() + out.bad_lines.len() >= limits.max_series {
            out.over_limit += 1;
            continue;
        }
        match parse_line_within(line, limits.max_label_bytes) {
            Ok(Some(s)) => out.samples.push(s),
            Ok(None) => {}
            Err(LineError::OverLimit) => out.over_limit += 1,
            Err(LineError::Bad(why)) => out.bad_lines.push((i + 1, why)),
        }
    }
    out
}

/// Why a line was not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Not a sample line: what is wrong, quoting the line's start.
    #[error("{0}")]
    Bad(String),
    /// A label value longer than the limit.
    #[error("a label value over the limit")]
    OverLimit,
}

impl From<String> for LineError {
    fn from(why: String) -> LineError {
        LineError::Bad(why)
    }
}

/// The start of `line` for an error message (a line may be megabytes long).
fn quoted(line: &str) -> String {
    match line.char_indices().nth(80) {
        Some((i, _)) => format!("{:?}...", &line[..i]),
        None => format!("{line:?}"),
    }
}

/// Parses the Prometheus text format. Blank lines and `#` lines (`# HELP`, `# TYPE`, other
/// comments) carry no samples; a line that cannot be read is reported in `bad_lines` and the
/// rest are still read.
pub fn parse(text: &str) -> Exposition {
    let mut out = Exposition::default();
    for (i, line) in text.lines().enumerate() {
        match parse_line(line) {
            Ok(Some(s)) => out.samples.push(s),
            Ok(None) => {}
            Err(why) => out.bad_lines.push((i + 1, why.to_string())),
        }
    }
    out
}

/// Parses one line: `Ok(None)` for blank and comment lines.
pub fn parse_line(line: &str) -> Result<Option<PromSample>, LineError> {
    parse_line_within(line, usize::MAX)
}

/// [`parse_line`], with label values of at most `max_label` bytes.
fn parse_line_within(line: &str, max_label: usize) -> Result<Option<PromSample>, LineError> {
    let line = line.trim_matches(|c| c == ' ' || c == '\t' || c == '\r');
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let name_end = line.find(|c: char| !is_name_char(c)).unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("no metric name at the start of {}", quoted(line)).into());
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        rest = parse_labels(after, &mut labels, max_label)?;
    }
    let mut fields = rest.split([' ', '\t']).filter(|f| !f.is_empty());
    let value = fields
        .next()
        .ok_or_else(|| format!("no value in {}", quoted(line)))?;
    let value = parse_value(value)
        .ok_or_else(|| format!("bad value {} in {}", quoted(value), quoted(line)))?;
    let timestamp_ms = match fields.next() {
        None => None,
        Some(t) => Some(
            t.parse::<i64>()
                .map_err(|_| format!("bad timestamp {} in {}", quoted(t), quoted(line)))?,
        ),
    };
    if let Some(extra) = fields.next() {
        return Err(format!(
            "unexpected {} after the value in {}",
            quoted(extra),
            quoted(line)
        )
        .into());
    }
    Ok(Some(PromSample {
        name: name.to_string(),
        labels,
        value,
        timestamp_ms,
    }))
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// Reads `name="value", ...}` (the part after `{`), each value at most `max_label` bytes;
/// returns what follows the `}`.
fn parse_labels<'a>(
    mut s: &'a str,
    labels: &mut Vec<(String, String)>,
    max_label: usize,
) -> Result<&'a str, LineError> {
    loop {
        s = s.trim_start_matches([' ', '\t']);
        if let Some(rest) = s.strip_prefix('}') {
            return Ok(rest);
        }
        let end = s.find(|c: char| !is_name_char(c)).unwrap_or(s.len());
        let key = &s[..end];
        if key.is_empty() {
            return Err(format!("expected a label name at {}", quoted(s)).into());
        }
        if key.len() > max_label {
            return Err(LineError::OverLimit);
        }
        s = s[end..].trim_start_matches([' ', '\t']);
        s = s
            .strip_prefix('=')
            .ok_or_else(|| format!("expected '=' after label {key:?}"))?
            .trim_start_matches([' ', '\t']);
        s = s
            .strip_prefix('"')
            .ok_or_else(|| format!("expected '\"' to open the value of label {key:?}"))?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let close = loop {
            if value.len() > max_label {
                return Err(LineError::OverLimit);
            }
            match chars.next() {
                None => return Err(format!("unterminated value of label {key:?}").into()),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c), // \\ and \" (and anything else, literally)
                    None => return Err(format!("unterminated value of label {key:?}").into()),
                },
                Some((_, c)) => value.push(c),
            }
        };
        labels.push((key.to_string(), value));
        s = s[close + 1..].trim_start_matches([' ', '\t']);
        if let Some(rest) = s.strip_prefix(',') {
            s = rest;
        } else if !s.starts_with('}') {
            return Err(format!("expected ',' or '}}' after label {key:?}").into());
        }
    }
}

/// A sample value: a float, `NaN`, `+Inf` or `-Inf` (any case).
fn parse_value(s: &str) -> Option<f64> {
    s.parse::<f64>().ok()
}

/// A server whose metric names servebench knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerFamily {
    Vllm,
    Sglang,
    Tgi,
    Llamacpp,
}

impl ServerFamily {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerFamily::Vllm => "vllm",
            ServerFamily::Sglang => "sglang",
            ServerFamily::Tgi => "tgi",
            ServerFamily::Llamacpp => "llamacpp",
        }
    }
}

/// servebench's common names for what servers report about themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Common {
    /// Requests being processed now (in a running batch / a busy slot). Gauge.
    Running,
    /// Requests waiting for a slot or a batch. Gauge.
    Waiting,
    /// Fraction (0..=1) of the KV cache in use. Gauge.
    KvCacheUsage,
    /// Prompt tokens processed since the server started. Counter.
    PromptTokensTotal,
    /// Output tokens generated since the server started. Counter.
    GenerationTokensTotal,
}

/// The built-in name maps: for each common name, the metric names that feed it, in order of
/// preference (the first present in an exposition is used). Series of one name with different
/// labels (several models or engines) are summed, except KV-cache usage, where the largest is
/// taken. A histogram's `_sum` is the total of what it observed (TGI counts tokens that way).
///
/// - vLLM: `vllm:num_requests_running`, `vllm:num_requests_waiting`,
///   `vllm:kv_cache_usage_perc` (V1) or `vllm:gpu_cache_usage_perc` (V0) — both fractions
///   despite the name —, `vllm:prompt_tokens_total`, `vllm:generation_tokens_total`.
/// - SGLang: `sglang:num_running_reqs`, `sglang:num_queue_reqs`, `sglang:token_usage`,
///   `sglang:prompt_tokens_total`, `sglang:generation_tokens_total`.
/// - TGI: `tgi_batch_current_size`, `tgi_queue_size`, and the histograms
///   `tgi_request_input_length` and `tgi_request_generated_tokens` (their `_sum`). TGI reports
///   no KV-cache usage.
/// - llama.cpp: `llamacpp:requests_processing`, `llamacpp:requests_deferred`,
///   `llamacpp:kv_cache_usage_ratio` (older servers only), `llamacpp:prompt_tokens_total`
///   (which leaves out prompt tokens reused from its cache), `llamacpp:tokens_predicted_total`.
pub const SOURCES: &[(Common, ServerFamily, &str)] = &[
    (
        Common::Running,
        ServerFamily::Vllm,
        "vllm:num_requests_running",
    ),
    (
        Common::Running,
        ServerFamily::Sglang,
        "sglang:num_running_reqs",
    ),
    (Common::Running, ServerFamily::Tgi, "tgi_batch_current_size"),
    (
        Common::Running,
        ServerFamily::Llamacpp,
        "llamacpp:requests_processing",
    ),
    (
        Common::Waiting,
        ServerFamily::Vllm,
        "vllm:num_requests_waiting",
    ),
    (
        Common::Waiting,
        ServerFamily::Sglang,
        "sglang:num_queue_reqs",
    ),
    (Common::Waiting, ServerFamily::Tgi, "tgi_queue_size"),
    (
        Common::Waiting,
        ServerFamily::Llamacpp,
        "llamacpp:requests_deferred",
    ),
    (
        Common::KvCacheUsage,
        ServerFamily::Vllm,
        "vllm:kv_cache_usage_perc",
    ),
    (
        Common::KvCacheUsage,
        ServerFamily::Vllm,
        "vllm:gpu_cache_usage_perc",
    ),
    (
        Common::KvCacheUsage,
        ServerFamily::Sglang,
        "sglang:token_usage",
    ),
    (
        Common::KvCacheUsage,
        ServerFamily::Llamacpp,
        "llamacpp:kv_cache_usage_ratio",
    ),
    (
        Common::PromptTokensTotal,
        ServerFamily::Vllm,
        "vllm:prompt_tokens_total",
    ),
    (
        Common::PromptTokensTotal,
        ServerFamily::Sglang,
        "sglang:prompt_tokens_total",
    ),
    (
        Common::PromptTokensTotal,
        ServerFamily::Tgi,
        "tgi_request_input_length_sum",
    ),
    (
        Common::PromptTokensTotal,
        ServerFamily::Llamacpp,
        "llamacpp:prompt_tokens_total",
    ),
    (
        Common::GenerationTokensTotal,
        ServerFamily::Vllm,
        "vllm:generation_tokens_total",
    ),
    (
        Common::GenerationTokensTotal,
        ServerFamily::Sglang,
        "sglang:generation_tokens_total",
    ),
    (
        Common::GenerationTokensTotal,
        ServerFamily::Tgi,
        "tgi_request_generated_tokens_sum",
    ),
    (
        Common::GenerationTokensTotal,
        ServerFamily::Llamacpp,
        "llamacpp:tokens_predicted_total",
    ),
];

/// One scrape, in common names. Each figure is absent when the server does not report it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricsSample {
    /// When the scrape was sent, nanoseconds on the run's clock (as a record's `sent_ns`).
    pub at_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<f64>,
    /// Fraction, 0..=1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_usage: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tokens_total: Option<f64>,
    /// DCGM exporter: `DCGM_FI_DEV_POWER_USAGE` summed over the GPUs, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_power_w: Option<f64>,
    /// `DCGM_FI_DEV_GPU_UTIL` averaged over the GPUs, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_util_pct: Option<f64>,
    /// Speculative decoding: vLLM's counters of drafts, draft tokens and
    /// accepted tokens, and of accepted tokens by draft position (position 0 first); SGLang's
    /// mean acceptance length, a gauge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_drafts_total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_draft_tokens_total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_accepted_tokens_total: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spec_accepted_per_position_total: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_accept_length: Option<f64>,
}

impl MetricsSample {
    fn slot(&mut self, c: Common) -> &mut Option<f64> {
        match c {
            Common::Running => &mut self.running,
            Common::Waiting => &mut self.waiting,
            Common::KvCacheUsage => &mut self.kv_cache_usage,
            Common::PromptTokensTotal => &mut self.prompt_tokens_total,
            Common::GenerationTokensTotal => &mut self.generation_tokens_total,
        }
    }

    /// The value of a common figure.
    pub fn get(&self, c: Common) -> Option<f64> {
        match c {
            Common::Running => self.running,
            Common::Waiting => self.waiting,
            Common::KvCacheUsage => self.kv_cache_usage,
            Common::PromptTokensTotal => self.prompt_tokens_total,
            Common::GenerationTokensTotal => self.generation_tokens_total,
        }
    }
}

/// Maps parsed samples to the common names (see [`SOURCES`]), and speculative decoding's
/// ([`extract_spec`]). Returns the family of the first
/// name that matched, or `None` (and an empty sample) when no known name is present.
/// Non-finite values (NaN, ±Inf) are left out.
pub fn extract(samples: &[PromSample]) -> (Option<ServerFamily>, MetricsSample) {
    let mut out = MetricsSample::default();
    let mut family = None;
    let mut done: Vec<Common> = Vec::new();
    for &(common, fam, name) in SOURCES {
        if done.contains(&common) {
            continue;
        }
        let values = samples
            .iter()
            .filter(|s| s.name == name && s.value.is_finite())
            .map(|s| s.value);
        let value = match common {
            Common::KvCacheUsage => values.reduce(f64::max),
            _ => values.reduce(|a, b| a + b),
        };
        if let Some(v) = value {
            *out.slot(common) = Some(v);
            done.push(common);
            family.get_or_insert(fam);
        }
    }
    extract_spec(samples, &mut out);
    (family, out)
}

/// The speculative-decoding names servebench reads: vLLM's counters (with their `_total`
/// suffix, as a scrape shows them) and SGLang's acceptance-length gauge.
const SPEC_NAMES: [&str; 5] = [
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_per_pos_total",
    "sglang:spec_accept_length",
];

/// The most draft positions read (`position` labels 0..); vLLM's speculators draft far fewer.
pub const MAX_SPEC_POSITIONS: usize = 64;

/// Adds speculative decoding's figures to `out`: vLLM's counters summed over
/// their series (several engines), the accepted tokens per draft position by the `position`
/// label (a label that is not a position under [`MAX_SPEC_POSITIONS`] is not read), and
/// SGLang's acceptance length (the mean of its series). Non-finite and negative values are
/// left out. False when `samples` have none of them.
pub fn extract_spec(samples: &[PromSample], out: &mut MetricsSample) -> bool {
    let values = |name: &'static str| {
        (samples.iter()).filter(move |s| s.name == name && s.value.is_finite() && s.value >= 0.0)
    };
    let sum = |name: &'static str| values(name).map(|s| s.value).reduce(|a, b| a + b);
    out.spec_drafts_total = sum(SPEC_NAMES[0]);
    out.spec_draft_tokens_total = sum(SPEC_NAMES[1]);
    out.spec_accepted_tokens_total = sum(SPEC_NAMES[2]);
    let mut per_position = Vec::new();
    for s in values(SPEC_NAMES[3]) {
        let position = (s.labels.iter())
            .find(|(k, _)| k == "position")
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .filter(|&p| p < MAX_SPEC_POSITIONS);
        if let Some(p) = position {
            if per_position.len() <= p {
                per_position.resize(p + 1, 0.0);
            }
            per_position[p] += s.value;
        }
    }
    out.spec_accepted_per_position_total = per_position;
    let lengths: Vec<f64> = values(SPEC_NAMES[4]).map(|s| s.value).collect();
    out.spec_accept_length =
        (!lengths.is_empty()).then(|| lengths.iter().sum::<f64>() / lengths.len() as f64);
    out.spec_drafts_total.is_some()
        || out.spec_accept_length.is_some()
        || out.spec_accepted_tokens_total.is_some()
}

/// Adds a DCGM exporter's GPU power (summed over GPUs) and utilisation (averaged) to `out`;
/// false when `samples` have neither.
pub fn extract_gpu(samples: &[PromSample], out: &mut MetricsSample) -> bool {
    let of = |name: &str| {
        let v: Vec<f64> = (samples.iter())
            .filter(|s| s.name == name && s.value.is_finite())
            .map(|s| s.value)
            .collect();
        (!v.is_empty()).then(|| (v.iter().sum::<f64>(), v.len() as f64))
    };
    let power = of("DCGM_FI_DEV_POWER_USAGE").map(|(sum, _)| sum);
    let util = of("DCGM_FI_DEV_GPU_UTIL").map(|(sum, n)| sum / n);
    out.gpu_power_w = out.gpu_power_w.or(power);
    out.gpu_util_pct = out.gpu_util_pct.or(util);
    power.is_some() || util.is_some()
}

#[cfg(test)]
#[path = "prom_tests.rs"]
mod tests;
