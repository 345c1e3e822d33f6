//! The streaming side of the simulated server: turns a [`Framer`] (one per wire format) and a
//! source of tokens into a streamed response body, injects in-stream faults and accounts for
//! lateness. Two sources:
//! - exact mode: a [`Plan`], whose every content chunk is handed over at its exact absolute
//!   deadline ([`sse_response`], [`non_stream_response`]);
//! - engine mode: the request's channel from the engine task (`engine.rs`); chunks are written
//!   as soon as the engine has produced their tokens ([`engine_sse_response`],
//!   [`engine_non_stream_response`]).
//!
//! Both sources drive one state machine ([`Machine`], with a [`Pace`] per source): chunk
//! boundaries, the in-stream fault and the trailer are written once. A machine never blocks;
//! it is driven either as an async response body, or — exact mode with the real clock, under
//! `http1.rs` — by the scheduler thread (`sched.rs`), which takes it out of the response
//! through the [`Handoff`] extension.
//!
//! It knows nothing about any API's JSON; the framers in `apis.rs` do. It must not use any of
//! servebench's client code. To support a new wire format, implement [`Framer`]; the schedule,
//! faults and statistics come for free.

use std::future::Future;
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
use super::state::{Counters, Shared};
use super::time::{self, mul, offset};

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
    /// `times`: what the server spent on the request (llama.cpp reports it).
    fn trailer(&mut self, out: &mut Vec<u8>, times: &ServerTimes);
}

/// What the server spent on one request, in simulated time: the source of llama.cpp's
/// `timings` (`apis.rs::llama_timings`). Defined as llama.cpp measures them:
/// - `prompt`: from when the request's prompt processing started (engine mode: the start of
///   the step that carried its first prefill chunk, so time spent waiting for a slot or in the
///   queue is not in it; exact mode: the arrival) to its first output token;
/// - `predicted`: from the first output token to the last (zero for one token).
///
/// Exact mode reports its schedule (`ttft`, and `itl / tokens_per_chunk` per token after the
/// first); engine mode what the engine did for that request (see [`EnginePace`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ServerTimes {
    pub(crate) prompt: Duration,
    pub(crate) predicted: Duration,
}

impl ServerTimes {
    /// Exact mode's times for a request of `tokens` output tokens.
    pub(crate) fn schedule(shared: &Shared, tokens: u32) -> Self {
        let c = &shared.config;
        let per_token = c.itl / c.tokens_per_chunk.max(1);
        Self {
            prompt: c.ttft,
            predicted: mul(per_token, tokens.saturating_sub(1)),
        }
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

/// Sleeps until `deadline`; false if the server is shutting down.
async fn wait_until(shared: &Shared, deadline: Instant) -> bool {
    let now = Instant::now();
    if deadline > now {
        let sleep = time::sleep_until(shared.config.precise_timing, deadline);
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

fn record_lateness(stats: &Counters, now: Instant, deadline: Instant) {
    stats.record_lateness(now.saturating_duration_since(deadline));
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

/// What a stream does next, as decided by [`Machine::step`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Bytes were appended to the output; call `step` again.
    Sent,
    /// Nothing more can go out before this happens; then call `step` again.
    Wait(Wait),
    /// Cut the connection (a simulated disconnect) once what was appended is flushed.
    Cut,
    /// The stream is complete once what was appended is flushed.
    End,
}

/// What a waiting stream waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// An instant on the schedule.
    Until(Instant),
    /// More tokens from the engine.
    Tokens,
}

/// Where a stream's chunks come from and when they are due: the exact schedule
/// ([`ExactPace`]) or the engine's token events ([`EnginePace`]).
pub(crate) trait Pace: Send + 'static {
    /// Whether content chunk `c`, which ends at token `end`, can go out at `now`: the instant
    /// it became due (its lateness is measured from there), or what to wait for.
    fn due(&self, c: u32, end: u32, now: Instant) -> Result<Instant, Wait>;
    /// A stall fault after content chunk `next - 1`: when the stream resumes.
    fn stall(&mut self, next: u32, now: Instant) -> Instant;
    /// Content up to token `end` was handed over.
    fn sent(&mut self, _end: u32) {}
    /// Every content chunk was handed over.
    fn finished(&mut self) {}
    /// What the server spent on the request (called once every content chunk went out).
    fn times(&self, shared: &Shared, tokens: u32) -> ServerTimes;
    /// Waits for `wait`; false if the server is shutting down (or the engine went away).
    fn wait(&mut self, shared: &Shared, wait: Wait) -> impl Future<Output = bool> + Send;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Preamble,
    Content,
    Fault,
    Stalled(Instant),
    CutWhenDue,
    Resume,
    Cut,
    Done,
}

/// One streamed response as a synchronous state machine: its chunk boundaries, in-stream
/// fault and trailer, for either [`Pace`]. It never blocks: [`Machine::step`] says what to
/// wait for, and a driver waits — the async body ([`machine_body`]) or the exact-mode
/// scheduler thread (`sched.rs`), which serves every due stream from one loop.
pub(crate) struct Machine<F, P> {
    shared: Arc<Shared>,
    framer: F,
    pace: P,
    fault: Fault,
    tokens: u32,
    tokens_per_chunk: u32,
    phase: Phase,
    /// Next content chunk to send.
    next: u32,
    chunks: u32,
    /// The in-stream fault fires after this many content chunks.
    fault_after: u32,
}

impl<F: Framer, P: Pace> Machine<F, P> {
    pub(crate) fn new(
        shared: Arc<Shared>,
        framer: F,
        pace: P,
        tokens: u32,
        tokens_per_chunk: u32,
        fault: Fault,
    ) -> Self {
        let tokens_per_chunk = tokens_per_chunk.max(1);
        let chunks = tokens.div_ceil(tokens_per_chunk).max(1);
        Self {
            shared,
            framer,
            pace,
            fault,
            tokens,
            tokens_per_chunk,
            phase: Phase::Preamble,
            next: 0,
            chunks,
            fault_after: chunks.div_ceil(2),
        }
    }

    /// First token after content chunk `c`.
    fn chunk_end(&self, c: u32) -> u32 {
        c.saturating_add(1)
            .saturating_mul(self.tokens_per_chunk)
            .min(self.tokens)
    }

    fn trailer(&mut self, out: &mut Vec<u8>) {
        let times = self.pace.times(&self.shared, self.tokens);
        self.framer.trailer(out, &times);
        self.pace.finished();
        if self.fault == Fault::None {
            Counters::bump(&self.shared.stats.ok);
        }
        self.phase = Phase::Done;
    }

    /// Advances the stream at `now`, appending what goes out to `out`. Waiting states do not
    /// change on repeated calls, so a driver may call again after a spurious wake-up.
    pub(crate) fn step(&mut self, now: Instant, out: &mut Vec<u8>) -> Step {
        loop {
            match self.phase {
                Phase::Preamble => {
                    self.phase = Phase::Content;
                    if let Some(bytes) = self.framer.preamble() {
                        out.extend_from_slice(&bytes);
                        return Step::Sent;
                    }
                }
                Phase::Content => {
                    let c = self.next;
                    let end = self.chunk_end(c);
                    let due = match self.pace.due(c, end, now) {
                        Ok(due) => due,
                        Err(wait) => return Step::Wait(wait),
                    };
                    record_lateness(&self.shared.stats, now, due);
                    let start = c.saturating_mul(self.tokens_per_chunk).min(self.tokens);
                    self.next = c + 1;
                    self.pace.sent(end);
                    let last = self.next >= self.chunks;
                    self.framer.content(out, c, start, end, last);
                    if self.fault.in_stream() && self.next == self.fault_after {
                        self.phase = Phase::Fault;
                    } else if last {
                        self.trailer(out);
                    }
                    return Step::Sent;
                }
                Phase::Fault => {
                    self.phase = Phase::Resume;
                    let stats = &self.shared.stats;
                    match self.fault {
                        // Cut when the next chunk would have gone out.
                        Fault::Disconnect => {
                            Counters::bump(&stats.disconnected);
                            self.phase = Phase::CutWhenDue;
                        }
                        Fault::Stall => {
                            Counters::bump(&stats.stalled);
                            self.phase = Phase::Stalled(self.pace.stall(self.next, now));
                        }
                        Fault::Malformed => {
                            Counters::bump(&stats.malformed);
                            out.extend_from_slice(MALFORMED_EVENT);
                            return Step::Sent;
                        }
                        Fault::None | Fault::Error500 | Fault::RateLimit => {}
                    }
                }
                Phase::Stalled(until) => {
                    if now < until {
                        return Step::Wait(Wait::Until(until));
                    }
                    self.phase = Phase::Resume;
                }
                Phase::CutWhenDue => {
                    if let Err(wait) = self.pace.due(self.next, self.chunk_end(self.next), now) {
                        return Step::Wait(wait);
                    }
                    self.phase = Phase::Cut;
                }
                Phase::Resume => {
                    if self.next < self.chunks {
                        self.phase = Phase::Content;
                    } else {
                        self.trailer(out);
                        return Step::Sent;
                    }
                }
                Phase::Cut => return Step::Cut,
                Phase::Done => return Step::End,
            }
        }
    }
}

/// A response body driven by `machine` on the async runtime: each burst of chunks that are
/// due together is one body frame.
/// The machine comes from `source` at the first poll (`None`: the body is empty).
fn machine_body<F, P, S>(source: S) -> Body
where
    F: Framer,
    P: Pace,
    S: FnOnce() -> Option<Machine<F, P>> + Send + 'static,
{
    let stream = futures_util::stream::unfold((Some(source), None), |state| async move {
        let (source, machine) = state;
        let mut m = match machine {
            Some(m) => m,
            None => source?()?,
        };
        let mut out = Vec::new();
        loop {
            let step = m.step(Instant::now(), &mut out);
            if step == Step::Sent {
                continue;
            }
            if !out.is_empty() {
                // Hand over what is ready first; the next call finds the same step again.
                return Some((Ok(Bytes::from(out)), (None, Some(m))));
            }
            let cut = |kind, why| Some((Err(io::Error::new(kind, why)), (None, None)));
            match step {
                Step::Sent => {}
                Step::Wait(wait) => {
                    let shared = m.shared.clone();
                    if !m.pace.wait(&shared, wait).await {
                        return cut(
                            io::ErrorKind::ConnectionAborted,
                            "simulated server shutting down",
                        );
                    }
                }
                Step::Cut => {
                    // Give hyper a chance to flush what was already handed over (an error
                    // from the body drops its unflushed buffer).
                    tokio::task::yield_now().await;
                    return cut(io::ErrorKind::ConnectionReset, "simulated disconnect");
                }
                Step::End => return None,
            }
        }
    });
    Body::from_stream(stream)
}

/// A stream machine with its framer and pace erased, for the scheduler thread.
pub(crate) trait Drive: Send {
    fn step(&mut self, now: Instant, out: &mut Vec<u8>) -> Step;
}

impl<F: Framer, P: Pace> Drive for Machine<F, P> {
    fn step(&mut self, now: Instant, out: &mut Vec<u8>) -> Step {
        Machine::step(self, now, out)
    }
}

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
fn machine_response<F: Framer, P: Pace>(machine: Machine<F, P>, handoff: bool) -> Response {
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

/// The exact schedule of one request ([`Plan`]), pushed back by stalls, and its server
/// metrics.
pub(crate) struct ExactPace {
    plan: Plan,
    /// Total time the schedule was pushed back by a stall.
    shift: Duration,
    active: Active,
}

impl ExactPace {
    fn deadline(&self, c: u32) -> Instant {
        offset(self.plan.deadline(c), self.shift)
    }
}

impl Pace for ExactPace {
    fn due(&self, c: u32, _end: u32, now: Instant) -> Result<Instant, Wait> {
        let at = self.deadline(c);
        if now < at {
            Err(Wait::Until(at))
        } else {
            Ok(at)
        }
    }

    fn stall(&mut self, next: u32, _now: Instant) -> Instant {
        let until = offset(self.deadline(next.saturating_sub(1)), self.plan.stall);
        self.shift = self.shift.saturating_add(self.plan.stall);
        until
    }

    fn sent(&mut self, end: u32) {
        self.active.generated = end;
    }

    fn finished(&mut self) {
        self.active.ok = true;
    }

    fn times(&self, shared: &Shared, tokens: u32) -> ServerTimes {
        ServerTimes::schedule(shared, tokens)
    }

    async fn wait(&mut self, shared: &Shared, wait: Wait) -> bool {
        match wait {
            Wait::Until(at) => wait_until(shared, at).await,
            Wait::Tokens => false,
        }
    }
}

/// A `200 text/event-stream` response whose body follows `plan`, framed by `framer`.
pub(crate) fn sse_response<F: Framer>(
    shared: Arc<Shared>,
    plan: Plan,
    framer: F,
    active: Active,
) -> Response {
    let pace = ExactPace {
        plan,
        shift: Duration::ZERO,
        active,
    };
    let (tokens, per_chunk, fault) = (plan.tokens, plan.tokens_per_chunk, plan.fault);
    let machine = Machine::new(shared, framer, pace, tokens, per_chunk, fault);
    machine_response(machine, true)
}

/// A non-streamed JSON response, handed over when the whole generation would have finished
/// (`t0 + ttft + (chunks-1)*itl`). In-stream faults map to: disconnect = the body is cut before
/// any byte, stall = the answer comes `stall` later, malformed = a truncated JSON body.
pub(crate) async fn non_stream_response(
    shared: Arc<Shared>,
    plan: Plan,
    mut active: Active,
    body: impl FnOnce(&ServerTimes) -> String,
) -> Response {
    let end = plan.deadline(plan.chunks() - 1);
    if !wait_until(&shared, end).await {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    record_lateness(&shared.stats, Instant::now(), end);
    active.generated = plan.tokens;
    active.ok = true;
    let times = ServerTimes::schedule(&shared, plan.tokens);
    whole_response(shared, plan.fault, end, move || body(&times)).await
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

/// A request served by the engine: its channel (already past `Event::Scheduled`), when its
/// prefill started (simulated), its output length, tokens per chunk and fault.
pub(crate) struct EngineJob {
    pub(crate) rx: mpsc::UnboundedReceiver<Event>,
    pub(crate) scheduled: Duration,
    pub(crate) tokens: u32,
    pub(crate) tokens_per_chunk: u32,
    pub(crate) fault: Fault,
}

/// The engine's token events for one request.
pub(crate) struct EnginePace {
    rx: mpsc::UnboundedReceiver<Event>,
    stall: Duration,
    /// Output tokens the engine has produced so far, and when the last of them was.
    avail: u32,
    at: Option<Instant>,
    /// The request's simulated times: prefill start, first and last output token.
    sim: SimTimes,
}

/// A request's simulated times in the engine, from its events.
#[derive(Clone, Copy, Debug, Default)]
struct SimTimes {
    scheduled: Duration,
    first: Option<Duration>,
    last: Duration,
}

impl SimTimes {
    fn new(scheduled: Duration) -> Self {
        Self {
            scheduled,
            ..Self::default()
        }
    }

    fn take(&mut self, sim: Duration) {
        self.first.get_or_insert(sim);
        self.last = sim;
    }

    fn times(&self) -> ServerTimes {
        let first = self.first.unwrap_or(self.scheduled);
        ServerTimes {
            prompt: first.saturating_sub(self.scheduled),
            predicted: self.last.saturating_sub(first),
        }
    }
}

impl EnginePace {
    fn take(&mut self, event: Event) {
        if let Event::Tokens { upto, at, sim } = event {
            self.avail = self.avail.max(upto);
            self.at = Some(at);
            self.sim.take(sim);
        }
    }
}

impl Pace for EnginePace {
    fn due(&self, _c: u32, end: u32, now: Instant) -> Result<Instant, Wait> {
        if self.avail < end {
            return Err(Wait::Tokens);
        }
        Ok(self.at.unwrap_or(now))
    }

    fn stall(&mut self, _next: u32, now: Instant) -> Instant {
        offset(now, self.stall)
    }

    fn times(&self, _shared: &Shared, _tokens: u32) -> ServerTimes {
        self.sim.times()
    }

    async fn wait(&mut self, shared: &Shared, wait: Wait) -> bool {
        match wait {
            Wait::Until(at) => return wait_until(shared, at).await,
            Wait::Tokens => {
                let event = tokio::select! {
                    e = self.rx.recv() => e,
                    _ = shared.shutdown.wait() => None,
                };
                let Some(event) = event else { return false };
                self.take(event);
            }
        }
        while let Ok(e) = self.rx.try_recv() {
            self.take(e);
        }
        !shared.shutdown.is_triggered()
    }
}

/// A `200 text/event-stream` response whose chunks go out as the engine produces them.
pub(crate) fn engine_sse_response<F: Framer>(
    shared: Arc<Shared>,
    job: EngineJob,
    framer: F,
) -> Response {
    let pace = EnginePace {
        rx: job.rx,
        stall: shared.real.stall,
        avail: 0,
        at: None,
        sim: SimTimes::new(job.scheduled),
    };
    let (tokens, per_chunk, fault) = (job.tokens, job.tokens_per_chunk, job.fault);
    let machine = Machine::new(shared, framer, pace, tokens, per_chunk, fault);
    machine_response(machine, false)
}

/// A non-streamed answer once the engine has produced every token (faults as in
/// [`non_stream_response`]).
pub(crate) async fn engine_non_stream_response(
    shared: Arc<Shared>,
    mut job: EngineJob,
    body: impl FnOnce(&ServerTimes) -> String,
) -> Response {
    let mut at = None;
    let mut avail = 0;
    let mut sim = SimTimes::new(job.scheduled);
    while avail < job.tokens {
        let e = tokio::select! {
            e = job.rx.recv() => e,
            _ = shared.shutdown.wait() => None,
        };
        match e {
            Some(Event::Tokens {
                upto,
                at: t,
                sim: s,
            }) => {
                avail = upto;
                at = Some(t);
                sim.take(s);
            }
            Some(_) => {}
            None => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
        }
    }
    let end = at.unwrap_or_else(Instant::now);
    record_lateness(&shared.stats, Instant::now(), end);
    let times = sim.times();
    whole_response(shared, job.fault, end, move || body(&times)).await
}
