//! What `servebench search` varies and when it stops. Pure values; the search itself is
//! `drive::search`, its document `results::search`.

use serde::{Deserialize, Serialize};

/// What the search varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchBy {
    Rate,
    Concurrency,
}

/// Search bounds and stopping rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchSpec {
    pub by: SearchBy,
    pub start: f64,
    pub max: f64,
    /// Stop bisecting when (fail − pass) / fail ≤ precision.
    pub precision: f64,
    /// Fraction of requests that must be good.
    pub target: f64,
    pub max_probes: u32,
}
