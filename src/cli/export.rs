//! `servebench export`'s flags, and `run --records-format`: the formats a records file is
//! written in besides the crash-safe JSON Lines (`results::records_parquet`).

use std::path::PathBuf;

use clap::Args;

/// The formats of per-request records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum RecordsFormat {
    /// JSON Lines: one record per line (always written, as the run goes).
    #[default]
    Jsonl,
    /// Apache Parquet: one row per record, one column per field (docs/report.md).
    Parquet,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A records file: `.records.jsonl` (to Parquet), or a Parquet file servebench wrote
    /// (back to JSON Lines).
    pub file: PathBuf,
    /// The format to write: parquet (from a .jsonl file) or jsonl (from a Parquet file).
    #[arg(long, value_enum)]
    pub format: RecordsFormat,
    /// The file to write; default: FILE with the format's extension (x.records.parquet).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Replace the output file if it exists (otherwise export refuses, before it writes).
    #[arg(long)]
    pub overwrite: bool,
}
