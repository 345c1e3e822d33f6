//! Why a trace could not be anonymized ([`AnonymizeError`], naming the file), what is wrong
//! with one of its lines ([`LineError`]), and the bounds every input is held to before the
//! work it causes.
//!
//! A leaf beside the anonymizer's files: each of them may use it, and it imports none of them.

use std::path::PathBuf;

use crate::config::limits::{MAX_BUILT_TOKENS, MAX_TOKENS, MAX_WAIT_S};

/// The longest line read, in bytes (a prompt of `MAX_TOKENS` tokens is well under it).
pub const MAX_LINE_BYTES: usize = 64 << 20;
/// The most lines read from one file.
pub const MAX_LINES: u64 = 10_000_000;
/// The most tokens of all prompts of one file.
pub const MAX_FILE_TOKENS: u64 = MAX_BUILT_TOKENS;
/// The most distinct blocks one file may hold (each costs the anonymizer one map entry).
pub const MAX_DISTINCT_BLOCKS: u64 = 10_000_000;
/// The most tokens of one `--trace-block-size` block (as the trace dataset's).
pub const MAX_BLOCK: u64 = crate::workload::dataset::trace::MAX_BLOCK;

/// A trace could not be anonymized. Each message is one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum AnonymizeError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is not a regular file")]
    NotAFile(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} exists: give --overwrite to replace it, or another name", .0.display())]
    Exists(PathBuf),
    #[error("{path} line {line}: {reason}")]
    Line {
        path: PathBuf,
        line: u64,
        reason: LineError,
    },
    #[error("{0} holds no prompt")]
    Empty(PathBuf),
    #[error("{path}: more than {MAX_LINES} lines; split the file")]
    TooManyLines { path: PathBuf },
    #[error("{path} line {line}: the prompts up to this line hold more than {MAX_FILE_TOKENS} tokens; split the file")]
    TooManyTokens { path: PathBuf, line: u64 },
    #[error("{path} line {line}: the prompts up to this line hold more than {MAX_DISTINCT_BLOCKS} distinct blocks; use a larger --trace-block-size or split the file")]
    TooManyBlocks { path: PathBuf, line: u64 },
    #[error("--trace-block-size {0} is not in 1..={MAX_BLOCK} tokens")]
    BlockSize(u64),
    #[error("--tokenizer server: anonymize tokenizes offline; give the model's tokenizer file or name, or words")]
    ServerTokenizer,
}

/// What is wrong with one line of the input (its number is in [`AnonymizeError::Line`]).
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    #[error("not UTF-8 text")]
    NotUtf8,
    #[error("not valid JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("expected a JSON object")]
    NotAnObject,
    #[error("has no text to anonymize: needs a \"prompt\" string, a \"messages\" array or a \"turns\" array")]
    NoText,
    #[error("\"{0}\" must be a string")]
    NotText(&'static str),
    #[error(
        "\"messages\" must be a non-empty array of messages with string or text-part \"content\""
    )]
    Messages,
    #[error("\"turns\" must be a non-empty array of strings or {{\"prompt\": ...}} objects")]
    Turns,
    #[error("\"{field}\" must be a whole number in 1..={MAX_TOKENS} (as --output-len)")]
    OutputLen { field: &'static str },
    #[error("\"timestamp\" must be a time in ms, a finite number from 0")]
    BadTimestamp,
    #[error(
        "timestamp {at_ms} ms is more than a week ({MAX_WAIT_S:.0} s) from the trace's earliest"
    )]
    PastAWeek { at_ms: f64 },
    #[error("\"session_id\" must be a string or a number")]
    Session,
    #[error("a prompt has no tokens")]
    NoTokens,
    #[error("a prompt of {0} tokens is above the limit of {MAX_TOKENS} (as --input-len)")]
    TooManyTokens(u64),
}

impl From<crate::measure::lines::BadLine> for LineError {
    fn from(bad: crate::measure::lines::BadLine) -> Self {
        match bad {
            crate::measure::lines::BadLine::TooLong => LineError::TooLong,
            crate::measure::lines::BadLine::NotUtf8 => LineError::NotUtf8,
        }
    }
}
