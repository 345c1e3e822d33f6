//! The request shape every server API fits. An [`Api`] builds a request's JSON body from a
//! [`BodySpec`] and says how its answer comes ([`Answer`]):
//! - **streamed**: server-sent events, each read by a [`Streamed`] API into a [`Parsed`]
//!   value (the six generation APIs);
//! - **whole**: one JSON document, read at its end by a [`Whole`] API into an [`Answered`]
//!   value (embeddings; a rerank, a classification or a non-streamed completion fits the same
//!   shape).
//!
//! A request's input is its prompt (or the dataset's chat messages), the further inputs of a
//! batch after it (an embeddings request's `input` list), and media beside the text
//! ([`Part`]: images, audio), which an API that takes content parts sends in its own form and
//! any other refuses by name. Whatever the shape, the client times the request the same way
//! and fills the same record.
//!
//! One file per API in `apis/`: `completions.rs` (with the OpenAI event reading `chat.rs`
//! shares), `chat.rs`, `tgi.rs`, `llamacpp.rs`, `anthropic.rs`, `responses.rs` (streamed) and
//! `embeddings.rs` (whole), `audio.rs` (a transcription: a multipart form, [`Api::encode`],
//! streamed); `apis/mod.rs` maps a `BackendKind` to its `Api`. None does I/O or
//! reads a clock: `client` owns both. How to add one: docs/architecture.md, "Recipes".

use std::borrow::Cow;

use serde_json::{json, Value};

use super::fast_event::Shape;
use super::usage::Reported;
use crate::config::structured::StructuredOutput;
use crate::measure::record::FailureKind;

/// What one request asks for.
#[derive(Clone, Debug)]
pub struct BodySpec<'a> {
    pub model: &'a str,
    pub prompt: &'a str,
    /// Further inputs of the request after `prompt`, for an API that takes a list (an
    /// embeddings batch); empty otherwise.
    pub batch: &'a [String],
    /// Chat messages from the dataset; the APIs that take messages send them instead of
    /// `prompt`.
    pub messages: Option<&'a Value>,
    /// Media sent beside `prompt` as content parts of its user message.
    pub parts: &'a [Part],
    pub max_tokens: u64,
    pub ignore_eos: bool,
}

impl BodySpec<'_> {
    /// `body` with `ignore_eos: true` when the run asks for it (`--ignore-eos`, vLLM's and
    /// llama.cpp's field; the other servers ignore an unknown field).
    pub fn with_ignore_eos(&self, mut body: serde_json::Value) -> serde_json::Value {
        if self.ignore_eos {
            body["ignore_eos"] = serde_json::Value::Bool(true);
        }
        body
    }

    /// The request's inputs in order: `prompt`, then the batch's.
    pub fn inputs(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.prompt).chain(self.batch.iter().map(String::as_str))
    }
}

/// A media part of a request's input, sent beside its text as a content part of the user's
/// message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// An image: a URL, or a `data:` URL holding its bytes (`data:image/png;base64,...`).
    Image { url: String },
    /// A video as its frames: a `data:video/jpeg;base64,` URL of base64 JPEG frames joined by
    /// commas (the form vLLM reads as a video), and their count.
    Video { url: String, frames: u32 },
    /// Audio: its bytes in base64, their format (`wav`, `mp3`) and the clip's duration (a
    /// WAV's sample frames over its rate; zero where unknown).
    Audio {
        data: String,
        format: String,
        duration: std::time::Duration,
    },
}

impl Part {
    /// What the part is, for a message naming it.
    pub fn kind(&self) -> &'static str {
        match self {
            Part::Image { .. } => "an image",
            Part::Video { .. } => "a video",
            Part::Audio { .. } => "audio",
        }
    }

    /// The part's own bytes as the body carries them (its URL or its base64 data).
    pub fn bytes(&self) -> u64 {
        match self {
            Part::Image { url } | Part::Video { url, .. } => url.len() as u64,
            Part::Audio { data, .. } => data.len() as u64,
        }
    }
}

/// Token counts the server reported, as written (judged in `usage` before they are believed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: Option<Reported>,
    pub completion_tokens: Option<Reported>,
    /// `prompt_tokens_details.cached_tokens`.
    pub cached_tokens: Option<Reported>,
    /// Of the output, the reasoning tokens (`completion_tokens_details.reasoning_tokens`).
    pub reasoning_tokens: Option<Reported>,
}

/// What one SSE event said.
#[derive(Debug, Default, PartialEq)]
pub struct Parsed<'a> {
    /// Answer text in this event (empty: none).
    pub content: Cow<'a, str>,
    /// Reasoning text in this event (empty: none).
    pub reasoning: Cow<'a, str>,
    /// A piece of a tool call's arguments in this event (empty: none), and the called
    /// function's name where the event names it (the call's first event).
    pub tool_args: Cow<'a, str>,
    pub tool_name: Option<Cow<'a, str>>,
    /// Which of the answer's tool calls the piece belongs to (OpenAI's `index`; 0: the first).
    pub tool_index: u64,
    /// Pieces of further tool calls in the same event (an OpenAI delta's `tool_calls` list
    /// past its first entry: a server may send several calls at once); bounded by the event's
    /// size.
    pub more_tool_calls: Vec<ToolPiece<'a>>,
    /// Tokens in this event when the protocol says so (TGI: 1; llama.cpp: `tokens.len()`).
    pub tokens: Option<u32>,
    /// Counts reported by the server in this event.
    pub usage: Option<Usage>,
    /// A cumulative completion-token count sent with every chunk (vLLM's continuous usage).
    pub cumulative_completion_tokens: Option<u64>,
    /// Server-side timings (llama.cpp), verbatim.
    pub timings: Option<Value>,
    /// The server's per-request timing (vLLM's `metrics` object, with
    /// `--enable-per-request-metrics`; servebench's simulator sends the same), verbatim.
    pub request_metrics: Option<Value>,
    /// SGLang's `meta_info` object, verbatim (only its timing and count keys are kept on the
    /// record: `server_forms.rs`).
    pub meta_info: Option<Value>,
    /// The server said the stream is complete: its terminator (`[DONE]`, TGI's final event,
    /// llama.cpp's `stop: true`, Anthropic's `message_stop`, the Responses API's
    /// `response.completed`).
    pub done: bool,
    /// The event ends the answer without being the terminator: an OpenAI chunk with a
    /// `finish_reason` or the final usage chunk (no `choices`), Anthropic's `message_delta`
    /// with its `stop_reason`. A body that ends cleanly after one is a complete stream.
    pub finished: bool,
}

impl Parsed<'_> {
    /// True when the event carried output (answer or reasoning text, a tool call's
    /// arguments).
    pub fn has_output(&self) -> bool {
        !self.content.is_empty()
            || !self.reasoning.is_empty()
            || !self.tool_args.is_empty()
            || self.more_tool_calls.iter().any(|c| !c.args.is_empty())
    }
}

/// A piece of one tool call: its index, its function's name where given, a piece of its
/// arguments.
#[derive(Debug, Default, PartialEq)]
pub struct ToolPiece<'a> {
    pub index: u64,
    pub name: Option<Cow<'a, str>>,
    pub args: Cow<'a, str>,
}

/// What a whole (non-streamed) answer said.
#[derive(Debug, Default, PartialEq)]
pub struct Answered {
    /// Generated text (a non-streamed completion); empty for an answer that generates none.
    pub content: String,
    /// Counts reported by the server.
    pub usage: Option<Usage>,
}

/// A request's failure as its API finds it (a body the API cannot carry, an event or answer it
/// cannot read): its kind and a message quoting what was wrong.
pub type Failure = (FailureKind, String);

/// How an API's answer comes, with the reader for that shape.
pub enum Answer<'a> {
    /// Server-sent events, read one at a time as they arrive.
    Streamed(&'a dyn Streamed),
    /// One JSON document, read when the body has ended.
    Whole(&'a dyn Whole),
}

/// One server API: how a request is written, and how its answer comes.
pub trait Api: Send + Sync {
    /// The JSON body; an error (of kind `prompt`) when the request holds what the API cannot
    /// carry (media parts).
    fn body(&self, spec: &BodySpec) -> Result<Value, Failure>;
    /// How the answer comes, and its reader.
    fn answer(&self) -> Answer<'_>;
    /// The most output tokens a request body (as sent, `--extra-body` merged) allows;
    /// `None` when it sets no limit the client can read.
    fn max_tokens(&self, body: &Value) -> Option<u64> {
        body.get("max_tokens")?.as_u64()
    }
    /// The bytes that bound the prompt tokens the server may count for `body` (`bytes` long
    /// as sent): the body's own, unless the server reads some text more than once (a rerank's
    /// query, once beside each document).
    fn prompt_bytes(&self, _body: &Value, bytes: u64) -> u64 {
        bytes
    }
    /// Whether the API's cached prompt tokens are part of its prompt count (Anthropic's
    /// `input_tokens` leaves cache reads out).
    fn cached_within_prompt(&self) -> bool {
        true
    }
    /// Whether the API takes a conversation as messages (the server applies the chat
    /// template); otherwise a conversation's history is sent as a prompt.
    fn takes_messages(&self) -> bool {
        false
    }
    /// Asks for structured output in `body` (a schema's JSON, or a tool call);
    /// an API that cannot ask for it refuses (the config allows it only where one can).
    fn structured(&self, _body: &mut Value, s: &StructuredOutput) -> Result<(), Failure> {
        Err(unsendable(&format!("--structured-output {}", s.kind())))
    }
    /// The body's bytes as sent, from `body` as finished (`--extra-body` merged) and the
    /// request it was built from: JSON, unless the API sends another form (a transcription's
    /// multipart form with its audio file); an error (of kind `prompt`) when it cannot.
    fn encode(&self, body: &Value, _spec: &BodySpec) -> Result<Vec<u8>, Failure> {
        // A `Value` always serializes.
        Ok(serde_json::to_vec(body).unwrap_or_default())
    }
    /// The body's content type when it is not JSON (every request of the API has this one).
    fn content_type(&self) -> Option<&'static str> {
        None
    }
    /// The headers the API needs besides the body's content type: the API key as it takes
    /// it (`Authorization: Bearer` unless it says otherwise).
    fn headers(&self, api_key: Option<&str>) -> Vec<(String, String)> {
        let bearer = |k: &str| ("authorization".to_string(), format!("Bearer {k}"));
        api_key.map(bearer).into_iter().collect()
    }
}

/// An API whose answer streams as server-sent events.
pub trait Streamed: Send + Sync {
    /// Reads one event. The terminator and error events are handled here too.
    fn parse<'a>(&self, event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, Failure>;
    /// Reads one event as [`Streamed::parse`] does, where `shape` is the stream's memory of its
    /// last plain event (the OpenAI APIs read the next one against it).
    fn parse_shaped<'a>(
        &self,
        _shape: &mut Shape,
        event: Option<&str>,
        data: &'a str,
    ) -> Result<Parsed<'a>, Failure> {
        self.parse(event, data)
    }
}

/// An API whose answer is one JSON document.
pub trait Whole: Send + Sync {
    /// The inputs `body` (as sent) carries, each answered separately (an embeddings
    /// request's list); `None` for an answer that generates text.
    fn inputs(&self, body: &Value) -> Option<u64>;
    /// Reads the answer to `body` (as sent): a server's error object, an answer that is not
    /// the API's, or one that does not answer every input is an error.
    fn read(&self, answer: &[u8], body: &Value) -> Result<Answered, Failure>;
}

/// Merges `extra` into `body`: objects merge key by key (recursively), anything else replaces.
pub fn merge_json(body: &mut Value, extra: &Value) {
    match (body, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                match b.get_mut(k) {
                    Some(slot) => merge_json(slot, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

/// An event (or answer) that cannot be read, quoting its start.
pub(super) fn malformed(data: &str, err: impl std::fmt::Display) -> Failure {
    let excerpt: String = data.chars().take(120).collect();
    (
        FailureKind::MalformedStream,
        format!("cannot parse stream event ({err}): {excerpt}"),
    )
}

/// A whole answer that cannot be read, quoting its start.
pub(super) fn malformed_answer(answer: &[u8], err: impl std::fmt::Display) -> Failure {
    let excerpt: String = String::from_utf8_lossy(&answer[..answer.len().min(480)])
        .chars()
        .take(120)
        .collect();
    (
        FailureKind::MalformedAnswer,
        format!("cannot read the answer ({err}): {excerpt}"),
    )
}

/// An error object sent inside the stream (or as the answer): `{"error": ...}` or
/// `{"object": "error", ...}`.
pub(super) fn server_error(
    error: Option<&Value>,
    object: Option<&str>,
    message: Option<&str>,
) -> Option<Failure> {
    let text = match (error, object) {
        (Some(Value::Null), _) | (None, None) => return None,
        (Some(Value::String(s)), _) => s.clone(),
        (Some(e), _) => e
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| e.to_string(), str::to_string),
        (None, Some("error")) => message.unwrap_or("error").to_string(),
        (None, Some(_)) => return None,
    };
    Some((
        FailureKind::ServerError,
        format!("server error in stream: {text}"),
    ))
}

/// `details.reasoning_tokens` of a usage object's output details (any shape, as
/// [`cached_in`]): the reasoning part of the output count.
pub(super) fn reasoning_in(details: Option<&Value>) -> Option<Reported> {
    details
        .and_then(|d| d.get("reasoning_tokens"))
        .and_then(Reported::of)
}

/// `details.cached_tokens` of a usage object's details (any shape: what is not a count there
/// is judged, not a parse error).
pub(super) fn cached_in(details: Option<&Value>) -> Option<Reported> {
    details
        .and_then(|d| d.get("cached_tokens"))
        .and_then(Reported::of)
}

/// The conversation as a messages API sends it: the dataset's messages, else one user turn
/// of the prompt, its media parts (each in the API's form by `part`) after the text. An error
/// naming the part an API cannot carry (`part` gives `None`), or media given with messages.
pub(super) fn messages(
    spec: &BodySpec,
    text: impl Fn(&str) -> Value,
    part: impl Fn(&Part) -> Option<Value>,
) -> Result<Value, Failure> {
    if let Some(m) = spec.messages {
        return match spec.parts {
            [] => Ok(m.clone()),
            _ => Err(unsendable("media parts beside a dataset's messages")),
        };
    }
    Ok(json!([{"role": "user", "content": content(spec, text, part)?}]))
}

/// The user's content: the prompt as a string, or with media parts a list of content parts
/// (the prompt's text first, as `text` writes it, then each part as `part` writes it).
pub(super) fn content(
    spec: &BodySpec,
    text: impl Fn(&str) -> Value,
    part: impl Fn(&Part) -> Option<Value>,
) -> Result<Value, Failure> {
    if spec.parts.is_empty() {
        return Ok(json!(spec.prompt));
    }
    let mut parts = vec![text(spec.prompt)];
    for p in spec.parts {
        parts.push(part(p).ok_or_else(|| unsendable(p.kind()))?);
    }
    Ok(Value::Array(parts))
}

/// The `image_url` content parts of a dataset's chat messages.
pub(super) fn image_parts(messages: &Value) -> usize {
    let parts = (messages.as_array().into_iter().flatten())
        .filter_map(|m| m.get("content")?.as_array())
        .flatten();
    parts
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("image_url"))
        .count()
}

/// The failure of a request that holds what its API cannot carry (never sent).
pub(super) fn unsendable(what: &str) -> Failure {
    (
        FailureKind::Prompt,
        format!("the request holds {what}, which this API cannot carry: not sent"),
    )
}

/// A request with media parts to an API that takes only a prompt: the error naming the
/// first part; `Ok` without parts.
pub(super) fn text_only(spec: &BodySpec) -> Result<(), Failure> {
    match spec.parts.first() {
        Some(p) => Err(unsendable(p.kind())),
        None => Ok(()),
    }
}

/// Tests' body of a text request: `prompt` and `batch` (an embeddings request's further
/// inputs, a rerank request's documents) for model `m`, with `extra` merged in.
#[cfg(test)]
pub(crate) fn text_body(api: &dyn Api, prompt: &str, batch: &[&str], extra: &Value) -> Value {
    let batch: Vec<String> = batch.iter().map(|s| s.to_string()).collect();
    let mut b = api
        .body(&BodySpec {
            model: "m",
            prompt,
            batch: &batch,
            messages: None,
            parts: &[],
            max_tokens: 0,
            ignore_eos: false,
        })
        .unwrap();
    merge_json(&mut b, extra);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec<'a>(parts: &'a [Part], messages: Option<&'a Value>) -> BodySpec<'a> {
        BodySpec {
            model: "m",
            prompt: "look",
            batch: &[],
            messages,
            parts,
            max_tokens: 3,
            ignore_eos: false,
        }
    }

    /// A request's input carries media parts beside its text; a messages API
    /// writes them as content parts in its own form, and a part an API cannot carry is a
    /// failure of kind `prompt` naming it.
    #[test]
    fn media_parts_are_content_parts_or_a_named_refusal() {
        let image = Part::Image {
            url: "data:image/png;base64,iVBO".into(),
        };
        let audio = Part::Audio {
            data: "UklG".into(),
            format: "wav".into(),
            duration: std::time::Duration::ZERO,
        };
        let parts = [image.clone(), audio.clone()];
        let text = |t: &str| json!({"type": "text", "text": t});
        let only_images = |p: &Part| match p {
            Part::Image { url } => Some(json!({"type": "image_url", "image_url": {"url": url}})),
            Part::Video { .. } | Part::Audio { .. } => None,
        };
        let m = messages(&spec(&parts[..1], None), text, only_images).unwrap();
        assert_eq!(m[0]["content"][0]["text"], "look");
        assert_eq!(
            m[0]["content"][1]["image_url"]["url"],
            "data:image/png;base64,iVBO"
        );
        let (kind, why) = messages(&spec(&parts, None), text, only_images).unwrap_err();
        assert_eq!(kind, FailureKind::Prompt);
        assert!(why.contains("audio"), "{why}");
        assert_eq!(
            messages(&spec(&[], None), text, only_images).unwrap()[0]["content"],
            "look"
        );
        let dataset = json!([{"role": "user", "content": "hi"}]);
        assert!(messages(&spec(&parts[..1], Some(&dataset)), text, only_images).is_err());
        assert!(text_only(&spec(&[audio], None)).is_err());
        assert!(text_only(&spec(&[], None)).is_ok());
    }

    #[test]
    fn extra_body_merges_recursively() {
        let mut body = json!({"parameters": {"max_new_tokens": 3}});
        merge_json(&mut body, &json!({"parameters": {"top_k": 5}, "x": 1}));
        assert_eq!(body["parameters"]["max_new_tokens"], 3);
        assert_eq!(body["parameters"]["top_k"], 5);
        assert_eq!(body["x"], 1);
    }
}
