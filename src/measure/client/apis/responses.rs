//! OpenAI's Responses API, `POST /v1/responses` (served by vLLM and SGLang), whose stream
//! events are typed by a `type` field (facts: `../shared/reference/FORMATS.md`, its Responses section):
//! `response.output_text.delta` (answer), `response.reasoning_text.delta` and
//! `response.reasoning_summary_text.delta` (reasoning), and `response.completed` (or
//! `.incomplete`) with the usage; no `[DONE]`. Images go as `input_image` parts; it takes no
//! audio. Tool calls: a `function_call` item's `response.output_item.added`
//! names the function, `response.function_call_arguments.delta` events carry the arguments.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Value};

use super::anthropic::stream_error;
use crate::config::structured::{StructuredOutput, Tool};
use crate::measure::client::api::{
    cached_in, malformed, messages, reasoning_in, unsendable, Answer, Api, BodySpec, Failure,
    Parsed, Part, Streamed, Usage,
};
use crate::measure::client::usage::Reported;

#[derive(Deserialize)]
struct ResponsesEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    response: Option<ResponseObject>,
    /// The output item an event is about (a function call's).
    #[serde(default)]
    output_index: u64,
    #[serde(default, borrow)]
    item: Option<OutputItem<'a>>,
}

/// `response.output_item.added`'s item: a `function_call` names the function called.
#[derive(Deserialize)]
struct OutputItem<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ResponseObject {
    usage: Option<ResponsesUsage>,
    /// vLLM's per-request `metrics`, on the completed response (as on chat).
    metrics: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ResponsesUsage {
    input_tokens: Option<Reported>,
    output_tokens: Option<Reported>,
    input_tokens_details: Option<serde_json::Value>,
    output_tokens_details: Option<serde_json::Value>,
}

/// An image as a Responses input part; audio: none.
fn responses_part(p: &Part) -> Option<Value> {
    match p {
        Part::Image { url } => Some(json!({"type": "input_image", "image_url": url})),
        Part::Video { .. } | Part::Audio { .. } => None,
    }
}

/// OpenAI Responses `POST /v1/responses`: `response.output_text.delta` (answer),
/// `response.reasoning_text.delta` and `response.reasoning_summary_text.delta` (reasoning),
/// and `response.completed` (or `.incomplete`) with the usage; no `[DONE]`.
pub struct OpenAiResponses;

impl Api for OpenAiResponses {
    fn body(&self, spec: &BodySpec) -> Result<Value, Failure> {
        let input = match (spec.messages, spec.parts) {
            (None, []) => json!(spec.prompt),
            _ => {
                let text = |t: &str| json!({"type": "input_text", "text": t});
                messages(spec, text, responses_part)?
            }
        };
        let body = json!({
            "model": spec.model,
            "input": input,
            "max_output_tokens": spec.max_tokens,
            "stream": true,
            "temperature": 0.0,
        });
        Ok(spec.with_ignore_eos(body))
    }

    fn answer(&self) -> Answer<'_> {
        Answer::Streamed(self)
    }

    fn max_tokens(&self, body: &Value) -> Option<u64> {
        body.get("max_output_tokens")?.as_u64()
    }

    fn takes_messages(&self) -> bool {
        true
    }

    /// A schema as `text.format` (`json_schema`, strict); tools as Responses function tools
    /// with `tool_choice: "required"`.
    fn structured(&self, body: &mut Value, s: &StructuredOutput) -> Result<(), Failure> {
        match s {
            StructuredOutput::Json { schema } => {
                body["text"] = json!({"format": {
                    "type": "json_schema", "name": "servebench", "schema": schema, "strict": true
                }});
            }
            StructuredOutput::Tools { tools } => {
                let tool = |t: &Tool| {
                    json!({"type": "function", "name": t.name, "description": t.description,
                           "parameters": t.parameters})
                };
                body["tools"] = tools.iter().map(tool).collect();
                body["tool_choice"] = json!("required");
            }
            other => return Err(unsendable(&format!("--structured-output {}", other.kind()))),
        }
        Ok(())
    }
}

impl Streamed for OpenAiResponses {
    fn parse<'a>(&self, _event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, Failure> {
        let ev: ResponsesEvent<'a> = serde_json::from_str(data).map_err(|e| malformed(data, e))?;
        let mut parsed = Parsed::default();
        match ev.kind.as_ref() {
            "response.output_text.delta" => parsed.content = ev.delta.unwrap_or_default(),
            "response.output_item.added" => {
                let call = ev
                    .item
                    .filter(|i| i.kind.as_deref() == Some("function_call"));
                if let Some(i) = call {
                    parsed.tool_index = ev.output_index;
                    parsed.tool_name = Some(i.name.unwrap_or_default());
                }
            }
            "response.function_call_arguments.delta" => {
                parsed.tool_index = ev.output_index;
                parsed.tool_args = ev.delta.unwrap_or_default();
            }
            "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
                parsed.reasoning = ev.delta.unwrap_or_default();
            }
            "response.completed" | "response.incomplete" => {
                parsed.done = true;
                let (usage, metrics) = ev.response.map_or((None, None), |r| (r.usage, r.metrics));
                parsed.request_metrics = metrics.filter(serde_json::Value::is_object);
                parsed.usage = usage.map(|u| Usage {
                    prompt_tokens: u.input_tokens,
                    completion_tokens: u.output_tokens,
                    cached_tokens: cached_in(u.input_tokens_details.as_ref()),
                    reasoning_tokens: reasoning_in(u.output_tokens_details.as_ref()),
                });
            }
            "response.failed" | "error" => return Err(stream_error(&ev.kind, data)),
            _ => {}
        }
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `function_call` item names the function, its arguments' deltas are
    /// output; JSON goes out as `text.format`, tools as Responses function tools.
    #[test]
    fn function_call_items_are_tool_calls() {
        let r = OpenAiResponses;
        let added = r.parse(None, r#"{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"function_call","id":"fc","call_id":"c","name":"search_flights","arguments":""}}"#).unwrap();
        assert_eq!(added.tool_name.as_deref(), Some("search_flights"));
        assert!(!added.has_output());
        let piece = r.parse(None, r#"{"type":"response.function_call_arguments.delta","sequence_number":2,"item_id":"fc","output_index":0,"delta":"{}"}"#).unwrap();
        assert_eq!(piece.tool_args, "{}");
        assert!(piece.has_output() && piece.content.is_empty());
        let message = r.parse(None, r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message"}}"#).unwrap();
        assert!(message.tool_name.is_none());
        let spec = BodySpec {
            model: "m",
            prompt: "p",
            batch: &[],
            messages: None,
            parts: &[],
            max_tokens: 5,
            ignore_eos: false,
        };
        let mut body = r.body(&spec).unwrap();
        r.structured(&mut body, &StructuredOutput::builtin_json())
            .unwrap();
        assert_eq!(body["text"]["format"]["type"], "json_schema");
        r.structured(&mut body, &StructuredOutput::builtin_tools())
            .unwrap();
        assert_eq!(
            (
                body["tools"][1]["name"].as_str(),
                body["tool_choice"].as_str()
            ),
            (Some("search_flights"), Some("required"))
        );
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
        let spec = |parts| BodySpec {
            model: "m",
            prompt: "p",
            batch: &[],
            messages: None,
            parts,
            max_tokens: 5,
            ignore_eos: false,
        };
        let body = r.body(&spec(&[])).unwrap();
        assert_eq!(
            (body["input"].as_str(), body["max_output_tokens"].as_u64()),
            (Some("p"), Some(5))
        );
        // An image goes as an `input_image` part after the `input_text`.
        let image = [Part::Image {
            url: "https://x/y.png".into(),
        }];
        let body = r.body(&spec(&image)).unwrap();
        let content = &body["input"][0]["content"];
        assert_eq!(content[0]["type"], "input_text");
        assert_eq!(content[1]["image_url"], "https://x/y.png");
    }
}
