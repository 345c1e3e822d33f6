//! OpenAI / vLLM: `POST /v1/completions` and `POST /v1/chat/completions`, streamed (SSE with
//! `data: [DONE]`, usage when `stream_options.include_usage`) and whole.
//!
//! # What it owns
//! The two request structs, their framers (`CompletionsFramer`, `ChatFramer`: the chat role
//! chunk at `t0`, `reasoning_content` for the `sim_reasoning_tokens` extension; a streamed
//! chat answer of a schema's JSON, of a tool call or of a regex's or choice's guided text,
//! `StructuredFramer`, issue 25 §5; a streamed completion of a schema's JSON or of guided text
//! as its `text`) and the whole JSON answers, byte for byte as vLLM writes them (a whole answer is text even when
//! structured output is asked).
//!
//! # What it must not touch
//! Timing, faults and statistics (`stream/`, `common.rs`); other APIs' formats.
//!
//! # Adding one more
//! A new OpenAI field read from the request goes in its struct (optional, lenient); a new
//! field written goes in the pre-formatted `head`/tail pieces, never a JSON tree per chunk.

use axum::body::Bytes;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{json, Value};

use super::common::{
    adapter, off_thread, parse_body, parse_large, reasoning_tokens, resolve_media_prompt,
    resolve_prompt, stream_answer, token_budget, wait_for_adapter, whole_answer, Answer, AppState,
    ChatMessage, Finish, Gen, Reject,
};
use super::media::media_tokens;
use crate::sim::http1::Arrival;
use crate::sim::state::Shared;
use crate::sim::stream::{Framer, ServerTimes};
use crate::sim::structured::{self, Asked, Guided, Pieces};
use crate::sim::text::TokenGen;

#[derive(Deserialize, Default)]
struct StreamOptions {
    include_usage: Option<bool>,
}

fn wants_usage(shared: &Shared, options: &Option<StreamOptions>) -> bool {
    shared.config.usage
        && options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false)
}

/// Writes the usage event (`head` ends with the usage object), with a `metrics` object in the
/// shape of vLLM's per-request metrics: the simulator's own time to first token (from its
/// receipt of the request: front end, queueing and prefill) and its queueing in the engine
/// (exact mode: its wait for a LoRA adapter's load, else none), in simulated ms.
fn usage_event(out: &mut Vec<u8>, head: &str, times: &ServerTimes) {
    out.extend_from_slice(head.as_bytes());
    if let Some(queue) = times.queue {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        let metrics = format!(
            r#","metrics":{{"time_to_first_token_ms":{},"queue_time_ms":{}}}"#,
            ms(times.front + queue + times.prompt),
            ms(queue)
        );
        out.extend_from_slice(metrics.as_bytes());
    }
    out.extend_from_slice(b"}\n\n");
}

fn usage_json(prompt: u64, cached: u64, completion: u32) -> String {
    let completion = u64::from(completion);
    format!(
        r#"{{"prompt_tokens":{prompt},"completion_tokens":{completion},"total_tokens":{},"prompt_tokens_details":{{"cached_tokens":{cached}}}}}"#,
        prompt + completion
    )
}

/// The chat API's usage: [`usage_json`] with the reasoning part of the output
/// (`completion_tokens_details.reasoning_tokens`, as OpenAI reports it).
fn chat_usage_json(prompt: u64, cached: u64, completion: u32, reasoning: u32) -> String {
    let mut u = usage_json(prompt, cached, completion);
    u.pop();
    u.push_str(&format!(
        r#","completion_tokens_details":{{"reasoning_tokens":{reasoning}}}}}"#
    ));
    u
}

#[derive(Deserialize)]
struct CompletionRequest {
    prompt: Option<Value>,
    max_tokens: Option<u64>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    ignore_eos: Option<bool>,
    /// vLLM's request priority (lower is served first).
    priority: Option<i64>,
    /// Structured output on completions, as vLLM takes it there (issue 25 §5): a schema's
    /// JSON (`response_format`), or guided decoding (`structured_outputs`, `guided_regex`,
    /// `guided_choice`), answered as the chat endpoint answers them.
    response_format: Option<Value>,
    structured_outputs: Option<Value>,
    guided_regex: Option<Value>,
    guided_choice: Option<Value>,
}

struct CompletionsFramer {
    /// Everything of a content event up to the text.
    head: String,
    gen: TokenGen,
    /// A structured answer's text (a schema's JSON, a regex's or choice's guided text), in
    /// place of `gen`'s words.
    pieces: Option<Pieces>,
    /// The usage event, when asked for.
    usage: Option<String>,
    /// The end of the last content event (carries the finish reason).
    last_tail: String,
}

impl Framer for CompletionsFramer {
    fn content(&mut self, out: &mut Vec<u8>, _chunk: u32, start: u32, end: u32, last: bool) {
        out.extend_from_slice(self.head.as_bytes());
        match &self.pieces {
            Some(p) => p.push(out, start, end),
            None => self.gen.push_text(out, start, end),
        }
        out.extend_from_slice(if last {
            self.last_tail.as_bytes()
        } else {
            &br#"","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}"#[..]
        });
        out.extend_from_slice(b"\n\n");
    }

    fn trailer(&mut self, out: &mut Vec<u8>, times: &ServerTimes) {
        if let Some(usage) = &self.usage {
            usage_event(out, usage, times);
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
    }
}

pub(crate) async fn completions(
    State(shared): AppState,
    Arrival(t0): Arrival,
    body: Bytes,
) -> Answer {
    let req: CompletionRequest = parse_large(&body).await?;
    let guided = structured::guided(
        req.structured_outputs.as_ref(),
        req.guided_regex.as_ref(),
        req.guided_choice.as_ref(),
    )
    .map_err(Reject::BadRequest)?;
    let lora = adapter(&shared, &body)?;
    let budget = token_budget(&shared, "max_tokens", req.max_tokens)?;
    let ignore_eos = req.ignore_eos.unwrap_or(false);
    let mut r = resolve_prompt(&shared, t0, req.prompt.as_ref(), budget, ignore_eos)?;
    wait_for_adapter(&shared, &mut r, lora.as_deref());
    r.priority = req.priority.unwrap_or(0);
    let stream = req.stream.unwrap_or(false);
    let guided = guided_text(&shared, &mut r, guided.filter(|_| stream))?;
    let prompt_tokens = r.prompt_tokens;
    let tokens = r.tokens;
    let gen = TokenGen::new(shared.config.seed, r.n);
    let id = format!("cmpl-{}", r.n);
    let model = shared.model_json.as_str();
    let created = r.created;
    let finish = r.finish.openai();

    if stream {
        let pieces = match (guided, req.response_format.as_ref()) {
            (Some(text), _) => Some(Pieces::from_text(&text, tokens)),
            (None, format) => match structured::asked(format, None, r.n) {
                Some(Asked::Json(schema)) => {
                    let bad = invalid_share(&shared, r.n);
                    Some(Pieces::new(&schema, shared.config.seed, r.n, bad, tokens))
                }
                _ => None,
            },
        };
        let usage = wants_usage(&shared, &req.stream_options).then(|| {
            format!(
                "data: {{\"id\":\"{id}\",\"object\":\"text_completion\",\"created\":{created},\"model\":{model},\"choices\":[],\"usage\":{}",
                usage_json(prompt_tokens, r.cached, tokens)
            )
        });
        let head = format!(
            "data: {{\"id\":\"{id}\",\"object\":\"text_completion\",\"created\":{created},\"model\":{model},\"choices\":[{{\"index\":0,\"text\":\""
        );
        let last_tail = format!(
            r#"","logprobs":null,"finish_reason":"{finish}","stop_reason":null}}],"usage":null}}"#
        );
        let framer = CompletionsFramer {
            head,
            gen,
            pieces,
            usage,
            last_tail,
        };
        return stream_answer(shared, &r, framer).await;
    }

    let usage = shared
        .config
        .usage
        .then(|| usage_value(prompt_tokens, r.cached, tokens));
    let model = shared.config.model.clone();
    whole_answer(shared.clone(), &r, move |_| {
        json!({
            "id": id,
            "object": "text_completion",
            "created": created,
            "model": model,
            "choices": [{
                "index": 0,
                "text": gen.text(0, tokens),
                "logprobs": null,
                "finish_reason": finish,
                "stop_reason": null,
            }],
            "usage": usage,
        })
        .to_string()
    })
    .await
}

/// Whether request `n` is one of the exact share answered invalid (`sim/structured.rs`).
fn invalid_share(shared: &Shared, n: u64) -> Option<u64> {
    structured::invalid(n, structured::ppm(shared.config.invalid_output_rate))
}

/// The text of a guided answer (streamed only; `sim/structured.rs`), which ends the answer:
/// fewer tokens than the budget stop there.
fn guided_text(
    shared: &Shared,
    r: &mut Gen,
    guided: Option<Guided>,
) -> Result<Option<String>, Reject> {
    let Some(g) = guided else {
        return Ok(None);
    };
    let bad = invalid_share(shared, r.n);
    let text =
        structured::guided_answer(&g, shared.config.seed, r.n, bad).map_err(Reject::BadRequest)?;
    let chars = u32::try_from(text.chars().count().max(1)).unwrap_or(u32::MAX);
    if chars < r.tokens {
        r.tokens = chars;
        r.finish = Finish::Stop;
    }
    Ok(Some(text))
}

fn usage_value(prompt: u64, cached: u64, completion: u32) -> Value {
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + u64::from(completion),
        "prompt_tokens_details": {"cached_tokens": cached},
    })
}

#[derive(Deserialize)]
struct ChatRequest {
    messages: Option<Vec<ChatMessage>>,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    /// Extension: the first R tokens are reasoning (`delta.reasoning_content`).
    sim_reasoning_tokens: Option<u64>,
    ignore_eos: Option<bool>,
    /// vLLM's request priority (lower is served first).
    priority: Option<i64>,
    /// Structured output (`sim/structured.rs`): a schema's JSON, or a tool call.
    response_format: Option<Value>,
    tools: Option<Value>,
    /// vLLM's guided decoding (`sim/structured.rs`): `structured_outputs` (`regex`,
    /// `choice`), or the older `guided_regex`, `guided_choice`.
    structured_outputs: Option<Value>,
    guided_regex: Option<Value>,
    guided_choice: Option<Value>,
}

struct ChatFramer {
    /// Everything of an event up to the delta object.
    head: String,
    gen: TokenGen,
    reasoning: u32,
    usage: Option<String>,
    finish: &'static str,
}

const CHAT_TAIL: &[u8] = br#","logprobs":null,"finish_reason":null}]}"#;

/// The chat role chunk, handed over at `t0`.
fn role_chunk(head: &str) -> Bytes {
    let mut out = Vec::with_capacity(head.len() + 96);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(br#"{"role":"assistant","content":""}"#);
    out.extend_from_slice(CHAT_TAIL);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The finish chunk, the usage event when asked, and `[DONE]`.
fn chat_trailer(
    out: &mut Vec<u8>,
    head: &str,
    finish: &str,
    usage: Option<&str>,
    times: &ServerTimes,
) {
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(br#"{},"logprobs":null,"finish_reason":""#);
    out.extend_from_slice(finish.as_bytes());
    out.extend_from_slice(br#""}]}"#);
    out.extend_from_slice(b"\n\n");
    if let Some(usage) = usage {
        usage_event(out, usage, times);
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
}

impl Framer for ChatFramer {
    fn preamble(&mut self) -> Option<Bytes> {
        Some(role_chunk(&self.head))
    }

    fn content(&mut self, out: &mut Vec<u8>, _chunk: u32, start: u32, end: u32, _last: bool) {
        out.extend_from_slice(self.head.as_bytes());
        out.push(b'{');
        let split = self.reasoning.clamp(start, end);
        if split > start {
            out.extend_from_slice(br#""reasoning_content":""#);
            self.gen.push_text(out, start, split);
            out.push(b'"');
        }
        if end > split {
            if split > start {
                out.push(b',');
            }
            out.extend_from_slice(br#""content":""#);
            self.gen.push_text(out, split, end);
            out.push(b'"');
        }
        out.push(b'}');
        out.extend_from_slice(CHAT_TAIL);
        out.extend_from_slice(b"\n\n");
    }

    fn trailer(&mut self, out: &mut Vec<u8>, times: &ServerTimes) {
        chat_trailer(out, &self.head, self.finish, self.usage.as_deref(), times);
    }
}

/// A chat answer of a schema's JSON or of tool calls (`sim/structured.rs`): each token's
/// piece of the document as `content`, or as a call's `arguments` (its first event opens
/// the call: `id`, `type` and the function's name, as vLLM streams it).
struct StructuredFramer {
    head: String,
    answer: StructuredAnswer,
    usage: Option<String>,
    finish: &'static str,
}

enum StructuredAnswer {
    /// A document or guided text as `content`.
    Text(Pieces),
    /// Tool calls, one after another, each over its share of the tokens.
    Calls(Vec<Call>),
}

/// One tool call of a chat answer.
struct Call {
    /// Its first token and the one after its last, of the answer's.
    first: u32,
    end: u32,
    /// Its opening (`"id":...,"type":"function",`) and its function's name as JSON, written
    /// by its first event.
    open: String,
    name: String,
    pieces: Pieces,
}

/// The `calls` tool calls of request `n`'s answer of `tokens` tokens
/// (`structured::tool_call_answer`), each with its opening.
fn tool_call_answer(
    tools: Option<&Value>,
    n: u64,
    calls: u32,
    seed: u64,
    bad: Option<u64>,
    tokens: u32,
) -> Vec<Call> {
    let made = structured::tool_call_answer(tools, n, calls, seed, bad, tokens);
    (made.into_iter().enumerate())
        .map(|(j, c)| {
            let id = match j {
                0 => format!("call_{n}"),
                _ => format!("call_{n}_{j}"),
            };
            Call {
                first: c.first,
                end: c.end,
                open: format!(r#""id":"{id}","type":"function","#),
                name: c.name_json,
                pieces: c.pieces,
            }
        })
        .collect()
}

impl Framer for StructuredFramer {
    fn preamble(&mut self) -> Option<Bytes> {
        Some(role_chunk(&self.head))
    }

    fn content(&mut self, out: &mut Vec<u8>, _chunk: u32, start: u32, end: u32, _last: bool) {
        let calls = match &self.answer {
            StructuredAnswer::Text(pieces) => {
                out.extend_from_slice(self.head.as_bytes());
                out.extend_from_slice(br#"{"content":""#);
                pieces.push(out, start, end);
                out.extend_from_slice(br#""}"#);
                out.extend_from_slice(CHAT_TAIL);
                out.extend_from_slice(b"\n\n");
                return;
            }
            StructuredAnswer::Calls(calls) => calls,
        };
        // An event per call the chunk's tokens reach, as vLLM streams one call per delta.
        for (j, c) in calls.iter().enumerate() {
            let (s, e) = (start.max(c.first), end.min(c.end));
            if s >= e {
                continue;
            }
            out.extend_from_slice(self.head.as_bytes());
            out.extend_from_slice(format!(r#"{{"tool_calls":[{{"index":{j},"#).as_bytes());
            if s == c.first {
                out.extend_from_slice(c.open.as_bytes());
            }
            out.extend_from_slice(br#""function":{"#);
            if s == c.first {
                out.extend_from_slice(br#""name":"#);
                out.extend_from_slice(c.name.as_bytes());
                out.push(b',');
            }
            out.extend_from_slice(br#""arguments":""#);
            c.pieces.push(out, s - c.first, e - c.first);
            out.extend_from_slice(br#""}}]}"#);
            out.extend_from_slice(CHAT_TAIL);
            out.extend_from_slice(b"\n\n");
        }
    }

    fn trailer(&mut self, out: &mut Vec<u8>, times: &ServerTimes) {
        chat_trailer(out, &self.head, self.finish, self.usage.as_deref(), times);
    }
}

pub(crate) async fn chat_completions(
    State(shared): AppState,
    Arrival(t0): Arrival,
    body: Bytes,
) -> Answer {
    // Images: their tokens under the patch rule, a malformed one refused (issue 25 §3).
    let (req, media) = off_thread(&body, |body| {
        let req: ChatRequest = parse_body(body)?;
        let contents = (req.messages.iter().flatten()).filter_map(|m| m.content.as_ref());
        let media = media_tokens(contents).map_err(Reject::BadRequest)?;
        Ok((req, media))
    })
    .await?;
    let guided = structured::guided(
        req.structured_outputs.as_ref(),
        req.guided_regex.as_ref(),
        req.guided_choice.as_ref(),
    )
    .map_err(Reject::BadRequest)?;
    let lora = adapter(&shared, &body)?;
    let (field, requested) = match req.max_completion_tokens {
        Some(n) => ("max_completion_tokens", Some(n)),
        None => ("max_tokens", req.max_tokens),
    };
    let budget = token_budget(&shared, field, requested)?;
    let contents = (req.messages.iter().flatten()).filter_map(|m| m.content.as_ref());
    let ignore_eos = req.ignore_eos.unwrap_or(false);
    let mut r = resolve_media_prompt(&shared, t0, contents, media, budget, ignore_eos)?;
    wait_for_adapter(&shared, &mut r, lora.as_deref());
    r.priority = req.priority.unwrap_or(0);
    let guided = guided_text(
        &shared,
        &mut r,
        guided.filter(|_| req.stream.unwrap_or(false)),
    )?;
    let prompt_tokens = r.prompt_tokens;
    let tokens = r.tokens;
    let reasoning = reasoning_tokens(&shared, req.sim_reasoning_tokens, tokens);
    let gen = TokenGen::new(shared.config.seed, r.n);
    let id = format!("chatcmpl-{}", r.n);
    let model = shared.model_json.as_str();
    let created = r.created;
    let finish = r.finish.openai();

    if req.stream.unwrap_or(false) {
        let usage = wants_usage(&shared, &req.stream_options).then(|| {
            format!(
                "data: {{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"created\":{created},\"model\":{model},\"choices\":[],\"usage\":{}",
                chat_usage_json(prompt_tokens, r.cached, tokens, reasoning)
            )
        });
        let head = format!(
            "data: {{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"created\":{created},\"model\":{model},\"choices\":[{{\"index\":0,\"delta\":"
        );
        if let Some(text) = guided {
            let framer = StructuredFramer {
                head,
                answer: StructuredAnswer::Text(Pieces::from_text(&text, tokens)),
                usage,
                finish,
            };
            return stream_answer(shared, &r, framer).await;
        }
        let asked = structured::asked(req.response_format.as_ref(), req.tools.as_ref(), r.n);
        if let Some(asked) = asked {
            let seed = shared.config.seed;
            let bad = invalid_share(&shared, r.n);
            let (answer, finish) = match asked {
                Asked::Json(schema) => (
                    StructuredAnswer::Text(Pieces::new(&schema, seed, r.n, bad, tokens)),
                    finish,
                ),
                Asked::Tool => {
                    let calls = shared.config.tool_calls_per_answer;
                    let made = tool_call_answer(req.tools.as_ref(), r.n, calls, seed, bad, tokens);
                    (StructuredAnswer::Calls(made), "tool_calls")
                }
            };
            let framer = StructuredFramer {
                head,
                answer,
                usage,
                finish,
            };
            return stream_answer(shared, &r, framer).await;
        }
        let framer = ChatFramer {
            head,
            gen,
            reasoning,
            usage,
            finish,
        };
        return stream_answer(shared, &r, framer).await;
    }

    let usage = shared.config.usage.then(|| {
        let mut u = usage_value(prompt_tokens, r.cached, tokens);
        u["completion_tokens_details"] = json!({"reasoning_tokens": reasoning});
        u
    });
    let model = shared.config.model.clone();
    whole_answer(shared.clone(), &r, move |_| {
        let reasoning_content = (reasoning > 0).then(|| gen.text(0, reasoning));
        json!({
            "id": id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": gen.text(reasoning, tokens),
                    "reasoning_content": reasoning_content,
                },
                "logprobs": null,
                "finish_reason": finish,
            }],
            "usage": usage,
        })
        .to_string()
    })
    .await
}
