//! Sharded runs: one global schedule, sent by N client processes that start together.
//!
//! A run's schedule — request `j`, its prompt, its send offset — is a pure function of the
//! config and seed (`workload::build_requests`, `load::arrival_offsets`). `--shard I/N` makes a
//! process build that whole schedule and send only its share of it:
//!
//! - **Requests**: request `j` belongs to shard `j mod N`. Every request has exactly one shard,
//!   and each shard's requests are spread evenly over the whole run (not one time slice each),
//!   so each shard offers about 1/N of the load at every moment.
//! - **Send times**: a request keeps its offset in the global schedule (`load::drive` looks the
//!   offset up by the request's id), so a finite `--request-rate` needs no split: together the
//!   shards send exactly the single-process schedule.
//! - **Concurrency**: a cap C becomes floor(C/N) for each shard, plus one for shards I < C mod N,
//!   so the shards' caps add up to C. A cap below N is refused (a shard with no slot could send
//!   nothing); so are fewer requests than shards.
//! - **Warm-ups** are each shard's own, outside the measured schedule.
//!
//! `--start-at` (RFC 3339) makes every shard wait, after its workload, pre-flight and warm-ups,
//! until that instant on its own wall clock, and start its measured load there. A start time
//! already past is an error: a late shard would not be part of the same load.
//!
//! A sharded run's result carries a [`Timebase`]: the wall-clock time of its records' zero,
//! which `merge` uses to put every shard's records on one time axis, and an estimate of how far
//! this machine's clock is from the server's ([`probe_clock_offset`], from HTTP `Date`
//! headers), so clock disagreement between shards can be seen.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

use crate::client::{Client, RequestSpec};
use crate::clock::Clock;
use crate::config::{LoadSpec, RunConfig};
use crate::error::RunError;
use crate::monitor::Verdict;

/// Shard `index` of `count` (0-based): it sends the requests whose id ≡ index (mod count).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// True when request `id` of the global schedule is this shard's.
    pub fn owns(self, id: u64) -> bool {
        id % self.count == self.index
    }

    /// This shard's share of a concurrency cap: floor(cap / N), plus one for the first
    /// cap mod N shards, so the shares add up to `cap`.
    pub fn concurrency_share(self, cap: u64) -> u64 {
        cap / self.count + u64::from(self.index < cap % self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("invalid shard '{s}': {why}");
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| bad("expected INDEX/COUNT, e.g. 0/4"))?;
        let parse = |x: &str| x.trim().parse::<u64>().ok();
        let (Some(index), Some(count)) = (parse(i), parse(n)) else {
            return Err(bad("INDEX and COUNT must be whole numbers, e.g. 0/4"));
        };
        if count == 0 {
            return Err(bad("COUNT must be at least 1"));
        }
        if index >= count {
            return Err(bad("INDEX counts from 0 and must be below COUNT"));
        }
        Ok(Shard { index, count })
    }
}

/// Shards `indices` of `count`, as `1/4, 2/4`.
pub fn list(indices: &[u64], count: u64) -> String {
    let shards: Vec<String> = indices.iter().map(|i| format!("{i}/{count}")).collect();
    shards.join(", ")
}

/// The requests of the run's schedule that this process sends (all of them when unsharded).
pub fn own_requests(load: &LoadSpec, requests: Vec<RequestSpec>) -> Vec<RequestSpec> {
    match load.shard {
        Some(shard) => requests.into_iter().filter(|r| shard.owns(r.id)).collect(),
        None => requests,
    }
}

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

/// Just before the measured load of a sharded run, or of any run given `--start-at`: estimates
/// this machine's clock offset against the server, then waits for the start time. `None` (and
/// no waiting) for other runs.
pub async fn before_start(
    client: &Client,
    cfg: &RunConfig,
    start_at: Option<OffsetDateTime>,
    stop: &CancellationToken,
) -> Result<Option<Timebase>, RunError> {
    if cfg.load.shard.is_none() && start_at.is_none() {
        return Ok(None);
    }
    let clock_offset = probe_clock_offset(client, &cfg.base_url).await;
    if let Some(at) = start_at {
        wait_until(at, stop).await?;
    }
    Ok(Some(Timebase {
        start_at: start_at.and_then(|t| t.format(&Rfc3339).ok()),
        anchor_unix_ns: 0,
        start_unix_ns: 0,
        clock_offset,
    }))
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

/// Unix time now, ns, on this machine's clock.
fn unix_now_ns() -> i128 {
    OffsetDateTime::now_utc().unix_timestamp_nanos()
}

/// Most probes, and the pause between two, of [`probe_clock_offset`].
const MAX_PROBES: u32 = 60;
const PROBE_GAP: Duration = Duration::from_millis(20);

/// Estimates server clock − local clock from the `Date` header of `GET base_url`.
///
/// `Date` has whole seconds: a response stamped D was stamped at a server time in [D, D + 1 s),
/// somewhere between the local send time t0 and receive time t1, so the offset lies in
/// (D − t1, D + 1 s − t0). Each probe narrows the interval; the probes are 20 ms apart and stop
/// once the stamped second has changed (then the interval is about 20 ms + one round trip
/// wide), after at most about 1.2 s. The estimate is the interval's middle, the uncertainty its
/// half-width. It assumes the server stamps its current second (hyper and Go's net/http
/// do; a server that refreshes its Date once a second at some other phase reads up to 1 s
/// behind, and probes that contradict each other widen the interval to cover both).
/// `None` when the server sends no readable `Date`.
pub async fn probe_clock_offset(client: &Client, base_url: &str) -> Option<ClockOffset> {
    let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
    let mut first_second = None;
    let mut probes = 0;
    while probes < MAX_PROBES {
        let t0 = unix_now_ns() as f64 / 1e6;
        let Some(date) = client.get_date(base_url).await else {
            break;
        };
        let t1 = unix_now_ns() as f64 / 1e6;
        let Some(d) = date
            .duration_since(UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs_f64() * 1e3)
        else {
            break;
        };
        probes += 1;
        let (a, b) = (d - t1, d + 1000.0 - t0);
        (lo, hi) = if a.max(lo) <= b.min(hi) {
            (a.max(lo), b.min(hi))
        } else {
            (a.min(lo), b.max(hi))
        };
        if *first_second.get_or_insert(d) != d {
            break;
        }
        tokio::time::sleep(PROBE_GAP).await;
    }
    (probes > 0).then(|| ClockOffset {
        offset_ms: (lo + hi) / 2.0,
        uncertainty_ms: (hi - lo) / 2.0,
        source: "http_date".into(),
        probes,
    })
}

/// Parses `--start-at`: an RFC 3339 time, e.g. `2026-05-01T12:00:00Z`.
pub fn parse_start_at(s: &str) -> Result<OffsetDateTime, String> {
    OffsetDateTime::parse(s, &Rfc3339).map_err(|e| {
        format!("invalid start time '{s}': {e} (expected RFC 3339, e.g. 2026-05-01T12:00:00Z)")
    })
}

/// Waits until `at` on this machine's wall clock (or until `stop`). A time already past is an
/// error: the shards would not start together.
pub async fn wait_until(at: OffsetDateTime, stop: &CancellationToken) -> Result<(), RunError> {
    let ahead_ns = at.unix_timestamp_nanos() - unix_now_ns();
    if ahead_ns < 0 {
        return Err(RunError::StartAt(format!(
            "--start-at {} passed {:.3} s ago on this machine's clock (after the workload, pre-flight, warm-ups and clock probe); give every shard a later time",
            at.format(&Rfc3339).unwrap_or_default(),
            -ahead_ns as f64 / 1e9
        )));
    }
    tokio::select! {
        () = tokio::time::sleep(Duration::from_nanos(ahead_ns as u64)) => {}
        () = stop.cancelled() => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_bad_ones_say_why() {
        assert_eq!(
            "3/4".parse::<Shard>().unwrap(),
            Shard { index: 3, count: 4 }
        );
        for (bad, why) in [
            ("5/4", "below COUNT"),
            ("4/4", "below COUNT"),
            ("0/0", "at least 1"),
            ("x/2", "whole numbers"),
            ("-1/2", "whole numbers"),
            ("3", "INDEX/COUNT"),
        ] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.contains(why) && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn every_request_has_exactly_one_shard() {
        for n in 1..7u64 {
            for id in 0..50 {
                let owners = (0..n)
                    .filter(|&i| Shard { index: i, count: n }.owns(id))
                    .count();
                assert_eq!(owners, 1, "id {id} of {n} shards");
            }
        }
    }

    #[test]
    fn concurrency_shares_add_up_to_the_cap() {
        for n in 1..9u64 {
            for cap in n..40 {
                let shares: Vec<u64> = (0..n)
                    .map(|i| Shard { index: i, count: n }.concurrency_share(cap))
                    .collect();
                assert_eq!(shares.iter().sum::<u64>(), cap, "{shares:?}");
                assert!(shares.iter().max().unwrap() - shares.iter().min().unwrap() <= 1);
                assert!(shares.iter().all(|&s| s >= 1));
            }
        }
        let s = |i| Shard { index: i, count: 4 }.concurrency_share(10);
        assert_eq!([s(0), s(1), s(2), s(3)], [3, 3, 2, 2]);
    }

    #[test]
    fn start_times_parse_as_rfc3339_only() {
        let t = parse_start_at("2026-05-01T12:00:00.250Z").unwrap();
        assert_eq!(t.unix_timestamp_nanos() % 1_000_000_000, 250_000_000);
        assert!(parse_start_at("2026-05-01T12:00:00+02:00").is_ok());
        let e = parse_start_at("tomorrow").unwrap_err();
        assert!(e.contains("tomorrow") && e.contains("RFC 3339"), "{e}");
    }

    #[tokio::test]
    async fn a_start_time_already_past_is_an_error() {
        let past = OffsetDateTime::now_utc() - time::Duration::seconds(2);
        let e = wait_until(past, &CancellationToken::new())
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("--start-at") && e.contains("later time"), "{e}");
    }
}
