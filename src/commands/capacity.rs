//! `servebench plan`: reads each sweep or search (`results::capacity::load`), checks that
//! they answer one question and computes the plan (`results::capacity::compute`), prints it in
//! the format asked for (`render::print`) and, with `--chart`, writes its chart as SVG. A step
//! measured under other SLOs than the plan's is re-judged from its records first
//! (`results::rejudge`), named on stderr and marked in the plan.
//! A step or probe stopped before it was done is left out, named on stderr (neither a pass
//! nor a fail). Exit 1 when no configuration sustains any of its loads within the SLOs.

use std::process::ExitCode;

use crate::cli::capacity::CapacityArgs;
use crate::render::print::{self, CapacityDoc};
use crate::results::capacity;

pub fn capacity(args: CapacityArgs) -> anyhow::Result<ExitCode> {
    // The format is checked before any file is read.
    let printer = print::printer::<CapacityDoc>(args.format)?;
    let mut sources = (args.files.iter())
        .map(|f| capacity::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    // A step measured under other SLOs (or none) is re-judged from its records under the
    // plan's, and said so, rather than refused.
    for src in &mut sources {
        for (_, file, r) in &mut src.steps {
            if crate::results::rejudge::rejudge(file, r, &args.goodput)? {
                note!(
                    "servebench: {}: {}",
                    file.display(),
                    r.rejudged
                        .as_ref()
                        .map(|j| j.describe())
                        .unwrap_or_default()
                );
            }
        }
    }
    for line in sources.iter().flat_map(|s| &s.excluded) {
        note!("servebench: warning: {line}");
    }
    let doc = CapacityDoc(capacity::compute(args.spec(), &sources)?);
    super::out::out(&printer.print(&doc)?)?;
    if let Some(path) = &args.chart {
        print::write_file(path, &crate::render::capacity::chart_svg(&doc.0)?)?;
        note!("servebench: chart written to {}", path.display());
    }
    if doc.0.configurations.iter().all(|c| c.sustained.is_none()) {
        note!("servebench: no configuration sustains any of its loads within the SLOs");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
