//! Library error types (thiserror). Per-request failures are not errors but data
//! ([`crate::record::Outcome`]); these are the failures that stop a command.
//!
//! `main` maps every variant to exit code 2 (usage, configuration or I/O) unless noted.

use std::path::PathBuf;

/// A configuration value is wrong. The message names the option.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid {option}: {why}")]
    Invalid { option: String, why: String },
}

/// A run could not start or its results could not be written.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The pre-flight request failed: the server is unreachable or the endpoint is wrong.
    #[error("{0}")]
    Preflight(String),
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
    #[error("cannot start the HTTP client: {0}")]
    Client(String),
    #[error("cannot start the simulated server: {0}")]
    Sim(std::io::Error),
    #[error(transparent)]
    Tokenizer(#[from] crate::tokenizer::TokenizerError),
    #[error(transparent)]
    Dataset(#[from] crate::dataset::DatasetError),
    #[error("--tokenizer server: {0}")]
    ServerTokenizer(String),
    /// `--start-at` cannot be kept.
    #[error("{0}")]
    StartAt(String),
    /// Shard results that cannot be merged (`merge`).
    #[error("{0}")]
    Merge(String),
}

/// A saved or imported document could not be read, understood, rendered or written
/// (`import`, `compare`, `plot`, `report`). The message names the file.
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
    Result(#[from] RunError),
}

/// An error and its causes on one line ("a: b: c"), skipping causes already in the text.
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        source = cause.source();
    }
    s
}
