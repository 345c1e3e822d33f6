//! A call's place in an agentic job: a job is a graph of calls, each sent when the calls it
//! waits for have ended (and its gap has passed), its prompt carrying what named upstream
//! calls actually answered. The workload builds each call's place (`workload::dataset`:
//! `graph` files, the `agentic` generator), the driver follows it (`drive::job`), and the
//! record keeps it, so a job's figures (completion time, critical path) are computed from
//! the records alone (`results`).
//!
//! A job's calls are numbered in an order where every call comes after all of its upstream
//! calls (the workload checks the graph has no cycle and puts it in that order), so `after`
//! and `splice` only name calls of lower index.

use serde::{Deserialize, Serialize};

/// The most calls one job may hold, and the longest gap before a call (ms): checked with the
/// flags in `config`, the layer below.
pub use crate::config::workload::{MAX_CALLS_PER_JOB, MAX_GAP_MS};

/// Where one call sits in its job's graph.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallPlace {
    /// The call's number in its job, from 0 (0 is sent first: it waits for nothing).
    pub call: u32,
    /// How many calls its job has (so a job's records tell whether all of it was sent).
    pub of: u32,
    /// The calls it waits for (lower numbers); empty: it starts with its job.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<u32>,
    /// The calls whose replies its prompt carries after its own text, in this order (each
    /// upstream of it: reached through `after`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub splice: Vec<u32>,
    /// The wait after the last call of `after` ended (or the job started) before it is sent:
    /// a tool's or a user's time, in the server's time (ms).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gap_ms: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}
