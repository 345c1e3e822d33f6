//! The control endpoints vLLM and SGLang serve beside their APIs, which a benchmark calls
//! around its runs (`servebench run --reset-prefix-cache`, `--profile`, `--hook`):
//! `POST /reset_prefix_cache` (vLLM) and `POST /flush_cache` (SGLang) empty the prefix cache
//! (`prefix_cache.rs`: the next request finds nothing cached); `POST /start_profile` and
//! `POST /stop_profile` record when the profiler was asked to start and stop (the generation
//! requests received by then), and profile nothing. `GET /sim/control` serves what they did
//! (`state::ControlLog`).
//!
//! With `SimConfig::control_status` each answers that error status and does nothing, as a
//! server without them does (vLLM without its dev endpoints answers 404), so a client's
//! refusal can be tested.
//!
//! # What it must not touch
//! Request numbering, faults, streams and the engine's state.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::common::AppState;
use crate::sim::state::{ControlLog, Shared};

/// What one control endpoint does to the state.
type Act = fn(&Shared, &mut ControlLog);

/// Answers `CODE` (`SimConfig::control_status`) doing nothing, or does `act` and answers 200.
fn control(shared: &Shared, act: Act) -> Response {
    if let Some(code) = shared.config.control_status {
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::NOT_FOUND);
        let body = json!({"detail": "control endpoint not served"});
        return (status, Json(body)).into_response();
    }
    let mut log = shared.control.lock().unwrap_or_else(|e| e.into_inner());
    act(shared, &mut log);
    Json(json!({"status": "ok"})).into_response()
}

fn reset(shared: &Shared, log: &mut ControlLog) {
    if let Ok(mut cache) = shared.prefix_cache.lock() {
        cache.clear();
    }
    log.cache_resets += 1;
}

fn received(shared: &Shared) -> u64 {
    shared.stats.requests.load(Ordering::Relaxed)
}

/// `POST /reset_prefix_cache` (vLLM).
pub(crate) async fn reset_prefix_cache(State(shared): AppState) -> Response {
    control(&shared, reset)
}

/// `POST /flush_cache` (SGLang; it takes GET too).
pub(crate) async fn flush_cache(State(shared): AppState) -> Response {
    control(&shared, reset)
}

/// `POST /start_profile`.
pub(crate) async fn start_profile(State(shared): AppState) -> Response {
    control(&shared, |s, log| {
        log.profile_starts += 1;
        log.requests_at_profile_start = Some(received(s));
    })
}

/// `POST /stop_profile`.
pub(crate) async fn stop_profile(State(shared): AppState) -> Response {
    control(&shared, |s, log| {
        log.profile_stops += 1;
        log.requests_at_profile_stop = Some(received(s));
    })
}

/// `GET /sim/control`: what the control endpoints did.
pub(crate) async fn control_log(State(shared): AppState) -> Response {
    let log = shared.control.lock().unwrap_or_else(|e| e.into_inner());
    Json(log.clone()).into_response()
}
