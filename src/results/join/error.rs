//! Why `servebench join` could not join: a file that cannot be read or is not what it should
//! be, a run without ids, a trace that matches nothing. Each message names the file.

use std::path::{Path, PathBuf};

use crate::results::error::ResultsError;

/// A join could not be made. The message names the file and what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {why}")]
    Trace { path: PathBuf, why: String },
    #[error(transparent)]
    Result(#[from] ResultsError),
    #[error(
        "{0}: no records file beside it (RESULT.records.jsonl): join needs each request's record"
    )]
    NoRecords(PathBuf),
    #[error("{0}: no successful measured request carries an id (a run given --request-id-header none, or older than request ids, sent none)")]
    NoIds(PathBuf),
    #[error("no span of {trace} matches a request of {result}: {spans} spans with gen_ai.request.id (the first '{first_span}'), {requests} requests with ids (the first '{first_request}')")]
    NoMatch {
        trace: PathBuf,
        result: PathBuf,
        spans: usize,
        requests: usize,
        first_span: String,
        first_request: String,
    },
}

impl JoinError {
    pub(crate) fn read(path: &Path, source: std::io::Error) -> JoinError {
        JoinError::Read {
            path: path.to_path_buf(),
            source,
        }
    }
    pub(crate) fn trace(path: &Path, why: String) -> JoinError {
        JoinError::Trace {
            path: path.to_path_buf(),
            why,
        }
    }
}
