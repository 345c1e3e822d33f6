//! `servebench run`: one benchmark run, or a sweep of runs, against the given server or the
//! built-in simulator; prints each report as its run finishes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::cli::RunArgs;
use crate::config::sweep::{LoadParameter, SweepValue};
use crate::config::{RunConfig, ScrapeSpec};
use crate::drive::progress::{Progress, ProgressMode};
use crate::drive::run::{self, RunOptions};
use crate::drive::sweep::{self, StepObserver};
use crate::render::report;
use crate::results::document::BenchResult;
use crate::sim;

pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let sweep = args.sweep().map_err(anyhow::Error::msg)?;
    if args.summary_only && sweep.is_none() && args.shape.stages.is_empty() && args.repeat == 1 {
        anyhow::bail!("--summary-only prints only the table of a sweep, --stages or --repeat: a single run has none");
    }
    let (server, cfg, scrape) = server_and_config(&args).await?;
    let date = crate::measure::clock::Clock::start().started_at_compact();
    let stem = super::result_stem(args.result_filename.as_deref(), || {
        run::default_stem(&cfg, &date)
    });
    if !args.quiet {
        note!(
            "servebench: {} to {} ({}), rate {}, max concurrency {}",
            match &sweep {
                Some((param, values)) =>
                    format!("sweep of {} over {} values", param.as_str(), values.len()),
                None => match cfg.load.shape.window_s() {
                    Some(s) => format!("requests for {s} s"),
                    None if cfg.workload.dataset.own_schedule().is_some() =>
                        "a trace replay".to_string(),
                    None => format!("{} requests", cfg.load.num_prompts),
                },
            },
            cfg.url(),
            cfg.backend.as_str(),
            cfg.load.request_rate,
            cfg.load
                .max_concurrency
                .map_or("none".into(), |c| c.to_string())
        );
    }
    let mut printer = Printer {
        mode: ProgressMode::detect(args.quiet, args.no_tui),
        progress: None,
        completed: 0,
        sweep_param: sweep.as_ref().map(|(p, _)| *p),
        result_path: PathBuf::new(),
        // A step table follows a sweep or stages, the spread a --repeat: --summary-only prints
        // only that (a single run is refused above).
        summary_only: args.summary_only,
        steps: Vec::new(),
        steps_total: sweep.as_ref().map_or(0, |(_, v)| v.len()),
        stopped_early: None,
    };
    let signals = super::stop_on_signal();
    let outcome = match &sweep {
        None => {
            let k = args.repeat;
            let name = |i| match k {
                1 => format!("{stem}.json"),
                _ => format!("{stem}.rep{i}.json"),
            };
            let summary_path = args.result_dir.join(format!("{stem}.repeat.json"));
            if k > 1 {
                crate::results::document::refuse_existing(args.overwrite, [&summary_path])?;
            }
            let stages = cfg.load.shape.stages.len();
            if stages > 0 {
                let targets = crate::drive::stages::stage_targets(&args.result_dir, &stem, stages);
                crate::results::document::refuse_existing(args.overwrite, targets.iter())?;
            }
            let (mut results, mut files) = (Vec::new(), Vec::new());
            let mut outcome = Ok(());
            for i in 1..=k {
                let opts = RunOptions {
                    scrape: scrape.clone(),
                    start_at: args.start_at,
                    overwrite: args.overwrite,
                    abort: signals.abort.clone(),
                    ..RunOptions::new(args.result_dir.join(name(i)), !args.no_preflight)
                };
                printer.started(SweepValue::Count(cfg.load.num_prompts), &cfg, &opts);
                match run::execute(cfg.clone(), &args.secrets(), &opts, signals.stop.clone()).await
                {
                    Ok(r) => {
                        printer.finished(SweepValue::Count(r.config.load.num_prompts), &r);
                        results.push(r);
                        files.push(name(i));
                    }
                    // Stopped before this repetition's load began: the ones before it stand.
                    Err(crate::drive::error::RunError::Stopped) if !results.is_empty() => break,
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
                if signals.stop.is_cancelled() {
                    break;
                }
            }
            if let (true, Some(r)) = (stages > 0, results.first()) {
                let (_, steps) = crate::drive::stages::split(r, &args.result_dir, &stem, true)?;
                printer.sweep_param = Some(LoadParameter::RequestRate);
                printer.steps.clear();
                for (i, step) in steps.iter().enumerate() {
                    printer.result_path =
                        args.result_dir.join(format!("{stem}-stage{}.json", i + 1));
                    printer.finished(SweepValue::Rate(step.config.load.request_rate), step);
                }
                printer.step_table(&args.result_dir.join(format!("{stem}.sweep.json")));
                if !args.quiet {
                    note!(
                        "servebench: {stages} stages saved to {}",
                        args.result_dir.join(format!("{stem}.sweep.json")).display()
                    );
                }
            }
            if k > 1 && !results.is_empty() {
                // Saved first: a closed stdout must not lose it.
                let doc = crate::results::repeat::spread(&results, files);
                crate::results::document::save_json(&summary_path, &doc)?;
                super::out(&report::repeats(&doc))?;
            }
            outcome
        }
        Some((param, values)) => {
            let opts = sweep::SweepOptions {
                dir: args.result_dir.clone(),
                stem: stem.clone(),
                preflight: !args.no_preflight,
                scrape,
                cooldown: Duration::try_from_secs_f64(args.cooldown)
                    .map_err(|_| anyhow::anyhow!("invalid --cooldown: {}", args.cooldown))?,
                overwrite: args.overwrite,
                abort: signals.abort.clone(),
            };
            let doc = sweep::run_sweep(
                &cfg,
                *param,
                values,
                &args.secrets(),
                &opts,
                signals.stop,
                &mut printer,
            )
            .await;
            printer.step_table(&opts.dir.join(format!("{stem}.sweep.json")));
            doc.map(|d| {
                if !args.quiet {
                    note!(
                        "servebench: sweep {} saved to {}",
                        if d.complete {
                            "complete,"
                        } else {
                            "incomplete,"
                        },
                        opts.dir.join(format!("{stem}.sweep.json")).display()
                    );
                }
            })
        }
    };
    if let Some(p) = printer.progress.take() {
        p.finish();
    }
    if let Some(sim) = server {
        sim.shutdown().await;
    }
    outcome?;
    Ok(if printer.completed == 0 {
        note!("servebench: no request succeeded");
        ExitCode::from(1)
    } else if let Some(why) = printer.stopped_early.take() {
        note!("servebench: stopped early ({why}); what was measured is saved");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The run's config and what to scrape, starting the built-in simulator when no --base-url
/// was given.
pub(super) async fn server_and_config(
    args: &RunArgs,
) -> anyhow::Result<(Option<sim::SimServer>, RunConfig, Option<ScrapeSpec>)> {
    args.tags.check().map_err(anyhow::Error::msg)?;
    let sim_config = args.sim_config().map_err(anyhow::Error::msg)?;
    let (server, base_url) = match (&args.base_url, sim_config) {
        (Some(url), _) => (None, url.clone()),
        (None, sim_config) => {
            let addr = ([127, 0, 0, 1], 0).into();
            let sim = sim::spawn_on_own_runtime(sim_config.unwrap_or_default(), addr)
                .await
                .map_err(|e| anyhow::anyhow!("cannot start the simulated server: {e}"))?;
            let url = sim.base_url();
            (Some(sim), url)
        }
    };
    let scrape = args.scrape_spec(&base_url);
    let cfg = args.config(base_url, server.is_some())?;
    cfg.validate()?;
    Ok((server, cfg, scrape))
}

/// Shows progress during each run and prints each report as soon as its run finishes.
struct Printer {
    mode: ProgressMode,
    progress: Option<Progress>,
    completed: u64,
    sweep_param: Option<LoadParameter>,
    /// Where the current step's result is saved.
    result_path: PathBuf,
    /// `--summary-only` in a sweep or stages: no report per step, the step table at the end.
    summary_only: bool,
    /// Each finished step (a sweep's, the stages'): its figures and validity.
    steps: Vec<report::view::TableStep>,
    /// A sweep's number of steps.
    steps_total: usize,
    /// Why the first run or step that stopped early did (`--max-errors`, `--max-error-rate`):
    /// the exit code is then 1, for a sweep as for a single run.
    stopped_early: Option<String>,
}

impl Printer {
    /// Prints the table of the steps so far (a sweep's or the stages', after the last one),
    /// with the commands for `doc`, the saved sweep document.
    fn step_table(&self, doc: &std::path::Path) {
        let Some(param) = self
            .sweep_param
            .filter(|_| self.mode != ProgressMode::Quiet)
        else {
            return;
        };
        if self.steps.is_empty() {
            return;
        }
        let _ = super::out(&report::view::step_table(
            param,
            &self.steps,
            &[doc.to_path_buf()],
        ));
    }
}

impl StepObserver for Printer {
    fn started(&mut self, value: SweepValue, cfg: &RunConfig, opts: &RunOptions) {
        self.result_path = opts.result_path.clone();
        let label = match self.sweep_param {
            Some(p) => format!(
                "{}={value} (step {} of {})",
                p.as_str(),
                self.steps.len() + 1,
                self.steps_total
            ),
            None => "run".to_string(),
        };
        // A time-bounded run's total is what its pool was built for (its expected requests).
        let info = crate::drive::dashboard::RunInfo {
            label,
            total: crate::drive::load::pool_size(&cfg.load),
            cap: cfg.load.concurrency_cap(),
            stages: (cfg.load.shape.stages.iter())
                .scan(0.0, |end, st| {
                    *end += st.seconds / cfg.time_scale.max(f64::MIN_POSITIVE);
                    Some((st.rate, *end))
                })
                .collect(),
            time_scale: cfg.time_scale,
            open_loop: cfg.load.max_concurrency.is_none()
                && matches!(
                    cfg.load.request_rate,
                    crate::config::RequestRate::PerSecond(_)
                ),
        };
        self.progress = Some(Progress::start(opts.live.clone(), info, self.mode));
    }

    fn finished(&mut self, value: SweepValue, result: &BenchResult) {
        if let Some(p) = self.progress.take() {
            p.finish();
        }
        self.completed += result.summary.completed;
        if self.stopped_early.is_none() {
            self.stopped_early.clone_from(&result.stopped_early);
        }
        if let Some(m) = result.server_metrics.as_ref().filter(|m| m.failures > 0) {
            note!(
                "servebench: warning: {} of {} metric scrapes failed (first: {})",
                m.failures,
                m.failures + m.samples.len() as u64,
                m.errors.first().map_or("?", String::as_str)
            );
        }
        if let Some(m) = result.server_metrics.as_ref().filter(|m| m.over_limit > 0) {
            note!(
                "servebench: warning: {} lines of the metric scrapes were past their limits and not read (the report says which)",
                m.over_limit
            );
        }
        if self.sweep_param.is_some() {
            (self.steps).push(report::view::table_step(&self.result_path, result));
        }
        if self.mode == ProgressMode::Quiet || self.summary_only {
            return;
        }
        // A closed stdout must not stop a sweep whose results are still being saved.
        let _ = super::out(&match self.sweep_param {
            Some(p) => format!("{}: {value}\n{}\n", p.as_str(), report::text(result)),
            None => report::text(result),
        });
        note!("servebench: result saved to {}", self.result_path.display());
    }
}
