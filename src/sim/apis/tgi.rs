//! Hugging Face TGI: `POST /generate_stream` (one SSE event per token, `generated_text` and
//! `details` on the last), `POST /generate` and `GET /info` (the engine's limits).
//!
//! # What it owns
//! TGI's request struct, `TgiFramer`, its whole answer and the `/info` document.
//!
//! # What it must not touch
//! Timing, faults and statistics (`stream/`, `common.rs`); other APIs' formats. TGI has no
//! `ignore_eos`: do not add one here.
//!
//! # Adding one more
//! A new TGI parameter goes in `TgiParameters`; a new `/info` field is read from the
//! `EngineConfig` it reports.

use std::fmt::Write as _;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::common::{
    count_prompt, resolve, stream_answer, token_budget, whole_answer, AppState, ByteSink, Gen,
};
use super::reject::{parse_body, Answer, Reject};
use crate::sim::config::MAX_TOKENS_LIMIT;
use crate::sim::cost::SchedulerKind;
use crate::sim::http1::Arrival;
use crate::sim::state::Shared;
use crate::sim::stream::{Framer, ServerTimes};
use crate::sim::text::TokenGen;

#[derive(Deserialize, Default)]
struct TgiParameters {
    max_new_tokens: Option<u64>,
    details: Option<bool>,
}

#[derive(Deserialize)]
struct TgiRequest {
    inputs: Option<Value>,
    parameters: Option<TgiParameters>,
}

struct TgiFramer {
    gen: TokenGen,
    tokens: u32,
    /// The `details` object of the last event, when asked for.
    details: Option<String>,
}

impl Framer for TgiFramer {
    fn content(&mut self, out: &mut Vec<u8>, _chunk: u32, start: u32, end: u32, last: bool) {
        for i in start..end {
            let _ = write!(
                ByteSink(out),
                "data: {{\"index\":{},\"token\":{{\"id\":{},\"text\":\"{}\",\"logprob\":-0.5,\"special\":false}},\"generated_text\":",
                u64::from(i) + 1,
                self.gen.token_id(i),
                self.gen.word(i),
            );
            if last && i + 1 == end {
                out.push(b'"');
                self.gen.push_text(out, 0, self.tokens);
                out.extend_from_slice(br#"","details":"#);
                match &self.details {
                    Some(d) => out.extend_from_slice(d.as_bytes()),
                    None => out.extend_from_slice(b"null"),
                }
            } else {
                out.extend_from_slice(br#"null,"details":null"#);
            }
            out.extend_from_slice(b",\"top_tokens\":null}\n\n");
        }
    }

    fn trailer(&mut self, _out: &mut Vec<u8>, _times: &ServerTimes) {}
}

/// TGI has no `ignore_eos`: with an engine preset that models natural ends, requests may end
/// before `max_new_tokens` (finish reason `eos_token`).
fn tgi_setup(shared: &Shared, t0: Instant, body: &Bytes) -> Result<(Gen, bool), Reject> {
    let req: TgiRequest = parse_body(body)?;
    let params = req.parameters.as_ref();
    let budget = token_budget(
        shared,
        "parameters.max_new_tokens",
        params.and_then(|p| p.max_new_tokens),
    )?;
    let details = shared.config.usage && params.and_then(|p| p.details).unwrap_or(false);
    let prompt_tokens = req.inputs.as_ref().map(count_prompt).unwrap_or(0);
    let r = resolve(shared, t0, prompt_tokens, budget, false)?;
    Ok((r, details))
}

pub(crate) async fn tgi_generate_stream(
    State(shared): AppState,
    Arrival(t0): Arrival,
    body: Bytes,
) -> Answer {
    let (r, details) = tgi_setup(&shared, t0, &body)?;
    let (tokens, prompt_tokens, finish) = (r.tokens, r.prompt_tokens, r.finish.tgi());
    let details = details.then(|| {
        format!(
            r#"{{"finish_reason":"{finish}","generated_tokens":{tokens},"seed":null,"input_length":{prompt_tokens}}}"#
        )
    });
    let framer = TgiFramer {
        gen: TokenGen::new(shared.config.seed, r.n),
        tokens,
        details,
    };
    stream_answer(shared, &r, framer).await
}

pub(crate) async fn tgi_generate(
    State(shared): AppState,
    Arrival(t0): Arrival,
    body: Bytes,
) -> Answer {
    let (r, details) = tgi_setup(&shared, t0, &body)?;
    let (tokens, prompt_tokens, finish) = (r.tokens, r.prompt_tokens, r.finish.tgi());
    let gen = TokenGen::new(shared.config.seed, r.n);
    whole_answer(shared.clone(), &r, move |_| {
        let mut v = json!({ "generated_text": gen.text(0, tokens) });
        if details {
            v["details"] = json!({
                "finish_reason": finish,
                "generated_tokens": tokens,
                "seed": null,
                "input_length": prompt_tokens,
            });
        }
        v.to_string()
    })
    .await
}

/// TGI's `/info`, from the same limits the engine enforces.
pub(crate) async fn tgi_info(State(shared): AppState) -> Response {
    let mut v = json!({
        "model_id": shared.config.model,
        "max_input_tokens": MAX_TOKENS_LIMIT - 1,
        "max_total_tokens": MAX_TOKENS_LIMIT,
        "version": "sim",
        "router": "servebench-sim",
    });
    if let Some(e) = &shared.config.engine {
        v["max_input_tokens"] = json!(e.max_model_len - 1);
        v["max_total_tokens"] = json!(e.max_model_len);
        v["max_batch_total_tokens"] = json!(e.kv_capacity_tokens);
        v["max_batch_size"] = json!(e.max_num_seqs);
        v["max_concurrent_requests"] = json!(e.max_num_seqs);
        v["max_batch_prefill_tokens"] = json!(e.max_batched_tokens);
        if let SchedulerKind::PrefillFirst {
            max_waiting_steps,
            waiting_served_ratio,
        } = e.scheduler
        {
            v["max_waiting_tokens"] = json!(max_waiting_steps);
            v["waiting_served_ratio"] = json!(waiting_served_ratio);
        }
    }
    Json(v).into_response()
}
