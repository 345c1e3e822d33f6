//! The `servebench` binary: parses the command line, builds the runtime, calls the library,
//! prints, and maps errors to exit codes (0 ok; 1 the run finished with no successful request;
//! 2 usage, configuration, connection or I/O error).

use std::process::ExitCode;

use clap::Parser;
use servebench::cli::{
    Cli, Command, CompareArgs, ImportArgs, MergeArgs, PlotArgs, ReportArgs, RunArgs, SearchArgs,
    SimArgs,
};
use servebench::config::sweep::{LoadParameter, SweepValue};
use servebench::config::RunConfig;
use servebench::config::ScrapeSpec;
use servebench::drive::progress::{Progress, ProgressMode};
use servebench::drive::run;
use servebench::drive::search;
use servebench::drive::sweep::{self, StepObserver};
use servebench::render::report;
use servebench::results::document::BenchResult;
use servebench::sim;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Command::Sim(SimArgs {
        threads: Some(n), ..
    }) = &cli.command
    {
        builder.worker_threads((*n).max(1));
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run_command(*args).await,
            Command::Sim(args) => sim_command(args).await,
            Command::Report(args) => report_command(args),
            Command::Search(args) => search_command(*args).await,
            Command::Compare(args) => compare_command(args),
            Command::Plot(args) => plot_command(args),
            Command::Import(args) => import_command(args),
            Command::Merge(args) => merge_command(args),
        }
    });
    match outcome {
        Ok(code) => code,
        Err(e) => fail(format!("{e:#}")),
    }
}

fn fail(message: String) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

/// Cancels the token on the first Ctrl-C or SIGTERM.
fn stop_on_signal() -> CancellationToken {
    let stop = CancellationToken::new();
    let token = stop.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        eprintln!("servebench: stopping: no new requests; waiting for those in flight (Ctrl-C again to abort)");
        token.cancel();
        wait_for_signal().await;
        eprintln!("servebench: aborted");
        std::process::exit(130);
    });
    stop
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

async fn run_command(args: RunArgs) -> anyhow::Result<ExitCode> {
    let sweep = args.sweep().map_err(anyhow::Error::msg)?;
    if sweep.is_some() && (args.shard.is_some() || args.start_at.is_some()) {
        anyhow::bail!("--shard and --start-at take a single run, not a sweep: run each step as its own sharded run");
    }
    let (server, cfg, scrape) = server_and_config(&args).await?;
    let date = servebench::measure::clock::Clock::start().started_at_compact();
    let stem = match &args.result_filename {
        Some(name) => name.strip_suffix(".json").unwrap_or(name).to_string(),
        None => run::default_stem(&cfg, &date),
    };
    if !args.quiet {
        eprintln!(
            "servebench: {} to {} ({}), rate {}, max concurrency {}",
            match &sweep {
                Some((param, values)) =>
                    format!("sweep of {} over {} values", param.as_str(), values.len()),
                None => format!("{} requests", cfg.load.num_prompts),
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
        mode: ProgressMode::detect(args.quiet),
        progress: None,
        completed: 0,
        sweep_param: sweep.as_ref().map(|(p, _)| *p),
        result_path: std::path::PathBuf::new(),
    };
    let stop = stop_on_signal();
    let outcome = match &sweep {
        None => {
            let opts = run::RunOptions {
                scrape,
                start_at: args.start_at,
                ..run::RunOptions::new(
                    args.result_dir.join(format!("{stem}.json")),
                    !args.no_preflight,
                )
            };
            printer.started(SweepValue::Count(cfg.load.num_prompts), &cfg, &opts);
            let result = run::execute(cfg, &args.secrets(), &opts, stop).await;
            result.map(|r| printer.finished(SweepValue::Count(r.config.load.num_prompts), &r))
        }
        Some((param, values)) => {
            let opts = sweep::SweepOptions {
                dir: args.result_dir.clone(),
                stem: stem.clone(),
                preflight: !args.no_preflight,
                scrape,
                cooldown: Duration::try_from_secs_f64(args.cooldown)
                    .map_err(|_| anyhow::anyhow!("invalid --cooldown: {}", args.cooldown))?,
            };
            let doc = sweep::run_sweep(
                &cfg,
                *param,
                values,
                &args.secrets(),
                &opts,
                stop,
                &mut printer,
            )
            .await;
            doc.map(|d| {
                if !args.quiet {
                    eprintln!(
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
        eprintln!("servebench: no request succeeded");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The run's config and what to scrape, starting the built-in simulator when no --base-url
/// was given.
async fn server_and_config(
    args: &RunArgs,
) -> anyhow::Result<(Option<sim::SimServer>, RunConfig, Option<ScrapeSpec>)> {
    let sim_config = args.sim_config().map_err(anyhow::Error::msg)?;
    let (server, base_url) = match &args.base_url {
        Some(_) if args.tokenizer.is_none() => anyhow::bail!(
            "--tokenizer is required with --base-url: give the served model's tokenizer (a tokenizer.json or its directory, a GGUF file, or a tiktoken encoding name such as cl100k_base), or `words` for a servebench sim"
        ),
        Some(url) => (None, url.clone()),
        None => {
            let sim = sim::spawn(sim_config.unwrap_or_default(), ([127, 0, 0, 1], 0).into())
                .await
                .map_err(|e| anyhow::anyhow!("cannot start the simulated server: {e}"))?;
            let url = sim.base_url();
            (Some(sim), url)
        }
    };
    let scrape = args.scrape_spec(&base_url);
    let cfg = args.config(base_url, server.is_some());
    cfg.validate()?;
    Ok((server, cfg, scrape))
}

async fn search_command(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let spec = args.spec().map_err(anyhow::Error::msg)?;
    if args.run.shard.is_some() || args.run.start_at.is_some() {
        anyhow::bail!("--shard and --start-at take a single run, not a search");
    }
    let (server, cfg, scrape) = server_and_config(&args.run).await?;
    let dir = args.run.result_dir.clone();
    let stem = match &args.run.result_filename {
        Some(name) => name.strip_suffix(".json").unwrap_or(name).to_string(),
        None => format!(
            "search-{}",
            run::default_stem(
                &cfg,
                &servebench::measure::clock::Clock::start().started_at_compact()
            )
        ),
    };
    let doc_path = dir.join(format!("{stem}.search.json"));
    let (secrets, quiet, preflight) = (args.run.secrets(), args.run.quiet, !args.run.no_preflight);
    let stop = stop_on_signal();
    let by = spec.by;
    let outcome = search::search(
        &spec,
        |value, i| {
            let step = servebench::config::sweep::step_config(&cfg, by, by.value(value));
            let file = format!("{stem}-probe{i}.json");
            let opts = run::RunOptions {
                scrape: scrape.clone(),
                ..run::RunOptions::new(dir.join(&file), preflight && i == 0)
            };
            let (secrets, stop) = (&secrets, stop.clone());
            async move {
                let r = run::execute(step, secrets, &opts, stop).await?;
                let good = r.summary.good_requests.unwrap_or(0);
                Ok((good, r.summary.completed + r.summary.failed, file.into()))
            }
        },
        |doc| {
            if let (false, Some(p)) = (quiet, doc.probes.last()) {
                eprintln!(
                    "servebench: probe {} at {} {}: {}/{} good ({:.1}%) -> {}",
                    doc.probes.len(),
                    servebench::config::search::axis_word(args.by).unwrap_or_default(),
                    p.value,
                    p.good,
                    p.total,
                    100.0 * p.good_fraction,
                    if p.passed { "pass" } else { "fail" }
                );
            }
            Ok(doc.save(&doc_path)?)
        },
    )
    .await;
    if let Some(sim) = server {
        sim.shutdown().await;
    }
    let doc = outcome?;
    let unit = match by {
        LoadParameter::RequestRate => "req/s",
        _ => "concurrent requests",
    };
    match (doc.answer, doc.answer_good_fraction_ci95) {
        (Some(a), Some((lo, hi))) => println!(
            "highest load meeting the SLOs for {:.0}% of requests: {a} {unit} (good fraction 95% CI {:.1}%..{:.1}%; first failing: {})",
            100.0 * spec.target,
            100.0 * lo,
            100.0 * hi,
            doc.first_failing.map_or("none up to --max".into(), |f| format!("{f} {unit}"))
        ),
        _ => println!("no load from {} {unit} up meets the SLOs for {:.0}% of requests", spec.start, 100.0 * spec.target),
    }
    eprintln!("servebench: search saved to {}", doc_path.display());
    Ok(if doc.answer.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Shows progress during each run and prints each report as soon as its run finishes.
struct Printer {
    mode: ProgressMode,
    progress: Option<Progress>,
    completed: u64,
    sweep_param: Option<LoadParameter>,
    /// Where the current step's result is saved.
    result_path: std::path::PathBuf,
}

impl StepObserver for Printer {
    fn started(
        &mut self,
        value: SweepValue,
        cfg: &servebench::config::RunConfig,
        opts: &run::RunOptions,
    ) {
        self.result_path = opts.result_path.clone();
        let label = match self.sweep_param {
            Some(p) => format!("{}={value}", p.as_str()),
            None => "run".to_string(),
        };
        self.progress = Some(Progress::start(
            opts.live.clone(),
            cfg.load.num_prompts,
            label,
            self.mode,
        ));
    }

    fn finished(&mut self, value: SweepValue, result: &BenchResult) {
        if let Some(p) = self.progress.take() {
            p.finish();
        }
        self.completed += result.summary.completed;
        if let Some(m) = result.server_metrics.as_ref().filter(|m| m.failures > 0) {
            eprintln!(
                "servebench: warning: {} of {} metric scrapes failed (first: {})",
                m.failures,
                m.failures + m.samples.len() as u64,
                m.errors.first().map_or("?", String::as_str)
            );
        }
        if self.mode == ProgressMode::Quiet {
            return;
        }
        match self.sweep_param {
            Some(p) => println!("{}: {value}\n{}", p.as_str(), report::text(result)),
            None => print!("{}", report::text(result)),
        }
        eprintln!("servebench: result saved to {}", self.result_path.display());
    }
}

async fn sim_command(args: SimArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.config().map_err(anyhow::Error::msg)?;
    let server = sim::spawn(cfg, (args.host, args.port).into())
        .await
        .map_err(|e| anyhow::anyhow!("cannot bind {}:{}: {e}", args.host, args.port))?;
    println!("servebench sim listening on {}", server.base_url());
    wait_for_signal().await;
    server.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

fn report_command(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if let Some(out) = &args.html {
        let view = servebench::views::open::load(&args.file)?;
        let text = if view.origin == servebench::views::model::Origin::Result {
            Some(report::text(&BenchResult::load(&args.file)?))
        } else {
            None
        };
        servebench::render::html::write(&view, text.as_deref(), out)?;
        eprintln!("servebench: HTML report written to {}", out.display());
        return Ok(ExitCode::SUCCESS);
    }
    if servebench::views::open::is_result_file(&args.file) {
        let result = BenchResult::load(&args.file)?;
        print!("{}", report::text(&result));
    } else {
        let view = servebench::views::open::load(&args.file)?;
        print!("{}", report::view::view_text(&view));
    }
    Ok(ExitCode::SUCCESS)
}

fn compare_command(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let views = args
        .files
        .iter()
        .map(|f| servebench::views::open::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let metrics = (!args.metrics.is_empty()).then_some(args.metrics.as_slice());
    let c = servebench::render::compare::compare(&views, metrics);
    if args.markdown {
        print!("{}", servebench::render::compare::markdown(&c));
    } else {
        print!("{}", servebench::render::compare::text(&c));
    }
    Ok(ExitCode::SUCCESS)
}

fn plot_command(args: PlotArgs) -> anyhow::Result<ExitCode> {
    let views = args
        .inputs
        .iter()
        .map(|f| servebench::views::open::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let written = servebench::render::plot::plot_all(&views, &args.out_dir, args.format)?;
    for path in written {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn merge_command(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let mut merged = servebench::results::merge::merge(&args.files, args.allow_missing)?;
    for w in &merged.warnings {
        eprintln!("servebench: warning: {w}");
    }
    merged.save(&args.output)?;
    if !args.quiet {
        print!("{}", report::text(&merged.result));
        eprintln!(
            "servebench: {} shards merged into {}",
            merged
                .result
                .merged_from
                .as_ref()
                .map_or(0, |m| m.shards.len()),
            args.output.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn import_command(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let several = args.files.len() > 1;
    for file in &args.files {
        let out = servebench::views::import::output_path(file, args.output.as_deref(), several);
        let view = servebench::views::import::import_file(file, &out)?;
        print!(
            "{}",
            servebench::render::report::view::import_summary(&view, &out)
        );
    }
    Ok(ExitCode::SUCCESS)
}
