//! OpenAI / vLLM chat completions: `POST /v1/chat/completions`, streamed (SSE with
//! `data: [DONE]`, usage when `stream_options.include_usage`) and whole.
//!
//! # What it owns
//! The request struct, its framers (`ChatFramer`: the role chunk at `t0`,
//! `reasoning_content` for the `sim_reasoning_tokens` extension; `StructuredFramer`: a
//! streamed answer of a schema's JSON, of tool calls or of a regex's or choice's guided text)
//! and the whole JSON answer, byte for byte as vLLM writes them (a whole answer is text even
//! when structured output is asked). A request's images, video and audio are counted by
//! `media.rs`. What it shares with completions (usage, `stream_options`, guided text) is
//! `openai.rs`.
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

use std::sync::Arc;

use tokio::time::Instant;

use super::common::{
    adapter, reasoning_tokens, resolve_media_prompt, stream_answer, token_budget, wait_for_adapter,
    whole_answer, AppState, ChatMessage, Gen,
};
use super::media::media_tokens;
use super::openai::{
    guided_text, invalid_share, usage_event, usage_json, usage_value, wants_usage, StreamOptions,
};
use super::reject::{off_thread, parse_body, Answer, Reject};
use crate::sim::http1::Arrival;
use crate::sim::state::Shared;
use crate::sim::stream::{Framer, ServerTimes};
use crate::sim::structured::{self, Asked, Pieces};
use crate::sim::text::TokenGen;

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
    let (req, r, guided) = read(&shared, t0, &body).await?;
    let reasoning = reasoning_tokens(&shared, req.sim_reasoning_tokens, r.tokens);
    if req.stream.unwrap_or(false) {
        return stream(shared, &req, &r, guided, reasoning).await;
    }
    let (prompt_tokens, tokens) = (r.prompt_tokens, r.tokens);
    let gen = TokenGen::new(shared.config.seed, r.n);
    let id = format!("chatcmpl-{}", r.n);
    let created = r.created;
    let finish = r.finish.openai();
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

/// Reads and resolves a chat request: its body (with its media's tokens under the patch rule,
/// a malformed part refused, `media.rs`), its guided decoding and adapter checked, its token
/// budget, its number and fault ([`resolve_media_prompt`]) and, when streamed, its guided
/// answer's text.
async fn read(
    shared: &Arc<Shared>,
    t0: Instant,
    body: &Bytes,
) -> Result<(ChatRequest, Gen, Option<String>), Reject> {
    let (req, media) = off_thread(body, |body| {
        let req: ChatRequest = parse_body(body)?;
        let contents = (req.messages.iter().flatten()).filter_map(|m| m.content.as_ref());
        let media = media_tokens(contents)?;
        Ok((req, media))
    })
    .await?;
    let guided = structured::guided(
        req.structured_outputs.as_ref(),
        req.guided_regex.as_ref(),
        req.guided_choice.as_ref(),
    )?;
    let lora = adapter(shared, body)?;
    let (field, requested) = match req.max_completion_tokens {
        Some(n) => ("max_completion_tokens", Some(n)),
        None => ("max_tokens", req.max_tokens),
    };
    let budget = token_budget(shared, field, requested)?;
    let contents = (req.messages.iter().flatten()).filter_map(|m| m.content.as_ref());
    let ignore_eos = req.ignore_eos.unwrap_or(false);
    let mut r = resolve_media_prompt(shared, t0, contents, media, budget, ignore_eos)?;
    wait_for_adapter(shared, &mut r, lora.as_deref());
    r.priority = req.priority.unwrap_or(0);
    let guided = guided_text(
        shared,
        &mut r,
        guided.filter(|_| req.stream.unwrap_or(false)),
    )?;
    Ok((req, r, guided))
}

/// The streamed answer: guided text, a schema's JSON or tool calls when asked
/// (`StructuredFramer`), else the words with their reasoning part (`ChatFramer`).
async fn stream(
    shared: Arc<Shared>,
    req: &ChatRequest,
    r: &Gen,
    guided: Option<String>,
    reasoning: u32,
) -> Answer {
    let (prompt_tokens, tokens) = (r.prompt_tokens, r.tokens);
    let id = format!("chatcmpl-{}", r.n);
    let model = shared.model_json.as_str();
    let created = r.created;
    let finish = r.finish.openai();
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
        return stream_answer(shared, r, framer).await;
    }
    let asked = structured::asked(req.response_format.as_ref(), req.tools.as_ref(), r.n);
    if let Some(asked) = asked {
        let seed = shared.config.seed;
        let bad = invalid_share(&shared, r.n);
        let (answer, finish) = match asked {
            Asked::Json(schema) => match shared.config.hostile_answer_bytes {
                0 => (
                    StructuredAnswer::Text(Pieces::new(&schema, seed, r.n, bad, tokens)),
                    finish,
                ),
                bytes => {
                    let pieces = structured::hostile_json(&schema, seed, r.n, bytes, tokens);
                    (StructuredAnswer::Text(pieces), finish)
                }
            },
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
        return stream_answer(shared, r, framer).await;
    }
    let framer = ChatFramer {
        head,
        gen: TokenGen::new(shared.config.seed, r.n),
        reasoning,
        usage,
        finish,
    };
    stream_answer(shared, r, framer).await
}
