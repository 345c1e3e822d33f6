//! `servebench plot`: the charts of one or more documents; prints the files written.

use std::process::ExitCode;

use crate::cli::PlotArgs;
use crate::render::plot;
use crate::views::open;

pub fn plot(args: PlotArgs) -> anyhow::Result<ExitCode> {
    let views = args
        .inputs
        .iter()
        .map(|f| open::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let written = plot::plot_all(&views, &args.out_dir, args.format)?;
    for path in written {
        super::out::out(&format!("{}\n", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
