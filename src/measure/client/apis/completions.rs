//! OpenAI completions, `POST /v1/completions` (vLLM, SGLang, llama.cpp, TensorRT-LLM, ...),
//! and the reading of an OpenAI stream event that the chat API shares ([`parse_openai`]:
//! text or delta, reasoning, usage, vLLM's continuous usage and per-request `metrics`,
//! llama.cpp's `timings`, the end of the answer). The common event takes the serde-free path
//! of `fast_event.rs` first. Structured output goes in the body's own fields, as on vLLM's
//! completions endpoint: `structured_outputs` (or `guided_*`) and `response_format`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::config::structured::StructuredOutput;
use crate::measure::client::api::{
    cached_in, malformed, reasoning_in, server_error, text_only, unsendable, Answer, Api, BodySpec,
    Failure, Parsed, Streamed, ToolPiece, Usage,
};
use crate::measure::client::fast_event::{self, Shape};
use crate::measure::client::usage::Reported;

#[derive(Deserialize)]
struct OaiUsage {
    prompt_tokens: Option<Reported>,
    completion_tokens: Option<Reported>,
    prompt_tokens_details: Option<Value>,
    completion_tokens_details: Option<Value>,
}

impl From<OaiUsage> for Usage {
    fn from(u: OaiUsage) -> Self {
        Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cached_tokens: cached_in(u.prompt_tokens_details.as_ref()),
            reasoning_tokens: reasoning_in(u.completion_tokens_details.as_ref()),
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
    meta_info: Option<Value>,
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
    #[serde(default, borrow)]
    tool_calls: Option<Vec<OaiToolCall<'a>>>,
}

/// A piece of a streamed tool call: the call's first event names the function.
#[derive(Deserialize)]
struct OaiToolCall<'a> {
    #[serde(default)]
    index: u64,
    #[serde(default, borrow)]
    function: Option<OaiFunction<'a>>,
}

#[derive(Deserialize)]
struct OaiFunction<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

/// Reads one event of an OpenAI stream (completions or chat).
pub(super) fn parse_openai<'a>(data: &'a str) -> Result<Parsed<'a>, Failure> {
    read_openai(None, data)
}

/// [`parse_openai`], reading a plain chunk against the stream's last one when `shape` is
/// given (`fast_event::Shape`).
pub(super) fn read_openai<'a>(
    shape: Option<&mut Shape>,
    data: &'a str,
) -> Result<Parsed<'a>, Failure> {
    if data.trim() == "[DONE]" {
        return Ok(Parsed {
            done: true,
            ..Parsed::default()
        });
    }
    let fast = match shape {
        Some(shape) => fast_event::openai_shaped(shape, data),
        None => fast_event::openai(data),
    };
    if let Some(text) = fast {
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
        meta_info: chunk.meta_info.filter(Value::is_object),
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
            // Every call of the delta: the first in the event's own fields, the rest after.
            let mut calls = (delta.tool_calls.into_iter().flatten())
                .filter_map(|c| Some((c.index, c.function?)));
            if let Some((index, f)) = calls.next() {
                parsed.tool_index = index;
                parsed.tool_name = f.name;
                parsed.tool_args = f.arguments.unwrap_or_default();
            }
            parsed.more_tool_calls = calls
                .map(|(index, f)| ToolPiece {
                    index,
                    name: f.name,
                    args: f.arguments.unwrap_or_default(),
                })
                .collect();
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

/// The streaming options of both OpenAI APIs: usage in the stream, greedy sampling, and
/// `ignore_eos` when asked.
pub(super) fn stream_options(body: &mut Value, spec: &BodySpec) {
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    body["temperature"] = json!(0.0);
    *body = spec.with_ignore_eos(body.take());
}

/// OpenAI `POST /v1/completions` (vLLM, SGLang, llama.cpp, TensorRT-LLM, ...).
pub struct OpenAiCompletions;

impl Api for OpenAiCompletions {
    fn body(&self, spec: &BodySpec) -> Result<Value, Failure> {
        text_only(spec)?;
        let mut body =
            json!({"model": spec.model, "prompt": spec.prompt, "max_tokens": spec.max_tokens});
        stream_options(&mut body, spec);
        Ok(body)
    }
    fn answer(&self) -> Answer<'_> {
        Answer::Streamed(&OpenAiStream)
    }
    /// As vLLM's own structured-output benchmark sends it on completions: a
    /// regex, choice or grammar in `structured_outputs` (or the older `guided_*` field), a
    /// schema as `response_format` (vLLM's completions endpoint reads it as the chat one
    /// does); tools are a chat field, refused when the run is configured.
    fn structured(&self, body: &mut Value, s: &StructuredOutput) -> Result<(), Failure> {
        if let Some((field, value)) = s.guided_field() {
            body[field.as_str()] = value;
            return Ok(());
        }
        match s {
            StructuredOutput::Json { schema } => {
                body["response_format"] = json_schema_format(schema);
                Ok(())
            }
            _ => Err(unsendable(&format!("--structured-output {}", s.kind()))),
        }
    }
}

/// OpenAI's `response_format` asking for JSON of `schema` (`json_schema`, strict), as both
/// OpenAI APIs send it.
pub(super) fn json_schema_format(schema: &Value) -> Value {
    json!({"type": "json_schema", "json_schema": {
        "name": "servebench", "schema": schema, "strict": true
    }})
}

/// The reading of an OpenAI stream: the completions, chat and audio transcription APIs answer
/// with the same chunks.
pub(crate) struct OpenAiStream;

impl Streamed for OpenAiStream {
    fn parse<'a>(&self, _event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, Failure> {
        parse_openai(data)
    }
    fn parse_shaped<'a>(
        &self,
        shape: &mut Shape,
        _event: Option<&str>,
        data: &'a str,
    ) -> Result<Parsed<'a>, Failure> {
        read_openai(Some(shape), data)
    }
}

#[cfg(test)]
mod tests {
    use super::super::chat::OpenAiChat;
    use super::*;
    use crate::measure::record::FailureKind;

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
                reasoning_tokens: None,
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
        // What ends the answer besides `[DONE]`.
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
    }

    /// vLLM's per-request `metrics` object (with `--enable-per-request-metrics`,
    /// in the final usage chunk) is kept verbatim on both OpenAI APIs; anything but an object
    /// is ignored.
    #[test]
    fn vllm_per_request_metrics_are_read() {
        let m = r#"{"time_to_first_token_ms":96.5,"queue_time_ms":30.25,"generation_time_ms":400,"mean_itl_ms":10.1,"tokens_per_second":99}"#;
        for api in [&OpenAiCompletions as &dyn Api, &OpenAiChat] {
            let Answer::Streamed(api) = api.answer() else {
                panic!("both stream")
            };
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

    /// A delta carrying several tool calls at once gives every one of them: the
    /// first in the event's own fields, the others in `more_tool_calls`, each its index,
    /// name and arguments.
    #[test]
    fn every_tool_call_of_a_delta_is_read() {
        let data = r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"index":1,"id":"b","type":"function","function":{"name":"g","arguments":"{\"x\":1}"}}]}}]}"#;
        let p = parse_openai(data).unwrap();
        assert_eq!(
            (p.tool_index, p.tool_name.as_deref(), p.tool_args.as_ref()),
            (0, Some("f"), "{}")
        );
        let more = ToolPiece {
            index: 1,
            name: Some("g".into()),
            args: r#"{"x":1}"#.into(),
        };
        assert_eq!(p.more_tool_calls, vec![more]);
    }

    /// The completions API takes a prompt: media parts are refused by name, never dropped.
    #[test]
    fn the_completions_api_refuses_media_parts() {
        let parts = [crate::measure::client::api::Part::Image {
            url: "https://x/y.png".into(),
        }];
        let spec = BodySpec {
            model: "m",
            prompt: "p",
            batch: &[],
            messages: None,
            parts: &parts,
            max_tokens: 2,
            ignore_eos: false,
        };
        let (kind, why) = OpenAiCompletions.body(&spec).unwrap_err();
        assert_eq!(kind, FailureKind::Prompt);
        assert!(why.contains("an image"), "{why}");
    }
}
