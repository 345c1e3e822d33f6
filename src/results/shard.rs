//! What a sharded or `--start-at` run saves about its time axis ([`Timebase`], [`ClockOffset`])
//! and what a merged result saves about its sources ([`MergedFrom`]); and what `merge` checks
//! of each shard's records before it believes them ([`check_records`]).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::config::shard::Shard;
use crate::config::RunConfig;
use crate::measure::clock::Clock;
use crate::measure::record::RequestRecord;
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

/// What a shard's result says it measured and planned.
#[derive(Clone, Copy, Debug)]
pub struct ShardCounts {
    /// `completed + failed`.
    pub measured: u64,
    pub unsent: u64,
    pub planned: Option<u64>,
}

/// The requests `shard` plans of a run with `config`, recomputed from the config where it
/// fixes them: a count-bounded run of single requests or `--turns N` conversations (the
/// schedule positions below `--num-prompts` that the shard owns, each its turns). `None`
/// where the count depends on more than the config (a time window, a conversation file's
/// (jsonl, `--multi-turn` ShareGPT) or a trace's own turns, a workload mix).
pub fn planned_of(config: &RunConfig, shard: Shard) -> Option<u64> {
    let load = &config.load;
    let dataset = &config.workload.dataset;
    // A conversation file's (jsonl, `--multi-turn` ShareGPT) or a trace's own turns.
    let own_turns = dataset.templates_conversations() || dataset.own_schedule().is_some();
    if load.shape.window_s().is_some() || own_turns || config.mix.is_some() {
        return None;
    }
    let owned = match load.num_prompts > shard.index {
        true => (load.num_prompts - shard.index).div_ceil(shard.count),
        false => 0,
    };
    owned.checked_mul(u64::from(load.shape.turns()))
}

/// Why a shard's records or counts are not its own, in one line.
#[derive(Debug, PartialEq)]
pub struct NotOwn(pub String);

/// Checks a shard's measured records and counts against its config before a merge believes
/// them: every record's schedule position (its conversation's, for a turn) is the shard's
/// (≡ index mod count), below the run's planned count where the run has one, and its id is
/// not already in `seen` (this or another shard); the saved planned count is the one its
/// config makes (recomputed, [`planned_of`]) and equals measured + unsent. The shard's planned
/// count, as checked; the error says what was wrong, in one line.
pub fn check_records(
    config: &RunConfig,
    shard: Shard,
    counts: ShardCounts,
    records: &[RequestRecord],
    seen: &mut HashSet<u64>,
) -> Result<Option<u64>, NotOwn> {
    let load = &config.load;
    let recomputed = planned_of(config, shard);
    let windowed = load.shape.window_s().is_some();
    // Ids below the run's whole plan: positions below --num-prompts, turns below its turns.
    let id_bound = (!windowed).then(|| match recomputed {
        Some(_) => load
            .num_prompts
            .saturating_mul(u64::from(load.shape.turns())),
        None => load
            .num_prompts
            .saturating_mul(u64::from(crate::config::limits::MAX_TURNS)),
    });
    for r in records.iter().filter(|r| !r.warmup) {
        let position = r.conversation.unwrap_or(r.id);
        if position % shard.count != shard.index {
            return Err(NotOwn(format!(
                "record id {} is not shard {shard}'s (a shard's records are those whose schedule position is {} mod {}): this records file is not this shard's",
                r.id, shard.index, shard.count
            )));
        }
        if !windowed && position >= load.num_prompts {
            return Err(NotOwn(format!(
                "record id {} is past the run's {} planned requests (--num-prompts)",
                r.id, load.num_prompts
            )));
        }
        if id_bound.is_some_and(|b| r.id >= b) {
            return Err(NotOwn(format!(
                "record id {} is past the run's planned requests ({})",
                r.id,
                id_bound.unwrap_or(0)
            )));
        }
        if !seen.insert(r.id) {
            return Err(NotOwn(format!(
                "record id {} is measured twice (in this shard or in another): one request has one record",
                r.id
            )));
        }
    }
    if let (Some(saved), Some(p)) = (counts.planned, recomputed) {
        if saved != p {
            let why = format!("its result says {saved} planned requests");
            return Err(NotOwn(format!(
                "{why}, but its config plans {p} for shard {shard}"
            )));
        }
    }
    let planned = recomputed.or(counts.planned);
    let accounted = counts.measured.saturating_add(counts.unsent);
    if let Some(p) = planned.filter(|&p| p != accounted) {
        return Err(NotOwn(format!(
            "{p} planned requests, but {} measured and {} unsent make {accounted}",
            counts.measured, counts.unsent
        )));
    }
    Ok(planned)
}
