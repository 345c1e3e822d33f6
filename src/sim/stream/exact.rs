//! Exact mode's streams: every content chunk at its absolute deadline on the request's
//! [`Plan`] (`t0 + ttft + c·itl`, see "The schedule" in `sim/mod.rs`), and the server metrics
//! of exact-mode requests ([`Active`]).
//!
//! # What it owns
//! [`Plan`] (the schedule and fault of one request), [`ExactPace`] (the [`Pace`] that follows
//! it, pushed back by a stall), [`sse_response`] and [`non_stream_response`].
//!
//! # What it must not touch
//! The engine's events (`engine.rs` beside it); chunk boundaries and faults (`machine.rs`);
//! sockets. Its deadlines must stay absolute, so no drift accumulates.
//!
//! # Adding one more
//! Another fixed schedule (say, a jittered ITL) is another `Pace` implementation here, built
//! by its own `*_response` function from the request's `Plan`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;

use super::body::{machine_response, whole_response};
use super::machine::{record_lateness, wait_until, Framer, Machine, Pace, Wait};
use crate::sim::config::TimingsShape;
use crate::sim::faults::Fault;
use crate::sim::metrics::ServerMetrics;
use crate::sim::slots::Slot;
use crate::sim::spec::Chunks;
use crate::sim::state::Shared;
use crate::sim::time::{mul, offset};
use crate::sim::timings::ServerTimes;

/// The schedule and fault of one request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub(crate) t0: Instant,
    pub(crate) ttft: Duration,
    pub(crate) itl: Duration,
    pub(crate) tokens: u32,
    /// How its tokens are cut into chunks (`tokens_per_chunk`, or speculative decoding's).
    pub(crate) chunks: Chunks,
    pub(crate) fault: Fault,
    pub(crate) stall: Duration,
    /// Its wait for one of exact mode's slots (`slots.rs`), real time: queueing.
    pub(crate) queued: Duration,
    /// Its prompt tokens (TGI's `x-prompt-tokens`).
    pub(crate) prompt: u64,
}

impl Plan {
    /// Number of content chunks (`ceil(tokens / tokens_per_chunk)`), at least 1.
    pub(crate) fn chunks(&self) -> u32 {
        self.chunks.count(self.tokens)
    }

    /// Scheduled instant of content chunk `c`.
    pub(crate) fn deadline(&self, c: u32) -> Instant {
        offset(offset(self.t0, self.ttft), mul(self.itl, c))
    }
}

/// Exact mode's server metrics for one request: counted as running while alive; its tokens
/// and success are added when it ends. Two lock operations per request, none per chunk.
pub(crate) struct Active {
    metrics: Arc<Mutex<ServerMetrics>>,
    generated: u32,
    ok: bool,
    /// Content chunks sent, and how they were cut (speculative decoding's counters, counted
    /// once: when the last chunk goes out, before a client can read it, or at the end).
    sent: u32,
    chunks: Chunks,
    spec_counted: bool,
    /// The exact-mode slot the request holds (`slots.rs`), handed on when it ends.
    slot: Option<Slot>,
}

impl Active {
    /// Adds the stream's speculative-decoding steps to the server's counters, once.
    fn count_spec(&mut self, m: &mut ServerMetrics) {
        if !self.spec_counted {
            self.spec_counted = true;
            (m.spec).count(self.chunks, self.sent, self.generated);
        }
    }
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
            let per_token = match plan.chunks {
                // A step (a chunk after the first) takes `itl`, whatever it carries.
                Chunks::Spec { .. } if plan.tokens > 1 => {
                    c.itl.as_secs_f64() * f64::from(plan.chunks() - 1) / f64::from(plan.tokens - 1)
                }
                _ => c.itl.as_secs_f64() / f64::from(c.tokens_per_chunk.max(1)),
            };
            m.tpot
                .observe_n(per_token, u64::from(plan.tokens.saturating_sub(1)));
        }
        Self {
            metrics: shared.metrics.clone(),
            generated: 0,
            ok: false,
            sent: 0,
            chunks: plan.chunks,
            spec_counted: false,
            slot: None,
        }
    }
}

impl Active {
    /// The request holds `slot` until it ends.
    pub(crate) fn holding(mut self, slot: Option<Slot>) -> Self {
        self.slot = slot;
        self
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        let metrics = self.metrics.clone();
        if let Ok(mut m) = metrics.lock() {
            m.running = m.running.saturating_sub(1);
            m.generation_tokens += u64::from(self.generated);
            self.count_spec(&mut m);
            if self.ok {
                m.request_success += 1;
            }
        };
    }
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
        self.active.sent += 1;
    }

    fn finished(&mut self) {
        self.active.ok = true;
        // Speculating, the counters include the stream before its last bytes can be read.
        if self.active.chunks.draft().is_some() {
            let metrics = self.active.metrics.clone();
            if let Ok(mut m) = metrics.lock() {
                self.active.count_spec(&mut m);
            };
        }
    }

    fn times(&self, shared: &Shared, tokens: u32) -> ServerTimes {
        exact_times(shared, &self.plan, tokens)
    }

    async fn wait(&mut self, shared: &Shared, wait: Wait) -> bool {
        match wait {
            Wait::Until(at) => wait_until(shared, at).await,
            Wait::Tokens => false,
        }
    }
}

/// Exact mode's times for a request of `tokens` output tokens on `plan`: the schedule's, with
/// its wait for a LoRA adapter's load (the plan's TTFT past the configured one, in simulated
/// time) as its queueing before the prefill.
fn exact_times(shared: &Shared, plan: &Plan, tokens: u32) -> ServerTimes {
    let mut times = ServerTimes::schedule(shared, tokens);
    let waited = plan.ttft.saturating_sub(shared.real.ttft) + plan.queued;
    times.queue = Some(waited.mul_f64(shared.config.time_scale));
    times
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
    let (tokens, chunks, fault) = (plan.tokens, plan.chunks, plan.fault);
    let tgi = (shared.config.timings == TimingsShape::Tgi).then(|| {
        let times = exact_times(&shared, &plan, tokens);
        crate::sim::timings::tgi_headers(&times, plan.prompt, u64::from(tokens))
    });
    let machine = Machine::new(shared, framer, pace, tokens, chunks, fault);
    let mut response = machine_response(machine, true);
    for (name, value) in tgi.into_iter().flatten() {
        if let Ok(v) = axum::http::HeaderValue::from_str(&value) {
            response.headers_mut().insert(name, v);
        }
    }
    response
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
    active.sent = plan.chunks();
    active.ok = true;
    if let Ok(mut m) = shared.metrics.lock() {
        active.count_spec(&mut m);
    }
    let times = exact_times(&shared, &plan, plan.tokens);
    whole_response(shared, plan.fault, end, move || body(&times)).await
}
