//! The HTTP APIs the simulated server speaks, each in its real server's wire format:
//! OpenAI/vLLM completions and chat completions, Hugging Face TGI (`/generate_stream`,
//! `/generate`, `/info`) and llama.cpp's native `/completion`, plus `/v1/models`, `/health`
//! and `/sim/stats`.
//!
//! Each API has a lenient request struct (only the fields the simulator uses; unknown fields
//! are ignored), a handler, and a [`Framer`] that writes its stream events from pieces
//! formatted once per request. The timing, faults and statistics are `stream.rs`'s job. Nothing
//! here may use servebench's client code.
//!
//! To add an API: write the request struct and handler following [`completions`], a `Framer`
//! for its events, and register the route in `super::build_router`.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::config::MAX_TOKENS_LIMIT;
use super::engine::SchedulerKind;
use super::engine::{output_length, Event};
use super::faults::{self, Fault, ERROR_429_BODY, ERROR_500_BODY};
use super::http1::Arrival;
use super::metrics;
use super::state::{Counters, Shared};
use super::stream::{
    engine_non_stream_response, engine_sse_response, json_response, non_stream_response,
    sse_response, Active, EngineJob, Framer, Plan, ServerTimes,
};
use super::text::{count_words, splitmix64, TokenGen};
use super::time;

type AppState = State<Arc<Shared>>;

// ---------------------------------------------------------------------------------------------
// Shared request handling

/// Why a generation request was answered without generating: a bad request, or one of the
/// HTTP-level faults. Small, so `Result<_, Reject>` stays cheap; turned into a response last.
#[derive(Debug)]
pub(crate) enum Reject {
    BadRequest(String),
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

type Answer = Result<Response, Reject>;

fn parse_body<T: DeserializeOwned>(body: &Bytes) -> Result<T, Reject> {
    serde_json::from_slice(body).map_err(|e| Reject::BadRequest(format!("invalid JSON body: {e}")))
}

/// Resolves a request's token budget: `requested` if given, else the configured default.
fn token_budget(shared: &Shared, field: &str, requested: Option<u64>) -> Result<u32, Reject> {
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

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn plan(shared: &Shared, gen: &Gen) -> Plan {
    Plan {
        t0: gen.t0,
        ttft: shared.real.ttft,
        itl: shared.real.itl,
        tokens: gen.tokens,
        tokens_per_chunk: shared.config.tokens_per_chunk,
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
    fn openai(self) -> &'static str {
        match self {
            Finish::Length => "length",
            Finish::Stop => "stop",
        }
    }
    fn tgi(self) -> &'static str {
        match self {
            Finish::Length => "length",
            Finish::Stop => "eos_token",
        }
    }
    fn llama(self) -> &'static str {
        match self {
            Finish::Length => "limit",
            Finish::Stop => "eos",
        }
    }
}

/// A generation request, resolved: numbered, fault drawn, prompt and output lengths known.
struct Gen {
    t0: Instant,
    n: u64,
    fault: Fault,
    created: u64,
    prompt_tokens: u64,
    /// Output tokens the request gets.
    tokens: u32,
    finish: Finish,
}

/// Checks the context length, numbers the request and draws its fault ([`begin`]) and decides
/// its output length: the budget in exact mode or with `ignore_eos`; otherwise, with an engine
/// preset that models natural ends, the shorter of the budget and the drawn length.
fn resolve(
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
        n: begun.n,
        fault: begun.fault,
        created: begun.created,
        prompt_tokens,
        tokens,
        finish,
    })
}

/// Hands the request to the engine (after the front-end latency) and waits until it is
/// scheduled; a queue timeout becomes HTTP 503.
async fn admit(shared: &Shared, gen: &Gen) -> Result<EngineJob, Reject> {
    let Some(engine) = &shared.engine else {
        return Err(Reject::Unavailable);
    };
    if !shared.real.frontend.is_zero() {
        let until = time::offset(gen.t0, shared.real.frontend);
        time::sleep_until(shared.config.precise_timing, until).await;
    }
    let prompt = u32::try_from(gen.prompt_tokens).unwrap_or(u32::MAX);
    let mut rx = engine.submit(prompt, gen.tokens);
    let scheduled;
    loop {
        let event = tokio::select! {
            e = rx.recv() => e,
            _ = shared.shutdown.wait() => None,
        };
        match event {
            Some(Event::Scheduled { sim }) => {
                scheduled = sim;
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
        tokens: gen.tokens,
        tokens_per_chunk: shared.config.tokens_per_chunk,
        fault: gen.fault,
    })
}

/// The streamed answer: on the exact schedule, or following the engine.
async fn stream_answer<F: Framer>(shared: Arc<Shared>, gen: &Gen, framer: F) -> Answer {
    if shared.engine.is_some() {
        let job = admit(&shared, gen).await?;
        return Ok(engine_sse_response(shared, job, framer));
    }
    let plan = plan(&shared, gen);
    let active = Active::exact(&shared, gen.prompt_tokens, &plan);
    Ok(sse_response(shared, plan, framer, active))
}

/// The non-streamed answer, when the whole generation is done.
async fn whole_answer(
    shared: Arc<Shared>,
    gen: &Gen,
    body: impl FnOnce(&ServerTimes) -> String,
) -> Answer {
    if shared.engine.is_some() {
        let job = admit(&shared, gen).await?;
        return Ok(engine_non_stream_response(shared, job, body).await);
    }
    let plan = plan(&shared, gen);
    let active = Active::exact(&shared, gen.prompt_tokens, &plan);
    Ok(non_stream_response(shared, plan, active, body).await)
}

/// Approximate token count of a prompt value: words in strings, one per number (token ids),
/// the `text` of objects (chat content parts), summed over arrays.
fn count_prompt(value: &Value) -> u64 {
    match value {
        Value::String(s) => count_words(s),
        Value::Number(_) => 1,
        Value::Array(items) => items.iter().map(count_prompt).sum(),
        Value::Object(map) => map.get("text").map(count_prompt).unwrap_or(0),
        Value::Null | Value::Bool(_) => 0,
    }
}

#[derive(Deserialize, Default)]
struct StreamOptions {
    include_usage: Option<bool>,
}

fn wants_usage(shared: &Shared, options: &Option<StreamOptions>) -> bool {
    shared.config.usage
        && options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false)
}

fn usage_json(prompt: u64, completion: u32) -> String {
    let completion = u64::from(completion);
    format!(
        r#"{{"prompt_tokens":{prompt},"completion_tokens":{completion},"total_tokens":{}}}"#,
        prompt + completion
    )
}

// ---------------------------------------------------------------------------------------------
// OpenAI / vLLM: POST /v1/completions

#[derive(Deserialize)]
struct CompletionRequest {
    prompt: Option<Value>,
    max_tokens: Option<u64>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    ignore_eos: Option<bool>,
}

struct CompletionsFramer {
    /// Everything of a content event up to the text.
    head: String,
    gen: TokenGen,
    /// The usage event, when asked for.
    usage: Option<String>,
    /// The end of the last content event (carries the finish reason).
    last_tail: String,
}

impl Framer for CompletionsFramer {
    fn content(&mut self, out: &mut Vec<u8>, _chunk: u32, start: u32, end: u32, last: bool) {
        out.extend_from_slice(self.head.as_bytes());
        self.gen.push_text(out, start, end);
        out.extend_from_slice(if last {
            self.last_tail.as_bytes()
        } else {
            &br#"","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}"#[..]
        });
        out.extend_from_slice(b"\n\n");
    }

    fn trailer(&mut self, out: &mut Vec<u8>, _times: &ServerTimes) {
        if let Some(usage) = &self.usage {
            out.extend_from_slice(usage.as_bytes());
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
    }
}

pub(crate) async fn completions(
    State(shared): AppState,
    Arrival(t0): Arrival,
    body: Bytes,
) -> Answer {
    let req: CompletionRequest = parse_body(&body)?;
    let budget = token_budget(&shared, "max_tokens", req.max_tokens)?;
    let prompt_tokens = req.prompt.as_ref().map(count_prompt).unwrap_or(0);
    let r = resolve(
        &shared,
        t0,
        prompt_tokens,
        budget,
        req.ignore_eos.unwrap_or(false),
    )?;
    let tokens = r.tokens;
    let gen = TokenGen::new(shared.config.seed, r.n);
    let id = format!("cmpl-{}", r.n);
    let model = shared.model_json.as_str();
    let created = r.created;
    let finish = r.finish.openai();

    if req.stream.unwrap_or(false) {
        let usage = wants_usage(&shared, &req.stream_options).then(|| {
            format!(
                "data: {{\"id\":\"{id}\",\"object\":\"text_completion\",\"created\":{created},\"model\":{model},\"choices\":[],\"usage\":{}}}\n\n",
                usage_json(prompt_tokens, tokens)
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
            usage,
            last_tail,
        };
        return stream_answer(shared, &r, framer).await;
    }

    let usage = shared
        .config
        .usage
        .then(|| usage_value(prompt_tokens, tokens));
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

fn usage_value(prompt: u64, completion: u32) -> Value {
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + u64::from(completion),
    })
}

// ---------------------------------------------------------------------------------------------
// OpenAI / vLLM: POST /v1/chat/completions

#[derive(Deserialize)]
struct ChatMessage {
    content: Option<Value>,
}

#[derive(Deserialize)]
struct ChatRequest {
    messages: Option<Vec<ChatMessage>>,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    /// Extension: the first R tokens are reasoning (`delta.reasoning_content`).
    sim_reasoning_tokens: Option<u64>,
    ignore_eos: Option<bool>,
}

struct ChatFramer {
    /// Everything of an event up to the delta object.
    head: String,
    gen: TokenGen,
    reasoning: u32,
    usage: Option<String>,
    finish: &'static str,
}

const CHAT_TAIL: &[u8] = br#","logprobs":null,"finish_reason":null}]}"#;

impl Framer for ChatFramer {
    fn preamble(&mut self) -> Option<Bytes> {
        let mut out = Vec::with_capacity(self.head.len() + 96);
        out.extend_from_slice(self.head.as_bytes());
        out.extend_from_slice(br#"{"role":"assistant","content":""}"#);
        out.extend_from_slice(CHAT_TAIL);
        out.extend_from_slice(b"\n\n");
        Some(Bytes::from(out))
    }

    fn content(&mut self, out: &mut Vec<u8>, _chunk: u32, start: u32, end: u32, _last: bool) {
        out.extend_from_slice(self.head.as_bytes());
        out.push(b'{');
        let split = self.reasoning.clamp(start, end);
        if split > start {
            out.extend_from_slice(br#""reasoning_content":""#);
            self.gen.push_text(out, start, split);
            out.push(b'"');
        }
        if end > split {
            if split > start {
                out.push(b',');
            }
            out.extend_from_slice(br#""content":""#);
            self.gen.push_text(out, split, end);
            out.push(b'"');
        }
        out.push(b'}');
        out.extend_from_slice(CHAT_TAIL);
        out.extend_from_slice(b"\n\n");
    }

    fn trailer(&mut self, out: &mut Vec<u8>, _times: &ServerTimes) {
        out.extend_from_slice(self.head.as_bytes());
        out.extend_from_slice(br#"{},"logprobs":null,"finish_reason":""#);
        out.extend_from_slice(self.finish.as_bytes());
        out.extend_from_slice(br#""}]}"#);
        out.extend_from_slice(b"\n\n");
        if let Some(usage) = &self.usage {
            out.extend_from_slice(usage.as_bytes());
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
    }
}

pub(crate) async fn chat_completions(
    State(shared): AppState,
    Arrival(t0): Arrival,
    body: Bytes,
) -> Answer {
    let req: ChatRequest = parse_body(&body)?;
    let (field, requested) = match req.max_completion_tokens {
        Some(n) => ("max_completion_tokens", Some(n)),
        None => ("max_tokens", req.max_tokens),
    };
    let budget = token_budget(&shared, field, requested)?;
    let prompt_tokens: u64 = req
        .messages
        .iter()
        .flatten()
        .filter_map(|m| m.content.as_ref())
        .map(count_prompt)
        .sum();
    let r = resolve(
        &shared,
        t0,
        prompt_tokens,
        budget,
        req.ignore_eos.unwrap_or(false),
    )?;
    let tokens = r.tokens;
    let reasoning = u32::try_from(req.sim_reasoning_tokens.unwrap_or(0))
        .unwrap_or(u32::MAX)
        .min(tokens);
    let gen = TokenGen::new(shared.config.seed, r.n);
    let id = format!("chatcmpl-{}", r.n);
    let model = shared.model_json.as_str();
    let created = r.created;
    let finish = r.finish.openai();

    if req.stream.unwrap_or(false) {
        let usage = wants_usage(&shared, &req.stream_options).then(|| {
            format!(
                "data: {{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"created\":{created},\"model\":{model},\"choices\":[],\"usage\":{}}}\n\n",
                usage_json(prompt_tokens, tokens)
            )
        });
        let head = format!(
            "data: {{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"created\":{created},\"model\":{model},\"choices\":[{{\"index\":0,\"delta\":"
        );
        let framer = ChatFramer {
            head,
            gen,
            reasoning,
            usage,
            finish,
        };
        return stream_answer(shared, &r, framer).await;
    }

    let usage = shared
        .config
        .usage
        .then(|| usage_value(prompt_tokens, tokens));
    let model = shared.config.model.clone();
    whole_answer(shared.clone(), &r, move |_| {
        let reasoning_content = (reasoning > 0).then(|| gen.text(0, reasoning));
        json!({
            "id": id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": gen.text(reasoning, tokens),
                    "reasoning_content": reasoning_content,
                },
                "logprobs": null,
                "finish_reason": finish,
            }],
            "usage": usage,
        })
        .to_string()
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// Hugging Face TGI: POST /generate_stream, POST /generate, GET /info

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

/// Lets `write!` append to a byte buffer.
struct ByteSink<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for ByteSink<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
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

// ---------------------------------------------------------------------------------------------
// llama.cpp native: POST /completion

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
                llama_timings(times, f.prompt_tokens, f.tokens)
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
fn llama_timings(times: &ServerTimes, prompt_tokens: u64, tokens: u32) -> Value {
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
    let req: LlamaRequest = parse_body(&body)?;
    let requested = req
        .n_predict
        .filter(|n| *n > 0)
        .map(|n| u64::try_from(n).unwrap_or(u64::MAX));
    let budget = token_budget(&shared, "n_predict", requested)?;
    let prompt_tokens = req.prompt.as_ref().map(count_prompt).unwrap_or(0);
    let r = resolve(
        &shared,
        t0,
        prompt_tokens,
        budget,
        req.ignore_eos.unwrap_or(false),
    )?;
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
            v["timings"] = llama_timings(times, prompt_tokens, tokens);
        }
        v.to_string()
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// Metadata and simulator endpoints

pub(crate) async fn models(State(shared): AppState) -> Response {
    Json(json!({
        "object": "list",
        "data": [{
            "id": shared.config.model,
            "object": "model",
            "created": unix_now(),
            "owned_by": "servebench-sim",
        }],
    }))
    .into_response()
}

pub(crate) async fn health() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

pub(crate) async fn stats(State(shared): AppState) -> Response {
    Json(shared.stats.snapshot()).into_response()
}

pub(crate) async fn not_found(uri: Uri) -> Response {
    let body = json!({"error": {"message": format!("not found: {}", uri.path()), "type": "not_found_error", "code": 404}});
    json_response(StatusCode::NOT_FOUND, Body::from(body.to_string()))
}

/// `GET /sim/info`: the preset, its parameters and the time scale, so a client can convert
/// what it measured back to simulated time.
pub(crate) async fn sim_info(State(shared): AppState) -> Response {
    let c = &shared.config;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    Json(json!({
        "preset": c.preset.name(),
        "mode": if c.engine.is_some() { "engine" } else { "exact" },
        "time_scale": c.time_scale,
        "model": c.model,
        "metrics_flavor": c.metrics_flavor.as_str(),
        "seed": c.seed,
        "usage": c.usage,
        "tokens_per_chunk": c.tokens_per_chunk,
        "output_tokens": c.output_tokens,
        "prompt_tokens": "whitespace-separated words",
        "exact": if c.engine.is_none() {
            json!({"ttft_ms": ms(c.ttft), "itl_ms": ms(c.itl)})
        } else {
            Value::Null
        },
        "engine": c.engine.as_ref().map(|e| e.to_json()),
        "faults": {
            "error_rate": c.faults.error_rate,
            "rate_limit_rate": c.faults.rate_limit_rate,
            "disconnect_rate": c.faults.disconnect_rate,
            "stall_rate": c.faults.stall_rate,
            "malformed_rate": c.faults.malformed_rate,
            "stall_s": c.faults.stall.as_secs_f64(),
        },
    }))
    .into_response()
}

/// `GET /metrics`: Prometheus text, vLLM's or llama.cpp's names (see `metrics.rs`).
pub(crate) async fn metrics(State(shared): AppState) -> Response {
    let text = match shared.metrics.lock() {
        Ok(m) => metrics::render(shared.config.metrics_flavor, &m, &shared.config.model),
        Err(_) => String::new(),
    };
    let mut r = (StatusCode::OK, text).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

#[derive(Deserialize)]
struct TokenizeRequest {
    /// llama.cpp's form.
    content: Option<Value>,
    /// vLLM's completion form.
    prompt: Option<Value>,
    /// vLLM's chat form.
    messages: Option<Vec<ChatMessage>>,
}

/// The id of a prompt word: a hash into a 128k vocabulary (ids below 1000 are reserved).
fn word_id(word: &str) -> u64 {
    let fnv = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    1000 + splitmix64(fnv) % 127_000
}

/// Token ids of a prompt value, one per token [`count_prompt`] counts.
fn prompt_ids(value: &Value, out: &mut Vec<u64>) {
    match value {
        Value::String(s) => out.extend(s.split_whitespace().map(word_id)),
        Value::Number(n) => out.push(n.as_u64().unwrap_or(0)),
        Value::Array(items) => items.iter().for_each(|v| prompt_ids(v, out)),
        Value::Object(map) => {
            if let Some(t) = map.get("text") {
                prompt_ids(t, out);
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

/// `POST /tokenize`, in llama.cpp's form (`{"content"}` → `{"tokens"}`) or vLLM's
/// (`{"prompt"}` or `{"messages"}` → `{"tokens", "count", "max_model_len"}`). The count is
/// the one the simulator uses for the prompt everywhere else.
pub(crate) async fn tokenize(State(shared): AppState, body: Bytes) -> Answer {
    let req: TokenizeRequest = parse_body(&body)?;
    let mut ids = Vec::new();
    if let Some(content) = &req.content {
        prompt_ids(content, &mut ids);
        return Ok(Json(json!({ "tokens": ids })).into_response());
    }
    if let Some(prompt) = &req.prompt {
        prompt_ids(prompt, &mut ids);
    } else if let Some(messages) = &req.messages {
        for m in messages.iter().filter_map(|m| m.content.as_ref()) {
            prompt_ids(m, &mut ids);
        }
    } else {
        return Err(Reject::BadRequest(
            "expected \"content\", \"prompt\" or \"messages\"".into(),
        ));
    }
    let max_model_len = shared
        .config
        .engine
        .as_ref()
        .map_or(MAX_TOKENS_LIMIT, |e| e.max_model_len);
    Ok(
        Json(json!({ "count": ids.len(), "max_model_len": max_model_len, "tokens": ids }))
            .into_response(),
    )
}
