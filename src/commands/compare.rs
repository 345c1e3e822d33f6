//! `servebench compare`: documents side by side, as aligned text or Markdown.

use std::process::ExitCode;

use crate::cli::CompareArgs;
use crate::render::compare;
use crate::views::open;

pub fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let views = args
        .files
        .iter()
        .map(|f| open::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let metrics = (!args.metrics.is_empty()).then_some(args.metrics.as_slice());
    let c = compare::compare(&views, metrics);
    super::out(&if args.markdown {
        compare::markdown(&c)
    } else {
        compare::text(&c)
    })?;
    Ok(ExitCode::SUCCESS)
}
