//! Endpoints that generate nothing: `GET /v1/models`, `GET /health`, `GET /sim/stats`,
//! `GET /sim/info`, `GET /metrics`, `POST /tokenize`, `GET /sim/otlp` (the requests' spans,
//! `sim/spans.rs`), and the 404 fallback.
//!
//! # What it owns
//! Their documents: the counters (`stats`), the configuration as a client needs it to convert
//! back to simulated time (`sim_info`), Prometheus text (rendered by `metrics.rs`) and the
//! prompt token ids of `tokenize`, one per token `count_prompt` counts.
//!
//! # What it must not touch
//! Request numbering and faults (only generation requests get them), streams, the engine's
//! state (it reads the metrics snapshot only).
//!
//! # Adding one more
//! Write a handler here, re-export it in `apis/mod.rs` and register its route in
//! `sim/mod.rs`'s `build_router`.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::common::{unix_now, AppState, ChatMessage};
use super::reject::{parse_body, Answer, Reject};
use crate::sim::config::MAX_TOKENS_LIMIT;
use crate::sim::metrics;
use crate::sim::stream::json_response;
use crate::sim::text::splitmix64;

pub(crate) async fn models(State(shared): AppState) -> Response {
    let base = &shared.config.model;
    let model = |id: &str, parent: Option<&str>| {
        let owner = "servebench-sim";
        json!({"id": id, "object": "model", "created": unix_now(), "owned_by": owner, "parent": parent})
    };
    // The LoRA adapters served beside the base model, as vLLM lists them.
    let adapters = (shared.config.lora.iter()).flat_map(|l| l.adapters.iter());
    let data: Vec<Value> = std::iter::once(model(base, None))
        .chain(adapters.map(|a| model(a, Some(base))))
        .collect();
    Json(json!({"object": "list", "data": data})).into_response()
}

/// `GET /sim/otlp`: the newest finished requests' spans, as an OTLP JSON file
/// (`sim/spans.rs`).
pub(crate) async fn otlp(State(shared): AppState) -> Response {
    Json(shared.spans.otlp_json()).into_response()
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
    } + &super::replicas::gauge(&shared);
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
