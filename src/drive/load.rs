//! Arrival processes and the one driver that sends a run's requests.
//!
//! [`arrival_offsets`] turns a [`LoadSpec`] (its rate, ramp, stages and time window) into send
//! offsets (a pure, seeded function, so a run's schedule is reproducible); a trace's requests
//! carry their own. [`drive`] sends each request at its offset, gated by the concurrency limit
//! and the time window, and hands every finished [`RequestRecord`] to a channel; every
//! request it planned and did not send it counts, with why ([`DriveSummary`]). It does not
//! compute statistics, print, or write files.
//!
//! Every arrival process goes through the same driver: to add one, add a case to
//! [`arrival_offsets`].
//!
//! Client-side queueing is never hidden: a record keeps both the scheduled and the actual send
//! time, so the wait for a concurrency slot shows up as schedule lag.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use rand_distr::{Distribution, Gamma};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::shape::{HistoryLimits, WindowEnd};
use crate::config::{LoadSpec, RequestRate};
use crate::drive::history::{unbuilt, History, Unbuilt};
use crate::drive::progress::Live;
use crate::measure::client::{Client, RequestSpec};
use crate::measure::clock::Clock;
use crate::measure::record::{FailureKind, RequestRecord};
use crate::results::document::Unsent;

/// Send offsets in nanoseconds from the start of the run, non-decreasing: `n` of them, or,
/// when the load's shape has a time window (`--duration`, `--stages`), every offset inside it
/// (endless for an unbounded rate: the driver stops at the window's end).
///
/// `inf` rate: all at offset 0 (as vLLM's default). A finite rate λ: inter-arrival gaps drawn
/// from Gamma(shape = burstiness, scale = 1 / (λ · burstiness)), so the mean rate is λ and
/// burstiness 1 is a Poisson process. The first request goes at offset 0. Gaps are not
/// rescaled to land the last request at N/λ (newer vLLM does that); each gap is independent.
/// A ramp draws each gap at the rate its progress gives (by time over the duration, else by
/// request index, as vLLM); stages draw at their stage's rate, and a gap that would cross into
/// the next stage is redrawn from the boundary at the next stage's rate (exact for Poisson
/// arrivals, which forget their past).
pub fn arrival_offsets(spec: &LoadSpec, n: u64) -> impl Iterator<Item = u64> {
    let shape = spec.shape.clone();
    let (rate, b) = (spec.request_rate, spec.burstiness);
    let window = shape.window_s();
    let mut rng = rand::rngs::StdRng::seed_from_u64(spec.seed);
    let mut draw = move |r: f64| match Gamma::new(b, 1.0 / (r * b)) {
        Ok(g) if r > 0.0 => g.sample(&mut rng),
        _ => f64::INFINITY,
    };
    let mut t_s = 0.0f64;
    (0u64..).map_while(move |i| {
        if window.is_none() && i >= n {
            return None;
        }
        if i > 0 {
            if let Some(ramp) = &shape.ramp {
                let p = match shape.duration_s {
                    Some(d) => t_s / d,
                    None => i as f64 / n.saturating_sub(1).max(1) as f64,
                };
                t_s += draw(ramp.rate(p));
            } else if !shape.stages.is_empty() {
                loop {
                    let (k, end) = shape.stage_at(t_s)?;
                    let next = t_s + draw(shape.stages[k].rate);
                    if next < end {
                        t_s = next;
                        break;
                    }
                    t_s = end;
                }
            } else if let RequestRate::PerSecond(r) = rate {
                t_s += draw(r);
            }
        }
        if window.is_some_and(|w| t_s >= w) {
            return None;
        }
        Some((t_s * 1e9) as u64)
    })
}

/// Most prompts a time-bounded run builds for its expected requests (`config::limits`).
pub const POOL_MAX: u64 = crate::config::limits::POOL_MAX;

/// How many requests to build: `--num-prompts` (times the turns of a conversation), or for a
/// time-bounded run at a known peak rate its expected requests with a 10% margin (at most
/// [`POOL_MAX`]) when that is more.
pub fn pool_size(spec: &LoadSpec) -> u64 {
    let rate = match spec.request_rate {
        RequestRate::PerSecond(r) => Some(r),
        RequestRate::Infinite => None,
    };
    let expected = spec.shape.window_s().zip(spec.shape.peak_rate(rate));
    match expected {
        Some((w, r)) => spec
            .num_prompts
            .max(((w * r * 1.1).ceil() as u64 + 16).min(POOL_MAX)),
        None => spec.num_prompts * u64::from(spec.shape.turns()),
    }
}

/// Where the driver reports: finished records, and the live `sent` counter.
#[derive(Clone, Debug)]
pub struct Sink {
    pub records: mpsc::UnboundedSender<RequestRecord>,
    pub live: Arc<Live>,
    /// The simulated server's clock speed-up (`--time-scale`); 1 for real servers.
    pub time_scale: f64,
    /// Cancelled to end the grace period at once (a second Ctrl-C).
    pub abort: CancellationToken,
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
    /// Planned requests never sent, by why.
    pub unsent: Unsent,
    /// A time-bounded run that reached its window's end (not stopped before).
    pub window_end: Option<WindowEnd>,
}

/// The most arrivals left in a stopped time-bounded run's window that are counted (they are
/// drawn from the schedule after the run); past it its planned count is unknown.
pub const PLANNED_COUNT_MAX: u64 = 100_000_000;

/// What one conversation's task did (a single request is a conversation of one turn).
#[derive(Clone, Copy, Debug, Default)]
struct Talked {
    sent: u64,
    unsent: Unsent,
    /// Its requests that ended cancelled (the run's cancel reached them in flight).
    cancelled: u64,
}

impl Talked {
    /// Adds a finished task's count (a task that panicked counted nothing: there is none);
    /// true when the task's request was cancelled in flight.
    fn add(&mut self, joined: Option<Result<Talked, tokio::task::JoinError>>) -> bool {
        let Some(Ok(t)) = joined else {
            return false;
        };
        self.sent += t.sent;
        self.unsent.add(&t.unsent);
        self.cancelled += t.cancelled;
        t.cancelled > 0
    }
}

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
    let time_scale = if sink.time_scale > 0.0 {
        sink.time_scale
    } else {
        1.0
    };
    // The schedule is in the server's time: a simulator running `time_scale` times faster
    // than real time gets it compressed by the same factor.
    let real_ns = |server_ns: f64| start_ns.saturating_add(real_span_ns(server_ns, time_scale));
    let window_end = spec
        .shape
        .window_s()
        .map(|w| clock.instant_at(real_ns(w * 1e9)));
    let deadline = async {
        match window_end {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    // A time window at an unbounded rate sends as fast as slots free up: no fixed count.
    let rate = match spec.request_rate {
        RequestRate::PerSecond(r) => Some(r),
        RequestRate::Infinite => None,
    };
    let closed_loop = window_end.is_some() && spec.shape.peak_rate(rate).is_none();
    let cancel = CancellationToken::new();
    let owned = |id: u64| spec.shard.is_none_or(|s| s.owns(id));
    // A scheduled arrival sends a conversation (one request, or its turns in order).
    let pool = conversations(pool, spec.shape.turns());
    // Request ids: conversation `slot`'s turns are numbered from `first_id[slot]`; a reused
    // pool continues after the last id of its previous pass.
    let first_id: Vec<u64> = (pool.iter())
        .scan(0, |next, c| {
            let id = *next;
            *next += c.len() as u64;
            Some(id)
        })
        .collect();
    let pass_len: u64 = pool.iter().map(|c| c.len() as u64).sum();
    let sizes: Vec<u64> = pool.iter().map(|c| c.len() as u64).collect();
    // A trace brings its send times (each conversation's first request's) and sends each
    // of its conversations once; otherwise the load's arrival process sends `--num-prompts`.
    let trace: Option<Vec<u64>> = (pool.iter())
        .map(|c| c.first()?.offset_ns)
        .collect::<Option<Vec<u64>>>()
        .filter(|t| !t.is_empty());
    let count = match &trace {
        Some(t) => t.len() as u64,
        None => spec.num_prompts,
    };
    // A count-bounded run plans each of its conversations once, every turn.
    let total: u64 = (0..count)
        .filter(|&id| owned(id))
        .filter_map(|id| sizes.get(usize::try_from(id).ok()?))
        .sum();
    if window_end.is_none() {
        sink.live.planned.store(total, Relaxed);
    }
    let gate = spec
        .concurrency_cap()
        .map(|c| Arc::new(Semaphore::new(c.min(Semaphore::MAX_PERMITS as u64) as usize)));
    // Only a time-bounded run may send a prompt twice: it keeps a copy of each one it sent.
    let may_reuse = spec.shape.window_s().is_some();
    let mut pool: Vec<Option<Vec<RequestSpec>>> = pool.into_iter().map(Some).collect();
    let mut copies: Vec<Option<Vec<RequestSpec>>> =
        vec![None; if may_reuse { pool.len() } else { 0 }];
    let mut tasks = JoinSet::new();
    let mut talked = Talked::default();
    // Turns of the conversations handed to a task.
    let mut dispatched = 0u64;
    let mut timed_out = false;
    let mut halted: Option<(Halt, u64)> = None;
    let schedule: Box<dyn Iterator<Item = u64> + Send> = match trace {
        Some(t) => Box::new(t.into_iter()),
        None => Box::new(arrival_offsets(spec, spec.num_prompts)),
    };
    let mut schedule = (0u64..).zip(schedule);
    let mut timer = crate::measure::timer::SendTimer::new();
    for (id, offset) in schedule.by_ref() {
        if pool.is_empty() || (!may_reuse && id >= pool.len() as u64) {
            break;
        }
        if !owned(id) {
            continue;
        }
        let scheduled_ns = real_ns(offset as f64);
        let at = clock.instant_at(scheduled_ns);
        // An arrival is due inside the window (the schedule ends there), so when its time
        // and the window's end come in the same timer tick it is sent, a tick late at most
        // (its schedule lag shows it), never dropped.
        if at > tokio::time::Instant::now() {
            tokio::select! {
                biased;
                () = stop.cancelled() => { halted = Some((Halt::Stopped, id)); break }
                // Sub-millisecond: tokio's timer would leave up to 2 ms late (issue 26).
                () = timer.sleep_until(at) => {}
            }
        } else if stop.is_cancelled() {
            halted = Some((Halt::Stopped, id));
            break;
        }
        let permit = match &gate {
            Some(g) => tokio::select! {
                biased;
                () = stop.cancelled() => { halted = Some((Halt::Stopped, id)); break }
                p = g.clone().acquire_owned() => p.ok(),
                () = &mut deadline => {
                    timed_out = true;
                    halted = Some((Halt::WindowEnded, id));
                    break
                }
            },
            None => None,
        };
        // A closed loop sends until the window's end, nothing after.
        if closed_loop && window_end.is_some_and(|end| tokio::time::Instant::now() >= end) {
            timed_out = true;
            break;
        }
        // Requests are moved out of the pool the first time; reused ones are copies.
        let slot = (id % pool.len() as u64) as usize;
        let Some(mut reqs) = pool[slot]
            .take()
            .or_else(|| copies.get(slot).cloned().flatten())
        else {
            break;
        };
        if may_reuse && copies[slot].is_none() {
            copies[slot] = Some(reqs.clone());
        }
        let base = id / pool.len() as u64 * pass_len + first_id[slot];
        for (k, r) in reqs.iter_mut().enumerate() {
            r.id = base + k as u64;
        }
        dispatched += reqs.len() as u64;
        // A trace's later turns are due at their own times too (real clock ns).
        let due: Vec<Option<u64>> = (reqs.iter().skip(1))
            .map(|r| r.offset_ns.map(|o| real_ns(o as f64)))
            .collect();
        let talk = Talk {
            client: client.clone(),
            cancel: cancel.clone(),
            stop: stop.clone(),
            out: sink.records.clone(),
            live: sink.live.clone(),
            clock,
            think: span(spec.shape.think_time_s.unwrap_or(0.0) / time_scale),
            window_end,
            history: spec.shape.history_limits(),
        };
        tasks.spawn(async move {
            let talked = talk.converse(id, reqs, scheduled_ns, due).await;
            drop(permit);
            talked
        });
        while let Some(joined) = tasks.try_join_next() {
            talked.add(Some(joined));
        }
    }
    // A schedule that ran out before its window's end waits for the end, or for every request
    // to finish.
    while window_end.is_some() && !timed_out && !stop.is_cancelled() {
        tokio::select! {
            biased;
            () = stop.cancelled() => {}
            () = &mut deadline => timed_out = true,
            joined = tasks.join_next() => match joined {
                None => timed_out = true,
                joined => {
                    talked.add(joined);
                }
            },
        }
    }
    // A time window ends the sends like a stop; its end is counted.
    let mut end = timed_out.then(|| WindowEnd {
        in_flight: tasks.len() as u64,
        cancel_mode: spec.shape.duration_cancel,
        ..WindowEnd::default()
    });
    if end.is_some_and(|e| e.cancel_mode) {
        cancel.cancel();
    }
    // In-flight requests run to their end; once `stop` is cancelled or the window is over
    // (now or later, also after every request was sent) they have the grace period, and
    // `abort` ends it at once. Of those in flight at the window's end, each is counted by how
    // it ended: cancelled when its record says so (a cancel can lose the race with a request
    // that was finishing), else drained.
    let ended = end.is_some();
    let grace = async {
        if !ended {
            stop.cancelled().await;
        }
        tokio::time::sleep(spec.grace()).await;
    };
    tokio::pin!(grace);
    loop {
        tokio::select! {
            joined = tasks.join_next() => match joined {
                None => break,
                joined => {
                    if talked.add(joined) {
                        end.iter_mut().for_each(|e| e.cancelled += 1);
                    }
                }
            },
            () = &mut grace => { cancel.cancel(); break }
            () = sink.abort.cancelled() => { cancel.cancel(); break }
        }
    }
    while let Some(joined) = tasks.join_next().await {
        if talked.add(Some(joined)) {
            end.iter_mut().for_each(|e| e.cancelled += 1);
        }
    }
    if let Some(e) = &mut end {
        e.cancelled = e.cancelled.min(e.in_flight);
        e.drained = e.in_flight - e.cancelled;
    }
    // What the schedule still held when its loop ended.
    let mut unsent = talked.unsent;
    let mut known = true;
    match (halted, window_end) {
        (Some((why, _)), None) => {
            let left = total.saturating_sub(dispatched);
            match why {
                Halt::Stopped => unsent.stopped += left,
                Halt::WindowEnded => unsent.window_ended += left,
            }
        }
        (Some(_), Some(_)) if closed_loop => {}
        (Some((why, id)), Some(_)) => {
            // The arrivals left inside the window, counted off the measuring thread (with
            // every request ended, nothing is timed any more, but the monitor still is).
            let rest = std::iter::once(id).chain(schedule.map(|(id, _)| id));
            let (n, shard) = (sizes.len() as u64, spec.shard);
            let turns = move |id: u64| match why {
                // Its later turns would come due after the window's end: not planned.
                Halt::WindowEnded => 1,
                Halt::Stopped => sizes[(id % n) as usize],
            };
            let counted = tokio::task::spawn_blocking(move || {
                let mut left = 0u64;
                for id in rest.filter(|&id| shard.is_none_or(|s| s.owns(id))) {
                    if left > PLANNED_COUNT_MAX {
                        return None;
                    }
                    left += turns(id);
                }
                Some(left)
            });
            match counted.await.ok().flatten() {
                Some(left) if why == Halt::Stopped => unsent.stopped += left,
                Some(left) => unsent.window_ended += left,
                None => known = false,
            }
        }
        (None, _) => {}
    }
    // A count-bounded run's plan is known from the start; a window's is what was sent and
    // what was due in it but not sent, and a closed loop's is unknown.
    let planned = match window_end {
        None => Some(total),
        Some(_) => (known && !closed_loop).then(|| talked.sent + unsent.total()),
    };
    DriveSummary {
        sent: talked.sent,
        planned,
        unsent,
        window_end: end,
    }
}

/// Groups the pool into conversations: with `--turns N` every N requests, as turns 0..N;
/// otherwise by the requests' own `turn` (a conversation dataset's), each request without
/// one alone.
pub(super) fn conversations(pool: Vec<RequestSpec>, turns: u32) -> Vec<Vec<RequestSpec>> {
    let mut out: Vec<Vec<RequestSpec>> = Vec::new();
    for (i, mut r) in pool.into_iter().enumerate() {
        if turns > 1 {
            r.turn = Some(i as u32 % turns);
        }
        match out.last_mut() {
            Some(c) if r.turn.is_some_and(|t| t > 0) => c.push(r),
            _ => out.push(vec![r]),
        }
    }
    out
}

/// What a conversation's task needs to send its turns and report them.
struct Talk {
    client: Arc<Client>,
    cancel: CancellationToken,
    stop: CancellationToken,
    out: mpsc::UnboundedSender<RequestRecord>,
    live: Arc<Live>,
    clock: Clock,
    /// Think time between turns, real time.
    think: Duration,
    /// A time-bounded run's end: no turn starts after it.
    window_end: Option<tokio::time::Instant>,
    /// What a conversation's history may hold.
    history: HistoryLimits,
}

impl Talk {
    /// Sends `turns` in order (one request: just that one). Turn k + 1 is scheduled
    /// `think` after turn k ended (a trace's turn: not before its `due` time) and goes
    /// only if turn k succeeded, the run was not stopped and its time window (if any) has not
    /// ended. A turn carries the history ([`History`]); one that cannot be built is a failed
    /// record (`prompt`) that ends the conversation.
    ///
    /// Returns how many turns it sent and why it did not send the others: the run stopped,
    /// or a turn failed; turns that would come due after the window's end are not planned.
    async fn converse(
        self,
        conversation: u64,
        turns: Vec<RequestSpec>,
        first_ns: u64,
        due: Vec<Option<u64>>,
    ) -> Talked {
        let due = |k: usize| due.get(k.wrapping_sub(1)).copied().flatten().unwrap_or(0);
        let multi = turns.first().is_some_and(|r| r.turn.is_some());
        let mut history = History::default();
        let mut scheduled_ns = first_ns;
        let n = turns.len() as u64;
        let mut talked = Talked::default();
        let think_ns = u64::try_from(self.think.as_nanos()).unwrap_or(u64::MAX);
        for (k, mut req) in turns.into_iter().enumerate() {
            // This turn and those after it.
            let left = n - k as u64;
            if k > 0 {
                scheduled_ns = (self.clock.now_ns().saturating_add(think_ns)).max(due(k));
                let at = self.clock.instant_at(scheduled_ns);
                if self.window_end.is_some_and(|end| at >= end) {
                    return talked;
                }
                let wait = at > tokio::time::Instant::now();
                tokio::select! {
                    biased;
                    () = self.stop.cancelled() => {
                        talked.unsent.stopped += left;
                        return talked;
                    }
                    // Due now: at once (a timer would round up to its next tick).
                    () = tokio::time::sleep_until(at), if wait => {}
                    () = std::future::ready(()), if !wait => {}
                }
            }
            let built = if multi {
                (history.turn(&mut req, k, &self.client, self.history, &self.cancel)).await
            } else {
                Ok(())
            };
            // Sent counts when the first byte is written (or, for a request that never got
            // that far, when it ends), so the live in-flight count is sent − finished.
            let told = AtomicBool::new(false);
            let tell = || {
                if !told.swap(true, Relaxed) {
                    self.live.sent.fetch_add(1, Relaxed);
                }
            };
            let mut record = match built {
                Ok(()) => {
                    (self.client)
                        .send_within(
                            &req,
                            scheduled_ns,
                            &self.clock,
                            &self.cancel,
                            None,
                            Some(&tell),
                        )
                        .await
                }
                Err(Unbuilt::Failed(why)) => unbuilt(&req, scheduled_ns, self.clock.now_ns(), why),
                Err(Unbuilt::Cancelled) => {
                    talked.unsent.stopped += left;
                    return talked;
                }
            };
            tell();
            let ok = record.is_ok();
            talked.cancelled +=
                u64::from(record.outcome.failure_kind() == Some(FailureKind::Cancelled));
            if multi {
                record.conversation = Some(conversation);
                record.turn = Some(k as u32);
                history.reply(req.prompt, &record);
            }
            let _ = self.out.send(record);
            talked.sent += 1;
            if !ok {
                self.after_failure(left - 1, &mut talked);
                return talked;
            }
        }
        talked
    }

    /// Counts the `later` turns a failed turn leaves unsent: beyond the window (not planned)
    /// when it has ended, stopped when the run was, else their conversation's failure.
    fn after_failure(&self, later: u64, talked: &mut Talked) {
        if self
            .window_end
            .is_some_and(|end| tokio::time::Instant::now() >= end)
        {
            return;
        }
        if self.stop.is_cancelled() || self.cancel.is_cancelled() {
            talked.unsent.stopped += later;
        } else {
            talked.unsent.earlier_turn_failed += later;
        }
    }
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
