//! Users with a fixed gap (`--users N --user-gap S`; `config::users` holds the rules): N
//! closed-loop users, each taking the next unit of the run's pool (`pool.rs`: a request, a
//! conversation, a job) in schedule order and sending it through the one per-unit path
//! ([`Talk::converse`], `talk.rs`), then waiting S (server time) after that unit ended before
//! it takes the next. The run ends when `--num-prompts` units were taken and their users are
//! done, or when it is stopped (a signal, `q`, an early stop, a records write error).
//!
//! A steady start: user i's first send is i/N of one gap after the start, so the first units
//! do not all go at once (docs/workloads.md, "Users with a fixed gap", says why not more).
//!
//! Each user's records pass through it on their way to the run's writer: it stamps them with
//! the user and counts what the user did ([`UserTally`]): a unit completed when every
//! request of it was sent and ended ok, and the time from a unit's last end to its next send.
//! Every unit planned is accounted for: taken units by `converse`'s own count, units never
//! taken as stopped.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::LoadSpec;
use crate::drive::load::{DriveSummary, Sink};
use crate::drive::pool::Pool;
use crate::drive::talk::{Talk, Talked};
use crate::measure::client::{Client, RequestSpec};
use crate::measure::clock::Clock;
use crate::measure::record::RequestRecord;
use crate::results::stats::users::{UserCounts, UserTally};

/// The units left to take, in schedule order.
struct Units {
    pool: Pool,
    /// The next schedule position.
    next: u64,
    /// The units the run takes (`--num-prompts`).
    count: u64,
    /// Requests of the units taken so far.
    dispatched: u64,
}

impl Units {
    /// The next unit, numbered; `None` once `count` were taken or the pool has no more.
    fn take(&mut self) -> Option<(u64, Vec<RequestSpec>)> {
        let id = self.next;
        if id >= self.count || self.pool.exhausted(id) {
            return None;
        }
        let reqs = self.pool.take(id)?;
        self.next += 1;
        self.dispatched += reqs.len() as u64;
        Some((id, reqs))
    }
}

/// What every user shares: the run's fixed facts.
struct Shared {
    client: Arc<Client>,
    clock: Clock,
    stop: CancellationToken,
    /// Cancels the requests in flight (the grace period's end, an abort).
    cancel: CancellationToken,
    sink: Sink,
    units: Mutex<Units>,
    /// The gap, real ns.
    gap_ns: u64,
    /// Think time between a conversation's turns, real time.
    think: std::time::Duration,
    spec: LoadSpec,
}

/// Real ns of `server_s` seconds of the server's time at speed-up `k`, rounded up (so the
/// gap in the server's time is never short of what was asked); saturated.
fn real_ns(server_s: f64, k: f64) -> u64 {
    (server_s * 1e9 / k).ceil() as u64
}

/// Runs `users` users over `pool` (its units taken in schedule order) from `start_ns`;
/// the summary of what was sent and, of what was planned, what was not and why, with what
/// each user did.
pub async fn drive(
    client: Arc<Client>,
    pool: Vec<RequestSpec>,
    spec: &LoadSpec,
    clock: Clock,
    start_ns: u64,
    stop: CancellationToken,
    sink: Sink,
) -> DriveSummary {
    let users = spec.shape.users.unwrap_or(1).max(1);
    let k = if sink.time_scale > 0.0 {
        sink.time_scale
    } else {
        1.0
    };
    let (pool, _) = Pool::new(pool, spec);
    let jobs = pool.jobs;
    let total = pool.planned(spec.num_prompts, |_| true);
    sink.live.planned.store(total, Relaxed);
    let gap_s = spec.shape.user_gap_s.unwrap_or(0.0);
    let shared = Arc::new(Shared {
        client,
        clock,
        stop,
        cancel: CancellationToken::new(),
        units: Mutex::new(Units {
            pool,
            next: 0,
            count: spec.num_prompts,
            dispatched: 0,
        }),
        gap_ns: real_ns(gap_s, k),
        think: std::time::Duration::from_nanos(real_ns(spec.shape.think_time_s.unwrap_or(0.0), k)),
        spec: spec.clone(),
        sink,
    });
    let mut tasks = JoinSet::new();
    for i in 0..users {
        // User i starts i/N of a gap after the start.
        let offset = u128::from(shared.gap_ns) * u128::from(i) / u128::from(users);
        let first_ns = start_ns.saturating_add(u64::try_from(offset).unwrap_or(u64::MAX));
        tasks.spawn(super::warm::Warm::new(user(shared.clone(), i, first_ns)));
    }
    let (talked, counts) = drain(&shared, &mut tasks).await;
    let dispatched = shared.units.lock().map_or(total, |u| u.dispatched);
    let mut unsent = talked.unsent;
    // Units never taken: the run stopped before a user could take them.
    unsent.stopped += total.saturating_sub(dispatched);
    DriveSummary {
        sent: talked.sent,
        planned: Some(total),
        unsent,
        window_end: None,
        jobs_planned: jobs.then_some(spec.num_prompts),
        users: Some(counts),
    }
}

/// Waits for the users to end: they run to their last unit; once `stop` is cancelled no user
/// takes another, and what is in flight has the grace period (`abort` ends it at once).
async fn drain(shared: &Shared, tasks: &mut JoinSet<(Talked, UserTally)>) -> (Talked, UserCounts) {
    let mut talked = Talked::default();
    let mut tallies: Vec<UserTally> = Vec::new();
    let mut keep = |joined: Option<Result<(Talked, UserTally), tokio::task::JoinError>>| {
        if let Some(Ok((t, tally))) = joined {
            talked.add(Some(Ok(t)));
            tallies.push(tally);
        }
    };
    let grace = async {
        shared.stop.cancelled().await;
        // A request still waiting at the prefill gate is never sent.
        shared.client.close_prefill_gate();
        tokio::time::sleep(shared.spec.grace()).await;
    };
    tokio::pin!(grace);
    loop {
        tokio::select! {
            joined = tasks.join_next() => match joined {
                None => break,
                joined => keep(joined),
            },
            () = &mut grace => { shared.cancel.cancel(); break }
            () = shared.sink.abort.cancelled() => { shared.cancel.cancel(); break }
        }
    }
    while let Some(joined) = tasks.join_next().await {
        keep(Some(joined));
    }
    // The users in their order, so the counts do not depend on which ended first.
    let mut counts = UserCounts::default();
    tallies.iter().for_each(|t| counts.add(t));
    (talked, counts)
}

/// User `i`: from `first_ns` on, takes a unit, sends it, waits the gap after its end, and
/// again, until no unit is left or the run is stopped.
async fn user(shared: Arc<Shared>, i: u32, first_ns: u64) -> (Talked, UserTally) {
    let mut talked = Talked::default();
    let mut tally = UserTally::default();
    let mut next_ns = first_ns;
    // The end of the user's previous unit (clock ns).
    let mut last_end: Option<u64> = None;
    loop {
        let at = shared.clock.instant_at(next_ns);
        if at > tokio::time::Instant::now() {
            tokio::select! {
                biased;
                () = shared.stop.cancelled() => break,
                () = tokio::time::sleep_until(at) => {}
            }
        }
        if shared.stop.is_cancelled() {
            break;
        }
        let Some((id, reqs)) = shared.units.lock().ok().and_then(|mut u| u.take()) else {
            break;
        };
        tally.units_taken += 1;
        let size = reqs.len() as u64;
        let unit = send_unit(&shared, i, id, reqs, next_ns).await;
        talked.add(Some(Ok(unit.talked)));
        tally.ok_requests += unit.ok;
        if unit.ok == size {
            tally.units_completed += 1;
        }
        if let (Some(end), Some(sent)) = (last_end, unit.first_send) {
            let gap = sent.saturating_sub(end);
            tally.min_gap_ns = Some(tally.min_gap_ns.map_or(gap, |g| g.min(gap)));
        }
        tally.first_send_ns = tally.first_send_ns.or(unit.first_send);
        // The unit ended when its last record did (and no earlier than now: the gap is
        // counted from what the user saw last).
        let end = unit.last_end.unwrap_or(0).max(shared.clock.now_ns());
        last_end = Some(end);
        next_ns = end.saturating_add(shared.gap_ns);
    }
    (talked, tally)
}

/// What one unit did, as its records passed.
struct Unit {
    talked: Talked,
    /// Its requests that ended ok.
    ok: u64,
    first_send: Option<u64>,
    last_end: Option<u64>,
}

/// Sends unit `id` of user `i` through the one per-unit path, passing each record on to the
/// run's writer with the user set, as it comes.
async fn send_unit(shared: &Shared, i: u32, id: u64, reqs: Vec<RequestSpec>, at_ns: u64) -> Unit {
    let (tx, mut rx) = mpsc::unbounded_channel::<RequestRecord>();
    let due = vec![None; reqs.len().saturating_sub(1)];
    let talk = Talk {
        client: shared.client.clone(),
        cancel: shared.cancel.clone(),
        stop: shared.stop.clone(),
        out: tx,
        live: shared.sink.live.clone(),
        clock: shared.clock,
        think: shared.think,
        time_scale: shared.sink.time_scale.max(f64::MIN_POSITIVE),
        window_end: None,
        history: shared.spec.shape.history_limits(),
    };
    let mut unit = Unit {
        talked: Talked::default(),
        ok: 0,
        first_send: None,
        last_end: None,
    };
    let mut pass = |mut r: RequestRecord| {
        r.user = Some(i);
        unit.ok += u64::from(r.is_ok());
        unit.first_send = Some(unit.first_send.map_or(r.sent_ns, |s| s.min(r.sent_ns)));
        unit.last_end = Some(unit.last_end.map_or(r.end_ns, |e| e.max(r.end_ns)));
        let _ = shared.sink.records.send(r);
    };
    // A job's calls follow its graph (`job.rs`); a conversation's turns go in order.
    let conversing = async move {
        match reqs.first().is_some_and(|r| r.call.is_some()) {
            true => talk.run_job(id, reqs, at_ns).await,
            false => talk.converse(id, reqs, at_ns, due).await,
        }
    };
    tokio::pin!(conversing);
    let talked = loop {
        tokio::select! {
            talked = &mut conversing => break talked,
            Some(r) = rx.recv() => pass(r),
        }
    };
    while let Ok(r) = rx.try_recv() {
        pass(r);
    }
    unit.talked = talked;
    unit
}
