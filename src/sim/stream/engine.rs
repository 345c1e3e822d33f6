//! Engine mode's streams: chunks go out as soon as the engine task (`sim/engine.rs`) has
//! produced their tokens, each with the instant its step ended.
//!
//! # What it owns
//! [`EngineJob`] (an admitted request's event channel), [`EnginePace`] (the [`Pace`] that
//! follows the events), the request's simulated times for llama.cpp's `timings`, and
//! [`engine_sse_response`] / [`engine_non_stream_response`].
//!
//! # What it must not touch
//! The engine's scheduling (it only reads [`Event`]s); chunk boundaries and faults
//! (`machine.rs`); sockets.
//!
//! # Adding one more
//! A new engine event is an [`Event`] variant, taken in `EnginePace::take` and in
//! [`engine_non_stream_response`]'s loop.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::body::{machine_response, whole_response};
use super::machine::{record_lateness, wait_until, Framer, Machine, Pace, Wait};
use crate::sim::engine::Event;
use crate::sim::faults::Fault;
use crate::sim::spec::Chunks;
use crate::sim::state::Shared;
use crate::sim::time::offset;
use crate::sim::timings::ServerTimes;

/// A request served by the engine: its channel (already past `Event::Scheduled`), when its
/// prefill started (simulated), its output length, tokens per chunk and fault.
pub(crate) struct EngineJob {
    pub(crate) rx: mpsc::UnboundedReceiver<Event>,
    pub(crate) scheduled: Duration,
    /// Its time in the engine's waiting queue before that, and in the front end before the
    /// engine (simulated).
    pub(crate) queued: Duration,
    pub(crate) front: Duration,
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
    queued: Duration,
    front: Duration,
    first: Option<Duration>,
    last: Duration,
}

impl SimTimes {
    fn new(job: &EngineJob) -> Self {
        Self {
            scheduled: job.scheduled,
            queued: job.queued,
            front: job.front,
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
            queue: Some(self.queued),
            front: self.front,
            shape: Default::default(),
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
    let sim = SimTimes::new(&job);
    let pace = EnginePace {
        rx: job.rx,
        stall: shared.real.stall,
        avail: 0,
        at: None,
        sim,
    };
    let (tokens, per_chunk, fault) = (job.tokens, job.tokens_per_chunk, job.fault);
    let machine = Machine::new(
        shared,
        framer,
        pace,
        tokens,
        Chunks::Fixed(per_chunk),
        fault,
    );
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
    let mut sim = SimTimes::new(&job);
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
