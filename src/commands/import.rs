//! `servebench import`: other tools' outputs (vLLM, llmperf, …) into servebench view documents.

use std::process::ExitCode;

use crate::cli::ImportArgs;
use crate::render::report::view::import_summary;
use crate::views::import;

pub fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let several = args.files.len() > 1;
    for file in &args.files {
        let out = import::output_path(file, args.output.as_deref(), several);
        let view = import::import_file(file, &out)?;
        super::out(&import_summary(&view, &out))?;
    }
    Ok(ExitCode::SUCCESS)
}
