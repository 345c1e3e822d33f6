//! How requests are sent: [`LoadSpec`] (the count, the rate and its burstiness, the
//! concurrency cap, warm-ups, the seed, every time limit, `--shard` and the load's shape in
//! time) with [`RequestRate`], and the rules that hold on the load alone
//! ([`LoadSpec::check`], [`LoadSpec::check_shard`], [`LoadSpec::check_timeouts`], steps of
//! `RunConfig::validate` in `rules.rs`). Pure values, no I/O.
//!
//! To add a load option: add the field with `#[serde(default)]` (old result files must still
//! load), its rule in one of the checks here, and set it in `cli`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::defaults;
use super::error::{ConfigError, ValueError};
use super::limits::{self, limit, MAX_PROMPTS, MAX_WAIT_S};
use super::shape::LoadShape;
use super::shard::Shard;

/// Requests per second: a finite rate, or all at once (`inf`, the default, as in the seeds).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(into = "String", try_from = "String")]
pub enum RequestRate {
    #[default]
    Infinite,
    PerSecond(f64),
}

impl RequestRate {
    /// A number of requests per second (not `inf`).
    pub fn is_finite(&self) -> bool {
        matches!(self, RequestRate::PerSecond(_))
    }
}

impl fmt::Display for RequestRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestRate::Infinite => f.write_str("inf"),
            RequestRate::PerSecond(r) => write!(f, "{r}"),
        }
    }
}

impl FromStr for RequestRate {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        if s.eq_ignore_ascii_case("inf") {
            return Ok(RequestRate::Infinite);
        }
        match s.parse::<f64>() {
            Ok(r) if r.is_infinite() && r > 0.0 => Ok(RequestRate::Infinite),
            Ok(r) if r.is_finite() && r > 0.0 => Ok(RequestRate::PerSecond(r)),
            _ => Err(ValueError::Rate(s.to_string())),
        }
    }
}

impl From<RequestRate> for String {
    fn from(r: RequestRate) -> String {
        r.to_string()
    }
}

impl TryFrom<String> for RequestRate {
    type Error = ValueError;
    fn try_from(s: String) -> Result<Self, ValueError> {
        s.parse()
    }
}

/// How requests are sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadSpec {
    /// Measured requests (warm-ups not included).
    pub num_prompts: u64,
    pub request_rate: RequestRate,
    /// Gamma shape of inter-arrival times; 1.0 is a Poisson process (vLLM's `--burstiness`).
    pub burstiness: f64,
    /// At most this many requests in flight; `None` means no limit.
    pub max_concurrency: Option<u64>,
    /// Requests sent (one at a time) before the measured run, excluded from every statistic.
    pub num_warmups: u64,
    pub seed: u64,
    /// Per-request time limit, seconds.
    pub timeout_s: f64,
    /// After Ctrl-C, how long in-flight requests may still finish, seconds.
    pub grace_s: f64,
    /// `--shard I/N`: this process sends only its share of the schedule (see `shard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Longest wait for a TCP (and TLS) connection, seconds.
    #[serde(default = "defaults::connect_timeout_s")]
    pub connect_timeout_s: f64,
    /// Longest wait from a request's send to the first byte of its response body, seconds;
    /// `None`: the request timeout (queueing and prefill can be long on a loaded server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_timeout_s: Option<f64>,
    /// Longest silence between two reads of a response body once it started, seconds (a
    /// longer one is a `stall`).
    #[serde(default = "defaults::idle_timeout_s")]
    pub idle_timeout_s: f64,
    /// Time limit of the pre-flight request, seconds.
    #[serde(default = "defaults::preflight_timeout_s")]
    pub preflight_timeout_s: f64,
    /// `--source-addresses`: local addresses new connections are bound to, round-robin
    /// (`source.rs`); empty: the kernel's choice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_addresses: Vec<std::net::IpAddr>,
    /// Duration, ramp, stages and early stop (`shape.rs`); absent: a count at one rate.
    #[serde(default, skip_serializing_if = "LoadShape::is_default")]
    pub shape: LoadShape,
    /// `run --adaptive`: the SLO controller sets the load in windows (`adaptive.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<super::adaptive::AdaptiveSpec>,
}

impl Default for LoadSpec {
    fn default() -> Self {
        LoadSpec {
            num_prompts: 100,
            request_rate: RequestRate::Infinite,
            burstiness: 1.0,
            max_concurrency: None,
            num_warmups: 0,
            seed: 0,
            timeout_s: 6.0 * 3600.0,
            grace_s: 10.0,
            shard: None,
            connect_timeout_s: defaults::connect_timeout_s(),
            first_byte_timeout_s: None,
            idle_timeout_s: defaults::idle_timeout_s(),
            preflight_timeout_s: defaults::preflight_timeout_s(),
            source_addresses: Vec::new(),
            shape: LoadShape::default(),
            adaptive: None,
        }
    }
}

impl LoadSpec {
    pub fn timeout(&self) -> Duration {
        limit(self.timeout_s)
    }
    pub fn grace(&self) -> Duration {
        limit(self.grace_s)
    }
    pub fn connect_timeout(&self) -> Duration {
        limit(self.connect_timeout_s)
    }
    /// The first-byte limit, the request timeout unless one was given.
    pub fn first_byte_timeout(&self) -> Duration {
        limit(self.first_byte_timeout_s.unwrap_or(self.timeout_s))
    }
    pub fn idle_timeout(&self) -> Duration {
        limit(self.idle_timeout_s)
    }
    pub fn preflight_timeout(&self) -> Duration {
        limit(self.preflight_timeout_s)
    }
    /// The concurrency cap of this process: `max_concurrency`, or a shard's share of it.
    pub fn concurrency_cap(&self) -> Option<u64> {
        let cap = self.max_concurrency?;
        Some(self.shard.map_or(cap, |s| s.concurrency_share(cap)))
    }
}

/// The rules on the load alone, as `RunConfig::validate` takes them in turn.
impl LoadSpec {
    /// The count, the rate and its shape in time, the concurrency cap, the request timeout and
    /// the grace period; the error names the option that is wrong.
    pub(super) fn check(&self) -> Result<(), ConfigError> {
        let bad = |option: &str, why: String| Err(ConfigError::invalid(option, why));
        if self.num_prompts == 0 {
            return bad("--num-prompts", "must be at least 1".into());
        }
        if !(self.burstiness.is_finite() && self.burstiness > 0.0) {
            return bad("--burstiness", "must be a positive number".into());
        }
        let finite = self.request_rate != RequestRate::Infinite;
        self.shape.validate(finite)?;
        if let RequestRate::PerSecond(r) = self.request_rate {
            limits::check_rate(r).map_err(|why| ConfigError::limit("--request-rate", why))?;
        }
        if self.max_concurrency == Some(0) {
            return bad("--max-concurrency", "must be at least 1".into());
        }
        let shape = &self.shape;
        if shape.duration_s.is_some()
            && !finite
            && shape.ramp.is_none()
            && shape.curve.is_none()
            && self.max_concurrency.is_none()
        {
            return bad(
                "--duration",
                "at --request-rate inf a time window is a closed loop: give --max-concurrency (the streams kept open), or a finite --request-rate (it sent as fast as the client could, hundreds of thousands of requests a second)".into(),
            );
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return bad("--timeout", "must be a positive number of seconds".into());
        }
        if self.timeout_s > MAX_WAIT_S {
            return bad(
                "--timeout",
                format!("must be at most {MAX_WAIT_S} seconds (a week)"),
            );
        }
        if !(self.grace_s.is_finite() && self.grace_s >= 0.0) {
            return bad("--grace", "must be zero or more seconds".into());
        }
        if self.grace_s > MAX_WAIT_S {
            return bad(
                "--grace",
                format!("must be at most {MAX_WAIT_S} seconds (a week)"),
            );
        }
        if self.num_prompts > MAX_PROMPTS {
            return bad("--num-prompts", format!("must be at most {MAX_PROMPTS}"));
        }
        if self.num_warmups > MAX_PROMPTS {
            return bad("--num-warmups", format!("must be at most {MAX_PROMPTS}"));
        }
        Ok(())
    }

    /// `--shard`: a real share of the schedule, every shard with at least one request and one
    /// slot of the concurrency cap.
    pub(super) fn check_shard(&self) -> Result<(), ConfigError> {
        let bad = |why: String| Err(ConfigError::invalid("--shard", why));
        let Some(s) = self.shard else {
            return Ok(());
        };
        if s.index >= s.count {
            return bad(format!("{s}: INDEX must be below COUNT"));
        }
        if self.num_prompts < s.count {
            return bad(format!(
                "{} requests cannot be split over {} shards (every shard needs one)",
                self.num_prompts, s.count
            ));
        }
        if let Some(c) = self.max_concurrency.filter(|&c| c < s.count) {
            return bad(format!("--max-concurrency {c} cannot be split over {} shards (every shard needs one slot; use at most {c} shards)", s.count));
        }
        Ok(())
    }

    /// The transport's time limits (each a number of seconds above 0 and at most a week) and
    /// its source addresses (`source.rs`).
    pub(super) fn check_timeouts(&self) -> Result<(), ConfigError> {
        let limits = [
            ("--connect-timeout", Some(self.connect_timeout_s)),
            ("--first-byte-timeout", self.first_byte_timeout_s),
            ("--idle-timeout", Some(self.idle_timeout_s)),
            ("--preflight-timeout", Some(self.preflight_timeout_s)),
        ];
        for (option, s) in limits {
            if s.is_some_and(|s| !(s.is_finite() && s > 0.0 && s <= MAX_WAIT_S)) {
                let why =
                    format!("must be a number of seconds > 0 and at most {MAX_WAIT_S:.0} (a week)");
                return Err(ConfigError::invalid(option, why));
            }
        }
        // A saved config's list, by the flag's rules.
        super::source::check(&self.source_addresses)
            .map_err(|e| ConfigError::invalid("--source-addresses", e))
    }
}
