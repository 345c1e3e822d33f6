//! OpenAI / vLLM completions: `POST /v1/completions`, streamed (SSE with `data: [DONE]`,
//! usage when `stream_options.include_usage`) and whole.
//!
//! # What it owns
//! The request struct, its framer (`CompletionsFramer`: a streamed completion of a schema's
//! JSON or of guided text carries it as its `text`) and the whole JSON answer, byte for byte
//! as vLLM writes them (a whole answer is text even when structured output is asked). What it
//! shares with chat (usage, `stream_options`, guided text) is `openai.rs`.
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
    adapter, resolve_prompt, stream_answer, token_budget, wait_for_adapter, whole_answer, AppState,
};
use super::openai::{
    guided_text, invalid_share, usage_event, usage_json, usage_value, wants_usage, StreamOptions,
};
use super::reject::{parse_large, Answer};
use crate::sim::http1::Arrival;
use crate::sim::stream::{Framer, ServerTimes};
use crate::sim::structured::{self, Asked, Pieces};
use crate::sim::text::TokenGen;

#[derive(Deserialize)]
struct CompletionRequest {
    prompt: Option<Value>,
    max_tokens: Option<u64>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    ignore_eos: Option<bool>,
    /// vLLM's request priority (lower is served first).
    priority: Option<i64>,
    /// Structured output on completions, as vLLM takes it there: a schema's
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
    )?;
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
