//! llama.cpp's native `POST /completion`: streamed (`data:` events with `stop`, a final event
//! with `timings`) and whole.
//!
//! # What it owns
//! llama.cpp's request struct, `LlamaFramer`, its whole answer and `llama_timings` (from the
//! request's `ServerTimes`).
//!
//! # What it must not touch
//! Timing, faults and statistics (`stream/`, `common.rs`); other APIs' formats.
//!
//! # Adding one more
//! A new field of the final event goes in `LlamaFinal` (known when the request starts) or is
//! computed from `ServerTimes` in the trailer.

use std::fmt::Write as _;

use axum::body::Bytes;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{json, Value};

use super::common::{
    resolve_prompt, stream_answer, token_budget, whole_answer, AppState, ByteSink,
};
use super::reject::{parse_large, Answer};
use crate::sim::http1::Arrival;
use crate::sim::stream::{Framer, ServerTimes};
use crate::sim::text::TokenGen;

#[derive(Deserialize)]
struct LlamaRequest {
    prompt: Option<Value>,
    /// `-1` (or any value <= 0) means "no limit" here: the configured default applies.
    n_predict: Option<i64>,
    stream: Option<bool>,
    ignore_eos: Option<bool>,
}

/// Fields of llama.cpp's final event known when the request starts.
struct LlamaFinal {
    model_json: String,
    tokens: u32,
    prompt_tokens: u64,
    /// Prompt tokens found in the prefix cache (`timings.cache_n`).
    cached: u64,
    stop_type: &'static str,
}

struct LlamaFramer {
    gen: TokenGen,
    usage: bool,
    fin: LlamaFinal,
}

impl Framer for LlamaFramer {
    fn content(&mut self, out: &mut Vec<u8>, _chunk: u32, start: u32, end: u32, _last: bool) {
        out.extend_from_slice(br#"data: {"index":0,"content":""#);
        self.gen.push_text(out, start, end);
        if self.usage {
            out.extend_from_slice(br#"","tokens":["#);
            for i in start..end {
                if i > start {
                    out.push(b',');
                }
                let _ = write!(ByteSink(out), "{}", self.gen.token_id(i));
            }
            let _ = write!(
                ByteSink(out),
                "],\"stop\":false,\"id_slot\":0,\"tokens_predicted\":{end},\"tokens_evaluated\":{}}}\n\n",
                self.fin.prompt_tokens
            );
        } else {
            out.extend_from_slice(b"\",\"stop\":false,\"id_slot\":0}\n\n");
        }
    }

    fn trailer(&mut self, out: &mut Vec<u8>, times: &ServerTimes) {
        let f = &self.fin;
        let _ = if self.usage {
            write!(
                ByteSink(out),
                "data: {{\"index\":0,\"content\":\"\",\"tokens\":[],\"stop\":true,\"id_slot\":0,\"model\":{},\"tokens_predicted\":{},\"tokens_evaluated\":{},\"stop_type\":\"{}\",\"timings\":{}}}\n\n",
                f.model_json,
                f.tokens,
                f.prompt_tokens,
                f.stop_type,
                llama_timings(times, (f.prompt_tokens, f.cached), f.tokens)
            )
        } else {
            write!(
                ByteSink(out),
                "data: {{\"index\":0,\"content\":\"\",\"stop\":true,\"id_slot\":0,\"model\":{},\"stop_type\":\"{}\"}}\n\n",
                f.model_json, f.stop_type
            )
        };
    }
}

/// llama.cpp's `timings` object for a request of `prompt_tokens` prompt and `tokens` output
/// tokens that took `times` (see [`ServerTimes`] for what each span covers), in ms:
/// `prompt_ms` = the prompt span, `predicted_ms` = first to last output token,
/// `predicted_per_token_ms` = `predicted_ms / (tokens - 1)` (0 for a single token), the
/// `*_per_second` fields their rates (`prompt_n / prompt_ms`, `1 / predicted_per_token_ms`).
fn llama_timings(times: &ServerTimes, (prompt_tokens, cached): (u64, u64), tokens: u32) -> Value {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let prompt_ms = ms(times.prompt);
    let predicted_ms = ms(times.predicted);
    let per_token_ms = if tokens > 1 {
        predicted_ms / f64::from(tokens - 1)
    } else {
        0.0
    };
    let per_second = |n: f64, ms: f64| if ms > 0.0 { n * 1000.0 / ms } else { 0.0 };
    let prompt_n = prompt_tokens as f64;
    json!({
        "cache_n": cached,
        "prompt_n": prompt_tokens,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": if prompt_tokens > 0 { prompt_ms / prompt_n } else { 0.0 },
        "prompt_per_second": per_second(prompt_n, prompt_ms),
        "predicted_n": tokens,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": per_token_ms,
        "predicted_per_second": per_second(1.0, per_token_ms),
    })
}

pub(crate) async fn llama_completion(
    State(shared): AppState,
    Arrival(t0): Arrival,
    body: Bytes,
) -> Answer {
    let req: LlamaRequest = parse_large(&body).await?;
    let requested = req
        .n_predict
        .filter(|n| *n > 0)
        .map(|n| u64::try_from(n).unwrap_or(u64::MAX));
    let budget = token_budget(&shared, "n_predict", requested)?;
    let ignore_eos = req.ignore_eos.unwrap_or(false);
    let r = resolve_prompt(&shared, t0, req.prompt.as_ref(), budget, ignore_eos)?;
    let prompt_tokens = r.prompt_tokens;
    let cached = r.cached;
    let tokens = r.tokens;
    let stop_type = r.finish.llama();
    let gen = TokenGen::new(shared.config.seed, r.n);
    let usage = shared.config.usage;

    if req.stream.unwrap_or(false) {
        let framer = LlamaFramer {
            gen,
            usage,
            fin: LlamaFinal {
                model_json: shared.model_json.clone(),
                tokens,
                prompt_tokens,
                cached,
                stop_type,
            },
        };
        return stream_answer(shared, &r, framer).await;
    }

    let model = shared.config.model.clone();
    whole_answer(shared.clone(), &r, move |times| {
        let mut v = json!({
            "index": 0,
            "content": gen.text(0, tokens),
            "id_slot": 0,
            "stop": true,
            "model": model,
            "stop_type": stop_type,
        });
        if usage {
            v["tokens"] = json!([]);
            v["tokens_predicted"] = json!(tokens);
            v["tokens_evaluated"] = json!(prompt_tokens);
            v["timings"] = llama_timings(times, (prompt_tokens, cached), tokens);
        }
        v.to_string()
    })
    .await
}
