//! One file per subcommand: turn the parsed command line into library calls, print what the
//! user reads, and choose the exit code; no command uses another's file. `run` and `search`
//! plan (`cli::plan`) and hand the plan to `session.rs`, which runs it through the one
//! session driver (`drive::session`) and prints as it goes (`screen.rs`, its observer). The
//! only place besides `main` that uses `anyhow`; it prints the reports and notes (drive's
//! progress bar and dashboard draw on stderr while a run lasts).
//!
//! Exit codes: 0 ok (also when stdout is a closed pipe: `servebench report x.json | head`);
//! 1 the run finished but no request succeeded, or stopped early (`--max-errors`,
//! `--max-error-rate`; a sweep's step too), the search found no passing load, or a
//! `compare --fail-if-worse` gate failed; 2 usage, configuration, connection or I/O error;
//! 3 (`signals::STOPPED`) a run, sweep, search or merge stopped before it was done (Ctrl-C,
//! SIGTERM, `q`; a merge of a stopped shard), what it measured saved, marked incomplete.
//!
//! To add a subcommand: its `clap` arguments in `cli`, a file here with
//! `pub fn NAME(args) -> anyhow::Result<ExitCode>` (async when it drives a server), and one
//! arm in [`dispatch`].
//!
//! Everything printed goes through [`out::out`] (stdout) or `note!` and [`fail`] (stderr, one
//! line each), which write every control character as a visible escape (`render::escape`): a
//! server's error body, a label in an imported result or a file's content cannot drive the
//! terminal. What the command files share lives in leaf files beside them (`out.rs`,
//! `signals.rs`), which import nothing from this folder, so no two files here import each
//! other.

/// Prints one line to stderr, `format!`-style, through `escape::terminal_line`.
macro_rules! note {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::render::escape::terminal_line(&format!($($arg)*)))
    };
}

mod capacity;
mod compare;
mod export;
mod history;
mod import;
mod join;
mod llm_d_out;
mod merge;
mod out;
mod plot;
mod report;
mod run;
mod screen;
mod search;
mod session;
mod signals;
mod sim;
mod trace;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Runs the parsed command line and returns the process's exit code.
pub fn dispatch(cli: Cli) -> ExitCode {
    // The client's runtime: one thread (`run` and `search`; `--client-threads N` starts its
    // further driver threads with runtimes of their own, `drive::lanes`; see
    // docs/performance.md, "the client's CPU"); the built-in simulator runs on a runtime of
    // its own. `sim` and the commands that only read files use one worker per CPU (or `sim
    // --threads`).
    let mut builder = if matches!(&cli.command, Command::Run(_) | Command::Search(_)) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let workers = match &cli.command {
        Command::Sim(args) => args.threads.map(|n| n.max(1)),
        _ => None,
    };
    if let Some(n) = workers {
        builder.worker_threads(n);
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run::run(*args).await,
            Command::Sim(args) => sim::sim(*args).await,
            Command::Report(args) => report::report(args),
            Command::Search(args) => search::search(*args).await,
            Command::Compare(args) => compare::compare(args),
            Command::Plot(args) => plot::plot(args),
            Command::Import(args) => import::import(args),
            Command::Merge(args) => merge::merge(args),
            Command::Join(args) => join::join(args),
            Command::Plan(args) => capacity::capacity(args),
            Command::Trace(args) => trace::trace(args),
            Command::Export(args) => export::export(args),
            Command::History(args) => history::history(args),
        }
    });
    match outcome {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => fail(format!("{e:#}")),
    }
}

fn fail(message: String) -> ExitCode {
    note!("error: {message}");
    ExitCode::from(2)
}

/// True when the error is stdout's reader having gone away (`| head`): not a failure.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
