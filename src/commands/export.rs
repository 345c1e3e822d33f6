//! `servebench export FILE --format parquet|jsonl`: a records file converted
//! (`results::records_parquet`): JSON Lines to Parquet, or a Parquet file servebench wrote
//! back to JSON Lines. An existing output is refused unless `--overwrite` (before anything is
//! written); a bad input is refused in one line naming it (exit 2).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::export::{ExportArgs, RecordsFormat};
use crate::results::records_parquet::{jsonl_to_parquet, parquet_to_jsonl};

pub fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let out = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&args.file, args.format));
    if out == args.file {
        anyhow::bail!(
            "{} is both the input and the output: give another -o",
            out.display()
        );
    }
    if !args.file.is_file() {
        anyhow::bail!("{}: no such records file", args.file.display());
    }
    if out.exists() && !args.overwrite {
        anyhow::bail!(
            "{} exists: give --overwrite to replace it, or another -o",
            out.display()
        );
    }
    let rows = match args.format {
        RecordsFormat::Parquet => jsonl_to_parquet(&args.file, &out)?,
        RecordsFormat::Jsonl => parquet_to_jsonl(&args.file, &out)?,
    };
    note!("servebench: {rows} records written to {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// `x.records.jsonl` → `x.records.parquet`, `x.records.parquet` → `x.records.jsonl`.
fn default_output(file: &Path, format: RecordsFormat) -> PathBuf {
    file.with_extension(match format {
        RecordsFormat::Parquet => "parquet",
        RecordsFormat::Jsonl => "jsonl",
    })
}
