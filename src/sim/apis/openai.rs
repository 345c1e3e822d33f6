//! What the two OpenAI / vLLM generation endpoints, completions (`completions.rs`) and chat
//! completions (`chat.rs`), share: the `stream_options` they read, the usage they report
//! (streamed as a last event with vLLM's per-request `metrics`, or whole), and the text of a
//! guided answer (`sim/structured.rs`).
//!
//! # What it must not touch
//! Either endpoint's request struct or events (each in its own file, neither importing the
//! other); timing, faults and statistics (`stream/`, `common.rs`).

use serde::Deserialize;
use serde_json::{json, Value};

use super::common::{Finish, Gen};
use super::reject::Reject;
use crate::sim::state::Shared;
use crate::sim::stream::ServerTimes;
use crate::sim::structured::{self, Guided};
use crate::sim::timings;

#[derive(Deserialize, Default)]
pub(super) struct StreamOptions {
    pub(super) include_usage: Option<bool>,
}

pub(super) fn wants_usage(shared: &Shared, options: &Option<StreamOptions>) -> bool {
    shared.config.usage
        && options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false)
}

/// Writes the usage event (`head` ends with the usage object), with the simulator's account
/// of the request in the form `--timings` asks (`sim/timings.rs`; vLLM's `metrics` unless
/// set): its own time to first token (from its receipt of the request: front end, queueing
/// and prefill), its queueing (exact mode: its wait for a slot or a LoRA adapter's load,
/// else none) and its decode, in simulated ms.
pub(super) fn usage_event(out: &mut Vec<u8>, head: &str, times: &ServerTimes) {
    out.extend_from_slice(head.as_bytes());
    if let Some((key, v)) = timings::usage_account(times.shape, times, usage_counts(head)) {
        out.extend_from_slice(format!(r#","{key}":{v}"#).as_bytes());
    }
    out.extend_from_slice(b"}\n\n");
}

/// The prompt, cached and completion counts of the usage object that ends `head`.
fn usage_counts(head: &str) -> (u64, u64, u64) {
    let usage =
        (head.rfind("\"usage\":")).and_then(|i| serde_json::from_str::<Value>(&head[i + 8..]).ok());
    let n = |p: &str| {
        (usage.as_ref())
            .and_then(|u| u.pointer(p)?.as_u64())
            .unwrap_or(0)
    };
    (
        n("/prompt_tokens"),
        n("/prompt_tokens_details/cached_tokens"),
        n("/completion_tokens"),
    )
}

pub(super) fn usage_json(prompt: u64, cached: u64, completion: u32) -> String {
    let completion = u64::from(completion);
    format!(
        r#"{{"prompt_tokens":{prompt},"completion_tokens":{completion},"total_tokens":{},"prompt_tokens_details":{{"cached_tokens":{cached}}}}}"#,
        prompt + completion
    )
}

/// Whether request `n` is one of the exact share answered invalid (`sim/structured.rs`).
pub(super) fn invalid_share(shared: &Shared, n: u64) -> Option<u64> {
    structured::invalid(n, structured::ppm(shared.config.invalid_output_rate))
}

/// The text of a guided answer (streamed only; `sim/structured.rs`), which ends the answer:
/// fewer tokens than the budget stop there.
pub(super) fn guided_text(
    shared: &Shared,
    r: &mut Gen,
    guided: Option<Guided>,
) -> Result<Option<String>, Reject> {
    let Some(g) = guided else {
        return Ok(None);
    };
    let bad = invalid_share(shared, r.n);
    let text = structured::guided_answer(&g, shared.config.seed, r.n, bad)?;
    let text = structured::hostile_text(text, shared.config.hostile_answer_bytes);
    let chars = u32::try_from(text.chars().count().max(1)).unwrap_or(u32::MAX);
    if chars < r.tokens {
        r.tokens = chars;
        r.finish = Finish::Stop;
    }
    Ok(Some(text))
}

pub(super) fn usage_value(prompt: u64, cached: u64, completion: u32) -> Value {
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + u64::from(completion),
        "prompt_tokens_details": {"cached_tokens": cached},
    })
}
