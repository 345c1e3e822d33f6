//! The `servebench` binary: parses the command line and hands it to
//! [`servebench::commands::dispatch`], which returns the exit code: 0 ok; 1 the run finished
//! with no successful request or stopped early (`--max-errors`, `--max-error-rate`), a search
//! found no load meeting its SLOs, or a `compare --fail-if-worse` gate failed; 2 usage,
//! configuration, connection or I/O error; 3 a run, sweep, search or merge stopped before it
//! was done (Ctrl-C, SIGTERM, `q`), what it measured saved. It ignores SIGXFSZ, so a
//! file-size limit is a write error the run reports, not a kill.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // A file-size limit (`ulimit -f`) kills a process that writes past it with SIGXFSZ: a torn
    // record and no result. Ignored, the write fails with EFBIG instead, which a run handles as
    // any failed write (it stops sending and saves what it measured, marked incomplete; exit 2).
    #[cfg(unix)]
    // SAFETY: the first thing the process does, before any other thread exists; SIG_IGN is a
    // valid disposition for SIGXFSZ.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    servebench::commands::dispatch(servebench::cli::Cli::parse())
}
