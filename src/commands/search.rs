//! `servebench search`: the highest load that meets the SLOs; prints the answer.

use std::process::ExitCode;

use crate::cli::SearchArgs;

pub async fn search(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let planned = crate::cli::plan::search(args).await?;
    super::session::run(planned).await
}
