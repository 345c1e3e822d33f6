//! What every generation API shares: the token budget ([`token_budget`]), numbering and the
//! fault draw ([`resolve`], into a [`Gen`]), a LoRA adapter's check and load wait
//! ([`adapter`], [`wait_for_adapter`]), admission to the engine, and the streamed or whole
//! answer on the exact schedule or the engine's ([`stream_answer`], [`whole_answer`]).
//! Answering without generating and reading a body are `reject.rs`'s; request ids and spans
//! `trace.rs`'s.
//!
//! # What it owns
//! The request life cycle up to the first byte of an answer, prompt counting
//! ([`count_prompt`]), how a generation ends ([`Finish`], in each API's words) and the small
//! writing helpers the framers share ([`ByteSink`]).
//!
//! # What it must not touch
//! No API's wire format (each lives in its own file beside this one), no socket, no pacing
//! (`stream/`). Nothing of servebench's client side.
//!
//! # Adding one more
//! A step every API needs (say, a new request-level fault) goes in [`resolve`] or [`Reject`];
//! one API's field stays in that API's file.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;
use tokio::time::Instant;

use super::reject::{parse_body, Answer, Reject};
use super::trace::{self, Seed, Traced};
use crate::sim::config::MAX_TOKENS_LIMIT;
use crate::sim::cost::output_length;
use crate::sim::engine::Event;
use crate::sim::faults::{self, Fault};
use crate::sim::spec::Chunks;
use crate::sim::state::{Counters, Shared};
use crate::sim::stream::{
    engine_non_stream_response, engine_sse_response, non_stream_response, sse_response, Active,
    EngineJob, Framer, Plan, ServerTimes,
};
use crate::sim::text::count_words;
use crate::sim::time;

pub(super) type AppState = State<Arc<Shared>>;

/// Resolves a request's token budget: `requested` if given, else the configured default.
pub(super) fn token_budget(
    shared: &Shared,
    field: &str,
    requested: Option<u64>,
) -> Result<u32, Reject> {
    match requested {
        None => Ok(shared.config.output_tokens),
        Some(0) => Err(Reject::BadRequest(format!("{field} must be at least 1"))),
        Some(n) if n > u64::from(MAX_TOKENS_LIMIT) => Err(Reject::BadRequest(format!(
            "{field} must be at most {MAX_TOKENS_LIMIT}, got {n}"
        ))),
        // In range by the guard above.
        Some(n) => Ok(u32::try_from(n).unwrap_or(MAX_TOKENS_LIMIT)),
    }
}

/// A numbered request that passed the fault draw's HTTP-level faults.
struct Begun {
    n: u64,
    fault: Fault,
    created: u64,
}

/// Numbers the request, draws its fault and rejects it for the HTTP-level faults (500, 429).
fn begin(shared: &Shared) -> Result<Begun, Reject> {
    let n = shared.next_request.fetch_add(1, Ordering::Relaxed);
    Counters::bump(&shared.stats.requests);
    let fault = faults::pick(&shared.config.faults, shared.config.seed, n);
    match fault {
        Fault::Error500 => {
            Counters::bump(&shared.stats.http_500);
            Err(Reject::Error500)
        }
        Fault::RateLimit => {
            Counters::bump(&shared.stats.http_429);
            Err(Reject::RateLimit)
        }
        _ => Ok(Begun {
            n,
            fault,
            created: unix_now(),
        }),
    }
}

pub(super) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn plan(shared: &Shared, gen: &Gen) -> Plan {
    Plan {
        t0: gen.t0,
        ttft: shared.real.ttft + gen.adapter_wait,
        itl: shared.real.itl,
        tokens: gen.tokens,
        chunks: Chunks::of(shared.config.tokens_per_chunk, shared.config.spec.as_ref()),
        fault: gen.fault,
        stall: shared.real.stall,
        queued: std::time::Duration::ZERO,
        prompt: gen.prompt_tokens,
    }
}

/// How a request's generation ends: at its token budget, or at its natural end of sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finish {
    Length,
    Stop,
}

impl Finish {
    pub(super) fn openai(self) -> &'static str {
        match self {
            Finish::Length => "length",
            Finish::Stop => "stop",
        }
    }
    pub(super) fn tgi(self) -> &'static str {
        match self {
            Finish::Length => "length",
            Finish::Stop => "eos_token",
        }
    }
    pub(super) fn llama(self) -> &'static str {
        match self {
            Finish::Length => "limit",
            Finish::Stop => "eos",
        }
    }
}

/// A generation request, resolved: numbered, fault drawn, prompt and output lengths known.
pub(super) struct Gen {
    pub(super) t0: Instant,
    /// Its span's `gen_ai.request.id` (`trace::with_request_id`), when the request sent an id.
    pub(super) request_id: Option<String>,
    pub(super) n: u64,
    pub(super) fault: Fault,
    pub(super) created: u64,
    pub(super) prompt_tokens: u64,
    /// Prompt tokens found in the prefix cache ([`cache_prompt`]); the engine prefills the rest.
    pub(super) cached: u64,
    /// Output tokens the request gets.
    pub(super) tokens: u32,
    pub(super) finish: Finish,
    /// The wait for the request's LoRA adapter to be loaded ([`adapter`]), before its prefill.
    pub(super) adapter_wait: std::time::Duration,
    /// vLLM's `priority` request field (0 when not given): lower is served first when exact
    /// mode's slots are ordered by priority.
    pub(super) priority: i64,
}

/// The LoRA adapter a request's `model` names, when the server serves adapters
/// (`SimConfig::lora`): `None` for the base model, an absent `model` or a server without
/// adapters (any `model` is served then, unread); a name it does not serve is
/// [`Reject::UnknownModel`]. Read before the request is numbered, as vLLM checks the model
/// first.
pub(super) fn adapter(shared: &Shared, body: &Bytes) -> Result<Option<String>, Reject> {
    #[derive(Deserialize)]
    struct Named {
        model: Option<String>,
    }
    let Some(lora) = &shared.config.lora else {
        return Ok(None);
    };
    match parse_body::<Named>(body)?.model {
        None => Ok(None),
        Some(m) if m == shared.config.model => Ok(None),
        Some(m) if lora.adapters.contains(&m) => Ok(Some(m)),
        Some(m) => Err(Reject::UnknownModel(m)),
    }
}

/// Adds to a resolved request its wait for `adapter`'s load ([`adapter`]), before its
/// prefill.
pub(super) fn wait_for_adapter(shared: &Shared, gen: &mut Gen, adapter: Option<&str>) {
    if let Some(name) = adapter {
        gen.adapter_wait = shared.adapter_wait(gen.t0, name);
    }
}

/// Checks the context length, numbers the request and draws its fault ([`begin`]) and decides
/// its output length: the budget in exact mode or with `ignore_eos`; otherwise, with an engine
/// preset that models natural ends, the shorter of the budget and the drawn length.
pub(super) fn resolve(
    shared: &Shared,
    t0: Instant,
    prompt_tokens: u64,
    budget: u32,
    ignore_eos: bool,
) -> Result<Gen, Reject> {
    if let Some(e) = &shared.config.engine {
        if prompt_tokens + u64::from(budget) > u64::from(e.max_model_len) {
            return Err(Reject::BadRequest(format!(
                "This model's maximum context length is {} tokens. However, you requested {} tokens ({prompt_tokens} in the prompt, {budget} for the completion).",
                e.max_model_len,
                prompt_tokens + u64::from(budget)
            )));
        }
    }
    let begun = begin(shared)?;
    let natural = shared
        .config
        .engine
        .as_ref()
        .and_then(|e| e.mean_output_tokens)
        .filter(|_| !ignore_eos)
        .map(|mean| output_length(shared.config.seed, begun.n, mean));
    let (tokens, finish) = match natural {
        Some(len) if len < budget => (len, Finish::Stop),
        _ => (budget, Finish::Length),
    };
    Ok(Gen {
        t0,
        request_id: trace::request_id(),
        n: begun.n,
        fault: begun.fault,
        created: begun.created,
        prompt_tokens,
        cached: 0,
        tokens,
        finish,
        adapter_wait: std::time::Duration::ZERO,
        priority: 0,
    })
}

/// [`resolve`] for a prompt made of the strings of `parts` (in order): counts its tokens
/// ([`count_prompt`]), resolves the request, then looks the prompt up in the prefix cache
/// ([`cache_prompt`]).
pub(super) fn resolve_prompt<'a, P>(
    shared: &Shared,
    t0: Instant,
    parts: P,
    budget: u32,
    ignore_eos: bool,
) -> Result<Gen, Reject>
where
    P: IntoIterator<Item = &'a Value> + Clone,
{
    resolve_media_prompt(shared, t0, parts, 0, budget, ignore_eos)
}

/// [`resolve_prompt`] with `media` tokens beside the text (a chat request's images,
/// `media.rs`): part of the prompt's tokens, so counted and prefilled, but not looked up in
/// the prefix cache (which holds words).
pub(super) fn resolve_media_prompt<'a, P>(
    shared: &Shared,
    t0: Instant,
    parts: P,
    media: u64,
    budget: u32,
    ignore_eos: bool,
) -> Result<Gen, Reject>
where
    P: IntoIterator<Item = &'a Value> + Clone,
{
    let text: u64 = parts.clone().into_iter().map(count_prompt).sum();
    let prompt_tokens = text.saturating_add(media);
    let mut r = resolve(shared, t0, prompt_tokens, budget, ignore_eos)?;
    r.cached = cache_prompt(shared, parts);
    Ok(r)
}

/// The `sim_reasoning_tokens` extension: the first R of the request's `tokens` are reasoning;
/// without it, the server's `reasoning_tokens` setting.
pub(super) fn reasoning_tokens(shared: &Shared, requested: Option<u64>, tokens: u32) -> u32 {
    (requested.map_or(Ok(shared.config.reasoning_tokens), u32::try_from))
        .unwrap_or(u32::MAX)
        .min(tokens)
}

/// Looks the prompt's words (the strings of `parts`, in order) up in the prefix cache and
/// caches them: the tokens already held.
pub(super) fn cache_prompt<'a>(shared: &Shared, parts: impl IntoIterator<Item = &'a Value>) -> u64 {
    fn words(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => {
                out.push_str(s);
                out.push(' ');
            }
            Value::Number(n) => {
                out.push_str(&n.to_string());
                out.push(' ');
            }
            Value::Array(items) => items.iter().for_each(|i| words(i, out)),
            Value::Object(map) => map.get("text").into_iter().for_each(|t| words(t, out)),
            Value::Null | Value::Bool(_) => {}
        }
    }
    let mut text = String::new();
    parts.into_iter().for_each(|p| words(p, &mut text));
    shared
        .prefix_cache
        .lock()
        .map_or(0, |mut c| c.lookup_and_insert(&text))
}

/// Hands the request to the engine (after the front-end latency) and waits until it is
/// scheduled; a queue timeout becomes HTTP 503.
async fn admit(shared: &Shared, gen: &Gen) -> Result<EngineJob, Reject> {
    let Some(engine) = &shared.engine else {
        return Err(Reject::Unavailable);
    };
    let before = shared.real.frontend + gen.adapter_wait;
    if !before.is_zero() {
        let until = time::offset(gen.t0, before);
        time::sleep_until(shared.config.precise_timing, until).await;
    }
    // Only the uncached part is prefilled; the cached blocks are already in the KV cache.
    let prompt =
        u32::try_from(gen.prompt_tokens - gen.cached.min(gen.prompt_tokens)).unwrap_or(u32::MAX);
    let mut rx = engine.submit(prompt, gen.tokens);
    let (scheduled, queued);
    loop {
        let event = tokio::select! {
            e = rx.recv() => e,
            _ = shared.shutdown.wait() => None,
        };
        match event {
            Some(Event::Scheduled { sim, queued: q }) => {
                scheduled = sim;
                queued = q;
                break;
            }
            Some(Event::QueueTimeout) => {
                Counters::bump(&shared.stats.queue_timeouts);
                if let Ok(mut m) = shared.metrics.lock() {
                    m.queue_timeouts += 1;
                }
                return Err(Reject::QueueTimeout);
            }
            Some(Event::Tokens { .. }) => {}
            None => return Err(Reject::Unavailable),
        }
    }
    Ok(EngineJob {
        rx,
        scheduled,
        queued,
        front: shared
            .config
            .engine
            .as_ref()
            .map_or(std::time::Duration::ZERO, |e| e.frontend_latency),
        tokens: gen.tokens,
        tokens_per_chunk: shared.config.tokens_per_chunk,
        fault: gen.fault,
    })
}

/// The start of `gen`'s span.
fn seed(gen: &Gen) -> Seed {
    let id = gen.request_id.clone();
    Seed::new(gen.n, id, gen.t0, gen.prompt_tokens, gen.tokens)
}

/// The streamed answer: on the exact schedule, or following the engine.
pub(super) async fn stream_answer<F: Framer>(shared: Arc<Shared>, gen: &Gen, framer: F) -> Answer {
    let framer = Traced::new(framer, shared.clone(), seed(gen));
    if shared.engine.is_some() {
        let job = admit(&shared, gen).await?;
        return Ok(engine_sse_response(shared, job, framer));
    }
    let (plan, active) = exact_plan(&shared, gen).await;
    Ok(sse_response(shared, plan, framer, active))
}

/// Exact mode's schedule of `gen`, begun once it holds one of the slots where there are
/// slots (`slots.rs`: its schedule starts when the slot it waited for freed), and its
/// server metrics, which hold the slot until the stream ends.
async fn exact_plan(shared: &Arc<Shared>, gen: &Gen) -> (Plan, Active) {
    let mut plan = plan(shared, gen);
    let slot = match &shared.slots {
        Some(slots) => {
            let (mut slot, t0) = slots.take(gen.t0, gen.priority).await;
            plan.queued = t0.saturating_duration_since(gen.t0);
            plan.t0 = t0;
            slot.ends_at(plan.deadline(plan.chunks() - 1));
            Some(slot)
        }
        None => None,
    };
    let active = Active::exact(shared, gen.prompt_tokens, &plan).holding(slot);
    (plan, active)
}

/// The non-streamed answer, when the whole generation is done.
pub(super) async fn whole_answer(
    shared: Arc<Shared>,
    gen: &Gen,
    body: impl FnOnce(&ServerTimes) -> String,
) -> Answer {
    let (seed, traced) = (seed(gen), shared.clone());
    let body = move |times: &ServerTimes| {
        seed.finish(&traced, times);
        body(times)
    };
    if shared.engine.is_some() {
        let job = admit(&shared, gen).await?;
        return Ok(engine_non_stream_response(shared, job, body).await);
    }
    let (plan, active) = exact_plan(&shared, gen).await;
    Ok(non_stream_response(shared, plan, active, body).await)
}

/// Approximate token count of a prompt value: words in strings, one per number (token ids),
/// the `text` of objects (chat content parts), summed over arrays.
pub(super) fn count_prompt(value: &Value) -> u64 {
    match value {
        Value::String(s) => count_words(s),
        Value::Number(_) => 1,
        Value::Array(items) => items.iter().map(count_prompt).sum(),
        Value::Object(map) => map.get("text").map(count_prompt).unwrap_or(0),
        Value::Null | Value::Bool(_) => 0,
    }
}

#[derive(Deserialize)]
pub(super) struct ChatMessage {
    pub(super) content: Option<Value>,
}

/// Lets `write!` append to a byte buffer.
pub(super) struct ByteSink<'a>(pub(super) &'a mut Vec<u8>);

impl std::fmt::Write for ByteSink<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}
