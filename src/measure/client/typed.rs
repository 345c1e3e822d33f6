//! The APIs whose stream events are typed by a `type` field (issue 17): Anthropic's Messages
//! API (`POST /v1/messages`) and OpenAI's Responses API (`POST /v1/responses`), both served
//! by vLLM and SGLang. Facts on their events: `../shared/reference/FORMATS.md` §3, §4.
//!
//! Each reads one event into the same [`Parsed`] as the other APIs: answer text, reasoning
//! text (kept apart, as the chat API's `reasoning_content`), the server's counts, the end.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Value};

use super::api::{cached_in, malformed, Api, BodySpec, EventError, Parsed, Usage};
use super::usage::Reported;
use crate::measure::record::FailureKind;

/// The conversation as the chat API sends it: the dataset's messages, else one user turn.
fn messages(spec: &BodySpec) -> Value {
    spec.messages
        .cloned()
        .unwrap_or_else(|| json!([{"role": "user", "content": spec.prompt}]))
}

fn stream_error(what: &str, data: &str) -> EventError {
    let excerpt: String = data.chars().take(200).collect();
    (
        FailureKind::ServerError,
        format!("server error in stream ({what}): {excerpt}"),
    )
}

#[derive(Deserialize)]
struct MessagesEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<MessagesDelta<'a>>,
    message: Option<MessageStart>,
    usage: Option<MessagesUsage>,
}

#[derive(Deserialize)]
struct MessagesDelta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    /// `message_delta`'s reason the answer ended (its value is not read).
    #[serde(default)]
    stop_reason: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct MessageStart {
    usage: Option<MessagesUsage>,
}

#[derive(Deserialize)]
struct MessagesUsage {
    input_tokens: Option<Reported>,
    output_tokens: Option<Reported>,
    cache_read_input_tokens: Option<Reported>,
}

/// Anthropic Messages `POST /v1/messages`: `message_start` (input tokens),
/// `content_block_delta` events (`text_delta`, `thinking_delta`), `message_delta` (the
/// output tokens, cumulative) and `message_stop`. The API key goes in `x-api-key`, with
/// `anthropic-version` (the client sets both headers).
pub struct AnthropicMessages;

/// The `anthropic-version` header servebench sends (the version every server accepts).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

impl Api for AnthropicMessages {
    fn body(&self, spec: &BodySpec) -> Value {
        let mut body = json!({
            "model": spec.model,
            "messages": messages(spec),
            "max_tokens": spec.max_tokens,
            "stream": true,
            "temperature": 0.0,
        });
        if spec.ignore_eos {
            body["ignore_eos"] = json!(true);
        }
        body
    }

    fn parse<'a>(&self, _event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, EventError> {
        let ev: MessagesEvent<'a> = serde_json::from_str(data).map_err(|e| malformed(data, e))?;
        let mut parsed = Parsed::default();
        let usage = |u: MessagesUsage| Usage {
            prompt_tokens: u.input_tokens,
            completion_tokens: None,
            cached_tokens: u.cache_read_input_tokens,
        };
        match ev.kind.as_ref() {
            "message_start" => parsed.usage = ev.message.and_then(|m| m.usage).map(usage),
            "content_block_delta" => {
                if let Some(d) = ev.delta {
                    match d.kind.as_deref() {
                        Some("thinking_delta") => parsed.reasoning = d.thinking.unwrap_or_default(),
                        _ => parsed.content = d.text.unwrap_or_default(),
                    }
                }
            }
            "message_delta" => {
                parsed.finished = ev.delta.is_some_and(|d| d.stop_reason.is_some());
                parsed.usage = ev.usage.map(|u| Usage {
                    completion_tokens: u.output_tokens,
                    ..usage(u)
                });
            }
            "message_stop" => parsed.done = true,
            "error" => return Err(stream_error("error event", data)),
            _ => {}
        }
        Ok(parsed)
    }

    /// `input_tokens` counts the prompt tokens not read from the cache.
    fn cached_within_prompt(&self) -> bool {
        false
    }
}

#[derive(Deserialize)]
struct ResponsesEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    response: Option<ResponseObject>,
}

#[derive(Deserialize)]
struct ResponseObject {
    usage: Option<ResponsesUsage>,
}

#[derive(Deserialize)]
struct ResponsesUsage {
    input_tokens: Option<Reported>,
    output_tokens: Option<Reported>,
    input_tokens_details: Option<serde_json::Value>,
}

/// OpenAI Responses `POST /v1/responses`: `response.output_text.delta` (answer),
/// `response.reasoning_text.delta` and `response.reasoning_summary_text.delta` (reasoning),
/// and `response.completed` (or `.incomplete`) with the usage; no `[DONE]`.
pub struct OpenAiResponses;

impl Api for OpenAiResponses {
    fn body(&self, spec: &BodySpec) -> Value {
        let input = match spec.messages {
            Some(m) => m.clone(),
            None => json!(spec.prompt),
        };
        let mut body = json!({
            "model": spec.model,
            "input": input,
            "max_output_tokens": spec.max_tokens,
            "stream": true,
            "temperature": 0.0,
        });
        if spec.ignore_eos {
            body["ignore_eos"] = json!(true);
        }
        body
    }

    fn parse<'a>(&self, _event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, EventError> {
        let ev: ResponsesEvent<'a> = serde_json::from_str(data).map_err(|e| malformed(data, e))?;
        let mut parsed = Parsed::default();
        match ev.kind.as_ref() {
            "response.output_text.delta" => parsed.content = ev.delta.unwrap_or_default(),
            "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
                parsed.reasoning = ev.delta.unwrap_or_default();
            }
            "response.completed" | "response.incomplete" => {
                parsed.done = true;
                parsed.usage = (ev.response.and_then(|r| r.usage)).map(|u| Usage {
                    prompt_tokens: u.input_tokens,
                    completion_tokens: u.output_tokens,
                    cached_tokens: cached_in(u.input_tokens_details.as_ref()),
                });
            }
            "response.failed" | "error" => return Err(stream_error(&ev.kind, data)),
            _ => {}
        }
        Ok(parsed)
    }

    fn max_tokens(&self, body: &Value) -> Option<u64> {
        body.get("max_output_tokens")?.as_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_events() {
        let a = AnthropicMessages;
        let start = a.parse(Some("message_start"), r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":12,"output_tokens":1,"cache_read_input_tokens":4}}}"#).unwrap();
        let u = start.usage.unwrap();
        let n = |x: u64| Some(Reported::Count(x));
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.cached_tokens),
            (n(12), None, n(4))
        );
        assert!(!start.has_output());
        let text = a.parse(None, r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" hi"}}"#).unwrap();
        assert_eq!(text.content, " hi");
        let think = a.parse(None, r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#).unwrap();
        assert_eq!(
            (think.reasoning.as_ref(), think.content.as_ref()),
            ("hm", "")
        );
        let end = a.parse(None, r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#).unwrap();
        assert_eq!(end.usage.unwrap().completion_tokens, n(9));
        assert!(
            end.finished && !end.done,
            "issue 23: the stop reason ends the answer"
        );
        assert!(a.parse(None, r#"{"type":"message_stop"}"#).unwrap().done);
        assert!(!a.parse(None, r#"{"type":"ping"}"#).unwrap().has_output());
        let err = a.parse(
            None,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert!(err.unwrap_err().1.contains("Overloaded"));
        let body = a.body(&BodySpec {
            model: "m",
            prompt: "p",
            messages: None,
            max_tokens: 5,
            ignore_eos: false,
        });
        assert_eq!(body["messages"][0]["content"], "p");
        assert_eq!(body["max_tokens"], 5);
    }

    #[test]
    fn the_messages_api_takes_its_key_in_x_api_key() {
        use crate::config::BackendKind;
        let h = super::super::backends::default_headers(BackendKind::AnthropicMessages, Some("k"));
        let want = [("x-api-key", "k"), ("anthropic-version", ANTHROPIC_VERSION)];
        assert_eq!(h, want.map(|(a, b)| (a.to_string(), b.to_string())));
        let h = super::super::backends::default_headers(BackendKind::OpenaiResponses, Some("k"));
        assert_eq!(h, [("authorization".to_string(), "Bearer k".to_string())]);
        let h = super::super::backends::default_headers(BackendKind::AnthropicMessages, None);
        assert_eq!(h.len(), 1, "anthropic-version without a key");
    }

    #[test]
    fn responses_events() {
        let r = OpenAiResponses;
        let d = r.parse(None, r#"{"type":"response.output_text.delta","sequence_number":3,"item_id":"i","output_index":0,"content_index":0,"delta":" a"}"#).unwrap();
        assert_eq!(d.content, " a");
        let t = r
            .parse(
                None,
                r#"{"type":"response.reasoning_text.delta","sequence_number":2,"delta":"why"}"#,
            )
            .unwrap();
        assert_eq!(t.reasoning, "why");
        let done = r.parse(None, r#"{"type":"response.completed","sequence_number":9,"response":{"id":"r","status":"completed","usage":{"input_tokens":7,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":12}}}"#).unwrap();
        assert!(done.done);
        let u = done.usage.unwrap();
        let n = |x: u64| Some(Reported::Count(x));
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.cached_tokens),
            (n(7), n(5), n(0))
        );
        assert!(r
            .parse(
                None,
                r#"{"type":"response.created","sequence_number":0,"response":{"id":"r"}}"#
            )
            .unwrap()
            .usage
            .is_none());
        assert!(r
            .parse(
                None,
                r#"{"type":"response.failed","response":{"error":{"message":"x"}}}"#
            )
            .is_err());
        let body = r.body(&BodySpec {
            model: "m",
            prompt: "p",
            messages: None,
            max_tokens: 5,
            ignore_eos: false,
        });
        assert_eq!(
            (body["input"].as_str(), body["max_output_tokens"].as_u64()),
            (Some("p"), Some(5))
        );
    }
}
