//! What every generation API shares: answering without generating ([`Reject`]), reading a
//! body ([`parse_body`]), the token budget ([`token_budget`]), numbering and the fault draw
//! ([`resolve`], into a [`Gen`]), a LoRA adapter's check and load wait ([`adapter`],
//! [`wait_for_adapter`]), admission to the engine, and the streamed or whole answer
//! on the exact schedule or the engine's ([`stream_answer`], [`whole_answer`]).
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

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::sim::config::MAX_TOKENS_LIMIT;
use crate::sim::engine::{output_length, Event};
use crate::sim::faults::{self, Fault, ERROR_429_BODY, ERROR_500_BODY};
use crate::sim::spans::Span;
use crate::sim::spec::Chunks;
use crate::sim::state::{Counters, Shared};
use crate::sim::stream::{
    engine_non_stream_response, engine_sse_response, json_response, non_stream_response,
    sse_response, Active, EngineJob, Framer, Plan, ServerTimes,
};
use crate::sim::text::count_words;
use crate::sim::time;

pub(super) type AppState = State<Arc<Shared>>;

// ---------------------------------------------------------------------------------------------
// Request ids and spans

tokio::task_local! {
    /// The request id a handler's span carries (`gen_ai.request.id`), set by
    /// [`with_request_id`] around the handler.
    static TRACE_ID: Option<String>;
}

/// The longest `x-request-id` the simulator takes (a longer or unprintable one is ignored).
const MAX_REQUEST_ID: usize = 128;

/// Middleware: reads the request's `x-request-id`, names the request's span after it as vLLM
/// names its requests (`cmpl-<id>-0` for completions, `chatcmpl-<id>` for chat, the id itself
/// elsewhere), and returns it in the response's `x-request-id`, as vLLM does with
/// `--enable-request-id-headers`.
pub(crate) async fn with_request_id(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let id = (req.headers().get("x-request-id"))
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= MAX_REQUEST_ID)
        .map(str::to_owned);
    let traced = id.as_ref().map(|id| match req.uri().path() {
        "/v1/completions" => format!("cmpl-{id}-0"),
        "/v1/chat/completions" => format!("chatcmpl-{id}"),
        _ => id.clone(),
    });
    let mut response = TRACE_ID.scope(traced, next.run(req)).await;
    if let Some(value) = id.and_then(|id| HeaderValue::from_str(&id).ok()) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// What a request's span needs from its start; finished with the server's times.
struct Seed {
    n: u64,
    request_id: String,
    t0: Instant,
    prompt_tokens: u64,
    tokens: u32,
}

impl Seed {
    fn of(gen: &Gen) -> Seed {
        Seed {
            n: gen.n,
            request_id: (gen.request_id.clone()).unwrap_or_else(|| format!("sim-{}", gen.n)),
            t0: gen.t0,
            prompt_tokens: gen.prompt_tokens,
            tokens: gen.tokens,
        }
    }

    /// Keeps the request's span, ending now, with what the server spent on it.
    fn finish(self, shared: &Shared, times: &ServerTimes) {
        let queue = times.queue.unwrap_or_default();
        shared.spans.push(Span {
            n: self.n,
            request_id: self.request_id,
            start: self.t0,
            end: Instant::now(),
            queue,
            prefill: times.prompt,
            ttft: times.front + queue + times.prompt,
            decode: times.predicted,
            prompt_tokens: self.prompt_tokens,
            output_tokens: self.tokens,
        });
    }
}

/// A framer that keeps the request's span once its trailer is written (its last chunk).
struct Traced<F> {
    inner: F,
    shared: Arc<Shared>,
    seed: Option<Seed>,
}

impl<F: Framer> Framer for Traced<F> {
    fn preamble(&mut self) -> Option<Bytes> {
        self.inner.preamble()
    }
    fn content(&mut self, out: &mut Vec<u8>, chunk: u32, start: u32, end: u32, last: bool) {
        self.inner.content(out, chunk, start, end, last);
    }
    fn trailer(&mut self, out: &mut Vec<u8>, times: &ServerTimes) {
        self.inner.trailer(out, times);
        if let Some(seed) = self.seed.take() {
            seed.finish(&self.shared, times);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Shared request handling

/// Why a generation request was answered without generating: a bad request, or one of the
/// HTTP-level faults. Small, so `Result<_, Reject>` stays cheap; turned into a response last.
#[derive(Debug)]
pub(crate) enum Reject {
    BadRequest(String),
    /// The request names a model the server does not serve (HTTP 404, vLLM's words).
    UnknownModel(String),
    Error500,
    RateLimit,
    /// The request waited longer than the engine's queue timeout (HTTP 503).
    QueueTimeout,
    /// The server is shutting down (HTTP 503).
    Unavailable,
}

impl IntoResponse for Reject {
    fn into_response(self) -> Response {
        match self {
            Reject::BadRequest(message) => {
                let body = json!({"error": {"message": message, "type": "invalid_request_error", "code": 400}});
                json_response(StatusCode::BAD_REQUEST, Body::from(body.to_string()))
            }
            Reject::UnknownModel(model) => {
                let message = format!("The model `{model}` does not exist.");
                let body = json!({"error": {"message": message, "type": "NotFoundError", "param": "model", "code": 404}});
                json_response(StatusCode::NOT_FOUND, Body::from(body.to_string()))
            }
            Reject::Error500 => json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                Body::from(ERROR_500_BODY),
            ),
            Reject::RateLimit => {
                let mut r =
                    json_response(StatusCode::TOO_MANY_REQUESTS, Body::from(ERROR_429_BODY));
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                r
            }
            Reject::QueueTimeout => json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                Body::from(QUEUE_TIMEOUT_BODY),
            ),
            Reject::Unavailable => json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                Body::from(
                    r#"{"error":{"message":"server shutting down","type":"server_error","code":503}}"#,
                ),
            ),
        }
    }
}

/// Body of the HTTP 503 sent when a request waited longer than the queue timeout.
pub(crate) const QUEUE_TIMEOUT_BODY: &str = r#"{"error":{"message":"request timed out in the queue before being scheduled (server overloaded)","type":"server_overloaded","code":503}}"#;

pub(super) type Answer = Result<Response, Reject>;

pub(super) fn parse_body<T: DeserializeOwned>(body: &Bytes) -> Result<T, Reject> {
    serde_json::from_slice(body).map_err(|e| Reject::BadRequest(format!("invalid JSON body: {e}")))
}

/// A body at least this large is parsed and checked off the serving threads.
const OFF_THREAD_BODY: usize = 256 << 10;

/// Runs `work` (parsing and checking a request's body) on tokio's blocking pool when the body
/// is large, inline otherwise. A body of megabytes of media takes milliseconds to parse;
/// parsed on a serving thread, it would hold every stream that thread serves past its exact
/// schedule. The request's schedule is anchored at its arrival stamp, so the parse shifts
/// nothing as long as it ends before the request's first token is due.
pub(super) async fn off_thread<T: Send + 'static>(
    body: &Bytes,
    work: impl FnOnce(&Bytes) -> Result<T, Reject> + Send + 'static,
) -> Result<T, Reject> {
    if body.len() < OFF_THREAD_BODY {
        return work(body);
    }
    let body = body.clone();
    (tokio::task::spawn_blocking(move || work(&body)).await).map_err(|_| Reject::Error500)?
}

/// [`parse_body`], off the serving threads when the body is large ([`off_thread`]).
pub(super) async fn parse_large<T: DeserializeOwned + Send + 'static>(
    body: &Bytes,
) -> Result<T, Reject> {
    off_thread(body, |b| parse_body(b)).await
}

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
    /// Its span's `gen_ai.request.id` ([`with_request_id`]), when the request sent an id.
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
        request_id: TRACE_ID.try_with(Clone::clone).ok().flatten(),
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

/// The streamed answer: on the exact schedule, or following the engine.
pub(super) async fn stream_answer<F: Framer>(shared: Arc<Shared>, gen: &Gen, framer: F) -> Answer {
    let framer = Traced {
        inner: framer,
        shared: shared.clone(),
        seed: Some(Seed::of(gen)),
    };
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
    let (seed, traced) = (Seed::of(gen), shared.clone());
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
