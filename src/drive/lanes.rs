//! Thread per core (`--client-threads T`): a run's measured load driven by T
//! independent lanes, each on a thread of its own with its own single-thread runtime, client
//! (connections), send timer, monitor, counters and record buffer.
//!
//! A lane takes its share of the one global schedule the way `--shard` splits a schedule
//! across machines: lane t of T in shard I of N is shard I + N·t of N·T, so request j goes to
//! the lane whose share holds it, at its own scheduled time, and the concurrency cap is split
//! so the lanes' parts add up to the process's (`config::shard::Shard::concurrency_share`).
//! Nothing on the per-event path crosses threads: each lane reads its own streams, counts into
//! its own [`Live`] lane (the dashboard sums them) and feeds its own summary; the only shared
//! things are the records file (`records.rs`, with each lane's writer: one lock per finished
//! request, to append its line), the
//! early-stop watch (only with `--max-errors`/`--max-error-rate`) and the stop signals. At the
//! end the lanes' summaries are merged with [`Summarizer::merge`], the exact merge `merge` and
//! `summarize` use, and their counts added.
//!
//! Lane 0 runs on the caller's runtime (one thread is today's client exactly); lanes 1.. on
//! threads named `sb-lane-N` (a thread's name holds 15 bytes). A run with a concurrency cap
//! never has more lanes than its cap (each lane needs a slot). Each lane sends its own share
//! of the warm-ups first, so its own pool holds its connections before the measured load
//! starts; then it waits for [`Lanes::go`].

use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::config::shape::WindowEnd;
use crate::config::shard::Shard;
use crate::config::threads::{threads_for, EVENTS_PER_THREAD};
use crate::config::{LoadSpec, RunConfig};
use crate::drive::early_stop::ErrorWatch;
use crate::drive::error::RunError;
use crate::drive::load::{DriveSummary, Sink};
use crate::drive::monitor::Monitor;
use crate::drive::records::{write_records, RecordsFile, Sends};
use crate::drive::ui::live::Live;
use crate::measure::client::{Client, RequestSpec};
use crate::measure::clock::Clock;
use crate::measure::record::RequestRecord;
use crate::results::stats::{Summarizer, SummaryOptions};
use crate::results::validity::{Validity, Verdict};

/// Each lane's share of the process's schedule: lane t of `threads` in the process's shard
/// (or in the whole schedule) as one shard of the finer split.
pub fn lane_shards(process: Option<Shard>, threads: u64) -> Vec<Shard> {
    let p = process.unwrap_or(Shard { index: 0, count: 1 });
    (0..threads.max(1))
        .map(|t| Shard {
            index: p.index + p.count * t,
            count: p.count * threads.max(1),
        })
        .collect()
}

/// The cores this process may run on (1 where unknown).
pub fn cores() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}

/// A client-bound verdict names the thread count its event rate needs, when that is more than
/// the run had (`config::threads::threads_for`, on this machine's cores).
pub fn advise(validity: &mut Validity, events_per_s: f64, threads: u64) {
    validity.client_threads = Some(threads);
    if validity.verdict != Verdict::ClientBound {
        return;
    }
    let need = threads_for(events_per_s, cores());
    if need > threads {
        validity.reasons.push(format!(
            "{events_per_s:.0} streamed events/s is more than {threads} client thread(s) read on time (about {EVENTS_PER_THREAD:.0} each, docs/performance.md): use --client-threads {need} (or auto)"
        ));
    }
}

/// What a run's summary needs from its config (each lane's, and each adapter's at the end).
pub(super) fn summary_options(cfg: &RunConfig) -> SummaryOptions {
    SummaryOptions {
        percentiles: cfg.metric_percentiles.clone(),
        goodput: cfg.goodput.clone(),
        time_scale: cfg.time_scale,
        valid_output: cfg.goodput_valid_output,
    }
}

/// How many lanes a run of `load` gets of the `asked` threads: one for users (`--users`), else
/// at most its concurrency cap (its share of one with `--shard`), so every lane has a slot.
pub fn lanes_for(asked: u64, load: &LoadSpec) -> u64 {
    // Users take the units in schedule order from one pool, and the SLO controller moves
    // one load: one lane.
    if load.shape.users.is_some() || load.adaptive.is_some() {
        return 1;
    }
    let cap = load.concurrency_cap().unwrap_or(u64::MAX);
    asked.clamp(1, cap.max(1))
}

/// `r` without its text (prompt, messages, batch, media): what a lane keeps of a conversation
/// another lane sends (its place, its turns and a trace's send time).
fn placeholder(r: &RequestSpec) -> RequestSpec {
    RequestSpec {
        id: r.id,
        input_len: r.input_len,
        output_len: r.output_len,
        warmup: r.warmup,
        offset_ns: r.offset_ns,
        designed_cached: r.designed_cached,
        turn: r.turn,
        call: r.call.clone(),
        ..RequestSpec::default()
    }
}

/// The pool split among `shards`: a lane holds the conversations its shard owns and a
/// placeholder for every other (the driver picks conversation `id` by its place). A run that
/// may send its pool again (a time window) gives every lane all of it.
fn split_pool(
    pool: Vec<RequestSpec>,
    shards: &[Shard],
    turns: u32,
    may_reuse: bool,
) -> Vec<Vec<RequestSpec>> {
    if shards.len() <= 1 {
        return vec![pool];
    }
    if may_reuse {
        let mut out = vec![pool.clone(); shards.len() - 1];
        out.push(pool);
        return out;
    }
    let mut out = vec![Vec::with_capacity(pool.len()); shards.len()];
    for (c, conversation) in crate::drive::pool::conversations(pool, turns)
        .into_iter()
        .enumerate()
    {
        let owner = shards.iter().position(|s| s.owns(c as u64));
        for (lane, reqs) in out.iter_mut().enumerate() {
            if Some(lane) != owner {
                reqs.extend(conversation.iter().map(placeholder));
            }
        }
        if let Some(o) = owner {
            out[o].extend(conversation);
        }
    }
    out
}

/// What every lane measured, together.
pub(super) struct Driven {
    pub(super) driven: DriveSummary,
    pub(super) summary: Summarizer,
    pub(super) sends: Sends,
    /// Each lane's event-loop lag samples (ms), side by side.
    pub(super) lags: Vec<f64>,
    /// `--max-errors` / `--max-error-rate` stopped the sends: why.
    pub(super) stopped_early: Option<String>,
}

/// What one lane measured.
struct LaneOut {
    driven: DriveSummary,
    summary: Summarizer,
    sends: Sends,
    lags: Vec<f64>,
    stopped_early: Option<String>,
}

/// What every lane is told when the measured load starts.
#[derive(Clone)]
pub(super) struct Go {
    pub(super) start_ns: u64,
    pub(super) records: Arc<RecordsFile>,
    /// Cancelled to stop every lane's sends (a signal, an early stop, a write error).
    pub(super) halt: CancellationToken,
    /// `run --adaptive`: the controller's hold on the load (one lane).
    pub(super) throttle: Option<Arc<crate::drive::throttle::Throttle>>,
}

/// One lane's work.
struct Lane {
    index: usize,
    client: Arc<Client>,
    warmups: Vec<RequestSpec>,
    warm_concurrency: usize,
    pool: Vec<RequestSpec>,
    load: LoadSpec,
    live: Arc<Live>,
    clock: Clock,
    stop: CancellationToken,
    abort: CancellationToken,
    summary: SummaryOptions,
    time_scale: f64,
    watch: Option<Arc<Mutex<ErrorWatch>>>,
    warmed: oneshot::Sender<()>,
    go: oneshot::Receiver<Go>,
    done: oneshot::Sender<LaneOut>,
}

/// The running lanes, warming up or waiting for [`Lanes::go`]. Dropped before `go`, they end.
pub(super) struct Lanes {
    warmed: Vec<oneshot::Receiver<()>>,
    go: Vec<oneshot::Sender<Go>>,
    done: Vec<oneshot::Receiver<LaneOut>>,
}

/// What [`Lanes::start`] takes besides the requests.
pub(super) struct Plan<'a> {
    pub(super) cfg: &'a RunConfig,
    /// The lanes' clients, one each (the first is the run's own).
    pub(super) clients: Vec<Arc<Client>>,
    pub(super) clock: Clock,
    pub(super) live: &'a Live,
    pub(super) stop: &'a CancellationToken,
    pub(super) abort: &'a CancellationToken,
}

impl Lanes {
    /// Starts one lane per client: lane 0 as a task here, the others on threads of their own.
    /// Each sends its share of `warmups` at once.
    pub(super) fn start(
        plan: Plan<'_>,
        warmups: Vec<RequestSpec>,
        pool: Vec<RequestSpec>,
    ) -> Result<Lanes, RunError> {
        let cfg = plan.cfg;
        let n = plan.clients.len().max(1);
        let shards = lane_shards(cfg.load.shard, n as u64);
        let may_reuse = cfg.load.shape.window_s().is_some();
        let pools = split_pool(pool, &shards, cfg.load.shape.turns(), may_reuse);
        let mut warm: Vec<Vec<RequestSpec>> = vec![Vec::new(); n];
        for (i, w) in warmups.into_iter().enumerate() {
            warm[i % n].push(w);
        }
        // As many at a time as the measured load keeps in flight; with no cap, 1,024.
        let warm_concurrency = (cfg.load.concurrency_cap()).unwrap_or(UNCAPPED_WARM_CONCURRENCY);
        let limits = &cfg.load.shape;
        let watch = (limits.max_errors.is_some() || limits.max_error_rate.is_some())
            .then(|| Arc::new(Mutex::new(ErrorWatch::new(limits))));
        let summary = summary_options(cfg);
        let mut lanes = Lanes {
            warmed: Vec::new(),
            go: Vec::new(),
            done: Vec::new(),
        };
        let parts = plan.clients.into_iter().zip(shards).zip(pools).zip(warm);
        for (index, (((client, shard), pool), warmups)) in parts.enumerate() {
            let (warmed_tx, warmed_rx) = oneshot::channel();
            let (go_tx, go_rx) = oneshot::channel();
            let (done_tx, done_rx) = oneshot::channel();
            let mut load = cfg.load.clone();
            load.shard = Some(shard);
            let lane = Lane {
                index,
                client,
                warmups,
                warm_concurrency: Shard {
                    index: index as u64,
                    count: n as u64,
                }
                .concurrency_share(warm_concurrency)
                .max(1) as usize,
                pool,
                load,
                live: plan.live.lane(),
                clock: plan.clock,
                stop: plan.stop.clone(),
                abort: plan.abort.clone(),
                summary: summary.clone(),
                time_scale: cfg.time_scale,
                watch: watch.clone(),
                warmed: warmed_tx,
                go: go_rx,
                done: done_tx,
            };
            if index == 0 {
                tokio::spawn(lane.run());
            } else {
                spawn_thread(lane)?;
            }
            lanes.warmed.push(warmed_rx);
            lanes.go.push(go_tx);
            lanes.done.push(done_rx);
        }
        Ok(lanes)
    }

    /// Waits until every lane has sent its warm-ups.
    pub(super) async fn warmed(&mut self) -> Result<(), RunError> {
        for (i, w) in self.warmed.iter_mut().enumerate() {
            w.await.map_err(|_| lost(i))?;
        }
        Ok(())
    }

    /// Starts every lane's measured load and waits for all of them to end; their figures
    /// together.
    pub(super) async fn go(self, go: Go) -> Result<Driven, RunError> {
        for tx in self.go {
            // A lane that ended already is found below.
            let _ = tx.send(go.clone());
        }
        let mut all: Option<Driven> = None;
        for (i, done) in self.done.into_iter().enumerate() {
            let out = done.await.map_err(|_| lost(i))?;
            match &mut all {
                None => {
                    all = Some(Driven {
                        driven: out.driven,
                        summary: out.summary,
                        sends: out.sends,
                        lags: out.lags,
                        stopped_early: out.stopped_early,
                    })
                }
                Some(a) => {
                    a.driven = add(a.driven, out.driven);
                    a.summary.merge(out.summary);
                    a.sends.merge(out.sends);
                    a.lags.extend(out.lags);
                    if a.stopped_early.is_none() {
                        a.stopped_early = out.stopped_early;
                    }
                }
            }
        }
        all.ok_or_else(|| lost(0))
    }
}

/// A lane that ended without its figures (its thread could not start, or it panicked).
fn lost(lane: usize) -> RunError {
    RunError::Threads(format!(
        "client thread {lane} ended without its figures (could not start, or failed)"
    ))
}

/// Two lanes' driver summaries in one.
fn add(a: DriveSummary, b: DriveSummary) -> DriveSummary {
    let mut unsent = a.unsent;
    unsent.add(&b.unsent);
    let window_end = match (a.window_end, b.window_end) {
        (None, None) => None,
        (x, y) => {
            let (x, y) = (x.unwrap_or_default(), y.unwrap_or_default());
            Some(WindowEnd {
                in_flight: x.in_flight + y.in_flight,
                drained: x.drained + y.drained,
                cancelled: x.cancelled + y.cancelled,
                cancel_mode: x.cancel_mode || y.cancel_mode,
            })
        }
    };
    DriveSummary {
        sent: a.sent + b.sent,
        planned: a.planned.zip(b.planned).map(|(x, y)| x + y),
        jobs_planned: a.jobs_planned.zip(b.jobs_planned).map(|(x, y)| x + y),
        unsent,
        window_end,
        users: a.users.or(b.users),
    }
}

/// Runs `lane` on a new thread with a single-thread runtime of its own.
fn spawn_thread(lane: Lane) -> Result<(), RunError> {
    let name = format!("sb-lane-{}", lane.index);
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return; // its channels close: the run reports the lane lost
            };
            rt.block_on(lane.run());
        })
        .map(drop)
        .map_err(|e| RunError::Threads(format!("cannot start a client thread: {e}")))
}

impl Lane {
    /// Warm-ups, then (once told) the measured load with its monitor and record writer.
    async fn run(self) {
        let warm = warm_up(
            &self.client,
            &self.warmups,
            self.warm_concurrency,
            self.clock,
            &self.live,
            &self.stop,
        )
        .await;
        let _ = self.warmed.send(());
        let Ok(go) = self.go.await else {
            return;
        };
        let monitor = Monitor::start();
        let (tx, rx) = mpsc::unbounded_channel();
        let writer = tokio::spawn(write_records(
            rx,
            warm,
            go.records.clone(),
            self.live.clone(),
            Summarizer::new(&self.summary),
            go.halt.clone(),
            (self.watch, go.throttle.clone()),
        ));
        let sink = Sink {
            records: tx,
            live: self.live,
            time_scale: self.time_scale,
            abort: self.abort,
            throttle: go.throttle.clone(),
        };
        // Users (`--users`) take the units in their own loop; every other load is scheduled.
        let (client, pool, load, clock) = (self.client, self.pool, &self.load, self.clock);
        let driven = match load.shape.users {
            Some(_) => {
                crate::drive::users::drive(client, pool, load, clock, go.start_ns, go.halt, sink)
                    .await
            }
            None => {
                crate::drive::load::drive(client, pool, load, clock, go.start_ns, go.halt, sink)
                    .await
            }
        };
        let (lags, _) = monitor.stop();
        let Ok(written) = writer.await else {
            return;
        };
        let _ = self.done.send(LaneOut {
            driven,
            summary: written.summary,
            sends: written.sends,
            lags,
            stopped_early: written.stopped_early,
        });
    }
}

/// Warm-ups in flight at a time when the run has no concurrency cap (a rate alone).
const UNCAPPED_WARM_CONCURRENCY: u64 = 1024;

/// Sends the warm-ups, as many at a time as the measured load will (its concurrency limit), so
/// the connection pool already holds that many connections when measuring starts: the first
/// measured requests then time the server, not TCP connection setup. Their records are kept
/// until the records file is created, when the measured load starts.
async fn warm_up(
    client: &Arc<Client>,
    warmups: &[RequestSpec],
    concurrency: usize,
    clock: Clock,
    live: &Live,
    stop: &CancellationToken,
) -> Vec<RequestRecord> {
    // Each warm-up is a task, as each measured request is.
    let gate = Arc::new(Semaphore::new(concurrency.min(Semaphore::MAX_PERMITS)));
    let never = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    let mut records = Vec::with_capacity(warmups.len());
    let mut keep = |r: RequestRecord| {
        live.record(&r);
        records.push(r);
    };
    for w in warmups {
        let permit = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            p = gate.clone().acquire_owned() => p,
        };
        let (client, never, w) = (client.clone(), never.clone(), w.clone());
        tasks.spawn(super::warm::Warm::new(async move {
            let r = client.send(&w, clock.now_ns(), &clock, &never).await;
            drop(permit);
            r
        }));
        while let Some(Ok(r)) = tasks.try_join_next() {
            keep(r);
        }
    }
    while let Some(joined) = tasks.join_next().await {
        if let Ok(r) = joined {
            keep(r);
        }
    }
    records
}

#[cfg(test)]
#[path = "lanes_tests.rs"]
mod tests;
