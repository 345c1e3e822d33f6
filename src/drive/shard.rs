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

use std::time::{Duration, UNIX_EPOCH};

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

use crate::config::RunConfig;
use crate::drive::error::RunError;
use crate::measure::client::Client;
use crate::results::shard::{ClockOffset, Timebase};

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
    let clock_offset = tokio::select! {
        biased;
        () = stop.cancelled() => return Err(RunError::Stopped),
        offset = probe_clock_offset(client, client.base_url()) => offset,
    };
    if let Some(at) = start_at {
        wait_until(at, stop).await?;
        if stop.is_cancelled() {
            return Err(RunError::Stopped);
        }
    }
    Ok(Some(Timebase {
        start_at: start_at.and_then(|t| t.format(&Rfc3339).ok()),
        anchor_unix_ns: 0,
        start_unix_ns: 0,
        clock_offset,
    }))
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
