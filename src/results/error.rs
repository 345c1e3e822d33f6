//! Errors of reading, writing and merging saved documents (results, records, sweeps, searches).

use std::path::PathBuf;

/// A saved document could not be read, understood, written or merged. The message names the
/// file.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a servebench result: {why}")]
    BadResult { path: PathBuf, why: String },
    /// A file that reads but breaks a rule (a shard result without a timebase, say).
    #[error("{path}: {why}")]
    Invalid { path: PathBuf, why: String },
    /// A file the command would write exists (and `--overwrite` was not given).
    #[error("{} exists: give --overwrite to replace it, or another --result-filename or --result-dir", path.display())]
    Exists { path: PathBuf },
    /// Shard results that cannot be merged.
    #[error("{0}")]
    Merge(String),
    /// A time slice's width out of bounds (a saved config's, or `report --time-slice`'s).
    #[error("--time-slice: {0}")]
    TimeSlice(#[from] crate::config::limits::LimitError),
}
