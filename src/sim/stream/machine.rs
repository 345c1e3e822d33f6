//! The stream state machine: one streamed response as a synchronous [`Machine`] over a
//! [`Framer`] (the wire format) and a [`Pace`] (when each chunk is due), and the async driver
//! that turns a machine into a response body ([`machine_body`]).
//!
//! # What it owns
//! Chunk boundaries, the in-stream fault (disconnect, stall, malformed event), the trailer,
//! lateness accounting, and the traits every wire format ([`Framer`]) and every source of
//! tokens ([`Pace`]) implement. [`Drive`] erases a machine's types for a scheduler thread
//! (`sched.rs`). [`wait_until`] is the one sleep a pace or a whole answer uses.
//!
//! # What it must not touch
//! No API's JSON (the framers in `apis/` write it), no socket (`http1.rs` and `sched.rs` write),
//! no schedule arithmetic of its own (the paces in `exact.rs` and `engine.rs` decide when a
//! chunk is due). Nothing of servebench's client side.
//!
//! # Adding one more
//! A new wire format implements [`Framer`] (in `apis/`); a new source of tokens implements
//! [`Pace`] next to `exact.rs` and `engine.rs`. A new in-stream fault is a `Fault` variant
//! (`faults.rs`) handled in `Phase::Fault` of [`Machine::step`].

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use tokio::time::Instant;

use crate::sim::faults::{Fault, MALFORMED_EVENT};
use crate::sim::spec::Chunks;
use crate::sim::state::{Counters, Shared};
use crate::sim::time::{self, mul};
use crate::sim::timings::ServerTimes;

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

impl ServerTimes {
    /// Exact mode's times for a request of `tokens` output tokens.
    pub(crate) fn schedule(shared: &Shared, tokens: u32) -> Self {
        let c = &shared.config;
        let per_token = c.itl / c.tokens_per_chunk.max(1);
        // Speculating, a step (a chunk after the first) takes `itl`, whatever it carries.
        let predicted = match Chunks::of(c.tokens_per_chunk, c.spec.as_ref()) {
            spec @ Chunks::Spec { .. } => mul(c.itl, spec.count(tokens) - 1),
            Chunks::Fixed(_) => mul(per_token, tokens.saturating_sub(1)),
        };
        Self {
            prompt: c.ttft,
            predicted,
            queue: Some(Duration::ZERO),
            front: Duration::ZERO,
            shape: c.timings,
        }
    }
}

/// Sleeps until `deadline`; false if the server is shutting down.
pub(super) async fn wait_until(shared: &Shared, deadline: Instant) -> bool {
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

pub(super) fn record_lateness(stats: &Counters, now: Instant, deadline: Instant) {
    stats.record_lateness(now.saturating_duration_since(deadline));
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
    chunking: Chunks,
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
        chunking: Chunks,
        fault: Fault,
    ) -> Self {
        let chunks = chunking.count(tokens);
        Self {
            shared,
            framer,
            pace,
            fault,
            tokens,
            chunking,
            phase: Phase::Preamble,
            next: 0,
            chunks,
            fault_after: chunks.div_ceil(2),
        }
    }

    /// First token after content chunk `c`.
    fn chunk_end(&self, c: u32) -> u32 {
        let end = self.chunking.start(c.saturating_add(1));
        u32::try_from(end).unwrap_or(u32::MAX).min(self.tokens)
    }

    fn trailer(&mut self, out: &mut Vec<u8>) {
        let mut times = self.pace.times(&self.shared, self.tokens);
        times.shape = self.shared.config.timings;
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
                    let start = u32::try_from(self.chunking.start(c))
                        .unwrap_or(u32::MAX)
                        .min(self.tokens);
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
pub(super) fn machine_body<F, P, S>(source: S) -> Body
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

/// A stream machine with its framer and pace erased, for a scheduler thread.
pub(crate) trait Drive: Send {
    fn step(&mut self, now: Instant, out: &mut Vec<u8>) -> Step;
}

impl<F: Framer, P: Pace> Drive for Machine<F, P> {
    fn step(&mut self, now: Instant, out: &mut Vec<u8>) -> Step {
        Machine::step(self, now, out)
    }
}
