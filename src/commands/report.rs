//! `servebench report`: the text report of any saved or imported document, or its HTML page.

use std::process::ExitCode;

use crate::cli::{ReportArgs, TableFormat};
use crate::render::{csv, html, report};
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
        note!("servebench: HTML report written to {}", out.display());
        return Ok(ExitCode::SUCCESS);
    }
    let records = args.file.extension().is_some_and(|e| e == "jsonl");
    let text = match args.format {
        TableFormat::Csv if records => csv::records(crate::views::samples::records_in(&args.file)?),
        _ if open::is_result_file(&args.file) => {
            let result = BenchResult::load(&args.file)?;
            match args.format {
                TableFormat::Text => report::text(&result),
                TableFormat::Csv => csv::result(&result),
                TableFormat::Markdown => report::view::result_markdown(&report::text(&result)),
            }
        }
        format => {
            let view = open::load(&args.file)?;
            match format {
                TableFormat::Text => report::view::view_text(&view),
                TableFormat::Csv => csv::view(&view),
                TableFormat::Markdown => report::view::view_markdown(&view),
            }
        }
    };
    super::out(&text)?;
    Ok(ExitCode::SUCCESS)
}
