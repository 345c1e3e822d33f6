//! A server's per-request spans read from an OpenTelemetry trace export: the OTLP JSON file
//! format (`resourceSpans` → `scopeSpans` → `spans`; one document, or one per line as the
//! OpenTelemetry Collector's file exporter writes them), with vLLM's span attributes
//! (`gen_ai.request.id`, `gen_ai.latency.time_in_queue`, `.time_to_first_token`,
//! `.time_in_model_prefill`, `.time_in_model_decode`, in seconds) and
//! `gen_ai.latency.time_in_kv_transfer` for a disaggregated server's KV transfer; or a server
//! log in servebench's documented format: one JSON object per request and line (`request_id`,
//! `start_unix_ns`, `end_unix_ns`, and the same names without `gen_ai.latency.`).
//!
//! Everything here is outside input: the file is bounded ([`MAX_TRACE_BYTES`], [`MAX_SPANS`])
//! before it is parsed, a span without a request id is not a request's (counted, not used),
//! and a number that is not one (a time that is not an integer, a duration that is negative
//! or not finite) makes the span [`ServerSpan::bad`], named, never guessed at.

use std::io::Read;
use std::path::Path;

use serde::Deserialize;

use super::error::{JoinError, TraceError};

/// The largest trace file read.
pub const MAX_TRACE_BYTES: u64 = 1 << 30;
/// The most request spans taken from one file.
pub const MAX_SPANS: usize = 2_000_000;

/// One request as the server accounts for it; durations in the server's seconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerSpan {
    /// `gen_ai.request.id`.
    pub request_id: String,
    /// The span's start and end, Unix ns on the server's clock.
    pub start_unix_ns: Option<u64>,
    pub end_unix_ns: Option<u64>,
    pub queue_s: Option<f64>,
    pub ttft_s: Option<f64>,
    pub prefill_s: Option<f64>,
    pub decode_s: Option<f64>,
    pub kv_transfer_s: Option<f64>,
    /// What in the span is not a number it should be, when anything is: the span is not used.
    pub bad: Option<String>,
}

/// What a trace file holds.
#[derive(Debug, Default)]
pub struct Trace {
    pub spans: Vec<ServerSpan>,
    /// Spans without `gen_ai.request.id` (not a request's: a server's other spans).
    pub other_spans: u64,
}

// The OTLP JSON shapes, lenient: only what is read; unknown fields ignored.
#[derive(Deserialize)]
struct Export {
    #[serde(rename = "resourceSpans")]
    resource_spans: Vec<ResourceSpans>,
}

/// The server log format (docs/metrics.md): one JSON object per request and line, with
/// vLLM's attribute names without their `gen_ai.latency.` prefix, in seconds.
#[derive(Deserialize)]
struct LogLine {
    request_id: String,
    start_unix_ns: Option<Number>,
    end_unix_ns: Option<Number>,
    time_in_queue: Option<Number>,
    time_to_first_token: Option<Number>,
    time_in_model_prefill: Option<Number>,
    time_in_model_decode: Option<Number>,
    time_in_kv_transfer: Option<Number>,
}

impl LogLine {
    /// The line as the span it stands for.
    fn span(self) -> RawSpan {
        let seconds = |key: &str, v: Option<Number>| {
            v.map(|v| KeyValue {
                key: format!("gen_ai.latency.{key}"),
                value: AnyValue {
                    double: Some(v),
                    ..AnyValue::default()
                },
            })
        };
        let id = KeyValue {
            key: "gen_ai.request.id".into(),
            value: AnyValue {
                string: Some(self.request_id),
                ..AnyValue::default()
            },
        };
        let attributes = [
            seconds("time_in_queue", self.time_in_queue),
            seconds("time_to_first_token", self.time_to_first_token),
            seconds("time_in_model_prefill", self.time_in_model_prefill),
            seconds("time_in_model_decode", self.time_in_model_decode),
            seconds("time_in_kv_transfer", self.time_in_kv_transfer),
        ];
        RawSpan {
            start: self.start_unix_ns,
            end: self.end_unix_ns,
            attributes: std::iter::once(id)
                .chain(attributes.into_iter().flatten())
                .collect(),
        }
    }
}

#[derive(Deserialize)]
struct ResourceSpans {
    #[serde(rename = "scopeSpans", default)]
    scope_spans: Vec<ScopeSpans>,
}

#[derive(Deserialize)]
struct ScopeSpans {
    #[serde(default)]
    spans: Vec<RawSpan>,
}

#[derive(Deserialize)]
struct RawSpan {
    #[serde(rename = "startTimeUnixNano", default)]
    start: Option<Number>,
    #[serde(rename = "endTimeUnixNano", default)]
    end: Option<Number>,
    #[serde(default)]
    attributes: Vec<KeyValue>,
}

#[derive(Deserialize)]
struct KeyValue {
    key: String,
    #[serde(default)]
    value: AnyValue,
}

#[derive(Deserialize, Default)]
struct AnyValue {
    #[serde(rename = "stringValue")]
    string: Option<String>,
    #[serde(rename = "intValue")]
    int: Option<Number>,
    #[serde(rename = "doubleValue")]
    double: Option<Number>,
}

/// OTLP JSON writes 64-bit integers as strings, and some writers as numbers.
#[derive(Deserialize)]
#[serde(untagged)]
enum Number {
    Text(String),
    Int(u64),
    Float(f64),
}

impl Number {
    fn as_u64(&self) -> Option<u64> {
        match self {
            Number::Text(s) => s.parse().ok(),
            Number::Int(n) => Some(*n),
            Number::Float(_) => None,
        }
    }
    fn as_f64(&self) -> Option<f64> {
        match self {
            Number::Text(s) => s.parse().ok(),
            Number::Int(n) => Some(*n as f64),
            Number::Float(f) => Some(*f),
        }
    }
}

/// Reads the trace at `path`.
pub fn read(path: &Path) -> Result<Trace, JoinError> {
    let file = std::fs::File::open(path).map_err(|e| JoinError::read(path, e))?;
    let len = file.metadata().map_err(|e| JoinError::read(path, e))?.len();
    if len > MAX_TRACE_BYTES {
        let max = MAX_TRACE_BYTES;
        return Err(JoinError::trace(path, TraceError::TooLarge { len, max }));
    }
    let mut text = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    (file.take(MAX_TRACE_BYTES).read_to_end(&mut text)).map_err(|e| JoinError::read(path, e))?;
    parse(&text).map_err(|why| JoinError::trace(path, why))
}

/// The request spans of an OTLP JSON text (one document, or several one after another).
pub fn parse(text: &[u8]) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    let mut documents = 0;
    let mut stream = serde_json::Deserializer::from_slice(text).into_iter::<serde_json::Value>();
    loop {
        let from = stream.byte_offset();
        let Some(value) = stream.next() else { break };
        let value = value.map_err(|json| TraceError::NotJson {
            line: json.line(),
            column: json.column(),
            json,
        })?;
        // The line the document starts on (after the whitespace before it).
        let start =
            (text[from..].iter().position(|b| !b.is_ascii_whitespace())).map_or(from, |k| from + k);
        let line = 1 + text[..start].iter().filter(|&&b| b == b'\n').count();
        let bad = |why: String| TraceError::NotTrace { line, why };
        documents += 1;
        let spans: Vec<RawSpan> = if value.get("resourceSpans").is_some() {
            let export: Export = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
            (export.resource_spans.into_iter())
                .flat_map(|r| r.scope_spans)
                .flat_map(|s| s.spans)
                .collect()
        } else if value.get("request_id").is_some() {
            let log: LogLine = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
            vec![log.span()]
        } else {
            return Err(bad("it has neither resourceSpans nor request_id".into()));
        };
        for raw in spans {
            match span(raw) {
                Some(s) if trace.spans.len() < MAX_SPANS => trace.spans.push(s),
                Some(_) => return Err(TraceError::TooManySpans(MAX_SPANS)),
                None => trace.other_spans += 1,
            }
        }
    }
    if documents == 0 {
        return Err(TraceError::Empty);
    }
    Ok(trace)
}

/// A request's span; `None` for a span without `gen_ai.request.id`.
fn span(raw: RawSpan) -> Option<ServerSpan> {
    let mut s = ServerSpan::default();
    let mut bad = Vec::new();
    let mut id = None;
    for kv in raw.attributes {
        let seconds = |bad: &mut Vec<String>| {
            let v = (kv.value.double.as_ref().or(kv.value.int.as_ref())).and_then(Number::as_f64);
            match v {
                Some(v) if v.is_finite() && v >= 0.0 => Some(v),
                _ => {
                    bad.push(format!("{} is not a duration in seconds", kv.key));
                    None
                }
            }
        };
        match kv.key.as_str() {
            "gen_ai.request.id" => id = kv.value.string.clone(),
            "gen_ai.latency.time_in_queue" => s.queue_s = seconds(&mut bad),
            "gen_ai.latency.time_to_first_token" => s.ttft_s = seconds(&mut bad),
            "gen_ai.latency.time_in_model_prefill" => s.prefill_s = seconds(&mut bad),
            "gen_ai.latency.time_in_model_decode" => s.decode_s = seconds(&mut bad),
            "gen_ai.latency.time_in_kv_transfer" => s.kv_transfer_s = seconds(&mut bad),
            _ => {}
        }
    }
    s.request_id = id?;
    s.start_unix_ns = raw.start.as_ref().and_then(Number::as_u64);
    s.end_unix_ns = raw.end.as_ref().and_then(Number::as_u64);
    if s.start_unix_ns.is_none() || s.end_unix_ns.is_none() {
        bad.push("startTimeUnixNano or endTimeUnixNano is not a time in ns".into());
    }
    s.bad = (!bad.is_empty()).then(|| bad.join("; "));
    Some(s)
}
