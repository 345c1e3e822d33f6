//! The form the simulator gives its own account of a request in (`--timings`): vLLM's
//! `metrics` object (the default), llama.cpp's `timings`, SGLang's `meta_info` (each on the
//! OpenAI APIs' final usage event), or TGI's timing headers (on the head of a streamed answer
//! in exact mode, whose schedule is known before its first token; TGI itself sends them only
//! on non-streamed answers). Every form tells the same truth, [`ServerTimes`], in simulated
//! ms: queue, time to first token from receipt (front end, queue, prefill), decode.

use std::time::Duration;

use serde_json::{json, Value};

use super::config::TimingsShape;

/// What the server spent on one request, in simulated time: the source of llama.cpp's
/// `timings` (`apis/llamacpp.rs`, `llama_timings`). Defined as llama.cpp measures them:
/// - `prompt`: from when the request's prompt processing started (engine mode: the start of
///   the step that carried its first prefill chunk, so time spent waiting for a slot or in the
///   queue is not in it; exact mode: the arrival, or the end of its wait for a LoRA
///   adapter's load) to its first output token;
/// - `predicted`: from the first output token to the last (zero for one token).
///
/// Exact mode reports its schedule (`ttft`, and `itl / tokens_per_chunk` per token after the
/// first); engine mode what the engine did for that request (`stream/engine.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ServerTimes {
    /// The start of the request's prefill (after any queueing) to its first token.
    pub(crate) prompt: Duration,
    pub(crate) predicted: Duration,
    /// The request's queueing before its prefill (exact mode: its wait for a LoRA adapter's
    /// load, else none; engine presets: its time in the engine's waiting queue).
    pub(crate) queue: Option<Duration>,
    /// Its front-end time before it reached the engine (engine presets' `frontend_latency`;
    /// exact mode: none).
    pub(crate) front: Duration,
    /// The form the account goes out in (`--timings`).
    pub(crate) shape: TimingsShape,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The server's TTFT from receipt: front end, queue, prefill.
fn ttft(t: &ServerTimes) -> Duration {
    t.front + t.queue.unwrap_or_default() + t.prompt
}

/// The account's key and object for the final usage event of the OpenAI APIs, for a request
/// of `prompt` prompt tokens (`cached` of them from the cache) and `tokens` output tokens;
/// `None` for TGI's form (headers) and when the times have no queue (no account).
pub(crate) fn usage_account(
    shape: TimingsShape,
    t: &ServerTimes,
    (prompt, cached, tokens): (u64, u64, u64),
) -> Option<(&'static str, Value)> {
    let queue = t.queue?;
    let decode = ms(t.predicted);
    let itl = if tokens > 1 {
        decode / (tokens - 1) as f64
    } else {
        0.0
    };
    match shape {
        TimingsShape::Vllm => Some((
            "metrics",
            json!({
                "time_to_first_token_ms": ms(ttft(t)),
                "queue_time_ms": ms(queue),
                "generation_time_ms": decode,
                "mean_itl_ms": itl,
                "tokens_per_second": if decode > 0.0 { (tokens.saturating_sub(1)) as f64 * 1e3 / decode } else { 0.0 },
            }),
        )),
        TimingsShape::Llamacpp => Some((
            "timings",
            json!({
                "cache_n": cached,
                "prompt_n": prompt.saturating_sub(cached),
                "prompt_ms": ms(t.prompt),
                "predicted_n": tokens,
                "predicted_ms": decode,
                "predicted_per_token_ms": itl,
            }),
        )),
        TimingsShape::Sglang => {
            // Arrival at a fixed origin: only the differences are read.
            let first = ttft(t).as_secs_f64();
            Some((
                "meta_info",
                json!({
                    "prompt_tokens": prompt,
                    "completion_tokens": tokens,
                    "cached_tokens": cached,
                    "queue_time": queue.as_secs_f64(),
                    "e2e_latency": first + t.predicted.as_secs_f64(),
                    "request_received_ts": 0.0,
                    "prefill_finished_ts": first,
                    "decode_finished_ts": first + t.predicted.as_secs_f64(),
                }),
            ))
        }
        TimingsShape::Tgi => None,
    }
}

/// TGI's timing headers for a request whose times are `t` (integer ms, as TGI writes them),
/// with `prompt` and `tokens` its counts.
pub(crate) fn tgi_headers(
    t: &ServerTimes,
    prompt: u64,
    tokens: u64,
) -> Vec<(&'static str, String)> {
    let queue = t.queue.unwrap_or_default();
    let inference = t.prompt + t.predicted;
    let whole = t.front + queue + inference;
    let int = |d: Duration| d.as_millis().to_string();
    vec![
        ("x-compute-time", format!("{}", whole.as_secs_f64())),
        ("x-total-time", int(whole)),
        ("x-validation-time", int(t.front)),
        ("x-queue-time", int(queue)),
        ("x-inference-time", int(inference)),
        (
            "x-time-per-token",
            int(inference / u32::try_from(tokens.max(1)).unwrap_or(u32::MAX)),
        ),
        ("x-prompt-tokens", prompt.to_string()),
        ("x-generated-tokens", tokens.to_string()),
    ]
}
