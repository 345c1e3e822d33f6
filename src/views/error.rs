//! Why a saved or imported document could not be opened or written (`import`, `compare`,
//! `plot`, `report`; the message names the file), and why a `--fail-if-worse` gate could not
//! be judged ([`GateError`]; the message names the gate); why `history` cannot show or judge
//! its results ([`HistoryError`]).

use std::path::{Path, PathBuf};

use crate::config::figure::FigureKey;

/// A document could not be read, understood or written.
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

/// A `compare --fail-if-worse` gate that cannot be judged: an error, never a pass.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("--fail-if-worse {metric}: this metric has no better direction")]
    NoDirection { metric: FigureKey },
    #[error(
        "--fail-if-worse {metric}: {input} or A has no 95% interval for it at {step} (an import without per-request samples, or too few samples for that percentile), so it cannot be judged"
    )]
    NoInterval {
        metric: FigureKey,
        /// The input's letter (B, C, ...).
        input: String,
        /// The step's title.
        step: String,
    },
    #[error("--fail-if-worse {metric}: no input pair has this metric")]
    NotCompared { metric: FigureKey },
}

/// Why `servebench history` cannot show or judge what it was given: an error, never a pass.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("no servebench result in {dirs}")]
    NoResults { dirs: String },
    #[error("--key {key}: no result has it")]
    NoMatch { key: String },
    #[error(
        "the results are of {count} configurations ({names}): give --key label (a table each) or --key KEY=VALUE to choose one"
    )]
    Mixed { count: usize, names: String },
    #[error("--key: '{0}' is empty")]
    BadKey(String),
    #[error("--fail-if-worse {metric}: this metric has no better direction")]
    NoDirection { metric: FigureKey },
    #[error(
        "--fail-if-worse {metric}: a run of {group} has no 95% interval for it (too few samples for that percentile, or a result saved without it), so it cannot be judged"
    )]
    NoInterval { metric: FigureKey, group: String },
    #[error("--fail-if-worse {metric}: no configuration has two runs with this metric")]
    NotJudged { metric: FigureKey },
    #[error(transparent)]
    View(#[from] ViewError),
}
