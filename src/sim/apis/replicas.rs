//! The simulated autoscaler's replica count (`sim/autoscale.rs`) as a monitoring system sees
//! it: the gauge `servebench_sim_replicas` appended to `GET /metrics`, Prometheus' instant
//! query API `GET /api/v1/query?query=NAME` answering that gauge (any other query answers
//! no series, as Prometheus does for a name it has not seen), and `GET /sim/replicas`, the
//! log of every change at its exact simulated time (for tests to hold a client to).
//!
//! # What it must not touch
//! The slots and the decisions: it only reads the autoscaler.

use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::common::{unix_now, AppState};
use crate::sim::autoscale::{DECISION_INTERVAL_S, REPLICAS_GAUGE};
use crate::sim::state::Shared;

/// The gauge's lines for `/metrics`; empty without an autoscaler.
pub(crate) fn gauge(shared: &Shared) -> String {
    let Some(a) = &shared.autoscaler else {
        return String::new();
    };
    format!(
        "# HELP {REPLICAS_GAUGE} Replicas serving (the simulated autoscaler's count).\n# TYPE {REPLICAS_GAUGE} gauge\n{REPLICAS_GAUGE} {}\n",
        a.replicas()
    )
}

/// `%XX` and `+` decoded (a query string's value); invalid escapes kept as they are.
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `GET /api/v1/query?query=Q`: a vector of one sample when Q is the gauge's name and the
/// server has an autoscaler, else an empty vector; 400 without a query.
pub(crate) async fn query(State(shared): AppState, uri: Uri) -> Response {
    let q = (uri.query().unwrap_or(""))
        .split('&')
        .find_map(|kv| kv.strip_prefix("query="))
        .map(decode);
    let Some(q) = q else {
        let body = json!({"status": "error", "errorType": "bad_data", "error": "no query"});
        return (StatusCode::BAD_REQUEST, Json(body)).into_response();
    };
    let result = match &shared.autoscaler {
        Some(a) if q.trim() == REPLICAS_GAUGE => json!([{
            "metric": {"__name__": REPLICAS_GAUGE},
            "value": [unix_now(), a.replicas().to_string()],
        }]),
        _ => json!([]),
    };
    Json(json!({"status": "success", "data": {"resultType": "vector", "result": result}}))
        .into_response()
}

/// `GET /sim/replicas`: the count now and every change, `{"at_s", "replicas"}` in simulated
/// seconds from the server's start; 404 without an autoscaler.
pub(crate) async fn log(State(shared): AppState) -> Response {
    let Some(a) = &shared.autoscaler else {
        return (StatusCode::NOT_FOUND, "no autoscaler (sim --autoscale)").into_response();
    };
    let changes: Vec<_> = (a.log().into_iter())
        .map(|(at_s, replicas)| json!({"at_s": at_s, "replicas": replicas}))
        .collect();
    Json(json!({
        "replicas": a.replicas(),
        "decision_interval_s": DECISION_INTERVAL_S,
        "changes": changes,
    }))
    .into_response()
}
