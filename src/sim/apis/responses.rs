//! OpenAI Responses (`POST /v1/responses`), streamed with its typed SSE events (`event:`
//! lines, `events.rs`), and whole.
//!
//! # What it owns
//! The request struct and framers: `response.created` at `t0`;
//! `response.reasoning_text.delta` then `response.output_text.delta` events, numbered by
//! `sequence_number`; `response.completed` with the usage. Structured output
//! (`sim/structured.rs`, streamed only): `text.format`'s schema is answered in the
//! `output_text` deltas, and `tools` with a `function_call` item per call (one, or
//! `--tool-calls-per-answer`; `ResponsesToolFramer`): its `response.output_item.added`,
//! `response.function_call_arguments.delta` events, `...arguments.done` and
//! `response.output_item.done`.
//!
//! # What it must not touch
//! Timing, faults and statistics (`stream/`, `common.rs`); other APIs' formats.

use axum::body::Bytes;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{json, Value};

use super::common::{
    adapter, reasoning_tokens, resolve_prompt, stream_answer, token_budget, wait_for_adapter,
    whole_answer, AppState, Finish,
};
use super::events::{event, text};
use super::reject::{parse_large, Answer};
use crate::sim::http1::Arrival;
use crate::sim::stream::{Framer, ServerTimes};
use crate::sim::structured::{self, Asked, Pieces, ToolCall};
use crate::sim::text::TokenGen;

#[derive(Deserialize)]
struct ResponsesRequest {
    input: Option<Value>,
    instructions: Option<Value>,
    max_output_tokens: Option<u64>,
    stream: Option<bool>,
    ignore_eos: Option<bool>,
    /// Extension: the first R tokens are reasoning (`response.reasoning_text.delta`).
    sim_reasoning_tokens: Option<u64>,
    /// Structured output (`sim/structured.rs`): `text.format` and the tools offered.
    text: Option<Value>,
    tools: Option<Value>,
}

struct ResponsesFramer {
    gen: TokenGen,
    reasoning: u32,
    /// The next event's `sequence_number`.
    seq: u64,
    created: String,
    completed: String,
    /// Structured output (`text.format`): the answer's pieces.
    pieces: Option<Pieces>,
}

impl ResponsesFramer {
    fn delta(&mut self, out: &mut Vec<u8>, kind: &str, text: &str) {
        let data = format!(
            r#"{{"type":"{kind}","sequence_number":{},"item_id":"item_0","output_index":0,"content_index":0,"delta":"{text}"}}"#,
            self.seq,
        );
        self.seq += 1;
        event(out, kind, &data);
    }
}

impl Framer for ResponsesFramer {
    fn preamble(&mut self) -> Option<Bytes> {
        let mut out = Vec::new();
        event(&mut out, "response.created", &self.created);
        Some(Bytes::from(out))
    }

    fn content(&mut self, out: &mut Vec<u8>, _chunk: u32, start: u32, end: u32, _last: bool) {
        if let Some(p) = &self.pieces {
            let piece = p.text(start, end);
            return self.delta(out, "response.output_text.delta", &piece);
        }
        let split = self.reasoning.clamp(start, end);
        if split > start {
            let t = text(&self.gen, start, split);
            self.delta(out, "response.reasoning_text.delta", &t);
        }
        if end > split {
            let t = text(&self.gen, split, end);
            self.delta(out, "response.output_text.delta", &t);
        }
    }

    fn trailer(&mut self, out: &mut Vec<u8>, _times: &ServerTimes) {
        let data = self.completed.replace("{SEQ}", &self.seq.to_string());
        event(out, "response.completed", &data);
    }
}

/// Tool calls on the Responses API (`sim/structured.rs`): a `function_call` output item per
/// call (one, or `--tool-calls-per-answer`), each opened by `response.output_item.added`, its
/// arguments in `response.function_call_arguments.delta` events and closed by
/// `response.function_call_arguments.done` and `response.output_item.done`; `output_index`
/// and `item_id` tell the calls apart.
struct ResponsesToolFramer {
    created: String,
    completed: String,
    /// The request's number (the calls' ids) and its calls.
    n: u64,
    calls: Vec<ToolCall>,
    /// The next event's `sequence_number`.
    seq: u64,
}

impl ResponsesToolFramer {
    /// Appends one event whose JSON starts with `head` (after `type`, `sequence_number`).
    fn push(&mut self, out: &mut Vec<u8>, kind: &str, head: &str) {
        let data = format!(
            r#"{{"type":"{kind}","sequence_number":{},{head}}}"#,
            self.seq
        );
        self.seq += 1;
        event(out, kind, &data);
    }

    /// Call `j`'s `function_call` item as JSON, `arguments` its text so far and `status`.
    fn item(&self, j: usize, arguments: &str, status: &str) -> String {
        let n = self.n;
        let call_id = match j {
            0 => format!("call_{n}"),
            _ => format!("call_{n}_{j}"),
        };
        let name_json = (self.calls.get(j)).map_or("\"tool\"", |c| c.name_json.as_str());
        format!(
            r#"{{"type":"function_call","id":"item_{j}","call_id":"{call_id}","name":{name_json},"arguments":"{arguments}","status":"{status}"}}"#
        )
    }

    fn open(&mut self, out: &mut Vec<u8>, j: usize) {
        let head = format!(
            r#""output_index":{j},"item":{}"#,
            self.item(j, "", "in_progress")
        );
        self.push(out, "response.output_item.added", &head);
    }

    fn close(&mut self, out: &mut Vec<u8>, j: usize) {
        let Some(c) = self.calls.get(j) else {
            return;
        };
        let args = c.pieces.text(0, c.end - c.first);
        let head = format!(r#""item_id":"item_{j}","output_index":{j},"arguments":"{args}""#);
        self.push(out, "response.function_call_arguments.done", &head);
        let head = format!(
            r#""output_index":{j},"item":{}"#,
            self.item(j, &args, "completed")
        );
        self.push(out, "response.output_item.done", &head);
    }
}

impl Framer for ResponsesToolFramer {
    fn preamble(&mut self) -> Option<Bytes> {
        let mut out = Vec::new();
        event(&mut out, "response.created", &self.created);
        self.open(&mut out, 0);
        Some(Bytes::from(out))
    }

    fn content(&mut self, out: &mut Vec<u8>, _chunk: u32, start: u32, end: u32, _last: bool) {
        for j in 0..self.calls.len() {
            let (first, stop) = (self.calls[j].first, self.calls[j].end);
            let (s, e) = (start.max(first), end.min(stop));
            if s >= e {
                continue;
            }
            if j > 0 && s == first {
                // The previous call's item ends where this one's starts.
                self.close(out, j - 1);
                self.open(out, j);
            }
            let piece = self.calls[j].pieces.text(s - first, e - first);
            let head = format!(r#""item_id":"item_{j}","output_index":{j},"delta":"{piece}""#);
            self.push(out, "response.function_call_arguments.delta", &head);
        }
    }

    fn trailer(&mut self, out: &mut Vec<u8>, _times: &ServerTimes) {
        self.close(out, self.calls.len().saturating_sub(1));
        let data = self.completed.replace("{SEQ}", &self.seq.to_string());
        event(out, "response.completed", &data);
    }
}

pub(crate) async fn responses(
    State(shared): AppState,
    Arrival(t0): Arrival,
    body: Bytes,
) -> Answer {
    let req: ResponsesRequest = parse_large(&body).await?;
    let lora = adapter(&shared, &body)?;
    let budget = token_budget(&shared, "max_output_tokens", req.max_output_tokens)?;
    // `input` is a string, or items whose `content` is the text.
    let contents: Vec<&Value> = match &req.input {
        Some(Value::Array(items)) => items.iter().filter_map(|i| i.get("content")).collect(),
        Some(v) => vec![v],
        None => Vec::new(),
    };
    let contents: Vec<&Value> = req.instructions.iter().chain(contents).collect();
    let ignore_eos = req.ignore_eos.unwrap_or(false);
    let mut r = resolve_prompt(&shared, t0, contents, budget, ignore_eos)?;
    wait_for_adapter(&shared, &mut r, lora.as_deref());
    let (prompt_tokens, tokens, cached) = (r.prompt_tokens, r.tokens, r.cached);
    let reasoning = reasoning_tokens(&shared, req.sim_reasoning_tokens, tokens);
    let gen = TokenGen::new(shared.config.seed, r.n);
    let id = format!("resp_{}", r.n);
    let model = shared.model_json.clone();
    let status = match r.finish {
        Finish::Length => "incomplete",
        Finish::Stop => "completed",
    };
    let usage = json!({
        "input_tokens": prompt_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": prompt_tokens + u64::from(tokens),
    });
    if req.stream.unwrap_or(false) {
        let created = format!(
            r#"{{"type":"response.created","sequence_number":0,"response":{{"id":"{id}","object":"response","status":"in_progress","model":{model},"output":[]}}}}"#
        );
        let completed = format!(
            r#"{{"type":"response.completed","sequence_number":{{SEQ}},"response":{{"id":"{id}","object":"response","status":"{status}","model":{model},"usage":{usage}}}}}"#
        );
        let format = req.text.as_ref().and_then(|t| t.get("format"));
        let mut pieces = None;
        if let Some(asked) = structured::asked(format, req.tools.as_ref(), r.n) {
            let bad = structured::invalid(r.n, structured::ppm(shared.config.invalid_output_rate));
            let (n, seed) = (r.n, shared.config.seed);
            match asked {
                Asked::Json(schema) => pieces = Some(Pieces::new(&schema, seed, n, bad, tokens)),
                Asked::Tool => {
                    let calls = shared.config.tool_calls_per_answer;
                    let framer = ResponsesToolFramer {
                        created,
                        completed,
                        n,
                        calls: (structured::tool_call_answer(
                            req.tools.as_ref(),
                            n,
                            calls,
                            seed,
                            bad,
                            tokens,
                        )),
                        seq: 1,
                    };
                    return stream_answer(shared, &r, framer).await;
                }
            }
        }
        let framer = ResponsesFramer {
            gen,
            reasoning,
            seq: 1,
            created,
            completed,
            pieces,
        };
        return stream_answer(shared, &r, framer).await;
    }
    whole_answer(shared.clone(), &r, move |_| {
        json!({
            "id": id, "object": "response", "status": status, "model": shared.config.model,
            "output": [{"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": gen.text(reasoning, tokens)}]}],
            "usage": usage,
        })
        .to_string()
    })
    .await
}
