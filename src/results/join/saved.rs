//! A join's figures as a run's result keeps them (`servebench join RESULT TRACE --save`):
//! the counts of each side and the TTFT split's parts, under the result's
//! `join` key, for `report`, its CSV and HTML. The requests joined one by one stay in the
//! join's own output. Imports nothing, so the result document can hold it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One part of the TTFT over the joined requests, ms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// `network`, `queue`, ... (docs/metrics.md).
    pub name: String,
    pub count: u64,
    pub mean_ms: f64,
    pub median_ms: f64,
    pub p99_ms: f64,
}

/// What a saved join found: the trace it read, the counts and each part of the TTFT split.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JoinFigures {
    /// The trace file, as given to `join`.
    pub trace: PathBuf,
    /// Measured requests that succeeded with an id.
    pub requests: u64,
    /// Spans with `gen_ai.request.id`.
    pub spans: u64,
    pub matched: u64,
    pub unmatched_requests: u64,
    pub unmatched_spans: u64,
    pub duplicate_ids: u64,
    /// Matched requests whose spans were not believed (in no part).
    pub implausible: u64,
    /// Joined requests split by their span, and by the account in their own answer.
    #[serde(default)]
    pub from_spans: u64,
    #[serde(default)]
    pub from_answers: u64,
    pub parts: Vec<Part>,
}
