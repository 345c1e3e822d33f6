//! The `servebench` binary: parses the command line, builds the runtime, calls the library,
//! prints, and maps errors to exit codes (0 ok; 1 the run finished with no successful request;
//! 2 usage, configuration, connection or I/O error).

use std::process::ExitCode;

use clap::Parser;
use servebench::cli::{
    Cli, Command, CompareArgs, ImportArgs, PlotArgs, ReportArgs, RunArgs, SimArgs,
};
use servebench::{report, results::BenchResult, run, sim};
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run_command(*args).await,
            Command::Sim(args) => sim_command(args).await,
            Command::Report(args) => report_command(args),
            Command::Compare(args) => compare_command(args),
            Command::Plot(args) => plot_command(args),
            Command::Import(args) => import_command(args),
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
    let (server, base_url) = match &args.base_url {
        Some(url) => (None, url.clone()),
        None => {
            let sim = sim::spawn(sim::SimConfig::default(), ([127, 0, 0, 1], 0).into())
                .await
                .map_err(servebench::error::RunError::Sim)?;
            let url = sim.base_url();
            (Some(sim), url)
        }
    };
    let cfg = args.config(base_url, server.is_some());
    cfg.validate()?;
    let date = servebench::clock::Clock::start().started_at_compact();
    let file = args
        .result_filename
        .clone()
        .unwrap_or_else(|| format!("{}.json", run::default_stem(&cfg, &date)));
    let result_path = args.result_dir.join(&file);
    let records_path = result_path.with_extension("records.jsonl");
    let opts = run::RunOptions {
        result_path: result_path.clone(),
        records_path,
        preflight: !args.no_preflight,
    };
    if !args.quiet {
        eprintln!(
            "servebench: {} requests to {} ({}), rate {}, max concurrency {}",
            cfg.load.num_prompts,
            cfg.url(),
            cfg.backend.as_str(),
            cfg.load.request_rate,
            cfg.load
                .max_concurrency
                .map_or("none".into(), |c| c.to_string())
        );
    }
    let result = run::execute(cfg, &args.secrets(), &opts, stop_on_signal()).await;
    if let Some(sim) = server {
        sim.shutdown().await;
    }
    let result = result?;
    if !args.quiet {
        print!("{}", report::text(&result));
        eprintln!("servebench: result saved to {}", result_path.display());
    }
    Ok(if result.summary.completed == 0 {
        eprintln!("servebench: no request succeeded");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
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
        let view = servebench::view::load(&args.file)?;
        let text = if view.origin == servebench::view::Origin::Result {
            Some(report::text(&BenchResult::load(&args.file)?))
        } else {
            None
        };
        servebench::html::write(&view, text.as_deref(), out)?;
        eprintln!("servebench: HTML report written to {}", out.display());
        return Ok(ExitCode::SUCCESS);
    }
    if servebench::view::is_result_file(&args.file) {
        let result = BenchResult::load(&args.file)?;
        print!("{}", report::text(&result));
    } else {
        let view = servebench::view::load(&args.file)?;
        print!("{}", report::view_text(&view));
    }
    Ok(ExitCode::SUCCESS)
}

fn compare_command(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let views = args
        .files
        .iter()
        .map(|f| servebench::view::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let metrics = (!args.metrics.is_empty()).then_some(args.metrics.as_slice());
    let c = servebench::compare::compare(&views, metrics);
    if args.markdown {
        print!("{}", servebench::compare::markdown(&c));
    } else {
        print!("{}", servebench::compare::text(&c));
    }
    Ok(ExitCode::SUCCESS)
}

fn plot_command(args: PlotArgs) -> anyhow::Result<ExitCode> {
    let views = args
        .inputs
        .iter()
        .map(|f| servebench::view::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let formats = servebench::plot::Formats::parse(&args.format);
    let written = servebench::plot::plot_all(&views, &args.out_dir, formats)?;
    for path in written {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn import_command(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let several = args.files.len() > 1;
    for file in &args.files {
        let out = servebench::import::output_path(file, args.output.as_deref(), several);
        let view = servebench::import::import_file(file, &out)?;
        print!("{}", servebench::import::summary_text(&view, &out));
    }
    Ok(ExitCode::SUCCESS)
}
