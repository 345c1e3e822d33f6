//! Why `servebench join` could not join: a file that cannot be read or is not what it should
//! be ([`TraceError`] says what is wrong with a trace), a run without ids, a trace that
//! matches nothing. Each message names the file. Also why one matched span is not believed
//! ([`SpanError`]), which is kept in the join's figures rather than refused. A leaf: it
//! imports nothing from the join's other files.

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
    Trace { path: PathBuf, why: TraceError },
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
    pub(crate) fn trace(path: &Path, why: TraceError) -> JoinError {
        JoinError::Trace {
            path: path.to_path_buf(),
            why,
        }
    }
}

/// Why a trace file's text is not a trace (the file is named by [`JoinError::Trace`]).
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{len} bytes, more than the {max} a trace may hold")]
    TooLarge { len: u64, max: u64 },
    #[error("line {line} column {column}: not JSON ({json})")]
    NotJson {
        line: usize,
        column: usize,
        json: serde_json::Error,
    },
    #[error("the document starting at line {line} is not an OTLP JSON trace nor a server log line ({why})")]
    NotTrace { line: usize, why: String },
    #[error("more than {0} request spans")]
    TooManySpans(usize),
    #[error("empty: no OTLP JSON document")]
    Empty,
}

/// Why a span matched to a request is not believed: it is left out of every figure and
/// named, with this message, among the join's implausible spans.
#[derive(Debug, thiserror::Error)]
pub enum SpanError {
    /// What in the span is not a number it should be ([`super::ServerSpan::bad`]).
    #[error("{0}")]
    Bad(String),
    #[error("the span has no start or end")]
    NoTimes,
    #[error("its times are not plausible (start {start} ns, end {end} ns since 1970)")]
    Times { start: u64, end: u64 },
    #[error("it has no gen_ai.latency.time_to_first_token")]
    NoTtft,
    #[error("the server's time to first token ({server_ttft_ms:.3} ms) is longer than the client's TTFT ({ttft_ms:.3} ms)")]
    TtftLonger { server_ttft_ms: f64, ttft_ms: f64 },
    #[error("its queue, prefill and KV transfer ({inside:.3} ms) are longer than its time to first token ({server_ttft_ms:.3} ms)")]
    PartsLonger { inside: f64, server_ttft_ms: f64 },
    #[error("it starts {away_s:.3} s away from the request's send on servebench's clock (beyond the {slack_s:.3} s the clocks may differ)")]
    OffClock { away_s: f64, slack_s: f64 },
}
