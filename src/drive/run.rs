//! One benchmark run, end to end, in named phases: `prepare` (the clients, and the requests
//! from `workload::requests` in one call), the pre-flight check, the warm-ups and `measure`
//! (the driven load on `--client-threads` lanes, each with its own monitor, `lanes.rs`; the
//! scraper and the simulator's counters around it) and `finish` (summary, validity, the saved
//! result). [`RunOptions`] says where a run writes; [`RunOptions::from_plan`] takes them from
//! a session's plan.
//!
//! This is the glue between `workload::requests`, `drive::load`, `measure::client`,
//! `results::stats` and `results::document`; it prints nothing and decides nothing about
//! what a request holds. It runs a [`ValidConfig`] with the text resolved by the session's
//! plan ([`execute_with`]); [`execute`] plans a lone config itself. What is measured is never
//! lost: each record is appended to the JSON Lines file as soon as its request ends (flushed
//! whenever no other record is waiting, `records.rs`), and the result document is written
//! atomically at the end, also when the run was stopped. Records are not kept in memory: each
//! lane's writer feeds each to its streaming summary (`stats::Summarizer`, the lanes' merged
//! at the end) and the validity facts as it writes it, and the result's per-request arrays
//! (small runs only, see `results`) are read back from the file. With `RunOptions::scrape`,
//! the server's metrics are sampled (`scrape`) while the measured load runs and saved with
//! the result.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::config::shape::WindowEnd;
use crate::config::threads::ClientThreads;
use crate::config::valid::ValidConfig;
use crate::config::RunConfig;
use crate::config::ScrapeSpec;
use crate::drive::error::RunError;
use crate::drive::facts::{run_facts, simulator_snapshot};
use crate::drive::lanes::{summary_options, Go, Lanes, Plan};
use crate::drive::mix::Probes;
use crate::drive::monitor::process_cpu_s;
use crate::drive::plan::{ask_server, RunPlan, Text};
use crate::drive::records::{RecordsFile, Sends};
use crate::drive::scrape::Scraper;
use crate::drive::ui::live::Live;
use crate::measure::client::{Client, RequestSpec, Secrets};
use crate::measure::clock::Clock;
use crate::measure::record::RequestRecord;
use crate::results::document::{BenchResult, Unsent};
use crate::results::endpoints;
use crate::results::error::ResultsError;
use crate::results::jobs::{JobFigures, JobRun};
use crate::results::server_metrics::ServerMetrics;
use crate::results::shard::Timebase;
use crate::results::stats::media::MediaGeneration;
use crate::results::stats::mix::MixFigures;
use crate::results::stats::users::UsersFigures;
use crate::results::stats::{adapters, steady, Summarizer};
use crate::results::validity::Validity;
use crate::workload;
use crate::workload::requests::RunRequests;

/// Where a run writes, and what it checks first.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The result document (JSON).
    pub result_path: PathBuf,
    /// The per-request records (JSON Lines).
    pub records_path: PathBuf,
    /// Send one short request first and stop with a clear error if the server cannot be
    /// reached or rejects the request shape.
    pub preflight: bool,
    /// Live counters for progress display.
    pub live: Arc<Live>,
    /// Scrape the server's Prometheus metrics from the start of the measured load to its end
    /// (`None`: do not). A failed scrape is counted in the result, never an error.
    pub scrape: Option<ScrapeSpec>,
    /// `--start-at`: start the measured load at this wall-clock instant (see `shard`).
    pub start_at: Option<time::OffsetDateTime>,
    /// Replace an existing result or records file (`--overwrite`); otherwise [`execute`]
    /// refuses to start, before it touches anything (a session's plan checks every file of
    /// the session once instead).
    pub overwrite: bool,
    /// Cancelled on a second Ctrl-C: in-flight requests are cancelled at once instead of
    /// after the grace period; what was measured is still saved.
    pub abort: CancellationToken,
    /// `--client-threads`: the threads that drive the measured load (`lanes`).
    pub client_threads: ClientThreads,
    /// The hook calls made for this run before it (`drive::hooks`), kept in its result.
    pub hooks_before: Vec<crate::drive::hooks::Early>,
}

impl RunOptions {
    /// Options writing `result_path` and the records file beside it (`.records.jsonl`).
    pub fn new(result_path: PathBuf, preflight: bool) -> RunOptions {
        RunOptions {
            records_path: result_path.with_extension("records.jsonl"),
            result_path,
            preflight,
            live: Arc::default(),
            scrape: None,
            start_at: None,
            overwrite: false,
            abort: CancellationToken::new(),
            client_threads: ClientThreads::default(),
            hooks_before: Vec::new(),
        }
    }

    /// The options of one run of `plan`'s session, writing `file` in the plan's output
    /// directory: the plan's scrape, `--overwrite` and `--client-threads`, the session's
    /// second-Ctrl-C token `abort`, and the plan's pre-flight request when `preflight_here`
    /// (a sweep or search sends it before its first run only, a class run alone never).
    /// The one place a run's options are taken from its plan.
    pub fn from_plan(
        plan: &RunPlan,
        file: &str,
        preflight_here: bool,
        abort: &CancellationToken,
    ) -> RunOptions {
        RunOptions {
            scrape: plan.scrape.clone(),
            overwrite: plan.output.overwrite,
            abort: abort.clone(),
            client_threads: plan.client_threads,
            ..RunOptions::new(plan.output.dir.join(file), plan.preflight && preflight_here)
        }
    }

    /// Refuses to start when a file this run would write already exists (unless `overwrite`).
    pub fn check_targets(&self) -> Result<(), ResultsError> {
        crate::results::document::refuse_existing(
            self.overwrite,
            [&self.result_path, &self.records_path],
        )
    }
}

/// Runs the benchmark described by `cfg` alone, planning it as a session's plan would: the
/// server asked what the config cannot know (`plan::ask_server`), the config validated, the
/// files checked, the text resolved; then [`execute_with`].
pub async fn execute(
    cfg: RunConfig,
    secrets: &Secrets,
    opts: &RunOptions,
    stop: CancellationToken,
) -> Result<BenchResult, RunError> {
    let cfg = ValidConfig::new(ask_server(cfg, secrets).await)?;
    opts.check_targets()?;
    let text = Text::resolve(&cfg)?;
    execute_with(&cfg, &text, secrets, opts, stop).await
}

/// Runs the benchmark described by `cfg` with prompts built by `text`, in four phases:
/// [`prepare`] (clients and requests), the lanes' warm-ups (after the pre-flight check,
/// `lanes`), [`measure`] (the driven load on `opts.client_threads` lanes, with the scraper
/// around it) and [`finish`] (summary, validity, the saved result). Cancelling `stop` (Ctrl-C) stops new sends, lets in-flight
/// requests finish within the grace period, and saves an incomplete result.
pub async fn execute_with(
    cfg: &ValidConfig,
    text: &Text,
    secrets: &Secrets,
    opts: &RunOptions,
    stop: CancellationToken,
) -> Result<BenchResult, RunError> {
    // Nothing is written until the measured load starts: a run stopped or refused before
    // then (Ctrl-C, a failed pre-flight, a --start-at already past) leaves no file behind.
    let threads = crate::drive::lanes::lanes_for(
        opts.client_threads.resolve(
            &cfg.load,
            cfg.workload.dataset.output_len(),
            cfg.time_scale,
            crate::drive::lanes::cores(),
        ),
        &cfg.load,
    );
    let before = async {
        let prepared = prepare(cfg, text, secrets, threads).await?;
        let Prepared {
            client,
            clients,
            requests: built,
            generation,
        } = prepared;
        let clock = Clock::start();
        if opts.preflight {
            let limit = cfg.load.preflight_timeout();
            crate::drive::preflight::preflight(&client, &built.preflight, limit, &clock).await?;
        }
        let requests = built.requests.len() as u64;
        let extras = Extras {
            adapters: built.adapters,
            probes: built.probes.zip(cfg.probe_request_rate),
            generation,
        };
        let plan = Plan {
            cfg,
            clients,
            clock,
            live: &opts.live,
            stop: &stop,
            abort: &opts.abort,
        };
        // Each lane sends its share of the warm-ups on its own connections.
        let mut lanes = Lanes::start(plan, built.warmups, built.requests)?;
        lanes.warmed().await?;
        let hooks = crate::drive::hooks::at_start(&client, cfg, &opts.hooks_before, &clock);
        let hooks = hooks.await?;
        Ok::<_, RunError>((client, clock, lanes, requests, extras, hooks))
    };
    let (client, clock, lanes, requests, extras, mut hooks) = tokio::select! {
        biased;
        () = stop.cancelled() => return Err(RunError::Stopped),
        r = before => r?,
    };
    // What only the run can know goes into the config its result saves, not into the
    // plan's: a trace's lines (up to --num-prompts) are the run's requests.
    let mut saved = RunConfig::clone(cfg);
    if saved.workload.dataset.own_schedule().is_some() {
        saved.load.num_prompts = requests;
    }
    let hooked = client.clone();
    let mut measured = measure(cfg, client, lanes, extras, opts, clock, stop).await?;
    crate::drive::hooks::at_end(&hooked, cfg, &clock, &mut hooks).await;
    measured.threads = threads;
    measured.hooks = hooks;
    let lost = measured.records_error.as_ref().map(ToString::to_string);
    let result = finish(saved, opts, clock, measured, &hooked.stopped_endpoints())?;
    match lost {
        Some(why) => Err(RunError::Incomplete {
            why,
            result: opts.result_path.clone(),
        }),
        None => Ok(result),
    }
}

/// What a run sends: its client (for the pre-flight and the simulator's counters), one client
/// per lane (the first is the run's own), and its requests, built by `workload::requests`
/// (the lanes take the warm-ups and the pool; `drive::load::drive` picks each lane's share).
struct Prepared {
    client: Arc<Client>,
    clients: Vec<Arc<Client>>,
    requests: RunRequests,
    /// What making the requests' media cost (random-mm, clips); `None` without media.
    generation: Option<MediaGeneration>,
}

/// What the measured phase needs to know of the requests, taken before the lanes take them.
struct Extras {
    /// Some request goes to a LoRA adapter: the result has each adapter's figures.
    adapters: bool,
    /// The probes to send beside the load (`--mix` with `--probe-request-rate`) and their rate.
    probes: Option<(Vec<RequestSpec>, f64)>,
    generation: Option<MediaGeneration>,
}

/// Builds the clients and the requests (before the clock starts: building prompts is not
/// part of the run). The requests are the workload's, in one call, with what making their
/// media cost.
async fn prepare(
    cfg: &RunConfig,
    text: &Text,
    secrets: &Secrets,
    threads: u64,
) -> Result<Prepared, RunError> {
    let tokenizer = &text.tokenizer;
    let new_client = || {
        Client::new(
            cfg,
            secrets,
            tokenizer.local().cloned(),
            text.chat_template.clone(),
        )
    };
    let client = new_client()?;
    crate::drive::history::check_template(&client).await?;
    let mut clients = vec![client.clone()];
    for _ in 1..threads {
        let (tok, template) = (tokenizer.local().cloned(), text.chat_template.clone());
        clients.push(Client::new_beside(cfg, secrets, tok, template, &client)?);
    }
    let requests = workload::requests::build(cfg, tokenizer, &client).await?;
    Ok(Prepared {
        client,
        clients,
        generation: requests.generation,
        requests,
    })
}

/// What the measured phase saw besides the records.
struct Measured {
    /// The lanes (client threads) that drove the load.
    threads: u64,
    start_ns: u64,
    wall_s: f64,
    /// What the load planned and left unsent (`drive::load::DriveSummary`).
    planned: Option<u64>,
    /// The jobs it planned (an agentic run's arrivals), where known.
    jobs_planned: Option<u64>,
    unsent: Unsent,
    window_end: Option<WindowEnd>,
    /// What the users did (`--users`).
    users: Option<crate::results::stats::users::UserCounts>,
    stopped_early: Option<String>,
    lags: Vec<f64>,
    cpu_s: f64,
    timebase: Option<Timebase>,
    server_metrics: Option<ServerMetrics>,
    sim_before: Option<serde_json::Value>,
    sim_after: Option<serde_json::Value>,
    summarizer: Summarizer,
    sends: Sends,
    /// The records file could not be written: the run stopped sending when it happened.
    records_error: Option<ResultsError>,
    /// The measured records not in the records file after that error.
    records_lost: u64,
    /// Some request went to a LoRA adapter: the result has each adapter's figures.
    adapters: bool,
    /// The probes' records (`--probe-request-rate`), kept apart from the run's.
    probes: Vec<RequestRecord>,
    generation: Option<MediaGeneration>,
    /// The run's hook calls (`drive::hooks`), set after the measured load.
    hooks: Vec<crate::results::hooks::HookCall>,
    replicas: Option<crate::results::autoscale::ReplicaSeries>,
    /// `run --adaptive`: the SLO controller's windows and outcome.
    adaptive: Option<crate::results::adaptive::AdaptiveFigures>,
}

/// The measured load: waits for `--start-at` (sharded runs), snapshots the simulator, starts
/// the scraper and the monitor, drives the schedule, and stops them again.
async fn measure(
    cfg: &RunConfig,
    client: Arc<Client>,
    lanes: Lanes,
    extras: Extras,
    opts: &RunOptions,
    clock: Clock,
    stop: CancellationToken,
) -> Result<Measured, RunError> {
    let timebase = crate::drive::shard::before_start(&client, cfg, opts.start_at, &stop).await?;
    let replicas = crate::drive::replicas::begin(cfg, clock).await?;
    // The run starts here: from now on every record is written as it arrives.
    let halt = stop.child_token();
    let records = Arc::new(RecordsFile::create(opts.records_path.clone()));
    let sim_before = simulator_snapshot(&client, client.base_url()).await;
    let scraper = match &opts.scrape {
        Some(spec) => Some(Scraper::start(spec.clone(), clock).await),
        None => None,
    };
    let cpu_start = process_cpu_s();
    let start_ns = clock.now_ns();
    let _ = opts
        .live
        .measuring_since
        .set(clock.instant_at(start_ns).into_std());
    let probes = extras
        .probes
        .map(|(specs, rate)| Probes::start(client.clone(), specs, rate, clock, opts.abort.clone()));
    let controller = crate::drive::adaptive::controller(cfg, clock, start_ns, &halt);
    let go = Go {
        start_ns,
        records: records.clone(),
        halt,
        throttle: controller.as_ref().map(|c| c.throttle.clone()),
    };
    let (lanes, adaptive) = crate::drive::adaptive::alongside(controller, lanes.go(go)).await;
    let lanes = lanes?;
    let wall_s = (clock.now_ns() - start_ns) as f64 / 1e9;
    let probes = match probes {
        Some(p) => p.finish().await,
        None => Vec::new(),
    };
    let cpu_s = (process_cpu_s() - cpu_start).max(0.0);
    let replicas = crate::drive::replicas::end(replicas, start_ns).await;
    let server_metrics = match scraper {
        Some(s) => Some(s.finish().await),
        None => None,
    };
    let sim_after = simulator_snapshot(&client, client.base_url()).await;
    let (driven, lags) = (lanes.driven, lanes.lags);
    let written = Written {
        summary: lanes.summary,
        sends: lanes.sends,
        error: records.finish(),
        stopped_early: lanes.stopped_early,
    };
    Ok(Measured {
        threads: 1,
        start_ns,
        wall_s,
        planned: driven.planned,
        jobs_planned: driven.jobs_planned,
        unsent: driven.unsent,
        window_end: driven.window_end,
        users: driven.users,
        stopped_early: written.stopped_early,
        lags,
        cpu_s,
        timebase,
        server_metrics,
        sim_before,
        sim_after,
        summarizer: written.summary,
        sends: written.sends,
        records_error: written.error,
        records_lost: records.lost(),
        adapters: extras.adapters,
        probes,
        generation: extras.generation,
        hooks: Vec::new(),
        replicas,
        adaptive,
    })
}

/// What the result takes from the records file rather than from memory kept during the run,
/// in one pass: the per-request arrays of a run small enough to keep them, and the steady
/// window (`sent_span`: the first and last send of the measured requests).
fn read_back(
    result: &mut BenchResult,
    path: &Path,
    sent_span: Option<(u64, u64)>,
) -> Result<(), RunError> {
    let keep_arrays = result.keeps_per_request_arrays();
    let mut steady = (result.config.steady_state)
        .then(|| steady::Detector::new(sent_span, result.config.time_scale));
    if keep_arrays || steady.is_some() {
        match crate::measure::record::read_jsonl(path) {
            Ok(records) => {
                let records = records.inspect(|r| steady.iter_mut().for_each(|d| d.add(r)));
                if keep_arrays {
                    result.set_per_request_arrays(records);
                } else {
                    records.for_each(drop);
                }
            }
            Err(source) if keep_arrays => {
                let path = path.to_path_buf();
                return Err(RunError::from(ResultsError::Read { path, source }));
            }
            Err(_) => {}
        }
    }
    result.steady_state = steady.map(steady::Detector::finish);
    Ok(())
}

/// The result document from the summary and what the measured phase saw (and when
/// `--failover` stopped each endpoint, `stopped`), saved.
fn finish(
    cfg: RunConfig,
    opts: &RunOptions,
    clock: Clock,
    mut measured: Measured,
    stopped: &[Option<u64>],
) -> Result<BenchResult, RunError> {
    let sent_span = measured.sends.sent_span();
    let mut facts = run_facts(
        &cfg,
        measured.sends,
        measured.wall_s,
        measured.sim_before,
        measured.sim_after,
    );
    let mut summary = measured.summarizer.finish();
    if let Some(m) = &mut summary.media {
        m.generation = measured.generation;
    }
    let mut result = BenchResult::new(
        cfg,
        summary,
        &[],
        clock.started_at_rfc3339(),
        clock.started_at_compact(),
        measured.unsent.total(),
        Some(opts.records_path.clone()),
    );
    read_back(&mut result, &opts.records_path, sent_span)?;
    let s = &result.summary;
    facts.measured = s.completed + s.failed;
    facts.implausible_usage = s.implausible_usage;
    facts.implausible_usage_by_field = s.implausible_usage_by_field.clone();
    let mut validity = Validity::judge(&mut measured.lags, measured.cpu_s, facts);
    let events_per_s = s.total_output_chunks as f64 / measured.wall_s.max(1e-9);
    crate::drive::lanes::advise(&mut validity, events_per_s, measured.threads);
    result.validity = Some(validity);
    result.server_metrics = measured.server_metrics;
    result.set_cost_and_energy();
    result.timebase = measured
        .timebase
        .map(|t| t.anchored(&clock, measured.start_ns));
    result.error = measured.records_error.as_ref().map(ToString::to_string);
    result.records_lost = measured.records_lost;
    result.window_end = measured.window_end;
    result.stopped_early = measured.stopped_early;
    result.hooks = measured.hooks;
    result.adaptive = measured.adaptive;
    if let Some(u) = &measured.users {
        let (c, d) = (&result.config, result.summary.duration_s);
        let gap = c.load.shape.user_gap_s.unwrap_or(0.0);
        result.users = Some(UsersFigures::of(u, gap, d, c.time_scale));
    }
    if let Some(seconds) = result.config.time_slice_s {
        // From the records file, which every lane wrote into (`results::slices`).
        let (path, c) = (&opts.records_path, &result.config);
        result.slices = Some(crate::results::slices::from_records(path, seconds, c)?);
    }
    crate::drive::replicas::attach(&mut result, measured.replicas.take());
    if let Some(by) = &result.config.bucket_by {
        // Each bucket's figures, streamed from the records file (`stats::buckets`).
        let records = crate::measure::record::read_jsonl(&opts.records_path).into_iter();
        let (opts_s, d) = (summary_options(&result.config), result.summary.duration_s);
        let buckets = crate::results::stats::buckets::by_bucket(records.flatten(), by, &opts_s, d);
        result.buckets = Some(buckets);
    }
    if measured.adapters {
        // Each adapter's figures, streamed from the records file (`stats::adapters`).
        let records = crate::measure::record::read_jsonl(&opts.records_path).into_iter();
        let (opts_s, d) = (summary_options(&result.config), result.summary.duration_s);
        result.per_adapter = adapters::per_adapter(records.flatten(), &opts_s, d);
    }
    if let Some(mix) = &result.config.mix {
        let records = crate::measure::record::read_jsonl(&opts.records_path);
        let (s, c) = (&result.summary, &result.config);
        let run = (s.duration_s, c.time_scale, c.goodput.as_slice());
        let mut figures = MixFigures::of(mix, records.into_iter().flatten(), &measured.probes, run);
        // A class run alone has no other class to be fair to (`--mix-alone`).
        if matches!(c.mix_alone, Some(crate::config::mix::MixAlone::Class(_))) {
            figures.jain_fairness_index = None;
        }
        result.mix = Some(figures);
    }
    if result.config.workload.dataset.jobs() {
        // Each job's figures from its calls' records, streamed from the records file.
        let records = crate::measure::record::read_jsonl(&opts.records_path).into_iter();
        let (s, c) = (&result.summary, &result.config);
        let run = JobRun {
            duration_s: s.duration_s,
            time_scale: c.time_scale,
            planned: measured.jobs_planned,
            slos: &c.job_goodput,
        };
        result.jobs = Some(JobFigures::of(records.flatten(), run));
    }
    let s = (result.summary.duration_s, stopped);
    result.per_endpoint = endpoints::from_records(&opts.records_path, &result.config, s)?;
    result.judge_complete(measured.planned, measured.unsent);
    result.save(&opts.result_path)?;
    Ok(result)
}

/// What the records writer gathered.
struct Written {
    summary: Summarizer,
    sends: Sends,
    /// The records file could not be written.
    error: Option<ResultsError>,
    /// `--max-errors` / `--max-error-rate` stopped the sends: why.
    stopped_early: Option<String>,
}
