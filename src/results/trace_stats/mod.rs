//! `servebench trace analyze`: what a trace asks of a server, before it is replayed: its
//! lengths, arrival rate, sessions, prefix reuse and the hit rate a prefix cache of a given
//! size would have, the designed figure to set beside what the server then reports
//! (docs/workloads.md, "Sharing a trace"; each figure's definition in docs/metrics.md,
//! "Trace analysis").
//!
//! `read.rs` reads a trace by the replay's rules within its bounds, `lru.rs` turns blocks into
//! prefixes and simulates the cache, `analysis.rs` computes the figures; `error.rs` is the
//! leaf of errors and bounds they share.

mod analysis;
mod error;
mod lru;
mod read;

pub use analysis::{analyze, CacheRow, Lengths, Rate, Reuse, Sessions, Spec, TraceAnalysis};
pub use error::{LineError, TraceFileError, MAX_BLOCKS, MAX_LINES, MAX_LINE_BYTES};
pub use read::{read, TraceLine};

#[cfg(test)]
mod tests;
