//! The `servebench` binary: parses the command line, builds the runtime, calls the library,
//! prints, and maps errors to exit codes (0 ok; 1 the run finished with no successful request;
//! 2 usage, configuration, connection or I/O error).

use std::process::ExitCode;

use clap::Parser;
use servebench::cli::{Cli, Command, ReportArgs, RunArgs, SimArgs};
use servebench::{report, results::BenchResult, run, sim};
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
    let sim_config = args.sim_config().map_err(anyhow::Error::msg)?;
    let (server, base_url) = match (&args.base_url, sim_config) {
        (Some(url), _) => (None, url.clone()),
        (None, sim_config) => {
            let sim = sim::spawn(sim_config.unwrap_or_default(), ([127, 0, 0, 1], 0).into())
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
    let result = BenchResult::load(&args.file)?;
    print!("{}", report::text(&result));
    Ok(ExitCode::SUCCESS)
}
