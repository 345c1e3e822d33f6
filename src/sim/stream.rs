//! The streaming side of the simulated server: turns a [`Framer`] (one per wire format) and a
//! source of tokens into a streamed response body, injects in-stream faults and accounts for
//! lateness. Two sources:
//! - exact mode: a [`Plan`], whose every content chunk is handed over at its exact absolute
//!   deadline ([`sse_response`], [`non_stream_response`]);
//! - engine mode: the request's channel from the engine task (`engine.rs`); chunks are written
//!   as soon as the engine has produced their tokens ([`engine_sse_response`],
//!   [`engine_non_stream_response`]).
//!
//! It knows nothing about any API's JSON; the framers in `apis.rs` do. It must not use any of
//! servebench's client code. To support a new wire format, implement [`Framer`]; the schedule,
//! faults and statistics come for free.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::engine::Event;
use super::faults::{Fault, MALFORMED_EVENT};
use super::metrics::ServerMetrics;
use super::{Counters, Shared};

/// Sleeps longer than this also watch for shutdown; shorter ones only check a flag afterwards.
const LONG_SLEEP: Duration = Duration::from_millis(50);

/// Produces the bytes of one API's streamed response.
pub(crate) trait Framer: Send + 'static {
    /// Bytes handed over at `t0`, before the first content chunk (e.g. the chat role chunk).
    fn preamble(&mut self) -> Option<Bytes> {
        None
    }

    /// Appends content chunk `chunk`, carrying tokens `[start, end)`, to `out`. `last` is true
    /// for the final content chunk.
    fn content(&mut self, out: &mut Vec<u8>, chunk: u32, start: u32, end: u32, last: bool);

    /// Appends what follows the last content chunk (finish, usage, terminator) to `out`.
    fn trailer(&mut self, out: &mut Vec<u8>);

    /// Rough size of one content chunk of `tokens` tokens, to size buffers.
    fn size_hint(&self, tokens: u32) -> usize {
        256 + tokens as usize * 64
    }
}

/// The schedule and fault of one request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub(crate) t0: Instant,
    pub(crate) ttft: Duration,
    pub(crate) itl: Duration,
    pub(crate) tokens: u32,
    pub(crate) tokens_per_chunk: u32,
    pub(crate) fault: Fault,
    pub(crate) stall: Duration,
}

impl Plan {
    /// Number of content chunks: `ceil(tokens / tokens_per_chunk)`, at least 1.
    pub(crate) fn chunks(&self) -> u32 {
        self.tokens.div_ceil(self.tokens_per_chunk.max(1)).max(1)
    }

    /// Scheduled instant of content chunk `c`.
    pub(crate) fn deadline(&self, c: u32) -> Instant {
        offset(offset(self.t0, self.ttft), mul(self.itl, c))
    }
}

fn mul(d: Duration, n: u32) -> Duration {
    d.checked_mul(n).unwrap_or(Duration::MAX)
}

/// `base + d`, saturating at a far-future instant instead of panicking.
pub(crate) fn offset(base: Instant, d: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);
    base.checked_add(d)
        .or_else(|| base.checked_add(FAR))
        .unwrap_or(base)
}

/// Sleeps until `deadline`; false if the server is shutting down.
async fn wait_until(shared: &Shared, deadline: Instant) -> bool {
    let now = Instant::now();
    if deadline > now {
        let sleep = async {
            if shared.config.precise_timing {
                super::precise::sleep_until(deadline).await;
            } else {
                tokio::time::sleep_until(deadline).await;
            }
        };
        if deadline - now > LONG_SLEEP {
            tokio::select! {
                _ = sleep => {}
                _ = shared.shutdown.wait() => return false,
            }
        } else {
            sleep.await;
        }
    }
    !shared.shutdown.is_triggered()
}

fn record_lateness(stats: &Counters, deadline: Instant) {
    stats.record_lateness(Instant::now().saturating_duration_since(deadline));
}

/// Exact mode's server metrics for one request: counted as running while alive; its tokens
/// and success are added when it ends. Two lock operations per request, none per chunk.
pub(crate) struct Active {
    metrics: Arc<Mutex<ServerMetrics>>,
    generated: u32,
    ok: bool,
}

impl Active {
    /// Starts counting a request of `prompt` prompt tokens on `plan`'s schedule. The TTFT and
    /// per-token histograms get the schedule's (simulated) values.
    pub(crate) fn exact(shared: &Shared, prompt: u64, plan: &Plan) -> Self {
        if let Ok(mut m) = shared.metrics.lock() {
            let c = &shared.config;
            m.running += 1;
            m.prompt_tokens += prompt;
            m.ttft.observe(c.ttft.as_secs_f64());
            let per_token = c.itl.as_secs_f64() / f64::from(c.tokens_per_chunk.max(1));
            m.tpot
                .observe_n(per_token, u64::from(plan.tokens.saturating_sub(1)));
        }
        Self {
            metrics: shared.metrics.clone(),
            generated: 0,
            ok: false,
        }
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        if let Ok(mut m) = self.metrics.lock() {
            m.running = m.running.saturating_sub(1);
            m.generation_tokens += u64::from(self.generated);
            if self.ok {
                m.request_success += 1;
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Preamble,
    Content,
    Fault,
    Resume,
    Done,
}

struct StreamState<F> {
    shared: Arc<Shared>,
    plan: Plan,
    framer: F,
    phase: Phase,
    /// Next content chunk to send.
    next: u32,
    chunks: u32,
    /// The in-stream fault fires after this many content chunks.
    fault_after: u32,
    /// Total time the schedule was pushed back by a stall.
    shift: Duration,
    active: Active,
}

impl<F: Framer> StreamState<F> {
    fn deadline(&self, c: u32) -> Instant {
        offset(self.plan.deadline(c), self.shift)
    }

    fn abort(&mut self) -> Option<io::Result<Bytes>> {
        self.phase = Phase::Done;
        Some(Err(io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "simulated server shutting down",
        )))
    }

    fn finished(&mut self) {
        self.active.ok = true;
        if self.plan.fault == Fault::None {
            Counters::bump(&self.shared.stats.ok);
        }
    }

    async fn step(&mut self) -> Option<io::Result<Bytes>> {
        loop {
            match self.phase {
                Phase::Preamble => {
                    self.phase = Phase::Content;
                    if let Some(bytes) = self.framer.preamble() {
                        return Some(Ok(bytes));
                    }
                }
                Phase::Content => {
                    let c = self.next;
                    let deadline = self.deadline(c);
                    if !wait_until(&self.shared, deadline).await {
                        return self.abort();
                    }
                    record_lateness(&self.shared.stats, deadline);
                    let k = self.plan.tokens_per_chunk.max(1);
                    let start = c.saturating_mul(k).min(self.plan.tokens);
                    let end = start.saturating_add(k).min(self.plan.tokens);
                    self.next = c + 1;
                    self.active.generated = end;
                    let last = self.next >= self.chunks;
                    let mut buf = Vec::with_capacity(self.framer.size_hint(end - start));
                    self.framer.content(&mut buf, c, start, end, last);
                    if self.plan.fault.in_stream() && self.next == self.fault_after {
                        self.phase = Phase::Fault;
                    } else if last {
                        self.framer.trailer(&mut buf);
                        self.finished();
                        self.phase = Phase::Done;
                    }
                    return Some(Ok(Bytes::from(buf)));
                }
                Phase::Fault => {
                    self.phase = Phase::Resume;
                    match self.plan.fault {
                        Fault::Disconnect => {
                            Counters::bump(&self.shared.stats.disconnected);
                            // Cut when the next chunk would have been due, after giving hyper
                            // a chance to flush what was already handed over (an error from
                            // the body drops its unflushed buffer).
                            let cut_at = self.deadline(self.next);
                            if !wait_until(&self.shared, cut_at).await {
                                return self.abort();
                            }
                            tokio::task::yield_now().await;
                            self.phase = Phase::Done;
                            return Some(Err(io::Error::new(
                                io::ErrorKind::ConnectionReset,
                                "simulated disconnect",
                            )));
                        }
                        Fault::Stall => {
                            Counters::bump(&self.shared.stats.stalled);
                            let last_sent = self.deadline(self.next.saturating_sub(1));
                            if !wait_until(&self.shared, offset(last_sent, self.plan.stall)).await {
                                return self.abort();
                            }
                            self.shift = self.shift.saturating_add(self.plan.stall);
                        }
                        Fault::Malformed => {
                            Counters::bump(&self.shared.stats.malformed);
                            return Some(Ok(Bytes::from_static(MALFORMED_EVENT)));
                        }
                        Fault::None | Fault::Error500 | Fault::RateLimit => {}
                    }
                }
                Phase::Resume => {
                    if self.next < self.chunks {
                        self.phase = Phase::Content;
                        continue;
                    }
                    self.phase = Phase::Done;
                    let mut buf = Vec::new();
                    self.framer.trailer(&mut buf);
                    self.finished();
                    if !buf.is_empty() {
                        return Some(Ok(Bytes::from(buf)));
                    }
                }
                Phase::Done => return None,
            }
        }
    }
}

/// Headers shared by all streamed responses.
fn sse_headers(response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
}

/// A `200 text/event-stream` response whose body follows `plan`, framed by `framer`.
pub(crate) fn sse_response<F: Framer>(
    shared: Arc<Shared>,
    plan: Plan,
    framer: F,
    active: Active,
) -> Response {
    let chunks = plan.chunks();
    let state = StreamState {
        active,
        shared,
        plan,
        framer,
        phase: Phase::Preamble,
        next: 0,
        chunks,
        fault_after: chunks.div_ceil(2),
        shift: Duration::ZERO,
    };
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        let item = st.step().await;
        item.map(|item| (item, st))
    });
    let mut response = Body::from_stream(stream).into_response();
    sse_headers(&mut response);
    response
}

/// A non-streamed JSON response, handed over when the whole generation would have finished
/// (`t0 + ttft + (chunks-1)*itl`). In-stream faults map to: disconnect = the body is cut before
/// any byte, stall = the answer comes `stall` later, malformed = a truncated JSON body.
pub(crate) async fn non_stream_response(
    shared: Arc<Shared>,
    plan: Plan,
    mut active: Active,
    body: impl FnOnce() -> String,
) -> Response {
    let end = plan.deadline(plan.chunks() - 1);
    if !wait_until(&shared, end).await {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    record_lateness(&shared.stats, end);
    active.generated = plan.tokens;
    active.ok = true;
    whole_response(shared, plan.fault, end, body).await
}

/// The answer of a non-streamed request whose generation ended at `end`, with its fault.
async fn whole_response(
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

// ---------------------------------------------------------------------------------------------
// Engine mode: chunks follow the engine's token events.

/// A request served by the engine: its channel (already past `Event::Scheduled`), its
/// output length, tokens per chunk and fault.
pub(crate) struct EngineJob {
    pub(crate) rx: mpsc::UnboundedReceiver<Event>,
    pub(crate) tokens: u32,
    pub(crate) tokens_per_chunk: u32,
    pub(crate) fault: Fault,
}

struct EngineStream<F> {
    shared: Arc<Shared>,
    job: EngineJob,
    framer: F,
    phase: Phase,
    next: u32,
    chunks: u32,
    fault_after: u32,
    /// Output tokens the engine has produced so far, and when the last of them was.
    avail: u32,
    at: Option<Instant>,
}

impl<F: Framer> EngineStream<F> {
    fn chunk_end(&self, c: u32) -> u32 {
        c.saturating_add(1)
            .saturating_mul(self.job.tokens_per_chunk.max(1))
            .min(self.job.tokens)
    }

    fn take(&mut self, event: Event) {
        if let Event::Tokens { upto, at } = event {
            self.avail = self.avail.max(upto);
            self.at = Some(at);
        }
    }

    /// Waits until the engine has produced `tokens` tokens; false if it went away.
    async fn wait_for(&mut self, tokens: u32) -> bool {
        while self.avail < tokens {
            tokio::select! {
                e = self.job.rx.recv() => match e {
                    Some(e) => self.take(e),
                    None => return false,
                },
                _ = self.shared.shutdown.wait() => return false,
            }
        }
        while let Ok(e) = self.job.rx.try_recv() {
            self.take(e);
        }
        !self.shared.shutdown.is_triggered()
    }

    fn abort(&mut self) -> Option<io::Result<Bytes>> {
        self.phase = Phase::Done;
        Some(Err(io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "simulated server shutting down",
        )))
    }

    fn finished(&self) {
        if self.job.fault == Fault::None {
            Counters::bump(&self.shared.stats.ok);
        }
    }

    async fn step(&mut self) -> Option<io::Result<Bytes>> {
        loop {
            match self.phase {
                Phase::Preamble => {
                    self.phase = Phase::Content;
                    if let Some(bytes) = self.framer.preamble() {
                        return Some(Ok(bytes));
                    }
                }
                Phase::Content => {
                    if !self.wait_for(self.chunk_end(self.next)).await {
                        return self.abort();
                    }
                    if let Some(at) = self.at {
                        record_lateness(&self.shared.stats, at);
                    }
                    // Every chunk whose tokens exist goes out in one write.
                    let mut buf =
                        Vec::with_capacity(self.framer.size_hint(self.job.tokens_per_chunk));
                    loop {
                        let c = self.next;
                        let start = c
                            .saturating_mul(self.job.tokens_per_chunk.max(1))
                            .min(self.job.tokens);
                        let end = self.chunk_end(c);
                        self.next = c + 1;
                        let last = self.next >= self.chunks;
                        self.framer.content(&mut buf, c, start, end, last);
                        if self.job.fault.in_stream() && self.next == self.fault_after {
                            self.phase = Phase::Fault;
                            break;
                        }
                        if last {
                            self.framer.trailer(&mut buf);
                            self.finished();
                            self.phase = Phase::Done;
                            break;
                        }
                        if self.avail < self.chunk_end(self.next) {
                            break;
                        }
                    }
                    return Some(Ok(Bytes::from(buf)));
                }
                Phase::Fault => {
                    self.phase = Phase::Resume;
                    match self.job.fault {
                        Fault::Disconnect => {
                            Counters::bump(&self.shared.stats.disconnected);
                            // Cut when the next chunk would have gone out.
                            if !self.wait_for(self.chunk_end(self.next)).await {
                                return self.abort();
                            }
                            tokio::task::yield_now().await;
                            self.phase = Phase::Done;
                            return Some(Err(io::Error::new(
                                io::ErrorKind::ConnectionReset,
                                "simulated disconnect",
                            )));
                        }
                        Fault::Stall => {
                            Counters::bump(&self.shared.stats.stalled);
                            let until = offset(Instant::now(), self.shared.real.stall);
                            if !wait_until(&self.shared, until).await {
                                return self.abort();
                            }
                        }
                        Fault::Malformed => {
                            Counters::bump(&self.shared.stats.malformed);
                            return Some(Ok(Bytes::from_static(MALFORMED_EVENT)));
                        }
                        Fault::None | Fault::Error500 | Fault::RateLimit => {}
                    }
                }
                Phase::Resume => {
                    if self.next < self.chunks {
                        self.phase = Phase::Content;
                        continue;
                    }
                    self.phase = Phase::Done;
                    let mut buf = Vec::new();
                    self.framer.trailer(&mut buf);
                    self.finished();
                    if !buf.is_empty() {
                        return Some(Ok(Bytes::from(buf)));
                    }
                }
                Phase::Done => return None,
            }
        }
    }
}

/// A `200 text/event-stream` response whose chunks go out as the engine produces them.
pub(crate) fn engine_sse_response<F: Framer>(
    shared: Arc<Shared>,
    job: EngineJob,
    framer: F,
) -> Response {
    let chunks = job.tokens.div_ceil(job.tokens_per_chunk.max(1)).max(1);
    let state = EngineStream {
        shared,
        job,
        framer,
        phase: Phase::Preamble,
        next: 0,
        chunks,
        fault_after: chunks.div_ceil(2),
        avail: 0,
        at: None,
    };
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        let item = st.step().await;
        item.map(|item| (item, st))
    });
    let mut response = Body::from_stream(stream).into_response();
    sse_headers(&mut response);
    response
}

/// A non-streamed answer once the engine has produced every token (faults as in
/// [`non_stream_response`]).
pub(crate) async fn engine_non_stream_response(
    shared: Arc<Shared>,
    mut job: EngineJob,
    body: impl FnOnce() -> String,
) -> Response {
    let mut at = None;
    let mut avail = 0;
    while avail < job.tokens {
        let e = tokio::select! {
            e = job.rx.recv() => e,
            _ = shared.shutdown.wait() => None,
        };
        match e {
            Some(Event::Tokens { upto, at: t }) => {
                avail = upto;
                at = Some(t);
            }
            Some(_) => {}
            None => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
        }
    }
    let end = at.unwrap_or_else(Instant::now);
    record_lateness(&shared.stats, end);
    whole_response(shared, job.fault, end, body).await
}
