//! The run's time axis: every timestamp in a record is read through a [`Clock`].
//!
//! Other modules read the clock for their own purposes, never for a record's timestamps:
//! `measure::rxtime` converts the kernel's receive stamps onto this axis, the client's
//! transports time out and pace reads, `drive::load` sleeps until send times, the monitor
//! samples the runtime's lag, the progress line and the scraper pace themselves, and
//! `drive::shard` reads the wall clock for `--start-at` and the server clock probe.
//!
//! A [`Clock`] is a monotonic anchor (tokio's `Instant`, so tests can pause time) plus one
//! wall-clock stamp taken at the same moment. Every timestamp in a record is nanoseconds since
//! the anchor, as `u64`: integer arithmetic keeps sums of gaps exact.

use tokio::time::Instant;

#[derive(Clone, Copy, Debug)]
pub struct Clock {
    anchor: Instant,
    /// Unix time of the anchor, nanoseconds.
    wall_ns: i128,
}

impl Clock {
    /// Starts a clock now.
    pub fn start() -> Self {
        let anchor = Instant::now();
        let wall_ns = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
        Clock { anchor, wall_ns }
    }

    /// Nanoseconds since the anchor.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.ns_at(Instant::now())
    }

    /// Nanoseconds from the anchor to `t` (0 if `t` is before it).
    #[inline]
    pub fn ns_at(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.anchor).as_nanos() as u64
    }

    /// The instant `ns` nanoseconds after the anchor.
    /// The instant `ns` nanoseconds after the anchor (a far-off instant, never a panic, for a
    /// time past what `Instant` can hold).
    pub fn instant_at(&self, ns: u64) -> Instant {
        let d = std::time::Duration::from_nanos(ns);
        self.anchor
            .checked_add(d)
            .unwrap_or_else(|| self.anchor + std::time::Duration::from_secs(86_400 * 365 * 30))
    }

    /// Unix time of the instant `ns` nanoseconds after the anchor, ns (this machine's clock).
    pub fn unix_ns_at(&self, ns: u64) -> i128 {
        self.wall_ns + ns as i128
    }

    /// Wall-clock time of the anchor, RFC 3339.
    pub fn started_at_rfc3339(&self) -> String {
        time::OffsetDateTime::from_unix_timestamp_nanos(self.wall_ns)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
            .unwrap_or_default()
    }

    /// Wall-clock time of the anchor as `YYYYMMDD-HHMMSS`, for file names (as vLLM's).
    pub fn started_at_compact(&self) -> String {
        let fmt = time::macros::format_description!("[year][month][day]-[hour][minute][second]");
        time::OffsetDateTime::from_unix_timestamp_nanos(self.wall_ns)
            .ok()
            .and_then(|t| t.format(&fmt).ok())
            .unwrap_or_default()
    }
}
