//! `servebench import`: other tools' outputs (vLLM, llmperf, …) into servebench view
//! documents, each summed up in text (`render::print`).

use std::process::ExitCode;

use crate::cli::ImportArgs;
use crate::render::print::{self, Format, ImportSummary};
use crate::views::import;

pub fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let several = args.files.len() > 1;
    for file in &args.files {
        let saved = import::output_path(file, args.output.as_deref(), several);
        let text = print::print(Format::Text, || {
            let view = import::import_file(file, &saved, args.gpus)?;
            Ok(ImportSummary { view, saved })
        })?;
        super::out::out(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}
