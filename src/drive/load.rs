//! The one driver that sends a run's requests: [`drive`] sends each conversation of the
//! pool (`pool.rs`) at its arrival's offset (`arrivals.rs`, or a trace's own), gated by the
//! concurrency limit and the time window, each on a task of its own (`talk.rs`), and hands
//! every finished [`RequestRecord`] to a channel; every request it planned and did not send
//! it counts, with why ([`DriveSummary`]). It does not build requests, compute statistics,
//! print, or write files.
//!
//! [`drive`] runs in named phases: send by the schedule, wait for a time window's end,
//! drain what is in flight (the grace period), count what was left unsent. Every arrival
//! process goes through the same driver: to add one, add a case to `arrivals.rs`.
//!
//! Client-side queueing is never hidden: a record keeps both the scheduled and the actual send
//! time, so the wait for a concurrency slot shows up as schedule lag.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::shape::WindowEnd;
use crate::config::shard::Shard;
use crate::config::{LoadSpec, RequestRate};
use crate::drive::arrivals::arrival_offsets;
use crate::drive::pool::Pool;
use crate::drive::talk::{Talk, Talked};
use crate::drive::ui::live::Live;
use crate::measure::client::{Client, RequestSpec};
use crate::measure::clock::Clock;
use crate::measure::record::RequestRecord;
use crate::results::document::Unsent;

/// Where the driver reports: finished records, and the live `sent` counter.
#[derive(Clone, Debug)]
pub struct Sink {
    pub records: mpsc::UnboundedSender<RequestRecord>,
    pub live: Arc<Live>,
    /// The simulated server's clock speed-up (`--time-scale`); 1 for real servers.
    pub time_scale: f64,
    /// Cancelled to end the grace period at once (a second Ctrl-C).
    pub abort: CancellationToken,
    /// `run --adaptive`: the controller's hold on the load (`throttle.rs`): its arrivals,
    /// its concurrency gate, and each send counted in the controller's window.
    pub throttle: Option<Arc<crate::drive::throttle::Throttle>>,
}

/// What the driver did: what it sent and, of what it planned, what it left unsent and why
/// (docs/metrics.md, "Every planned request is accounted for").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriveSummary {
    /// Requests handed to the client: one record each.
    pub sent: u64,
    /// The requests planned, `sent + unsent`; `None` for a time window at an unbounded rate
    /// (no fixed count), or one stopped with more than [`PLANNED_COUNT_MAX`] arrivals left.
    pub planned: Option<u64>,
    /// Of a run of agentic jobs, the jobs planned (its arrivals: each sends one job), known
    /// as `planned` is; `None` for a run of other requests.
    pub jobs_planned: Option<u64>,
    /// Planned requests never sent, by why.
    pub unsent: Unsent,
    /// A time-bounded run that reached its window's end (not stopped before).
    pub window_end: Option<WindowEnd>,
    /// A users run (`--users`, `users.rs`): what the users did.
    pub users: Option<crate::results::stats::users::UserCounts>,
}

/// The most arrivals left in a stopped time-bounded run's window that are counted (they are
/// drawn from the schedule after the run); past it its planned count is unknown.
pub const PLANNED_COUNT_MAX: u64 = 100_000_000;

/// Why the schedule's loop ended before the schedule did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Halt {
    /// `stop` was cancelled (a signal, an early stop, a records write error).
    Stopped,
    /// The time window ended while the arrival waited for a concurrency slot.
    WindowEnded,
}

/// Real nanoseconds of `server_ns` of the server's time at speed-up `time_scale`: saturated
/// (a span too long to hold is the longest, never a wrapped short one).
fn real_span_ns(server_ns: f64, time_scale: f64) -> u64 {
    // A float-to-integer cast saturates (and NaN is 0).
    (server_ns / time_scale) as u64
}

/// `s` seconds as a `Duration`: one too long to hold is the longest (a very long time, never
/// 0); negative or NaN is 0.
fn span(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(if s > 0.0 {
        Duration::MAX
    } else {
        Duration::ZERO
    })
}

/// Sends the run's requests by the schedule of `spec` (or, for a trace, at each request's
/// `offset_ns`), starting `start_ns` after the clock's anchor. `pool` holds the requests built
/// for the run, ids from 0: schedule position `id` sends `pool[id % len]` under id `id` (a
/// time-bounded run that outgrows its pool sends its prompts again); a shard sends only the
/// ids it owns, at their global send times.
///
/// When `stop` is cancelled no new request is sent; in-flight requests get `spec.grace_s`
/// to finish, then they are cancelled and end as `cancelled`. A time window's end
/// (`--duration`, `--stages`) stops sends the same way, and `--duration-cancel` cancels what
/// is in flight at once. Every sent request's record reaches `sink.records`, in completion
/// order; every planned request is either sent or counted in the summary's `unsent` with why.
pub async fn drive(
    client: Arc<Client>,
    pool: Vec<RequestSpec>,
    spec: &LoadSpec,
    clock: Clock,
    start_ns: u64,
    stop: CancellationToken,
    sink: Sink,
) -> DriveSummary {
    let run = Run::new(client, spec, clock, start_ns, stop, sink);
    // A trace brings its send times (each conversation's first request's) and sends each of
    // its conversations once; otherwise the load's arrival process sends `--num-prompts`.
    let (mut pool, trace) = Pool::new(pool, spec);
    let count = match &trace {
        Some(t) => t.len() as u64,
        None => spec.num_prompts,
    };
    let total = pool.planned(count, |id| run.owned(id));
    if run.window_end.is_none() && !run.adaptive {
        run.sink.live.planned.store(total, Relaxed);
    }
    let mut sending = Sending::new();
    let halted = run.send_by_schedule(&mut pool, trace, &mut sending).await;
    run.wait_for_window_end(&mut sending).await;
    let end = run.drain(&mut sending).await;
    let jobs = pool.jobs;
    let arrivals = pool.arrivals(count, |id| run.owned(id));
    let (unsent, known) = run.unsent(halted, total, pool, &mut sending).await;
    // A count-bounded run's plan is known from the start; a window's is what was sent and
    // what was due in it but not sent, and a closed loop's is unknown.
    let (planned, jobs_planned) = match run.window_end {
        // The controller planned each arrival as it went: what it sent, and the one it
        // stopped at.
        None if run.adaptive => (Some(sending.talked.sent + unsent.total()), None),
        None => (Some(total), Some(arrivals)),
        Some(_) => {
            let known = known && !run.closed_loop;
            let planned = known.then(|| sending.talked.sent + unsent.total());
            (planned, known.then_some(sending.arrivals))
        }
    };
    DriveSummary {
        sent: sending.talked.sent,
        planned,
        jobs_planned: jobs_planned.filter(|_| jobs),
        unsent,
        window_end: end,
        users: None,
    }
}

/// What every phase of one [`drive`] shares: the run's fixed facts.
struct Run<'a> {
    client: Arc<Client>,
    spec: &'a LoadSpec,
    clock: Clock,
    start_ns: u64,
    /// The server's clock speed-up (1 for a real server): the schedule is in its time.
    time_scale: f64,
    stop: CancellationToken,
    sink: Sink,
    /// A time-bounded run's end (`--duration`, `--stages`), real time.
    window_end: Option<tokio::time::Instant>,
    /// A time window at an unbounded rate: it sends as fast as slots free up, with no fixed
    /// count.
    closed_loop: bool,
    /// Cancels the requests in flight (the grace period's end, `--duration-cancel`, abort).
    cancel: CancellationToken,
    /// The SLO controller sets the schedule (`sink.throttle`): what it planned is what it
    /// sent, and the arrival it stopped at.
    adaptive: bool,
}

/// What the sends have done so far: the conversations' tasks and what those that ended did.
struct Sending {
    tasks: JoinSet<Talked>,
    talked: Talked,
    /// Turns of the conversations handed to a task.
    dispatched: u64,
    /// The arrivals handed to a task, and (a window's, once counted) those its schedule
    /// still held when it halted.
    arrivals: u64,
    /// The time window ended (the run's sends with it).
    timed_out: bool,
}

/// Where the schedule's loop halted before the schedule ended: why, at which arrival, and
/// the arrivals after it (counted as unsent afterwards).
struct Halted {
    why: Halt,
    id: u64,
    rest: Schedule,
}

/// The arrivals, numbered: position in the schedule (the request id of a one-turn
/// conversation) and send offset in the server's time.
type Schedule = std::iter::Zip<std::ops::RangeFrom<u64>, Box<dyn Iterator<Item = u64> + Send>>;

impl Sending {
    fn new() -> Sending {
        Sending {
            tasks: JoinSet::new(),
            talked: Talked::default(),
            dispatched: 0,
            arrivals: 0,
            timed_out: false,
        }
    }
}

/// Ready at `window_end`, never without one.
async fn deadline(window_end: Option<tokio::time::Instant>) {
    match window_end {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl<'a> Run<'a> {
    fn new(
        client: Arc<Client>,
        spec: &'a LoadSpec,
        clock: Clock,
        start_ns: u64,
        stop: CancellationToken,
        sink: Sink,
    ) -> Run<'a> {
        let time_scale = if sink.time_scale > 0.0 {
            sink.time_scale
        } else {
            1.0
        };
        let mut run = Run {
            client,
            spec,
            clock,
            start_ns,
            time_scale,
            stop,
            sink,
            window_end: None,
            closed_loop: false,
            adaptive: false,
            cancel: CancellationToken::new(),
        };
        let window_end = spec.shape.window_s().map(|w| run.real_ns(w * 1e9));
        run.window_end = window_end.map(|ns| clock.instant_at(ns));
        let rate = match spec.request_rate {
            RequestRate::PerSecond(r) => Some(r),
            RequestRate::Infinite => None,
        };
        run.closed_loop = run.window_end.is_some() && spec.shape.peak_rate(rate).is_none();
        run.adaptive = run.sink.throttle.is_some();
        run
    }

    /// The clock's ns of `server_ns` of the server's time after the start: a simulator
    /// running `time_scale` times faster than real time gets its schedule compressed by the
    /// same factor.
    fn real_ns(&self, server_ns: f64) -> u64 {
        (self.start_ns).saturating_add(real_span_ns(server_ns, self.time_scale))
    }

    /// Whether this driver sends schedule position `id` (a shard sends the ids it owns).
    fn owned(&self, id: u64) -> bool {
        self.spec.shard.is_none_or(|s| s.owns(id))
    }

    /// Sends each conversation of `pool` at its arrival's time (a trace's own, else the
    /// load's arrival process), gated by the concurrency cap, until the schedule or the pool
    /// runs out, `stop` is cancelled, or the window ends (while an arrival waits for a slot,
    /// or, for a closed loop, at all). Where it halted, when it did before the schedule's end.
    async fn send_by_schedule(
        &self,
        pool: &mut Pool,
        trace: Option<Vec<u64>>,
        s: &mut Sending,
    ) -> Option<Halted> {
        let spec = self.spec;
        let deadline = deadline(self.window_end);
        tokio::pin!(deadline);
        let throttle = self.sink.throttle.clone();
        let gate = (throttle.as_ref().and_then(|t| t.gate())).or_else(|| {
            spec.concurrency_cap()
                .map(|c| Arc::new(Semaphore::new(c.min(Semaphore::MAX_PERMITS as u64) as usize)))
        });
        let schedule: Box<dyn Iterator<Item = u64> + Send> = match (trace, throttle) {
            (Some(t), _) => Box::new(t.into_iter()),
            (None, Some(t)) => t.offsets(spec.seed, spec.burstiness),
            (None, None) => Box::new(arrival_offsets(spec, spec.num_prompts)),
        };
        let mut schedule: Schedule = (0u64..).zip(schedule);
        let mut timer = crate::measure::timer::SendTimer::new();
        let mut halted: Option<(Halt, u64)> = None;
        for (id, offset) in schedule.by_ref() {
            if pool.exhausted(id) {
                break;
            }
            if !self.owned(id) {
                continue;
            }
            let scheduled_ns = self.real_ns(offset as f64);
            let at = self.clock.instant_at(scheduled_ns);
            // An arrival is due inside the window (the schedule ends there), so when its time
            // and the window's end come in the same timer tick it is sent, a tick late at most
            // (its schedule lag shows it), never dropped.
            if at > tokio::time::Instant::now() {
                tokio::select! {
                    biased;
                    () = self.stop.cancelled() => { halted = Some((Halt::Stopped, id)); break }
                    // Sub-millisecond: tokio's timer would leave a request up to 2 ms late.
                    () = timer.sleep_until(at) => {}
                }
            } else if self.stop.is_cancelled() {
                halted = Some((Halt::Stopped, id));
                break;
            }
            let permit = match &gate {
                Some(g) => tokio::select! {
                    biased;
                    () = self.stop.cancelled() => { halted = Some((Halt::Stopped, id)); break }
                    p = g.clone().acquire_owned() => p.ok(),
                    () = &mut deadline => {
                        s.timed_out = true;
                        halted = Some((Halt::WindowEnded, id));
                        break
                    }
                },
                None => None,
            };
            // A closed loop sends until the window's end, nothing after.
            let now = tokio::time::Instant::now();
            if self.closed_loop && self.window_end.is_some_and(|end| now >= end) {
                s.timed_out = true;
                break;
            }
            let Some(reqs) = pool.take(id) else {
                break;
            };
            if let Some(t) = &self.sink.throttle {
                t.spawned(id);
            }
            self.spawn(id, scheduled_ns, reqs, permit, s);
        }
        halted.map(|(why, id)| Halted {
            why,
            id,
            rest: schedule,
        })
    }

    /// Hands conversation `id`'s requests to a task of their own, holding `permit` (a
    /// concurrency slot) until its last turn ends, and gathers the tasks that ended.
    fn spawn(
        &self,
        id: u64,
        scheduled_ns: u64,
        reqs: Vec<RequestSpec>,
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
        s: &mut Sending,
    ) {
        s.dispatched += reqs.len() as u64;
        s.arrivals += 1;
        // A trace's later turns are due at their own times too (real clock ns).
        let due: Vec<Option<u64>> = (reqs.iter().skip(1))
            .map(|r| r.offset_ns.map(|o| self.real_ns(o as f64)))
            .collect();
        let shape = &self.spec.shape;
        let talk = Talk {
            client: self.client.clone(),
            cancel: self.cancel.clone(),
            stop: self.stop.clone(),
            out: self.sink.records.clone(),
            live: self.sink.live.clone(),
            clock: self.clock,
            think: span(shape.think_time_s.unwrap_or(0.0) / self.time_scale),
            time_scale: self.time_scale,
            window_end: self.window_end,
            history: shape.history_limits(),
        };
        let job = reqs.first().is_some_and(|r| r.call.is_some());
        s.tasks.spawn(super::warm::Warm::new(async move {
            let talked = match job {
                true => talk.run_job(id, reqs, scheduled_ns).await,
                false => talk.converse(id, reqs, scheduled_ns, due).await,
            };
            drop(permit);
            talked
        }));
        while let Some(joined) = s.tasks.try_join_next() {
            s.talked.add(Some(joined));
        }
    }

    /// A schedule that ran out before its window's end waits for the end, or for every
    /// request to finish.
    async fn wait_for_window_end(&self, s: &mut Sending) {
        let deadline = deadline(self.window_end);
        tokio::pin!(deadline);
        while self.window_end.is_some() && !s.timed_out && !self.stop.is_cancelled() {
            tokio::select! {
                biased;
                () = self.stop.cancelled() => {}
                () = &mut deadline => s.timed_out = true,
                joined = s.tasks.join_next() => match joined {
                    None => s.timed_out = true,
                    joined => {
                        s.talked.add(joined);
                    }
                },
            }
        }
    }

    /// Lets the requests in flight end, and counts a time window's end. They run to their
    /// end; once `stop` is cancelled or the window is over (now or later, also after every
    /// request was sent) they have the grace period, and `abort` ends it at once (a stop or
    /// the window's end closes the prefill gate: those waiting at it are never sent);
    /// `--duration-cancel` cancels them at the window's end. Of those in flight at the
    /// window's end, each is counted by how it ended: cancelled when its record says so (a
    /// cancel can lose the race with a request that was finishing), else drained.
    async fn drain(&self, s: &mut Sending) -> Option<WindowEnd> {
        // A time window ends the sends like a stop; its end is counted.
        let mut end = s.timed_out.then(|| WindowEnd {
            in_flight: s.tasks.len() as u64,
            cancel_mode: self.spec.shape.duration_cancel,
            ..WindowEnd::default()
        });
        if end.is_some_and(|e| e.cancel_mode) {
            self.cancel.cancel();
        }
        let ended = end.is_some();
        let grace = async {
            if !ended {
                self.stop.cancelled().await;
            }
            tokio::time::sleep(self.spec.grace()).await;
        };
        tokio::pin!(grace);
        // The window's end: a request still waiting at the prefill gate is never sent.
        let mut gate_open = !ended;
        if ended {
            self.client.close_prefill_gate();
        }
        loop {
            tokio::select! {
                // The stop: a request still waiting at the prefill gate is never sent.
                () = self.stop.cancelled(), if gate_open => {
                    gate_open = false;
                    self.client.close_prefill_gate();
                }
                joined = s.tasks.join_next() => match joined {
                    None => break,
                    joined => {
                        if s.talked.add(joined) {
                            end.iter_mut().for_each(|e| e.cancelled += 1);
                        }
                    }
                },
                () = &mut grace => { self.cancel.cancel(); break }
                () = self.sink.abort.cancelled() => { self.cancel.cancel(); break }
            }
        }
        while let Some(joined) = s.tasks.join_next().await {
            if s.talked.add(Some(joined)) {
                end.iter_mut().for_each(|e| e.cancelled += 1);
            }
        }
        if let Some(e) = &mut end {
            e.cancelled = e.cancelled.min(e.in_flight);
            e.drained = e.in_flight - e.cancelled;
        }
        end
    }

    /// What was planned and never sent, by why: the conversations' own counts and what the
    /// schedule still held when its loop `halted` (of a count-bounded run's `total`, what was
    /// not dispatched; of a window, the arrivals left in it; nothing of a closed loop's).
    /// False when a window's arrivals left were too many to count ([`PLANNED_COUNT_MAX`]).
    async fn unsent(
        &self,
        halted: Option<Halted>,
        total: u64,
        pool: Pool,
        s: &mut Sending,
    ) -> (Unsent, bool) {
        let mut unsent = s.talked.unsent;
        let Some(h) = halted else {
            return (unsent, true);
        };
        if self.adaptive {
            // The arrival it halted at was due; the controller planned nothing after it.
            let turns = pool
                .sizes
                .get((h.id % pool.sizes.len().max(1) as u64) as usize);
            let left = turns.copied().unwrap_or(1);
            match h.why {
                Halt::Stopped => unsent.stopped += left,
                Halt::WindowEnded => unsent.window_ended += left,
            }
            return (unsent, true);
        }
        if self.window_end.is_none() {
            let left = total.saturating_sub(s.dispatched);
            match h.why {
                Halt::Stopped => unsent.stopped += left,
                Halt::WindowEnded => unsent.window_ended += left,
            }
            return (unsent, true);
        }
        if self.closed_loop {
            return (unsent, true);
        }
        let why = h.why;
        let counts = (pool.sizes, pool.firsts);
        let (left, arrivals) = match left_in_window(h, counts, self.spec.shard).await {
            Some(left) => left,
            None => return (unsent, false),
        };
        match why {
            Halt::Stopped => unsent.stopped += left,
            Halt::WindowEnded => unsent.window_ended += left,
        }
        s.arrivals += arrivals;
        (unsent, true)
    }
}

/// The turns a time window still held when its schedule's loop halted at `h.id` (of each
/// conversation a shard owns, every turn when stopped; its first when the window ended: its
/// later turns would come due after the window's end, so they were not planned; of a job, the
/// calls it starts with), and the arrivals. `counts`: each conversation's turns, and those it
/// starts with. Counted off the measuring thread (with every request ended, nothing is timed
/// any more, but the monitor still is); `None` past [`PLANNED_COUNT_MAX`].
async fn left_in_window(
    h: Halted,
    counts: (Vec<u64>, Vec<u64>),
    shard: Option<Shard>,
) -> Option<(u64, u64)> {
    let Halted { why, id, rest } = h;
    let rest = std::iter::once(id).chain(rest.map(|(id, _)| id));
    let (sizes, firsts) = counts;
    let n = sizes.len() as u64;
    let turns = move |id: u64| match why {
        Halt::WindowEnded => firsts[(id % n) as usize],
        Halt::Stopped => sizes[(id % n) as usize],
    };
    let counted = tokio::task::spawn_blocking(move || {
        let (mut left, mut arrivals) = (0u64, 0u64);
        for id in rest.filter(|&id| shard.is_none_or(|s| s.owns(id))) {
            if left > PLANNED_COUNT_MAX {
                return None;
            }
            left += turns(id);
            arrivals += 1;
        }
        Some((left, arrivals))
    });
    counted.await.ok().flatten()
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
