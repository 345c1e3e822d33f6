//! `servebench sim`: the simulated server on its own, until Ctrl-C or SIGTERM.

use std::process::ExitCode;

use crate::cli::SimArgs;
use crate::sim;

pub async fn sim(args: SimArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.config()?;
    let server = sim::spawn(cfg, (args.host, args.port).into())
        .await
        .map_err(|e| anyhow::anyhow!("cannot bind {}:{}: {e}", args.host, args.port))?;
    super::out::out(&format!(
        "servebench sim listening on {}\n",
        server.base_url()
    ))?;
    super::signals::wait_for_signal().await;
    server.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
