//! Why a saved or imported document could not be opened, rendered or written (`import`,
//! `compare`, `plot`, `report`). The message names the file.

use std::path::{Path, PathBuf};

/// A document could not be read, understood, rendered or written.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("cannot read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot write {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The file is not in any format servebench reads, or is malformed.
    #[error("{path}: {why}")]
    Parse { path: PathBuf, why: String },
    /// A chart could not be drawn.
    #[error("cannot draw {path}: {why}")]
    Plot { path: PathBuf, why: String },
    #[error(transparent)]
    Result(#[from] crate::results::error::ResultsError),
}

impl ViewError {
    /// The file at `path` is not in a format servebench reads, or is malformed: `why`.
    pub fn parse(path: &Path, why: impl Into<String>) -> ViewError {
        ViewError::Parse {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }
}
