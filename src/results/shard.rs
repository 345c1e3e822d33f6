//! What a sharded or `--start-at` run saves about its time axis ([`Timebase`], [`ClockOffset`])
//! and what a merged result saves about its sources ([`MergedFrom`]).

use serde::{Deserialize, Serialize};

use crate::measure::clock::Clock;
use crate::results::validity::Verdict;

/// Where a run's records lie on the shared wall clock, and how far this machine's clock is
/// from the server's. Saved with every sharded run (and every run given `--start-at`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timebase {
    /// `--start-at`, as given.
    #[serde(default)]
    pub start_at: Option<String>,
    /// Unix time (this machine's clock) of the records' time zero, ns: a record time `t` was
    /// at `anchor_unix_ns + t`.
    pub anchor_unix_ns: u64,
    /// Unix time (this machine's clock) at which the measured load started, ns.
    pub start_unix_ns: u64,
    /// This machine's clock against the server's, when it could be estimated.
    #[serde(default)]
    pub clock_offset: Option<ClockOffset>,
}

impl Timebase {
    /// This timebase with the wall-clock times of the records' zero and of the measured start
    /// (`start_ns` on `clock`) filled in.
    pub fn anchored(self, clock: &Clock, start_ns: u64) -> Timebase {
        Timebase {
            anchor_unix_ns: clock.unix_ns_at(0) as u64,
            start_unix_ns: clock.unix_ns_at(start_ns) as u64,
            ..self
        }
    }
}

/// Server clock − this machine's clock, from the server's HTTP `Date` headers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// Milliseconds; positive when the server's clock is ahead.
    pub offset_ms: f64,
    /// The offset lies within `offset_ms` ± this, ms.
    pub uncertainty_ms: f64,
    /// `http_date`.
    pub source: String,
    /// Requests the estimate is based on.
    pub probes: u32,
}

/// A merged result's sources: which shard came from which file, and which are missing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedFrom {
    pub count: u64,
    pub shards: Vec<MergedShard>,
    /// Shard indices with no result (merged only with `--allow-missing`).
    pub missing: Vec<u64>,
}

/// One shard of a merged result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    pub index: u64,
    pub file: std::path::PathBuf,
    pub complete: bool,
    pub verdict: Option<Verdict>,
    pub timebase: Timebase,
}
