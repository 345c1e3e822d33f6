//! Arrival processes and the one driver that sends a run's requests.
//!
//! [`arrival_offsets`] turns a [`LoadSpec`] (its rate, ramp, stages and time window) into send
//! offsets (a pure, seeded function, so a run's schedule is reproducible); a trace's requests
//! carry their own. [`drive`] sends each request at its offset, gated by the concurrency limit
//! and the time window, and hands every finished [`RequestRecord`] to a channel. It does not
//! compute statistics, print, or write files.
//!
//! Every arrival process goes through the same driver: to add one, add a case to
//! [`arrival_offsets`].
//!
//! Client-side queueing is never hidden: a record keeps both the scheduled and the actual send
//! time, so the wait for a concurrency slot shows up as schedule lag.

use std::sync::Arc;

use rand::SeedableRng;
use rand_distr::{Distribution, Gamma};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::shape::{HistoryLimits, WindowEnd};
use crate::config::{LoadSpec, RequestRate};
use crate::drive::history::{unbuilt, History, Unsent};
use crate::drive::progress::Live;
use crate::measure::client::{Client, RequestSpec};
use crate::measure::clock::Clock;
use crate::measure::record::RequestRecord;

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

/// What the driver did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriveSummary {
    /// Requests handed to the client.
    pub sent: u64,
    /// Requests of a count-bounded run never sent because the run was stopped.
    pub unsent: u64,
    /// A time-bounded run that reached its window's end (not stopped before).
    pub window_end: Option<WindowEnd>,
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
/// order.
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
    let real_ns = |server_ns: f64| start_ns.saturating_add((server_ns / time_scale) as u64);
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
    let total: u64 = (0..count)
        .filter(|&id| owned(id) && !pool.is_empty())
        .map(|id| pool[(id % pool.len() as u64) as usize].len() as u64)
        .sum();
    let gate = spec
        .concurrency_cap()
        .map(|c| Arc::new(Semaphore::new(c.min(Semaphore::MAX_PERMITS as u64) as usize)));
    // Only a time-bounded run may send a prompt twice: it keeps a copy of each one it sent.
    let may_reuse = spec.shape.window_s().is_some();
    let mut pool: Vec<Option<Vec<RequestSpec>>> = pool.into_iter().map(Some).collect();
    let mut copies: Vec<Option<Vec<RequestSpec>>> =
        vec![None; if may_reuse { pool.len() } else { 0 }];
    let mut tasks = JoinSet::new();
    let mut sent = 0u64;
    let mut timed_out = false;
    let schedule: Box<dyn Iterator<Item = u64> + Send> = match trace {
        Some(t) => Box::new(t.into_iter()),
        None => Box::new(arrival_offsets(spec, spec.num_prompts)),
    };
    for (id, offset) in (0u64..).zip(schedule) {
        if pool.is_empty() {
            break;
        }
        if !owned(id) {
            continue;
        }
        let scheduled_ns = real_ns(offset as f64);
        let at = clock.instant_at(scheduled_ns);
        if at > tokio::time::Instant::now() {
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                () = &mut deadline => { timed_out = true; break }
                () = tokio::time::sleep_until(at) => {}
            }
        } else if stop.is_cancelled() {
            break;
        }
        let permit = match &gate {
            Some(g) => tokio::select! {
                biased;
                () = stop.cancelled() => break,
                () = &mut deadline => { timed_out = true; break }
                p = g.clone().acquire_owned() => p.ok(),
            },
            None => None,
        };
        if window_end.is_some_and(|end| tokio::time::Instant::now() >= end) {
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
        let n_turns = reqs.len() as u64;
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
            think_ns: (spec.shape.think_time_s.unwrap_or(0.0) * 1e9 / time_scale) as u64,
            window_end,
            history: spec.shape.history_limits(),
        };
        tasks.spawn(async move {
            talk.converse(id, reqs, scheduled_ns, due).await;
            drop(permit);
        });
        sent += n_turns;
        while tasks.try_join_next().is_some() {}
    }
    // A schedule that ran out before its window's end (the last stage's last arrival) waits
    // for the end, or for every request to finish.
    while window_end.is_some() && !timed_out && !stop.is_cancelled() {
        tokio::select! {
            biased;
            () = stop.cancelled() => {}
            () = &mut deadline => timed_out = true,
            joined = tasks.join_next() => if joined.is_none() { timed_out = true },
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
    let unsent = if spec.shape.window_s().is_some() {
        0
    } else {
        total.saturating_sub(sent)
    };
    // In-flight requests run to their end; once `stop` is cancelled or the window is over
    // (now or later, also after every request was sent) they have the grace period, and
    // `abort` ends it at once.
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
                Some(_) if !cancel.is_cancelled() => {
                    if let Some(e) = &mut end { e.drained += 1 }
                }
                Some(_) => {}
            },
            () = &mut grace => { cancel.cancel(); break }
            () = sink.abort.cancelled() => { cancel.cancel(); break }
        }
    }
    while tasks.join_next().await.is_some() {}
    if let Some(e) = &mut end {
        e.cancelled = e.in_flight - e.drained;
    }
    DriveSummary {
        sent,
        unsent,
        window_end: end,
    }
}

/// Groups the pool into conversations: with `--turns N` every N requests, as turns 0..N;
/// otherwise by the requests' own `turn` (a conversation dataset's), each request without
/// one alone.
fn conversations(pool: Vec<RequestSpec>, turns: u32) -> Vec<Vec<RequestSpec>> {
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
    /// Think time between turns, real ns.
    think_ns: u64,
    /// A time-bounded run's end: no turn starts after it.
    window_end: Option<tokio::time::Instant>,
    /// What a conversation's history may hold.
    history: HistoryLimits,
}

impl Talk {
    /// Sends `turns` in order (one request: just that one). Turn k + 1 is scheduled
    /// `think_ns` after turn k ended (a trace's turn: not before its `due` time) and goes
    /// only if turn k succeeded, the run was not stopped and its time window (if any) has not
    /// ended. A turn carries the history ([`History`]); one that cannot be built is a failed
    /// record (`prompt`) that ends the conversation.
    async fn converse(
        self,
        conversation: u64,
        turns: Vec<RequestSpec>,
        first_ns: u64,
        due: Vec<Option<u64>>,
    ) {
        let due = |k: usize| due.get(k.wrapping_sub(1)).copied().flatten().unwrap_or(0);
        let multi = turns.first().is_some_and(|r| r.turn.is_some());
        let mut history = History::default();
        let mut scheduled_ns = first_ns;
        for (k, mut req) in turns.into_iter().enumerate() {
            if k > 0 {
                scheduled_ns = (self.clock.now_ns() + self.think_ns).max(due(k));
                let at = self.clock.instant_at(scheduled_ns);
                if self.window_end.is_some_and(|end| at >= end) {
                    return;
                }
                let wait = at > tokio::time::Instant::now();
                tokio::select! {
                    biased;
                    () = self.stop.cancelled() => return,
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
            let mut record = match built {
                Ok(()) => {
                    (self.client)
                        .send(&req, scheduled_ns, &self.clock, &self.cancel)
                        .await
                }
                Err(Unsent::Failed(why)) => unbuilt(&req, scheduled_ns, self.clock.now_ns(), why),
                Err(Unsent::Cancelled) => return,
            };
            self.live
                .sent
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let ok = record.is_ok();
            if multi {
                record.conversation = Some(conversation);
                record.turn = Some(k as u32);
                history.reply(req.prompt, &record);
            }
            let _ = self.out.send(record);
            if !ok {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(rate: RequestRate, burstiness: f64, seed: u64) -> LoadSpec {
        LoadSpec {
            request_rate: rate,
            burstiness,
            seed,
            ..LoadSpec::default()
        }
    }

    #[test]
    fn stages_and_durations_bound_the_schedule_by_time() {
        use crate::config::shape::LoadShape;
        let mut s = spec(RequestRate::Infinite, 1.0, 5);
        s.shape = LoadShape {
            stages: vec!["5:100".parse().unwrap(), "50:100".parse().unwrap()],
            ..LoadShape::default()
        };
        let v: Vec<f64> = arrival_offsets(&s, 10).map(|x| x as f64 / 1e9).collect();
        let first = v.iter().filter(|&&t| t < 100.0).count();
        let second = v.len() - first;
        assert!((450..=550).contains(&first), "{first}");
        assert!((4700..=5300).contains(&second), "{second}");
        assert!(v.iter().all(|&t| t < 200.0));
        // A duration bounds a finite rate by time, not by the count.
        let mut s = spec(RequestRate::PerSecond(20.0), 1.0, 5);
        s.shape.duration_s = Some(10.0);
        let v: Vec<u64> = arrival_offsets(&s, 10).collect();
        assert!(v.len() > 150 && v.iter().all(|&t| t < 10_000_000_000));
    }

    #[test]
    fn a_ramp_without_duration_steps_by_request_index() {
        use crate::config::shape::{Ramp, RampStrategy};
        let mut s = spec(RequestRate::Infinite, 1.0, 9);
        s.shape.ramp = Some(Ramp {
            strategy: RampStrategy::Linear,
            start_rps: 1.0,
            end_rps: 100.0,
        });
        let v: Vec<f64> = arrival_offsets(&s, 2001).map(|x| x as f64 / 1e9).collect();
        assert_eq!(v.len(), 2001);
        // Gaps of the first tenth average ~1/(1 + 99·0.05) s, of the last tenth ~1/95 s.
        let mean_gap = |a: usize, b: usize| (v[b] - v[a]) / (b - a) as f64;
        assert!(mean_gap(0, 200) > 5.0 * mean_gap(1800, 2000));
    }

    #[test]
    fn infinite_rate_sends_everything_at_zero() {
        let v: Vec<_> = arrival_offsets(&spec(RequestRate::Infinite, 1.0, 0), 5).collect();
        assert_eq!(v, vec![0; 5]);
    }

    #[test]
    fn poisson_offsets_are_seeded_monotone_and_have_the_right_mean_rate() {
        let s = spec(RequestRate::PerSecond(20.0), 1.0, 7);
        let a: Vec<_> = arrival_offsets(&s, 20_000).collect();
        let b: Vec<_> = arrival_offsets(&s, 20_000).collect();
        assert_eq!(a, b);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        let rate = (a.len() - 1) as f64 / (*a.last().unwrap() as f64 / 1e9);
        assert!((rate - 20.0).abs() < 0.6, "rate {rate}");
        let other: Vec<_> =
            arrival_offsets(&spec(RequestRate::PerSecond(20.0), 1.0, 8), 10).collect();
        assert_ne!(&a[..10], &other[..]);
    }

    #[test]
    fn burstiness_changes_the_spread_not_the_mean() {
        let gaps = |b: f64| {
            let v: Vec<f64> = arrival_offsets(&spec(RequestRate::PerSecond(10.0), b, 3), 20_000)
                .map(|x| x as f64 / 1e9)
                .collect();
            let g: Vec<f64> = v.windows(2).map(|w| w[1] - w[0]).collect();
            let mean = g.iter().sum::<f64>() / g.len() as f64;
            let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / g.len() as f64;
            (mean, var.sqrt() / mean)
        };
        let (m1, cv1) = gaps(1.0);
        let (m4, cv4) = gaps(4.0);
        assert!((m1 - 0.1).abs() < 0.005 && (m4 - 0.1).abs() < 0.005);
        // Coefficient of variation of Gamma(k) gaps is 1/sqrt(k).
        assert!((cv1 - 1.0).abs() < 0.05, "cv1 {cv1}");
        assert!((cv4 - 0.5).abs() < 0.05, "cv4 {cv4}");
    }
}
