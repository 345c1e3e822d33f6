//! Request ids and spans: the `x-request-id` a request sends, returned on its response and
//! naming its span as vLLM names its requests, and the span each generation request leaves
//! (`GET /sim/otlp`, `sim/spans.rs`) once its answer's last byte is written.
//!
//! # What it owns
//! [`with_request_id`] (the middleware every route runs under), [`request_id`] (the id of the
//! request being handled), [`Seed`] (a span's start) and [`Traced`] (a framer that keeps the
//! span when the stream ends).
//!
//! # What it must not touch
//! Any API's wire format, the request life cycle (`common.rs`), pacing (`stream/`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::HeaderValue;
use axum::response::Response;
use tokio::time::Instant;

use crate::sim::spans::Span;
use crate::sim::state::Shared;
use crate::sim::stream::{Framer, ServerTimes};

tokio::task_local! {
    /// The request id a handler's span carries (`gen_ai.request.id`), set by
    /// [`with_request_id`] around the handler.
    static TRACE_ID: Option<String>;
}

/// The request id of the request whose handler runs now ([`with_request_id`]), when it sent
/// one.
pub(super) fn request_id() -> Option<String> {
    TRACE_ID.try_with(Clone::clone).ok().flatten()
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
pub(super) struct Seed {
    n: u64,
    request_id: String,
    t0: Instant,
    prompt_tokens: u64,
    tokens: u32,
}

impl Seed {
    /// Request `n`'s span, begun at `t0`: its id the one the request sent, else `sim-<n>`.
    pub(super) fn new(
        n: u64,
        request_id: Option<String>,
        t0: Instant,
        prompt_tokens: u64,
        tokens: u32,
    ) -> Seed {
        Seed {
            n,
            request_id: request_id.unwrap_or_else(|| format!("sim-{n}")),
            t0,
            prompt_tokens,
            tokens,
        }
    }

    /// Keeps the request's span, ending now, with what the server spent on it.
    pub(super) fn finish(self, shared: &Shared, times: &ServerTimes) {
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
pub(super) struct Traced<F> {
    inner: F,
    shared: Arc<Shared>,
    seed: Option<Seed>,
}

impl<F> Traced<F> {
    /// `inner`, keeping `seed`'s span in `shared` once its trailer is written.
    pub(super) fn new(inner: F, shared: Arc<Shared>, seed: Seed) -> Self {
        Traced {
            inner,
            shared,
            seed: Some(seed),
        }
    }
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
