//! `servebench compare`: documents side by side (`views::compare`), printed as text,
//! Markdown, CSV or JSON (`render::print`), and the `--fail-if-worse` gates.

use std::process::ExitCode;

use crate::cli::CompareArgs;
use crate::config::figure::FigureKey;
use crate::render::print::{self, CompareDoc, Format};
use crate::views::compare::{compare as side_by_side, failed_gates};
use crate::views::open;

pub fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let format = match (args.markdown, args.format) {
        (true, Format::Text | Format::Markdown) => Format::Markdown,
        (true, f) => {
            anyhow::bail!("--markdown asks for Markdown and --format for {f}: give one of them")
        }
        (false, f) => f,
    };
    let printer = print::printer::<CompareDoc>(format)?;
    let views = (args.files.iter())
        .map(|f| open::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let metrics = (!args.metrics.is_empty()).then_some(args.metrics);
    let comparison = side_by_side(&views, metrics.as_deref());
    let doc = CompareDoc {
        views,
        metrics,
        comparison,
    };
    super::out::out(&printer.print(&doc)?)?;
    let gates: Vec<(FigureKey, f64)> = (args.fail_if_worse.iter())
        .map(|g| (FigureKey::named(&g.metric), g.percent))
        .collect();
    let failed = failed_gates(&doc.comparison, &gates)?;
    for line in &failed {
        note!("servebench: {line}");
    }
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
