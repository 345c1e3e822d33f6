//! The simulator's inference engine model: one task that owns every request's state and runs
//! the step loop of a continuous-batching server (vLLM, TGI, llama.cpp), so that the built-in
//! server saturates, queues and stalls the way real engines do.
//!
//! # What it owns
//! The scheduler, over the parameters and cost model of `cost.rs` ([`EngineConfig`],
//! [`EngineConfig::step_time`]):
//! - `Core`: a pure, synchronous state machine over simulated time (`plan` a step, then
//!   `complete` it). It reads no clock, so its unit tests and the calibration preview are exact.
//! - `run`: the async driver. It sleeps until each step's end (divided by the time scale),
//!   then hands every produced token to its request's channel, stamped with that instant.
//! - The server-side metrics it feeds ([`super::metrics::ServerMetrics`]).
//!
//! # What it must not touch
//! HTTP, wire formats and faults are `apis/`'s and `stream/`'s; the engine's parameters and
//! what a step costs are `cost.rs`'s. Like all of `sim`, nothing here may use servebench's
//! client side.
//!
//! # The step
//! A sequence holds KV for the tokens computed so far. A step either prefills (a chunk of the
//! prompt; when the whole context is computed the step samples the first token) or decodes (one
//! token per sequence, `tokens_per_step` with speculative decoding). Two schedulers:
//! - [`SchedulerKind::ChunkedPrefill`] (vLLM, llama.cpp): every step carries all running decodes
//!   first, then prefill chunks (running sequences first, then waiting ones in arrival order)
//!   until the token budget `max_batched_tokens` is spent. A long prompt is prefilled over several
//!   steps, and each of those steps is slow for every decode riding in it: the ITL spike.
//! - [`SchedulerKind::PrefillFirst`] (TGI): waiting requests are prefilled in a step of their
//!   own (up to `max_batched_tokens` prompt tokens), pausing every decode, when the batch is
//!   empty, when at least `waiting_served_ratio` × running requests can join, or after
//!   `max_waiting_steps` decode steps.
//!
//! Admission needs a free slot (`max_num_seqs`) and free KV for the chunk. When a step needs KV
//! that is not free, the most recently admitted running sequence is preempted: its KV is freed,
//! it goes back to the front of the queue and later recomputes its prompt and everything it
//! generated (vLLM's recompute preemption). A request that waited longer than the queue
//! timeout without ever being scheduled is rejected (the handler answers HTTP 503).
//!
//! # Extending it
//! A new scheduler is a [`SchedulerKind`] variant (`cost.rs`) and a `plan_*` method that marks each
//! sequence's work for the step (`work`, `kv` allocation); `complete` is shared.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::cost::{EngineConfig, SchedulerKind};
use super::metrics::ServerMetrics;
use super::time;

/// What a request's channel receives from the engine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Event {
    /// The request was scheduled for the first time: its prefill starts at simulated time
    /// `sim` (the start of the step that carries its first chunk), after `queued` (simulated)
    /// in the engine's waiting queue.
    Scheduled { sim: Duration, queued: Duration },
    /// Output tokens `[0, upto)` exist; the step that produced the last ones ended at `at`
    /// (simulated time `sim`).
    Tokens {
        upto: u32,
        at: Instant,
        sim: Duration,
    },
    /// The request waited longer than the queue timeout without being scheduled.
    QueueTimeout,
}

/// A request handed to the engine.
pub(crate) struct Request {
    pub(crate) prompt_tokens: u32,
    /// Output tokens to generate (the budget, or the natural length when shorter).
    pub(crate) output_tokens: u32,
    /// When the handler submitted it.
    pub(crate) submitted: Instant,
    pub(crate) events: mpsc::UnboundedSender<Event>,
}

struct Seq {
    prompt: u32,
    target: u32,
    generated: u32,
    /// KV tokens allocated (computed, or being computed in the planned step).
    kv: u32,
    /// Past the prefill: each step adds `tokens_per_step` tokens.
    decoding: bool,
    /// Ever scheduled (the queue timeout no longer applies).
    scheduled: bool,
    arrived: Duration,
    /// When the request was received (simulated), for the queue time it reports.
    received: Duration,
    last_token: Option<Duration>,
    /// Work in the planned step: prefill tokens, or 1 for a decode; 0 for none.
    work: u32,
    events: mpsc::UnboundedSender<Event>,
}

impl Seq {
    fn context(&self) -> u32 {
        self.prompt + self.generated
    }

    fn to_prefill(&self) -> u32 {
        self.context().saturating_sub(self.kv)
    }
}

/// The engine's state over simulated time. Single owner; no clock, no I/O besides sending on
/// the requests' channels.
pub(crate) struct Core {
    cfg: EngineConfig,
    tokens_per_step: u32,
    running: Vec<Seq>,
    waiting: VecDeque<Seq>,
    kv_used: u64,
    steps_since_prefill: u32,
    metrics: Arc<Mutex<ServerMetrics>>,
}

impl Core {
    pub(crate) fn new(
        cfg: EngineConfig,
        tokens_per_step: u32,
        metrics: Arc<Mutex<ServerMetrics>>,
    ) -> Self {
        if let Ok(mut m) = metrics.lock() {
            m.kv_capacity = cfg.kv_capacity_tokens;
        }
        Self {
            cfg,
            tokens_per_step: tokens_per_step.max(1),
            running: Vec::new(),
            waiting: VecDeque::new(),
            kv_used: 0,
            steps_since_prefill: 0,
            metrics,
        }
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.running.is_empty() && self.waiting.is_empty()
    }

    /// Queues a request that arrived at simulated time `at` (the engine's clock; it was
    /// received at `received`, which may be earlier, inside the step then running).
    pub(crate) fn submit(&mut self, r: Request, at: Duration, received: Duration) {
        self.waiting.push_back(Seq {
            prompt: r.prompt_tokens.max(1),
            target: r.output_tokens.max(1),
            generated: 0,
            kv: 0,
            decoding: false,
            scheduled: false,
            arrived: at,
            received,
            last_token: None,
            work: 0,
            events: r.events,
        });
    }

    fn free_kv(&self) -> u64 {
        self.cfg.kv_capacity_tokens.saturating_sub(self.kv_used)
    }

    /// Drops requests whose client went away and rejects those that waited too long.
    fn sweep(&mut self, now: Duration) {
        let mut freed = 0u64;
        self.running.retain(|s| {
            let keep = !s.events.is_closed();
            if !keep {
                freed += u64::from(s.kv);
            }
            keep
        });
        self.kv_used -= freed;
        let timeout = self.cfg.queue_timeout;
        self.waiting.retain(|s| {
            if s.events.is_closed() {
                return false;
            }
            match timeout {
                Some(t) if !s.scheduled && now.saturating_sub(s.arrived) > t => {
                    let _ = s.events.send(Event::QueueTimeout);
                    false
                }
                _ => true,
            }
        });
    }

    /// Preempts the most recently admitted running sequence (the last one), sending it back
    /// to the front of the queue.
    fn preempt_last(&mut self) {
        if let Some(mut s) = self.running.pop() {
            self.kv_used -= u64::from(s.kv);
            s.kv = 0;
            s.decoding = false;
            s.work = 0;
            self.waiting.push_front(s);
            if let Ok(mut m) = self.metrics.lock() {
                m.preemptions += 1;
            }
        }
    }

    /// Admits the front of the queue with a first chunk of `chunk` tokens, in the step that
    /// starts at `now`.
    fn admit_front(&mut self, chunk: u32, now: Duration) {
        if let Some(mut s) = self.waiting.pop_front() {
            s.work = chunk;
            s.kv += chunk;
            self.kv_used += u64::from(chunk);
            if !s.scheduled {
                s.scheduled = true;
                let _ = s.events.send(Event::Scheduled {
                    sim: now,
                    queued: now.saturating_sub(s.received),
                });
            }
            self.running.push(s);
        }
    }

    /// Plans the step that starts at `now`: sweeps, schedules, allocates KV. Returns the
    /// step's duration, or `None` when there is nothing to run.
    pub(crate) fn plan(&mut self, now: Duration) -> Option<Duration> {
        self.sweep(now);
        match self.cfg.scheduler {
            SchedulerKind::ChunkedPrefill => self.plan_chunked(now),
            SchedulerKind::PrefillFirst {
                max_waiting_steps,
                waiting_served_ratio,
            } => self.plan_prefill_first(max_waiting_steps, waiting_served_ratio, now),
        }
        self.step_duration()
    }

    /// Allocates the KV a running sequence's decode needs, preempting newer sequences (or,
    /// as a last resort, this one). False when the sequence itself was preempted.
    fn reserve_decode(&mut self, i: usize) -> bool {
        let s = &self.running[i];
        let need = self.tokens_per_step.min(s.target - s.generated).max(1);
        while self.free_kv() < u64::from(need) && self.running.len() > i + 1 {
            self.preempt_last();
        }
        if self.free_kv() < u64::from(need) {
            // Only sequences older than this one are left: it yields itself.
            self.preempt_last();
            return false;
        }
        let s = &mut self.running[i];
        s.work = 1;
        s.kv += need;
        self.kv_used += u64::from(need);
        true
    }

    fn plan_chunked(&mut self, now: Duration) {
        let mut budget = self.cfg.max_batched_tokens;
        let mut preempted = false;
        // Decodes first (one token each), then chunks of running prefills.
        let mut i = 0;
        while i < self.running.len() && budget > 0 {
            if self.running[i].decoding {
                if !self.reserve_decode(i) {
                    preempted = true;
                    break;
                }
                budget -= 1;
            }
            i += 1;
        }
        let mut i = 0;
        while i < self.running.len() && budget > 0 {
            if !self.running[i].decoding && self.running[i].work == 0 {
                let chunk = self.running[i].to_prefill().min(budget);
                while self.free_kv() < u64::from(chunk) && self.running.len() > i + 1 {
                    self.preempt_last();
                    preempted = true;
                }
                if self.free_kv() < u64::from(chunk) {
                    self.preempt_last();
                    preempted = true;
                    break;
                }
                let s = &mut self.running[i];
                s.work = chunk;
                s.kv += chunk;
                self.kv_used += u64::from(chunk);
                budget -= chunk;
            }
            i += 1;
        }
        if preempted {
            return;
        }
        while budget > 0 && self.running.len() < self.cfg.max_num_seqs as usize {
            let Some(front) = self.waiting.front() else {
                break;
            };
            let chunk = front.to_prefill().min(budget);
            if self.free_kv() < u64::from(chunk) {
                break;
            }
            self.admit_front(chunk, now);
            budget -= chunk;
        }
    }

    fn plan_prefill_first(&mut self, max_waiting_steps: u32, ratio: f64, now: Duration) {
        if !self.waiting.is_empty() {
            let running = self.running.len();
            let force = running == 0 || self.steps_since_prefill >= max_waiting_steps;
            let min_size = if force {
                1
            } else {
                ((running as f64 * ratio).floor() as usize).max(1)
            };
            let max_size = (self.cfg.max_num_seqs as usize).saturating_sub(running);
            let (mut n, mut tokens, mut free) = (0usize, 0u64, self.free_kv());
            for s in &self.waiting {
                let need = u64::from(s.to_prefill());
                if n >= max_size
                    || (n > 0 && tokens + need > u64::from(self.cfg.max_batched_tokens))
                    || need > free
                {
                    break;
                }
                n += 1;
                tokens += need;
                free -= need;
            }
            if n > 0 && n >= min_size {
                for _ in 0..n {
                    let chunk = self.waiting.front().map_or(0, Seq::to_prefill);
                    self.admit_front(chunk, now);
                }
                self.steps_since_prefill = 0;
                return;
            }
        }
        let mut i = 0;
        while i < self.running.len() {
            if !self.reserve_decode(i) {
                break;
            }
            i += 1;
        }
        self.steps_since_prefill = self.steps_since_prefill.saturating_add(1);
    }

    fn step_duration(&self) -> Option<Duration> {
        let (mut p, mut pairs, mut d, mut ctx) = (0u64, 0u64, 0u64, 0u64);
        for s in self.running.iter().filter(|s| s.work > 0) {
            if s.decoding {
                d += 1;
                ctx += u64::from(s.context());
            } else {
                let chunk = u64::from(s.work);
                let before = u64::from(s.kv) - chunk;
                p += chunk;
                pairs += chunk * before + chunk * chunk / 2;
            }
        }
        if p == 0 && d == 0 {
            return None;
        }
        Some(self.cfg.step_time(p, pairs, d, ctx))
    }

    /// Completes the planned step at simulated time `end` (real instant `at`): emits tokens,
    /// retires finished requests and updates the metrics.
    pub(crate) fn complete(&mut self, end: Duration, at: Instant) {
        let Ok(mut m) = self.metrics.lock() else {
            return;
        };
        let k = self.tokens_per_step;
        let mut freed = 0u64;
        for s in &mut self.running {
            if s.work == 0 {
                continue;
            }
            let emitted = if s.decoding {
                k.min(s.target - s.generated)
            } else if s.kv < s.context() {
                // A chunk of a longer prefill: nothing to sample yet.
                s.work = 0;
                continue;
            } else {
                s.decoding = true;
                1
            };
            s.work = 0;
            if s.generated == 0 {
                m.prompt_tokens += u64::from(s.prompt);
            }
            s.generated += emitted;
            m.generation_tokens += u64::from(emitted);
            let secs = |d: Duration| d.as_secs_f64();
            match s.last_token {
                None => m.ttft.observe(secs(end.saturating_sub(s.arrived))),
                Some(last) => m.tpot.observe_n(
                    secs(end.saturating_sub(last)) / f64::from(emitted),
                    u64::from(emitted),
                ),
            }
            s.last_token = Some(end);
            let _ = s.events.send(Event::Tokens {
                upto: s.generated,
                at,
                sim: end,
            });
            if s.generated >= s.target {
                freed += u64::from(s.kv);
                m.request_success += 1;
            }
        }
        self.running.retain(|s| s.generated < s.target);
        self.kv_used -= freed;
        m.running = self.running.len() as u64;
        m.waiting = self.waiting.len() as u64;
        m.kv_used = self.kv_used;
    }
}

/// The handle request handlers use: submit a request, get its event channel.
pub(crate) struct EngineHandle {
    tx: mpsc::UnboundedSender<Request>,
    /// The receiver, until the engine task is started (lazily, inside a runtime).
    start: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl EngineHandle {
    /// Prepares the engine; its task starts on the first submission.
    pub(crate) fn new(
        cfg: EngineConfig,
        tokens_per_step: u32,
        time_scale: f64,
        precise: bool,
        metrics: Arc<Mutex<ServerMetrics>>,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let core = Core::new(cfg, tokens_per_step, metrics);
        let start: Box<dyn FnOnce() + Send> = Box::new(move || {
            tokio::spawn(run(rx, core, time_scale, precise, shutdown));
        });
        Self {
            tx,
            start: Mutex::new(Some(start)),
        }
    }

    /// Submits a request; its events arrive on the returned channel.
    pub(crate) fn submit(
        &self,
        prompt_tokens: u32,
        output_tokens: u32,
    ) -> mpsc::UnboundedReceiver<Event> {
        if let Ok(mut start) = self.start.lock() {
            if let Some(f) = start.take() {
                f();
            }
        }
        let (events, rx) = mpsc::unbounded_channel();
        let _ = self.tx.send(Request {
            prompt_tokens,
            output_tokens,
            submitted: Instant::now(),
            events,
        });
        rx
    }
}

/// The engine task: runs steps back to back while there is work, each ending at its absolute
/// deadline (`origin + simulated end / time_scale`), so no drift accumulates.
async fn run(
    mut rx: mpsc::UnboundedReceiver<Request>,
    mut core: Core,
    time_scale: f64,
    precise: bool,
    mut shutdown: watch::Receiver<bool>,
) {
    let origin = Instant::now();
    let to_sim = |t: Instant| t.saturating_duration_since(origin).mul_f64(time_scale);
    let to_real = |d: Duration| time::offset(origin, d.div_f64(time_scale));
    let mut clock = Duration::ZERO;
    loop {
        if *shutdown.borrow() {
            break;
        }
        while let Ok(r) = rx.try_recv() {
            let received = to_sim(r.submitted);
            core.submit(r, received.max(clock), received);
        }
        let planned = if core.is_idle() {
            None
        } else {
            core.plan(clock)
        };
        let Some(duration) = planned else {
            tokio::select! {
                r = rx.recv() => match r {
                    Some(r) => {
                        clock = clock.max(to_sim(Instant::now()));
                        let received = to_sim(r.submitted);
                        core.submit(r, received.max(clock), received);
                    }
                    None => break,
                },
                _ = shutdown.changed() => break,
            }
            continue;
        };
        let end = clock + duration;
        let deadline = to_real(end);
        if deadline > Instant::now() {
            tokio::select! {
                _ = time::sleep_until(precise, deadline) => {}
                _ = shutdown.changed() => break,
            }
        }
        core.complete(end, deadline);
        clock = end;
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
