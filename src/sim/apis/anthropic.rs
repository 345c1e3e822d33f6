//! Anthropic Messages (`POST /v1/messages`), streamed with its typed SSE events (`event:`
//! lines, `events.rs`), and whole.
//!
//! # What it owns
//! The request struct and framers: `message_start` (input and cached tokens) and the first
//! `content_block_start` at `t0`; `thinking_delta` events in block 0 for the
//! `sim_reasoning_tokens` extension, then `text_delta` events in the text block;
//! `content_block_stop`, `message_delta` (stop reason, output tokens) and `message_stop`.
//! Structured output (`sim/structured.rs`, streamed only): `tools` are answered with a
//! `tool_use` block per call (`MessagesToolFramer`; one, or `--tool-calls-per-answer`).
//!
//! # What it must not touch
//! Timing, faults and statistics (`stream/`, `common.rs`); other APIs' formats.

use axum::body::Bytes;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{json, Value};

use super::common::{
    adapter, reasoning_tokens, resolve_prompt, stream_answer, token_budget, wait_for_adapter,
    whole_answer, AppState, ChatMessage, Finish,
};
use super::events::{event, text};
use super::reject::{parse_large, Answer};
use crate::sim::http1::Arrival;
use crate::sim::stream::{Framer, ServerTimes};
use crate::sim::structured::{self, Asked, ToolCall};
use crate::sim::text::TokenGen;

#[derive(Deserialize)]
struct MessagesRequest {
    messages: Option<Vec<ChatMessage>>,
    system: Option<Value>,
    max_tokens: Option<u64>,
    stream: Option<bool>,
    ignore_eos: Option<bool>,
    /// Extension: the first R tokens are thinking (`thinking_delta`).
    sim_reasoning_tokens: Option<u64>,
    /// Tools offered (`sim/structured.rs`): the answer is a call of one.
    tools: Option<Value>,
}

/// A tool call (`sim/structured.rs`): one `tool_use` block, named at `t0`, whose
/// `input_json_delta` events carry each token's piece of the arguments.
struct MessagesToolFramer {
    start: String,
    /// The request's number (the blocks' ids) and its calls, a `tool_use` block each
    /// (`servebench sim --tool-calls-per-answer`).
    n: u64,
    calls: Vec<ToolCall>,
    tokens: u32,
}

impl MessagesToolFramer {
    /// The `content_block_start` of call `j`'s `tool_use` block.
    fn block(&self, j: usize) -> String {
        let n = self.n;
        let id = match j {
            0 => format!("toolu_{n}"),
            _ => format!("toolu_{n}_{j}"),
        };
        let name_json = self
            .calls
            .get(j)
            .map_or("\"tool\"", |c| c.name_json.as_str());
        format!(
            r#"{{"type":"content_block_start","index":{j},"content_block":{{"type":"tool_use","id":"{id}","name":{name_json},"input":{{}}}}}}"#
        )
    }
}

impl Framer for MessagesToolFramer {
    fn preamble(&mut self) -> Option<Bytes> {
        let mut out = Vec::new();
        event(&mut out, "message_start", &self.start);
        event(&mut out, "content_block_start", &self.block(0));
        Some(Bytes::from(out))
    }

    fn content(&mut self, out: &mut Vec<u8>, _chunk: u32, start: u32, end: u32, _last: bool) {
        for (j, c) in self.calls.iter().enumerate() {
            let (s, e) = (start.max(c.first), end.min(c.end));
            if s >= e {
                continue;
            }
            if j > 0 && s == c.first {
                // The previous call's block ends where this one's starts.
                MessagesFramer::block_stop(out, j as u32 - 1);
                event(out, "content_block_start", &self.block(j));
            }
            let data = format!(
                r#"{{"type":"content_block_delta","index":{j},"delta":{{"type":"input_json_delta","partial_json":"{}"}}}}"#,
                c.pieces.text(s - c.first, e - c.first)
            );
            event(out, "content_block_delta", &data);
        }
    }

    fn trailer(&mut self, out: &mut Vec<u8>, _times: &ServerTimes) {
        let last = self.calls.len().saturating_sub(1) as u32;
        MessagesFramer::block_stop(out, last);
        let data = format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"tool_use","stop_sequence":null}},"usage":{{"output_tokens":{}}}}}"#,
            self.tokens
        );
        event(out, "message_delta", &data);
        event(out, "message_stop", r#"{"type":"message_stop"}"#);
    }
}

struct MessagesFramer {
    gen: TokenGen,
    reasoning: u32,
    tokens: u32,
    stop_reason: &'static str,
    start: String,
}

impl MessagesFramer {
    fn block_start(out: &mut Vec<u8>, index: u32, kind: &str) {
        let field = if kind == "thinking" {
            "thinking"
        } else {
            "text"
        };
        let data = format!(
            r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"{kind}","{field}":""}}}}"#
        );
        event(out, "content_block_start", &data);
    }

    fn block_stop(out: &mut Vec<u8>, index: u32) {
        let data = format!(r#"{{"type":"content_block_stop","index":{index}}}"#);
        event(out, "content_block_stop", &data);
    }

    fn delta(&self, out: &mut Vec<u8>, index: u32, kind: &str, start: u32, end: u32) {
        let field = if kind == "thinking_delta" {
            "thinking"
        } else {
            "text"
        };
        let data = format!(
            r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"{kind}","{field}":"{}"}}}}"#,
            text(&self.gen, start, end)
        );
        event(out, "content_block_delta", &data);
    }
}

impl Framer for MessagesFramer {
    fn preamble(&mut self) -> Option<Bytes> {
        let mut out = Vec::new();
        event(&mut out, "message_start", &self.start);
        let first = if self.reasoning > 0 {
            "thinking"
        } else {
            "text"
        };
        Self::block_start(&mut out, 0, first);
        Some(Bytes::from(out))
    }

    fn content(&mut self, out: &mut Vec<u8>, _chunk: u32, start: u32, end: u32, _last: bool) {
        let split = self.reasoning.clamp(start, end);
        if split > start {
            self.delta(out, 0, "thinking_delta", start, split);
        }
        if end > split {
            if self.reasoning > 0 && split == self.reasoning && start <= self.reasoning {
                // The thinking block ends where the text begins.
                Self::block_stop(out, 0);
                Self::block_start(out, 1, "text");
            }
            let index = u32::from(self.reasoning > 0);
            self.delta(out, index, "text_delta", split, end);
        }
    }

    fn trailer(&mut self, out: &mut Vec<u8>, _times: &ServerTimes) {
        let last = u32::from(self.reasoning > 0 && self.tokens > self.reasoning);
        Self::block_stop(out, last);
        let data = format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"{}","stop_sequence":null}},"usage":{{"output_tokens":{}}}}}"#,
            self.stop_reason, self.tokens
        );
        event(out, "message_delta", &data);
        event(out, "message_stop", r#"{"type":"message_stop"}"#);
    }
}

fn anthropic_stop(f: Finish) -> &'static str {
    match f {
        Finish::Length => "max_tokens",
        Finish::Stop => "end_turn",
    }
}

pub(crate) async fn messages(State(shared): AppState, Arrival(t0): Arrival, body: Bytes) -> Answer {
    let req: MessagesRequest = parse_large(&body).await?;
    let lora = adapter(&shared, &body)?;
    let budget = token_budget(&shared, "max_tokens", req.max_tokens)?;
    let contents: Vec<&Value> = (req.system.iter())
        .chain(
            req.messages
                .iter()
                .flatten()
                .filter_map(|m| m.content.as_ref()),
        )
        .collect();
    let ignore_eos = req.ignore_eos.unwrap_or(false);
    let mut r = resolve_prompt(&shared, t0, contents, budget, ignore_eos)?;
    wait_for_adapter(&shared, &mut r, lora.as_deref());
    let (prompt_tokens, tokens, cached) = (r.prompt_tokens, r.tokens, r.cached);
    let reasoning = reasoning_tokens(&shared, req.sim_reasoning_tokens, tokens);
    let gen = TokenGen::new(shared.config.seed, r.n);
    let id = format!("msg_{}", r.n);
    let model = shared.model_json.clone();
    let stop_reason = anthropic_stop(r.finish);
    if req.stream.unwrap_or(false) {
        let start = format!(
            r#"{{"type":"message_start","message":{{"id":"{id}","type":"message","role":"assistant","model":{model},"content":[],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":{prompt_tokens},"cache_read_input_tokens":{cached},"output_tokens":1}}}}}}"#
        );
        if let Some(Asked::Tool) = structured::asked(None, req.tools.as_ref(), r.n) {
            let bad = structured::invalid(r.n, structured::ppm(shared.config.invalid_output_rate));
            let (n, calls) = (r.n, shared.config.tool_calls_per_answer);
            let framer = MessagesToolFramer {
                start,
                n,
                calls: (structured::tool_call_answer(
                    req.tools.as_ref(),
                    n,
                    calls,
                    shared.config.seed,
                    bad,
                    tokens,
                )),
                tokens,
            };
            return stream_answer(shared, &r, framer).await;
        }
        let framer = MessagesFramer {
            gen,
            reasoning,
            tokens,
            stop_reason,
            start,
        };
        return stream_answer(shared, &r, framer).await;
    }
    whole_answer(shared.clone(), &r, move |_| {
        let mut content = Vec::new();
        if reasoning > 0 {
            content.push(json!({"type": "thinking", "thinking": gen.text(0, reasoning)}));
        }
        content.push(json!({"type": "text", "text": gen.text(reasoning, tokens)}));
        json!({
            "id": id, "type": "message", "role": "assistant", "model": shared.config.model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": null,
            "usage": {"input_tokens": prompt_tokens, "cache_read_input_tokens": cached, "output_tokens": tokens},
        })
        .to_string()
    })
    .await
}
