//! The form the simulator gives its own account of a request in (`--timings`): vLLM's
//! `metrics` object (the default), llama.cpp's `timings`, SGLang's `meta_info` (each on the
//! OpenAI APIs' final usage event), or TGI's timing headers (on the head of a streamed answer
//! in exact mode, whose schedule is known before its first token; TGI itself sends them only
//! on non-streamed answers). Every form tells the same truth, [`ServerTimes`], in simulated
//! ms: queue, time to first token from receipt (front end, queue, prefill), decode.

use std::time::Duration;

use serde_json::{json, Value};

use super::config::TimingsShape;
use super::stream::ServerTimes;

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
