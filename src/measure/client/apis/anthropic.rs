//! Anthropic's Messages API, `POST /v1/messages` (served by vLLM, SGLang and llama.cpp), whose
//! stream events are typed by a `type` field (facts:
//! `../shared/reference/FORMATS.md`, its Anthropic section): `message_start` (input tokens),
//! `content_block_delta` (`text_delta`, `thinking_delta`), `message_delta` (output tokens,
//! cumulative, and the stop reason) and `message_stop`. Images go as Anthropic content blocks;
//! it takes no audio. Tool calls: a `tool_use` block's `content_block_start`
//! names the function, its `input_json_delta` events carry the arguments.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::config::structured::{StructuredOutput, Tool};
use crate::measure::client::api::{
    malformed, messages, unsendable, Answer, Api, BodySpec, Failure, Parsed, Part, Streamed, Usage,
};
use crate::measure::client::usage::Reported;
use crate::measure::record::FailureKind;

/// An error event, quoted.
pub(super) fn stream_error(what: &str, data: &str) -> Failure {
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
    /// The content block an event is about (a tool call's).
    #[serde(default)]
    index: u64,
    #[serde(default, borrow)]
    content_block: Option<ContentBlock<'a>>,
}

/// `content_block_start`'s block: a `tool_use` block names the function called.
#[derive(Deserialize)]
struct ContentBlock<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct MessagesDelta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    /// `input_json_delta`: a piece of a tool call's input.
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
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

/// An image as an Anthropic content block: a `data:` URL's bytes as a base64 source, any other
/// URL as a URL source. Audio: none.
fn anthropic_part(p: &Part) -> Option<Value> {
    let Part::Image { url } = p else {
        return None;
    };
    let inline = (url.strip_prefix("data:")).and_then(|rest| rest.split_once(";base64,"));
    Some(match inline {
        Some((media_type, data)) => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }
        None => json!({"type": "image", "source": {"type": "url", "url": url}}),
    })
}

/// Anthropic Messages `POST /v1/messages`: `message_start` (input tokens),
/// `content_block_delta` events (`text_delta`, `thinking_delta`), `message_delta` (the
/// output tokens, cumulative) and `message_stop`. The API key goes in `x-api-key`, with
/// `anthropic-version` (the client sets both headers).
pub struct AnthropicMessages;

/// The `anthropic-version` header servebench sends (the version every server accepts).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

impl Api for AnthropicMessages {
    fn body(&self, spec: &BodySpec) -> Result<Value, Failure> {
        let text = |t: &str| json!({"type": "text", "text": t});
        let body = json!({
            "model": spec.model,
            "messages": messages(spec, text, anthropic_part)?,
            "max_tokens": spec.max_tokens,
            "stream": true,
            "temperature": 0.0,
        });
        Ok(spec.with_ignore_eos(body))
    }

    fn answer(&self) -> Answer<'_> {
        Answer::Streamed(self)
    }

    /// `input_tokens` counts the prompt tokens not read from the cache.
    fn cached_within_prompt(&self) -> bool {
        false
    }

    fn takes_messages(&self) -> bool {
        true
    }

    /// Tools as Anthropic tools (`input_schema`) with `tool_choice: any`, so every answer is
    /// a call; the Messages API has no JSON-schema answer format (the config refuses it).
    fn structured(&self, body: &mut Value, s: &StructuredOutput) -> Result<(), Failure> {
        let StructuredOutput::Tools { tools } = s else {
            return Err(unsendable("--structured-output json"));
        };
        let tool = |t: &Tool| json!({"name": t.name, "description": t.description, "input_schema": t.parameters});
        body["tools"] = tools.iter().map(tool).collect();
        body["tool_choice"] = json!({"type": "any"});
        Ok(())
    }

    /// The key in `x-api-key`, and `anthropic-version` with or without one.
    fn headers(&self, api_key: Option<&str>) -> Vec<(String, String)> {
        let key = api_key.map(|k| ("x-api-key".to_string(), k.to_string()));
        let version = (
            "anthropic-version".to_string(),
            ANTHROPIC_VERSION.to_string(),
        );
        key.into_iter().chain([version]).collect()
    }
}

impl Streamed for AnthropicMessages {
    fn parse<'a>(&self, _event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, Failure> {
        let ev: MessagesEvent<'a> = serde_json::from_str(data).map_err(|e| malformed(data, e))?;
        let mut parsed = Parsed::default();
        let usage = |u: MessagesUsage| Usage {
            prompt_tokens: u.input_tokens,
            completion_tokens: None,
            cached_tokens: u.cache_read_input_tokens,
            reasoning_tokens: None,
        };
        match ev.kind.as_ref() {
            "message_start" => parsed.usage = ev.message.and_then(|m| m.usage).map(usage),
            "content_block_start" => {
                let block = ev
                    .content_block
                    .filter(|b| b.kind.as_deref() == Some("tool_use"));
                if let Some(b) = block {
                    parsed.tool_index = ev.index;
                    parsed.tool_name = Some(b.name.unwrap_or_default());
                }
            }
            "content_block_delta" => {
                if let Some(d) = ev.delta {
                    match d.kind.as_deref() {
                        Some("thinking_delta") => parsed.reasoning = d.thinking.unwrap_or_default(),
                        Some("input_json_delta") => {
                            parsed.tool_index = ev.index;
                            parsed.tool_args = d.partial_json.unwrap_or_default();
                        }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(parts: &[Part]) -> BodySpec<'_> {
        BodySpec {
            model: "m",
            prompt: "p",
            batch: &[],
            messages: None,
            parts,
            max_tokens: 5,
            ignore_eos: false,
        }
    }

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
        assert!(end.finished && !end.done, "the stop reason ends the answer");
        assert!(a.parse(None, r#"{"type":"message_stop"}"#).unwrap().done);
        assert!(!a.parse(None, r#"{"type":"ping"}"#).unwrap().has_output());
        let err = a.parse(
            None,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert!(err.unwrap_err().1.contains("Overloaded"));
        let body = a.body(&spec(&[])).unwrap();
        assert_eq!(body["messages"][0]["content"], "p");
        assert_eq!(body["max_tokens"], 5);
    }

    /// A `tool_use` block names the function, its `input_json_delta` events are
    /// output carrying the arguments; tools go out with their `input_schema`.
    #[test]
    fn tool_use_blocks_are_tool_calls() {
        let a = AnthropicMessages;
        let start = a.parse(None, r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"get_weather","input":{}}}"#).unwrap();
        assert_eq!(
            (start.tool_name.as_deref(), start.tool_index),
            (Some("get_weather"), 1)
        );
        assert!(!start.has_output());
        let piece = a.parse(None, r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\""}}"#).unwrap();
        assert_eq!(
            (piece.tool_args.as_ref(), piece.tool_index),
            ("{\"city\"", 1)
        );
        assert!(piece.has_output() && piece.content.is_empty());
        let text = a.parse(None, r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#).unwrap();
        assert!(text.tool_name.is_none());
        let mut body = a.body(&spec(&[])).unwrap();
        a.structured(&mut body, &StructuredOutput::builtin_tools())
            .unwrap();
        assert_eq!(body["tools"][0]["name"], "get_weather");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(body["tool_choice"]["type"], "any");
        assert!(a
            .structured(&mut body, &StructuredOutput::builtin_json())
            .is_err());
    }

    #[test]
    fn the_messages_api_takes_its_key_in_x_api_key() {
        let h = AnthropicMessages.headers(Some("k"));
        let want = [("x-api-key", "k"), ("anthropic-version", ANTHROPIC_VERSION)];
        assert_eq!(h, want.map(|(a, b)| (a.to_string(), b.to_string())));
        let h = super::super::responses::OpenAiResponses.headers(Some("k"));
        assert_eq!(h, [("authorization".to_string(), "Bearer k".to_string())]);
        let h = AnthropicMessages.headers(None);
        assert_eq!(h.len(), 1, "anthropic-version without a key");
    }

    /// An inline image is a base64 image block, a linked one a URL block; audio,
    /// which the Messages API does not take, is refused by name.
    #[test]
    fn images_are_anthropic_blocks_and_audio_is_refused() {
        let inline = Part::Image {
            url: "data:image/jpeg;base64,/9j/".into(),
        };
        let linked = Part::Image {
            url: "https://x/y.png".into(),
        };
        let body = AnthropicMessages.body(&spec(&[inline, linked])).unwrap();
        let content = &body["messages"][0]["content"];
        assert_eq!(content[0]["text"], "p");
        assert_eq!(content[1]["source"]["media_type"], "image/jpeg");
        assert_eq!(content[1]["source"]["data"], "/9j/");
        assert_eq!(content[2]["source"]["url"], "https://x/y.png");
        let audio = Part::Audio {
            data: "UklG".into(),
            format: "wav".into(),
            duration: std::time::Duration::ZERO,
        };
        let (kind, why) = AnthropicMessages.body(&spec(&[audio])).unwrap_err();
        assert_eq!(kind, FailureKind::Prompt);
        assert!(why.contains("audio"), "{why}");
    }
}
