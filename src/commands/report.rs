//! `servebench report`: the text report of any saved or imported document, or its HTML page.

use std::process::ExitCode;

use crate::cli::ReportArgs;
use crate::render::{html, report};
use crate::results::document::BenchResult;
use crate::views::model::Origin;
use crate::views::open;

pub fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if let Some(out) = &args.html {
        let view = open::load(&args.file)?;
        let text = if view.origin == Origin::Result {
            Some(report::text(&BenchResult::load(&args.file)?))
        } else {
            None
        };
        html::write(&view, text.as_deref(), out)?;
        eprintln!("servebench: HTML report written to {}", out.display());
        return Ok(ExitCode::SUCCESS);
    }
    if open::is_result_file(&args.file) {
        let result = BenchResult::load(&args.file)?;
        super::out(&report::text(&result))?;
    } else {
        let view = open::load(&args.file)?;
        super::out(&report::view::view_text(&view))?;
    }
    Ok(ExitCode::SUCCESS)
}
