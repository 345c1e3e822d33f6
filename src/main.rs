//! The `servebench` binary: parses the command line and hands it to
//! [`servebench::commands::dispatch`], which returns the exit code (0 ok; 1 the run finished
//! with no successful request; 2 usage, configuration, connection or I/O error).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    servebench::commands::dispatch(servebench::cli::Cli::parse())
}
