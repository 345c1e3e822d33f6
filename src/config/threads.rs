//! `--client-threads`: how many threads drive a run's load (`drive::lanes`), a number or
//! `auto`, and the rule `auto` follows: the run's expected event rate over what one thread
//! handles ([`EVENTS_PER_THREAD`], measured: docs/performance.md, "Thread per core").

use std::fmt;
use std::str::FromStr;

use super::error::ValueError;
use super::load::{LoadSpec, RequestRate};

/// The most client threads a run may ask for.
pub const MAX_CLIENT_THREADS: u16 = 1024;

/// Streamed events per second one client thread reads while its TTFT and E2EL stay within
/// 1 ms of the simulator's truth (docs/performance.md, "Thread per core": 512 streams of 100
/// events/s on one thread here, and 8 threads of 51,200 events/s each on 16 cores).
pub const EVENTS_PER_THREAD: f64 = 50_000.0;

/// The events per second `auto` assumes of one stream when the run does not bound its rate
/// (a concurrency cap, or everything at once): a fast decode of 100 tokens/s.
pub const STREAM_EVENTS_PER_S: f64 = 100.0;

/// `--client-threads`: a count, or `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientThreads {
    Count(u16),
    /// From the run's expected event rate ([`ClientThreads::resolve`]).
    Auto,
}

impl Default for ClientThreads {
    fn default() -> Self {
        ClientThreads::Count(1)
    }
}

impl fmt::Display for ClientThreads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientThreads::Count(n) => write!(f, "{n}"),
            ClientThreads::Auto => f.write_str("auto"),
        }
    }
}

impl FromStr for ClientThreads {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(ClientThreads::Auto);
        }
        match s.trim().parse::<u16>() {
            Ok(n) if (1..=MAX_CLIENT_THREADS).contains(&n) => Ok(ClientThreads::Count(n)),
            _ => Err(ValueError::ClientThreads(s.to_string(), MAX_CLIENT_THREADS)),
        }
    }
}

/// The streamed events per second (real time) a run of `load` asking for `output_len` tokens
/// per request is expected to bring this process: its peak request rate times the tokens,
/// or, bounded by streams (a concurrency cap, or every request at once), the streams times
/// [`STREAM_EVENTS_PER_S`]; the smaller when both bound it. `time_scale`: the simulator's
/// clock speed-up (its events come that much faster).
pub fn expected_events_per_s(load: &LoadSpec, output_len: u64, time_scale: f64) -> f64 {
    let shards = load.shard.map_or(1, |s| s.count) as f64;
    let rate = match load.request_rate {
        RequestRate::PerSecond(r) => Some(r),
        RequestRate::Infinite => None,
    };
    let by_rate = (load.shape.peak_rate(rate)).map(|r| r / shards * output_len.max(1) as f64);
    let streams = load.concurrency_cap().map(|c| c as f64);
    let by_streams = match (streams, by_rate) {
        (Some(c), _) => Some(c * STREAM_EVENTS_PER_S),
        (None, None) => Some(load.num_prompts as f64 / shards * STREAM_EVENTS_PER_S),
        (None, Some(_)) => None,
    };
    let events = match (by_rate, by_streams) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b).unwrap_or(0.0),
    };
    events * if time_scale > 0.0 { time_scale } else { 1.0 }
}

/// The threads for `events_per_s`: one per [`EVENTS_PER_THREAD`], at least 1, at most `cores`.
pub fn threads_for(events_per_s: f64, cores: u64) -> u64 {
    let n = (events_per_s / EVENTS_PER_THREAD).ceil();
    let n = if n.is_finite() && n >= 1.0 {
        n.min(f64::from(MAX_CLIENT_THREADS)) as u64
    } else {
        1
    };
    n.clamp(1, cores.max(1))
}

impl ClientThreads {
    /// The count asked for, or `auto`'s for a run of `load` on `cores` cores.
    pub fn resolve(self, load: &LoadSpec, output_len: u64, time_scale: f64, cores: u64) -> u64 {
        match self {
            ClientThreads::Count(n) => u64::from(n),
            ClientThreads::Auto => {
                threads_for(expected_events_per_s(load, output_len, time_scale), cores)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RequestRate;

    #[test]
    fn client_threads_parse_and_refuse() {
        assert_eq!("auto".parse(), Ok(ClientThreads::Auto));
        assert_eq!("4".parse(), Ok(ClientThreads::Count(4)));
        for bad in ["0", "1025", "-1", "two", ""] {
            let e = bad.parse::<ClientThreads>().unwrap_err().to_string();
            assert!(e.contains("--client-threads") && e.contains("auto"), "{e}");
        }
    }

    #[test]
    fn auto_follows_the_expected_event_rate() {
        // 4,096 streams of 100 events/s: 409,600 events/s, 9 threads of 50,000 (8 cores: 8).
        let mut load = LoadSpec {
            max_concurrency: Some(4096),
            num_prompts: 100_000,
            ..LoadSpec::default()
        };
        assert_eq!(expected_events_per_s(&load, 200, 1.0), 409_600.0);
        assert_eq!(ClientThreads::Auto.resolve(&load, 200, 1.0, 64), 9);
        assert_eq!(ClientThreads::Auto.resolve(&load, 200, 1.0, 8), 8);
        // A rate bounds it more: 100 requests/s of 200 tokens.
        load.request_rate = RequestRate::PerSecond(100.0);
        assert_eq!(expected_events_per_s(&load, 200, 1.0), 20_000.0);
        assert_eq!(ClientThreads::Auto.resolve(&load, 200, 1.0, 64), 1);
        // A simulator 10 times faster brings ten times the events.
        assert_eq!(ClientThreads::Auto.resolve(&load, 200, 10.0, 64), 4);
        // A count is a count.
        assert_eq!(ClientThreads::Count(3).resolve(&load, 200, 1.0, 1), 3);
    }
}
