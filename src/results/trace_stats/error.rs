//! Why a trace could not be analyzed ([`TraceFileError`], naming the file), what is wrong
//! with one of its lines ([`LineError`]), and the bounds a trace is read within.
//!
//! A leaf beside the reader and the analysis: both use it, and it imports neither.

use std::path::PathBuf;

use crate::config::limits::{MAX_TOKENS, MAX_WAIT_S};

/// The longest line read, in bytes.
pub const MAX_LINE_BYTES: usize = 64 << 20;
/// The most lines read from one trace.
pub const MAX_LINES: u64 = 10_000_000;
/// The most `hash_ids` of all lines of one trace (each is held while the trace is analyzed).
pub const MAX_BLOCKS: u64 = 20_000_000;
/// The most tokens of one block (as `--trace-block-size` of the trace dataset).
pub const MAX_BLOCK: u64 = 1 << 20;
/// The most cache sizes one analysis simulates.
pub const MAX_CACHE_SIZES: usize = 16;
/// The most windows the arrival rate lists one by one (more: only its mean and peak).
pub const MAX_LISTED_WINDOWS: u64 = 10_000;

/// A trace could not be analyzed. Each message is one line naming the file or the flag.
#[derive(Debug, thiserror::Error)]
pub enum TraceFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is not a regular file")]
    NotAFile(PathBuf),
    #[error("{path} line {line}: {reason}")]
    Line {
        path: PathBuf,
        line: u64,
        reason: LineError,
    },
    #[error("{0} holds no request")]
    Empty(PathBuf),
    #[error("{path}: more than {MAX_LINES} lines; split the file")]
    TooManyLines { path: PathBuf },
    #[error("{path} line {line}: the lines up to this one hold more than {MAX_BLOCKS} hash_ids; split the file")]
    TooManyBlocks { path: PathBuf, line: u64 },
    #[error("--trace-block-size {0} is not in 1..={MAX_BLOCK} tokens")]
    BlockSize(u64),
    #[error("--window-s {0} is not a time from 0.001 to {MAX_WAIT_S:.0} s")]
    Window(f64),
    #[error("--cache-blocks: give 1 to {MAX_CACHE_SIZES} sizes, each at least 1 block")]
    CacheSizes,
}

/// What is wrong with one line of a trace (its number is in [`TraceFileError::Line`]).
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    #[error("not UTF-8 text")]
    NotUtf8,
    #[error("not a trace line: {0}")]
    NotALine(serde_json::Error),
    #[error("timestamp {0} is not a time in ms")]
    BadTimestamp(f64),
    #[error(
        "timestamp {at_ms} ms is more than a week ({MAX_WAIT_S:.0} s) from the trace's earliest"
    )]
    PastAWeek { at_ms: f64 },
    #[error("{field} {value} is above the limit of {MAX_TOKENS} tokens (as --output-len and --input-len)")]
    TooMany { field: &'static str, value: u64 },
    #[error("needs \"hash_ids\", \"input_length\" or \"prompt\"")]
    NoPrompt,
    #[error("{ids} hash_ids of {block} tokens make a prompt of {tokens} tokens, above the limit of {MAX_TOKENS}")]
    TooManyBlocks { ids: u64, block: u64, tokens: u64 },
    #[error("input_length {input} does not fit {ids} hash_ids of {block} tokens (the last block must hold 1..={block})")]
    BlocksDoNotFit { input: u64, ids: u64, block: u64 },
    #[error("\"session_id\" must be a string or a number")]
    Session,
}

impl From<crate::measure::lines::BadLine> for LineError {
    fn from(bad: crate::measure::lines::BadLine) -> Self {
        match bad {
            crate::measure::lines::BadLine::TooLong => LineError::TooLong,
            crate::measure::lines::BadLine::NotUtf8 => LineError::NotUtf8,
        }
    }
}
