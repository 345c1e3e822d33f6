//! `servebench run`: one benchmark run, `--repeat`ed runs, a staged run or a sweep of runs,
//! against the given server or the built-in simulator; prints each report as its run
//! finishes.

use std::process::ExitCode;

use crate::cli::RunArgs;

pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let planned = crate::cli::plan::run(args).await?;
    super::session::run(planned).await
}
