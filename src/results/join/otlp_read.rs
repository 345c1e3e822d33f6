//! A server's per-request spans read from an OpenTelemetry trace export: the OTLP JSON file
//! format (`resourceSpans` → `scopeSpans` → `spans`; one document, or one per line as the
//! OpenTelemetry Collector's file exporter writes them), with vLLM's span attributes
//! (`gen_ai.request.id`, `gen_ai.latency.time_in_queue`, `.time_to_first_token`,
//! `.time_in_model_prefill`, `.time_in_model_decode`, in seconds) and
//! `gen_ai.latency.time_in_kv_transfer` for a disaggregated server's KV transfer; or a server
//! log in servebench's documented format: one JSON object per request and line (`request_id`,
//! `start_unix_ns`, `end_unix_ns`, and the same names without `gen_ai.latency.`).
//!
//! The file is read as it is parsed, span by span (never whole, nor as a JSON tree), and only
//! the spans whose ids the caller asks for are kept: memory is proportional to the requests
//! joined, not to the file.
//!
//! Everything here is outside input: the file is bounded ([`MAX_TRACE_BYTES`], [`MAX_SPANS`])
//! before it is parsed, a span without a request id is not a request's (counted, not used),
//! and a number that is not one (a time that is not an integer, a duration that is negative
//! or not finite) makes the span [`ServerSpan::bad`], named, never guessed at.

use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
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

/// What a trace file holds: the request spans kept (those whose ids were asked for), and
/// the counts of the rest.
#[derive(Debug, Default)]
pub struct Trace {
    pub spans: Vec<ServerSpan>,
    /// Spans with `gen_ai.request.id`, kept or not.
    pub request_spans: u64,
    /// The first of them's id (named when nothing matches).
    pub first_id: Option<String>,
    /// Spans without `gen_ai.request.id` (not a request's: a server's other spans).
    pub other_spans: u64,
}

// A span's OTLP JSON shape, lenient: only what is read; unknown fields ignored. The levels
// above it are streamed (`Document`, `List`, `Holder`).
/// The server log format (docs/metrics.md): one JSON object per request and line, with
/// vLLM's attribute names without their `gen_ai.latency.` prefix, in seconds.
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

/// Reads the trace at `path`, keeping only the request spans whose id `keep` accepts (the
/// others are counted): the file is read as it is parsed, one span at a time, so memory is
/// the spans kept, not the file.
pub fn read(path: &Path, keep: &dyn Fn(&str) -> bool) -> Result<Trace, JoinError> {
    let file = std::fs::File::open(path).map_err(|e| JoinError::read(path, e))?;
    let len = file.metadata().map_err(|e| JoinError::read(path, e))?.len();
    if len > MAX_TRACE_BYTES {
        let max = MAX_TRACE_BYTES;
        return Err(JoinError::trace(path, TraceError::TooLarge { len, max }));
    }
    let reader = BufReader::with_capacity(READ_BUF, file.take(MAX_TRACE_BYTES));
    parse_from(reader, keep).map_err(|why| match why {
        Parse::Io(e) => JoinError::read(path, e),
        Parse::Trace(why) => JoinError::trace(path, why),
    })
}

/// The request spans of an OTLP JSON text (one document, or several one after another).
pub fn parse(text: &[u8]) -> Result<Trace, TraceError> {
    parse_from(text, &|_| true).map_err(|why| match why {
        Parse::Trace(why) => why,
        Parse::Io(e) => TraceError::NotTrace {
            line: 0,
            why: e.to_string(),
        },
    })
}

/// Bytes read from a trace file at a time.
const READ_BUF: usize = 1 << 16;

/// Why a trace could not be read: the file, or its text.
enum Parse {
    Io(std::io::Error),
    Trace(TraceError),
}

/// The documents of `reader`, one after another, each streamed into a [`Sink`].
fn parse_from(mut reader: impl BufRead, keep: &dyn Fn(&str) -> bool) -> Result<Trace, Parse> {
    let mut sink = Sink {
        trace: Trace::default(),
        keep,
        too_many: false,
    };
    let mut documents = 0;
    // Lines before the current byte (1-based line of the next document's start).
    let mut line = 1;
    loop {
        // The whitespace before the next document, its newlines counted.
        let more = loop {
            let buf = reader.fill_buf().map_err(Parse::Io)?;
            if buf.is_empty() {
                break false;
            }
            let blank = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
            line += buf[..blank].iter().filter(|&&b| b == b'\n').count();
            let all = blank == buf.len();
            reader.consume(blank);
            if !all {
                break true;
            }
        };
        if !more {
            break;
        }
        documents += 1;
        // A document is an object: it ends at its closing brace, nothing read past it.
        let mut de = serde_json::Deserializer::from_reader(&mut reader);
        let read = Document(&mut sink).deserialize(&mut de);
        if let Err(json) = read {
            return Err(Parse::Trace(document_error(json, line, sink.too_many)));
        }
    }
    if documents == 0 {
        return Err(Parse::Trace(TraceError::Empty));
    }
    Ok(sink.trace)
}

/// What is wrong with the document starting at `line`, from its parser's error (whose place
/// counts from the document's start).
fn document_error(json: serde_json::Error, line: usize, too_many: bool) -> TraceError {
    use serde_json::error::Category;
    if too_many {
        return TraceError::TooManySpans(MAX_SPANS);
    }
    match json.classify() {
        Category::Data => TraceError::NotTrace {
            line,
            why: json.to_string(),
        },
        _ => {
            let column = json.column();
            TraceError::NotJson {
                line: line + json.line().saturating_sub(1),
                column,
                json,
            }
        }
    }
}

/// Where a trace's spans go as they are read.
struct Sink<'k> {
    trace: Trace,
    keep: &'k dyn Fn(&str) -> bool,
    /// Set when the spans passed [`MAX_SPANS`] (the parse is stopped with an error).
    too_many: bool,
}

impl Sink<'_> {
    /// One span read: counted, and kept when its id is asked for.
    fn take(&mut self, raw: RawSpan) -> Result<(), &'static str> {
        let Some(s) = span(raw) else {
            self.trace.other_spans += 1;
            return Ok(());
        };
        if self.trace.request_spans >= MAX_SPANS as u64 {
            self.too_many = true;
            return Err("too many request spans");
        }
        self.trace.request_spans += 1;
        if self.trace.first_id.is_none() {
            self.trace.first_id = Some(s.request_id.clone());
        }
        if (self.keep)(&s.request_id) {
            self.trace.spans.push(s);
        }
        Ok(())
    }
}

/// One document: an OTLP export (`resourceSpans`, streamed) or a server log line.
struct Document<'s, 'k>(&'s mut Sink<'k>);

impl<'de> DeserializeSeed<'de> for Document<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Document<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OTLP JSON export or a server log line")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut export = false;
        let mut log = LogFields::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "resourceSpans" => {
                    export = true;
                    map.next_value_seed(List(&mut *self.0, Level::Resources))?;
                }
                "request_id" => log.request_id = Some(map.next_value()?),
                "start_unix_ns" => log.start_unix_ns = map.next_value()?,
                "end_unix_ns" => log.end_unix_ns = map.next_value()?,
                "time_in_queue" => log.time_in_queue = map.next_value()?,
                "time_to_first_token" => log.time_to_first_token = map.next_value()?,
                "time_in_model_prefill" => log.time_in_model_prefill = map.next_value()?,
                "time_in_model_decode" => log.time_in_model_decode = map.next_value()?,
                "time_in_kv_transfer" => log.time_in_kv_transfer = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if export {
            return Ok(());
        }
        let Some(line) = log.line() else {
            return Err(de::Error::custom(
                "it has neither resourceSpans nor request_id",
            ));
        };
        self.0.take(line.span()).map_err(de::Error::custom)
    }
}

/// A server log line's fields as they are read (any order).
#[derive(Default)]
struct LogFields {
    request_id: Option<String>,
    start_unix_ns: Option<Number>,
    end_unix_ns: Option<Number>,
    time_in_queue: Option<Number>,
    time_to_first_token: Option<Number>,
    time_in_model_prefill: Option<Number>,
    time_in_model_decode: Option<Number>,
    time_in_kv_transfer: Option<Number>,
}

impl LogFields {
    fn line(self) -> Option<LogLine> {
        Some(LogLine {
            request_id: self.request_id?,
            start_unix_ns: self.start_unix_ns,
            end_unix_ns: self.end_unix_ns,
            time_in_queue: self.time_in_queue,
            time_to_first_token: self.time_to_first_token,
            time_in_model_prefill: self.time_in_model_prefill,
            time_in_model_decode: self.time_in_model_decode,
            time_in_kv_transfer: self.time_in_kv_transfer,
        })
    }
}

/// The levels of an OTLP export: `resourceSpans` holds objects with `scopeSpans`, which
/// hold objects with `spans`, which are spans.
#[derive(Clone, Copy)]
enum Level {
    Resources,
    Scopes,
    Spans,
}

/// A list at one [`Level`], each item streamed on (a span into the sink).
struct List<'s, 'k>(&'s mut Sink<'k>, Level);

impl<'de> DeserializeSeed<'de> for List<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for List<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let List(sink, level) = self;
        match level {
            Level::Resources => {
                while seq
                    .next_element_seed(Holder(&mut *sink, "scopeSpans", Level::Scopes))?
                    .is_some()
                {}
            }
            Level::Scopes => {
                while seq
                    .next_element_seed(Holder(&mut *sink, "spans", Level::Spans))?
                    .is_some()
                {}
            }
            Level::Spans => {
                while let Some(raw) = seq.next_element::<RawSpan>()? {
                    sink.take(raw).map_err(de::Error::custom)?;
                }
            }
        }
        Ok(())
    }
}

/// An object holding the list of the next [`Level`] under `field` (its other fields skipped).
struct Holder<'s, 'k>(&'s mut Sink<'k>, &'static str, Level);

impl<'de> DeserializeSeed<'de> for Holder<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Holder<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an object with {}", self.1)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Holder(sink, field, level) = self;
        while let Some(key) = map.next_key::<String>()? {
            if key == field {
                map.next_value_seed(List(&mut *sink, level))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
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
