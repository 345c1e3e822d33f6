//! The wire formats: one [`Api`] implementation per server API.
//!
//! An `Api` builds the JSON body of a request and reads one SSE event into a [`Parsed`] value.
//! It does no I/O and reads no clock; `client` owns both. To add an API: implement `Api` (here,
//! or in `typed.rs` for typed events), add a `BackendKind` variant in `config`, and map it in
//! `backends.rs`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Value};

use super::usage::Reported;
use crate::measure::record::FailureKind;

/// What one request asks for.
#[derive(Clone, Debug)]
pub struct BodySpec<'a> {
    pub model: &'a str,
    pub prompt: &'a str,
    /// Chat messages from the dataset; the chat API sends them instead of `prompt`.
    pub messages: Option<&'a Value>,
    pub max_tokens: u64,
    pub ignore_eos: bool,
}

/// Token counts the server reported, as written (judged in `usage` before they are believed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: Option<Reported>,
    pub completion_tokens: Option<Reported>,
    /// `prompt_tokens_details.cached_tokens`.
    pub cached_tokens: Option<Reported>,
}

/// What one SSE event said.
#[derive(Debug, Default, PartialEq)]
pub struct Parsed<'a> {
    /// Answer text in this event (empty: none).
    pub content: Cow<'a, str>,
    /// Reasoning text in this event (empty: none).
    pub reasoning: Cow<'a, str>,
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
    /// True when the event carried output (answer or reasoning text).
    pub fn has_output(&self) -> bool {
        !self.content.is_empty() || !self.reasoning.is_empty()
    }
}

/// A failure read from the stream.
pub type EventError = (FailureKind, String);

/// One server API.
pub trait Api: Send + Sync {
    /// The JSON body for a streaming request.
    fn body(&self, spec: &BodySpec) -> Value;
    /// Reads one event. `[DONE]` and error events are handled here too.
    fn parse<'a>(&self, event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, EventError>;
    /// The most output tokens a request body (as sent, `--extra-body` merged) allows;
    /// `None` when it sets no limit the client can read.
    fn max_tokens(&self, body: &Value) -> Option<u64> {
        body.get("max_tokens")?.as_u64()
    }
    /// Whether the API's cached prompt tokens are part of its prompt count (Anthropic's
    /// `input_tokens` leaves cache reads out).
    fn cached_within_prompt(&self) -> bool {
        true
    }
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

pub(super) fn malformed(data: &str, err: impl std::fmt::Display) -> EventError {
    let excerpt: String = data.chars().take(120).collect();
    (
        FailureKind::MalformedStream,
        format!("cannot parse stream event ({err}): {excerpt}"),
    )
}

/// An error object sent inside the stream: `{"error": ...}` or `{"object": "error", ...}`.
fn server_error(
    error: Option<&Value>,
    object: Option<&str>,
    message: Option<&str>,
) -> Option<EventError> {
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

#[derive(Deserialize)]
struct OaiUsage {
    prompt_tokens: Option<Reported>,
    completion_tokens: Option<Reported>,
    prompt_tokens_details: Option<Value>,
}

/// `details.cached_tokens` of a usage object's details (any shape: what is not a count there
/// is judged, not a parse error).
pub(super) fn cached_in(details: Option<&Value>) -> Option<Reported> {
    details
        .and_then(|d| d.get("cached_tokens"))
        .and_then(Reported::of)
}

impl From<OaiUsage> for Usage {
    fn from(u: OaiUsage) -> Self {
        Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cached_tokens: cached_in(u.prompt_tokens_details.as_ref()),
        }
    }
}

#[derive(Deserialize)]
struct OaiChunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<OaiChoice<'a>>,
    usage: Option<OaiUsage>,
    error: Option<Value>,
    #[serde(borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    timings: Option<Value>,
    metrics: Option<Value>,
}

#[derive(Deserialize)]
struct OaiChoice<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    /// Anything but `null` ends the answer (its value is not read).
    #[serde(default)]
    finish_reason: Option<serde::de::IgnoredAny>,
    #[serde(default, borrow)]
    delta: Option<OaiDelta<'a>>,
}

#[derive(Deserialize)]
struct OaiDelta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
}

fn parse_openai<'a>(data: &'a str) -> Result<Parsed<'a>, EventError> {
    if data.trim() == "[DONE]" {
        return Ok(Parsed {
            done: true,
            ..Parsed::default()
        });
    }
    if let Some(text) = super::fast_event::openai(data) {
        return Ok(Parsed {
            content: Cow::Borrowed(text),
            ..Parsed::default()
        });
    }
    let chunk: OaiChunk<'a> = serde_json::from_str(data).map_err(|e| malformed(data, e))?;
    if let Some(err) = server_error(
        chunk.error.as_ref(),
        chunk.object.as_deref(),
        chunk.message.as_deref(),
    ) {
        return Err(err);
    }
    let mut parsed = Parsed {
        timings: chunk.timings,
        request_metrics: chunk.metrics.filter(Value::is_object),
        // The final usage chunk: usage on a chunk without choices.
        finished: chunk.choices.is_empty() && chunk.usage.is_some(),
        ..Parsed::default()
    };
    if let Some(choice) = chunk.choices.into_iter().next() {
        parsed.finished |= choice.finish_reason.is_some();
        if let Some(text) = choice.text {
            parsed.content = text;
        }
        if let Some(delta) = choice.delta {
            parsed.content = delta.content.unwrap_or_default();
            parsed.reasoning = delta
                .reasoning_content
                .or(delta.reasoning)
                .unwrap_or_default();
        }
        // A usage object on a chunk that has choices is vLLM's continuous usage (or
        // llama.cpp's usage on its finish chunk): cumulative.
        if let Some(u) = &chunk.usage {
            parsed.cumulative_completion_tokens = u.completion_tokens.and_then(Reported::count);
        }
    }
    parsed.usage = chunk.usage.map(Usage::from);
    Ok(parsed)
}

fn stream_options(body: &mut Value, spec: &BodySpec) {
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    body["temperature"] = json!(0.0);
    if spec.ignore_eos {
        body["ignore_eos"] = json!(true);
    }
}

/// OpenAI `POST /v1/completions` (vLLM, SGLang, llama.cpp, TensorRT-LLM, ...).
pub struct OpenAiCompletions;

impl Api for OpenAiCompletions {
    fn body(&self, spec: &BodySpec) -> Value {
        let mut body =
            json!({"model": spec.model, "prompt": spec.prompt, "max_tokens": spec.max_tokens});
        stream_options(&mut body, spec);
        body
    }
    fn parse<'a>(&self, _event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, EventError> {
        parse_openai(data)
    }
}

/// OpenAI `POST /v1/chat/completions`. `max_tokens` is sent (not `max_completion_tokens`):
/// every self-hosted server accepts it.
pub struct OpenAiChat;

impl Api for OpenAiChat {
    fn body(&self, spec: &BodySpec) -> Value {
        let messages = spec
            .messages
            .cloned()
            .unwrap_or_else(|| json!([{"role": "user", "content": spec.prompt}]));
        let mut body =
            json!({"model": spec.model, "messages": messages, "max_tokens": spec.max_tokens});
        stream_options(&mut body, spec);
        body
    }
    fn parse<'a>(&self, _event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, EventError> {
        parse_openai(data)
    }
    /// `max_completion_tokens` wins over `max_tokens` where both are set (as in vLLM).
    fn max_tokens(&self, body: &Value) -> Option<u64> {
        let limit = body.get("max_completion_tokens").filter(|v| !v.is_null());
        limit.or_else(|| body.get("max_tokens"))?.as_u64()
    }
}

#[derive(Deserialize)]
struct TgiEvent<'a> {
    #[serde(borrow)]
    token: Option<TgiToken<'a>>,
    generated_text: Option<Value>,
    details: Option<TgiDetails>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct TgiToken<'a> {
    #[serde(borrow)]
    text: Cow<'a, str>,
    #[serde(default)]
    special: bool,
}

#[derive(Deserialize)]
struct TgiDetails {
    generated_tokens: Option<Reported>,
}

/// Hugging Face TGI `POST /generate_stream`: one event per token; the last carries
/// `generated_text` and, when asked for, `details.generated_tokens`. TGI has no ignore-EOS
/// parameter, so `--ignore-eos` does not change its body.
pub struct Tgi;

impl Api for Tgi {
    fn body(&self, spec: &BodySpec) -> Value {
        json!({
            "inputs": spec.prompt,
            "parameters": {"max_new_tokens": spec.max_tokens, "details": true, "do_sample": false},
        })
    }
    fn parse<'a>(&self, event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, EventError> {
        let ev: TgiEvent<'a> = serde_json::from_str(data).map_err(|e| malformed(data, e))?;
        if event == Some("error") || ev.error.is_some() {
            return Err(server_error(ev.error.as_ref(), Some("error"), Some(data))
                .unwrap_or((FailureKind::ServerError, data.to_string())));
        }
        let mut parsed = Parsed::default();
        if let Some(token) = ev.token.filter(|t| !t.special) {
            parsed.content = token.text;
            parsed.tokens = Some(1);
        }
        if ev.generated_text.is_some_and(|g| !g.is_null()) {
            parsed.done = true;
        }
        if let Some(n) = ev.details.and_then(|d| d.generated_tokens) {
            parsed.usage = Some(Usage {
                prompt_tokens: None,
                completion_tokens: Some(n),
                cached_tokens: None,
            });
        }
        Ok(parsed)
    }
    fn max_tokens(&self, body: &Value) -> Option<u64> {
        body.get("parameters")?.get("max_new_tokens")?.as_u64()
    }
}

#[derive(Deserialize)]
struct LlamaEvent<'a> {
    #[serde(default, borrow)]
    content: Cow<'a, str>,
    tokens: Option<Vec<Value>>,
    #[serde(default)]
    stop: bool,
    tokens_predicted: Option<Reported>,
    tokens_evaluated: Option<Reported>,
    timings: Option<Value>,
    error: Option<Value>,
}

/// llama.cpp native `POST /completion`: `content` per event, `tokens` (ids) when the server
/// sends them, and a final `stop: true` event with counts and `timings`.
pub struct LlamaCpp;

impl Api for LlamaCpp {
    fn body(&self, spec: &BodySpec) -> Value {
        let mut body = json!({"prompt": spec.prompt, "n_predict": spec.max_tokens, "stream": true, "temperature": 0.0});
        if spec.ignore_eos {
            body["ignore_eos"] = json!(true);
        }
        body
    }
    fn parse<'a>(&self, _event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, EventError> {
        let ev: LlamaEvent<'a> = serde_json::from_str(data).map_err(|e| malformed(data, e))?;
        if let Some(err) = server_error(ev.error.as_ref(), None, None) {
            return Err(err);
        }
        let mut parsed = Parsed {
            content: ev.content,
            timings: ev.timings,
            done: ev.stop,
            ..Parsed::default()
        };
        if !parsed.content.is_empty() {
            parsed.tokens = ev.tokens.map(|t| t.len() as u32).filter(|&n| n > 0);
        }
        if ev.stop {
            parsed.usage = Some(Usage {
                prompt_tokens: ev.tokens_evaluated,
                completion_tokens: ev.tokens_predicted,
                cached_tokens: None,
            });
        }
        Ok(parsed)
    }
    /// `n_predict`; a negative one (unlimited) sets no limit.
    fn max_tokens(&self, body: &Value) -> Option<u64> {
        body.get("n_predict")?.as_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_completion_chunks() {
        let p = parse_openai(
            r#"{"choices":[{"index":0,"text":" hi","finish_reason":null}],"usage":null}"#,
        )
        .unwrap();
        assert_eq!(p.content, " hi");
        assert!(p.has_output() && !p.done);
        let u = parse_openai(
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":7,"total_tokens":10}}"#,
        )
        .unwrap();
        assert!(!u.has_output());
        assert_eq!(
            u.usage,
            Some(Usage {
                prompt_tokens: Some(Reported::Count(3)),
                completion_tokens: Some(Reported::Count(7)),
                cached_tokens: None,
            })
        );
        assert!(parse_openai("[DONE]").unwrap().done);
    }

    #[test]
    fn chat_role_chunk_is_not_output_and_reasoning_is() {
        let role =
            parse_openai(r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#).unwrap();
        assert!(!role.has_output());
        let null =
            parse_openai(r#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#).unwrap();
        assert!(!null.has_output());
        let r = parse_openai(r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#).unwrap();
        assert_eq!((r.reasoning.as_ref(), r.content.as_ref()), ("hmm", ""));
        let finish =
            parse_openai(r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#).unwrap();
        assert!(!finish.has_output());
        // Issue 23: what ends the answer besides `[DONE]`.
        assert!(finish.finished && !finish.done);
        let usage = parse_openai(r#"{"choices":[],"usage":{"completion_tokens":2}}"#).unwrap();
        assert!(usage.finished);
        let going = r#"{"choices":[{"delta":{"content":"a"},"finish_reason":null}],"usage":{"completion_tokens":1}}"#;
        assert!(!parse_openai(going).unwrap().finished, "continuous usage");
    }

    #[test]
    fn errors_in_stream_are_classified() {
        let (k, m) = parse_openai(r#"{"error":{"message":"boom","code":500}}"#).unwrap_err();
        assert_eq!(k, FailureKind::ServerError);
        assert!(m.contains("boom"));
        let (k, _) = parse_openai(r#"{"object":"error","message":"bad"}"#).unwrap_err();
        assert_eq!(k, FailureKind::ServerError);
        let (k, _) = parse_openai(r#"{"choices": [tru"#).unwrap_err();
        assert_eq!(k, FailureKind::MalformedStream);
        let (k, _) = Tgi
            .parse(None, r#"{"error":"overloaded","error_type":"overloaded"}"#)
            .unwrap_err();
        assert_eq!(k, FailureKind::ServerError);
    }

    #[test]
    fn tgi_tokens_and_details() {
        let p = Tgi.parse(None, r#"{"index":1,"token":{"id":5,"text":" a","logprob":-0.1,"special":false},"generated_text":null,"details":null}"#).unwrap();
        assert_eq!(
            (p.content.as_ref(), p.tokens, p.done),
            (" a", Some(1), false)
        );
        let last = Tgi.parse(None, r#"{"index":2,"token":{"id":6,"text":" b","special":false},"generated_text":" a b","details":{"finish_reason":"length","generated_tokens":2,"seed":null}}"#).unwrap();
        assert!(last.done);
        assert_eq!(
            last.usage.unwrap().completion_tokens,
            Some(Reported::Count(2))
        );
    }

    #[test]
    fn llamacpp_native_events() {
        let p = LlamaCpp
            .parse(None, r#"{"content":"日本","tokens":[1,2],"stop":false}"#)
            .unwrap();
        assert_eq!((p.content.as_ref(), p.tokens), ("日本", Some(2)));
        let last = LlamaCpp.parse(None, r#"{"content":"","tokens":[],"stop":true,"tokens_predicted":9,"tokens_evaluated":4,"timings":{"predicted_per_token_ms":7.5}}"#).unwrap();
        assert!(last.done && !last.has_output());
        assert_eq!(
            last.usage,
            Some(Usage {
                prompt_tokens: Some(Reported::Count(4)),
                completion_tokens: Some(Reported::Count(9)),
                cached_tokens: None,
            })
        );
        assert!(last.timings.is_some());
    }

    /// Issue 6: llama.cpp's `timings` is read on every API. Lines as the real server sends them.
    #[test]
    fn llamacpp_timings_are_read_on_every_api() {
        // /v1/completions: in the chunk that carries `finish_reason` (and usage).
        let completion = r#"{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"object":"text_completion","usage":{"completion_tokens":4,"prompt_tokens":2,"total_tokens":6,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"cache_n":0,"prompt_n":2,"prompt_ms":22.236,"predicted_n":4,"predicted_ms":35.651,"predicted_per_token_ms":11.883666666666668}}"#;
        let usage = parse_openai(completion).unwrap().usage.unwrap();
        assert_eq!(usage.cached_tokens, Some(Reported::Count(0)));
        // /v1/chat/completions: in the usage-only chunk after the finish chunk.
        let chat = r#"{"choices":[],"object":"chat.completion.chunk","usage":{"completion_tokens":3,"prompt_tokens":31,"total_tokens":34},"timings":{"cache_n":0,"prompt_n":31,"prompt_ms":244.785,"predicted_n":3,"predicted_ms":24.991,"predicted_per_token_ms":12.4955}}"#;
        // /completion (native): in the `stop: true` event.
        let native = r#"{"index":0,"content":"","tokens":[],"stop":true,"tokens_predicted":3,"tokens_evaluated":1,"timings":{"cache_n":0,"prompt_n":1,"prompt_ms":18.259,"predicted_n":3,"predicted_ms":33.023,"predicted_per_token_ms":16.5115}}"#;
        for (api, data, per_token) in [
            (
                &OpenAiCompletions as &dyn Api,
                completion,
                11.883666666666668,
            ),
            (&OpenAiChat, chat, 12.4955),
            (&LlamaCpp, native, 16.5115),
        ] {
            let p = api.parse(None, data).unwrap();
            let t = p.timings.as_ref().expect("timings read");
            assert_eq!(t["predicted_per_token_ms"], per_token, "{data}");
            assert!(!p.has_output());
            assert!(p.usage.is_some());
        }
    }

    #[test]
    fn extra_body_merges_recursively() {
        let mut body = Tgi.body(&BodySpec {
            model: "m",
            prompt: "p",
            messages: None,
            max_tokens: 3,
            ignore_eos: false,
        });
        merge_json(&mut body, &json!({"parameters": {"top_k": 5}, "x": 1}));
        assert_eq!(body["parameters"]["max_new_tokens"], 3);
        assert_eq!(body["parameters"]["top_k"], 5);
        assert_eq!(body["x"], 1);
    }

    /// Issue 15: vLLM's per-request `metrics` object (with `--enable-per-request-metrics`,
    /// in the final usage chunk) is kept verbatim on both OpenAI APIs; anything but an object
    /// is ignored.
    #[test]
    fn vllm_per_request_metrics_are_read() {
        let m = r#"{"time_to_first_token_ms":96.5,"queue_time_ms":30.25,"generation_time_ms":400,"mean_itl_ms":10.1,"tokens_per_second":99}"#;
        for api in [&OpenAiCompletions as &dyn Api, &OpenAiChat] {
            let data = format!(
                r#"{{"choices":[],"usage":{{"prompt_tokens":2,"completion_tokens":3}},"metrics":{m}}}"#
            );
            let p = api.parse(None, &data).unwrap();
            let got = p.request_metrics.expect("metrics kept");
            assert_eq!(got["queue_time_ms"], 30.25);
            assert_eq!(got["time_to_first_token_ms"], 96.5);
            let odd = api
                .parse(None, r#"{"choices":[],"metrics":"n/a"}"#)
                .unwrap();
            assert_eq!(odd.request_metrics, None);
        }
    }
}
