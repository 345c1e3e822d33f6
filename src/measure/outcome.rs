//! How a request ended: [`Outcome`], `ok` or failed with a [`FailureKind`] and a message.
//! Failures are data: the client turns whatever the server does into one, the record keeps
//! it (`record.rs`, which re-exports both), and `results` counts them by kind.
//!
//! A leaf: it imports nothing of the crate. A new way to fail is a `FailureKind` variant with
//! its saved name in `as_str` and its place in `ALL` (the serialized names are a format:
//! never rename one).

use serde::{Deserialize, Serialize};

/// Why a request failed. Failures are data: counted by kind, never dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// TCP/TLS connection could not be made.
    Connect,
    /// The request did not finish within the request timeout.
    Timeout,
    /// The server answered with a non-2xx status.
    HttpStatus,
    /// The body stream ended or broke before the server said it was done.
    StreamBroken,
    /// An SSE event could not be understood (bad JSON, unexpected shape).
    MalformedStream,
    /// The server sent an error inside the stream.
    ServerError,
    /// The stream finished without a single output token.
    NoOutput,
    /// The run was stopped (Ctrl-C) while the request was in flight.
    Cancelled,
    /// Anything else (request could not be built or sent).
    Other,
    /// The response body started and then went silent for longer than `--idle-timeout`.
    Stall,
    /// A request could not be built, so it was never sent: a conversation's chat template
    /// failed or passed a limit, its history would pass `--max-history-bytes`/`-tokens`, or
    /// the request holds what its API cannot carry (an image for the completions API).
    Prompt,
    /// A whole (non-streamed) answer could not be understood: not JSON, not the API's shape,
    /// not one result per input, or longer than `--max-answer-size`.
    MalformedAnswer,
}

impl FailureKind {
    pub const ALL: [FailureKind; 12] = [
        FailureKind::Connect,
        FailureKind::Timeout,
        FailureKind::HttpStatus,
        FailureKind::StreamBroken,
        FailureKind::MalformedStream,
        FailureKind::ServerError,
        FailureKind::NoOutput,
        FailureKind::Cancelled,
        FailureKind::Other,
        FailureKind::Stall,
        FailureKind::Prompt,
        FailureKind::MalformedAnswer,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Connect => "connect",
            FailureKind::Timeout => "timeout",
            FailureKind::HttpStatus => "http_status",
            FailureKind::StreamBroken => "stream_broken",
            FailureKind::MalformedStream => "malformed_stream",
            FailureKind::ServerError => "server_error",
            FailureKind::NoOutput => "no_output",
            FailureKind::Cancelled => "cancelled",
            FailureKind::Other => "other",
            FailureKind::Stall => "stall",
            FailureKind::Prompt => "prompt",
            FailureKind::MalformedAnswer => "malformed_answer",
        }
    }
}

/// How a request ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum Outcome {
    #[default]
    Ok,
    Failed {
        kind: FailureKind,
        message: String,
    },
}

impl Outcome {
    pub fn failed(kind: FailureKind, message: impl Into<String>) -> Self {
        Outcome::Failed {
            kind,
            message: message.into(),
        }
    }
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok)
    }
    pub fn failure_kind(&self) -> Option<FailureKind> {
        match self {
            Outcome::Ok => None,
            Outcome::Failed { kind, .. } => Some(*kind),
        }
    }
}
