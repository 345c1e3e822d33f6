//! A generation request answered without generating ([`Reject`]: a bad request, an unknown
//! model, one of the HTTP-level faults, a queue timeout, a shutdown) and reading a request's
//! JSON body ([`parse_body`], off the serving threads when large: [`parse_large`]).
//!
//! # What it owns
//! Each rejection's status and body (vLLM's words), [`Answer`] (a handler's result), and how a
//! typed error of the simulator's readers (`sim/error.rs`) becomes a 400: its message, as is.
//!
//! # What it must not touch
//! Any API's fields, the request life cycle (`common.rs`), pacing (`stream/`).

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::sim::error::{FormError, GuidedError, MediaError, TranscriptionError};
use crate::sim::faults::{ERROR_429_BODY, ERROR_500_BODY};
use crate::sim::stream::json_response;

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

pub(crate) type Answer = Result<Response, Reject>;

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

/// A guided decoding request that cannot be answered is a 400 saying why.
impl From<GuidedError> for Reject {
    fn from(e: GuidedError) -> Self {
        Reject::BadRequest(e.to_string())
    }
}

/// A malformed image, video or audio part is a 400 naming it.
impl From<MediaError> for Reject {
    fn from(e: MediaError) -> Self {
        Reject::BadRequest(e.to_string())
    }
}

/// A body that is not a form is a 400 saying what.
impl From<FormError> for Reject {
    fn from(e: FormError) -> Self {
        Reject::BadRequest(e.to_string())
    }
}

/// A transcription form that does not read is a 400 naming what is wrong.
impl From<TranscriptionError> for Reject {
    fn from(e: TranscriptionError) -> Self {
        Reject::BadRequest(e.to_string())
    }
}
