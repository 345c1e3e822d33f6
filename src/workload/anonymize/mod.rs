//! Traces people can share: a trace that carries text (servebench's jsonl dataset, or a
//! generic trace with `prompt`s) turned into a Mooncake-style trace of block ids, which keeps
//! each request's time, lengths, session and which of its blocks repeat an earlier prompt's
//! prefix, and drops every word (docs/workloads.md, "Sharing a trace").
//!
//! `lines.rs` reads one input line, `blocks.rs` names a prompt's blocks (ids in order of first
//! appearance, never a hash of the text), `file.rs` reads the file within its bounds and
//! writes the trace; `error.rs` is the leaf of errors and bounds they share.

mod blocks;
mod error;
mod file;
mod lines;

pub use error::{
    AnonymizeError, LineError, MAX_DISTINCT_BLOCKS, MAX_FILE_TOKENS, MAX_LINES, MAX_LINE_BYTES,
};
pub use file::{anonymize, Summary, Tokens};

#[cfg(test)]
mod tests;
