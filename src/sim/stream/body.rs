//! Responses around a stream: the SSE response that carries a [`Machine`]'s body (with the
//! [`Handoff`] that lets `http1.rs` take the machine to a scheduler thread), non-streamed
//! answers with their faults ([`whole_response`]) and JSON responses.
//!
//! # What it owns
//! Response headers of streamed and non-streamed answers, the handoff slot, and how a fault
//! shows in a non-streamed answer (cut before any byte, late, truncated JSON).
//!
//! # What it must not touch
//! Chunk boundaries and in-stream faults are `machine.rs`'s; schedules are `exact.rs`'s and
//! `engine.rs`'s; sockets are `http1.rs`'s and `sched.rs`'s.
//!
//! # Adding one more
//! A new kind of response (other headers, another content type) is a function here that both
//! paces can call; keep the bytes of existing responses unchanged (the tests check them).

use std::io;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tokio::time::Instant;

use super::machine::{machine_body, wait_until, Drive, Framer, Machine, Pace};
use crate::sim::faults::Fault;
use crate::sim::state::{Counters, Shared};
use crate::sim::time::offset;

/// Attached to an exact-mode streamed response (as a response extension): lets the lean
/// HTTP/1.1 server (`http1.rs`) take the stream's machine and drive it from the scheduler
/// thread instead of polling the body. Whoever takes the machine first drives it; the body
/// then ends without a byte.
#[derive(Clone)]
pub(crate) struct Handoff(Arc<dyn Fn() -> Option<Box<dyn Drive>> + Send + Sync>);

impl Handoff {
    pub(crate) fn take(&self) -> Option<Box<dyn Drive>> {
        (self.0)()
    }
}

/// A response whose body is `machine`'s stream, with the SSE headers; with a [`Handoff`]
/// when `handoff` is set.
pub(super) fn machine_response<F: Framer, P: Pace>(
    machine: Machine<F, P>,
    handoff: bool,
) -> Response {
    let mut response = if handoff {
        let slot = Arc::new(Mutex::new(Some(machine)));
        let taker = slot.clone();
        let take = move || {
            let m = taker.lock().ok()?.take()?;
            Some(Box::new(m) as Box<dyn Drive>)
        };
        let mut response = machine_body(move || slot.lock().ok()?.take()).into_response();
        response.extensions_mut().insert(Handoff(Arc::new(take)));
        response
    } else {
        machine_body(move || Some(machine)).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The answer of a non-streamed request whose generation ended at `end`, with its fault.
pub(super) async fn whole_response(
    shared: Arc<Shared>,
    fault: Fault,
    end: Instant,
    body: impl FnOnce() -> String,
) -> Response {
    let text = match fault {
        Fault::Disconnect => {
            Counters::bump(&shared.stats.disconnected);
            let cut = futures_util::stream::once(async {
                Err::<Bytes, _>(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "simulated disconnect",
                ))
            });
            return json_response(StatusCode::OK, Body::from_stream(cut));
        }
        Fault::Stall => {
            Counters::bump(&shared.stats.stalled);
            if !wait_until(&shared, offset(end, shared.real.stall)).await {
                return StatusCode::SERVICE_UNAVAILABLE.into_response();
            }
            body()
        }
        Fault::Malformed => {
            Counters::bump(&shared.stats.malformed);
            "{\"choices\": [tru".to_string()
        }
        Fault::None => {
            Counters::bump(&shared.stats.ok);
            body()
        }
        Fault::Error500 | Fault::RateLimit => body(),
    };
    json_response(StatusCode::OK, Body::from(text))
}

/// A response with `content-type: application/json`.
pub(crate) fn json_response(status: StatusCode, body: Body) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
