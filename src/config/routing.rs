//! How a run's requests reach the server: the prefill gate (`--max-prefill-concurrency`: at
//! most K requests between sent and first token) and several endpoints (`--base-url` given
//! more than once or `--base-urls-file`; `--balance`, `--affinity session`,
//! `--session-header`, `--failover`). Pure values and their rules; the client
//! (`measure::client::route`) does the picking, and docs/metrics.md ("Several endpoints",
//! "Prefill gate") defines what they mean.

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// The most endpoints one run spreads its requests over.
pub const MAX_ENDPOINTS: usize = 256;

/// The consecutive connection failures after which `--failover` stops sending to an endpoint,
/// when the flag is given without a count.
pub const FAILOVER_DEFAULT: u32 = 3;

/// How a new request (or a new session's first) chooses its endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Balance {
    /// Each endpoint in turn.
    #[default]
    RoundRobin,
    /// The endpoint with the fewest requests in flight (the lowest index on a tie).
    LeastInFlight,
    /// An endpoint drawn at random, from the run's `--seed`.
    Random,
}

impl Balance {
    pub fn name(self) -> &'static str {
        match self {
            Balance::RoundRobin => "round-robin",
            Balance::LeastInFlight => "least-in-flight",
            Balance::Random => "random",
        }
    }
}

/// What stays on one endpoint (`--affinity`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Affinity {
    /// A conversation's turns, or a job's calls.
    Session,
}

/// The prefill gate and the endpoints of a run; the default is one endpoint and no gate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Routing {
    /// `--max-prefill-concurrency`: at most this many requests between sent and first token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_prefill_concurrency: Option<u64>,
    /// The endpoints after the config's `base_url` (endpoint 0), as saved: redacted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_base_urls: Vec<String>,
    #[serde(default, skip_serializing_if = "is_round_robin")]
    pub balance: Balance,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// `--session-header`: a response header whose value later requests of the same session
    /// send back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_header: Option<String>,
    /// `--failover`: consecutive connection failures that stop an endpoint's new requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<u32>,
}

fn is_round_robin(b: &Balance) -> bool {
    *b == Balance::RoundRobin
}

impl Routing {
    pub fn is_default(&self) -> bool {
        *self == Routing::default()
    }

    /// The run's endpoints, counting the config's `base_url`.
    pub fn endpoints(&self) -> usize {
        1 + self.more_base_urls.len()
    }

    /// Its rules; `sessions`: the run's requests come in sessions (a multi-turn conversation,
    /// an agentic job).
    pub fn check(&self, sessions: bool) -> Result<(), ConfigError> {
        if self.max_prefill_concurrency == Some(0) {
            return Err(ConfigError::invalid(
                "--max-prefill-concurrency",
                "0 would send nothing: give at least 1",
            ));
        }
        if self.endpoints() > MAX_ENDPOINTS {
            let why = format!("{} endpoints, at most {MAX_ENDPOINTS}", self.endpoints());
            return Err(ConfigError::invalid("--base-url", why));
        }
        if self.affinity.is_some() && !sessions {
            let why = "keeps a session on one endpoint, and this run has none: give a multi-turn or agentic dataset (--multi-turn, --dataset-name graph or agentic)";
            return Err(ConfigError::invalid("--affinity session", why));
        }
        if self.failover == Some(0) {
            let why =
                "stops an endpoint after K consecutive connection failures: give K of at least 1";
            return Err(ConfigError::invalid("--failover", why));
        }
        if let Some(name) = &self.session_header {
            let token = |c: u8| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c);
            if name.is_empty() || name.len() > 128 || !name.bytes().all(token) {
                let why = format!("'{}' is not an HTTP header name", name.escape_debug());
                return Err(ConfigError::invalid("--session-header", why));
            }
            if self.affinity.is_none() {
                let why = "echoes a session's header back: give --affinity session too";
                return Err(ConfigError::invalid("--session-header", why));
            }
        }
        Ok(())
    }
}

/// `url` as compared for a duplicate: scheme and host lower-cased, the scheme's default port
/// and trailing slashes dropped (its path and query kept as given).
pub fn normalized(url: &str) -> String {
    let url = url.trim();
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => (String::new(), url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let mut host = authority.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => Some(":80"),
        "https" => Some(":443"),
        _ => None,
    };
    if let Some(p) = default_port.filter(|p| host.ends_with(*p)) {
        host.truncate(host.len() - p.len());
    }
    let path = match path.split_once('?') {
        Some((p, q)) => format!("{}?{q}", p.trim_end_matches('/')),
        None => path.trim_end_matches('/').to_string(),
    };
    format!("{scheme}://{host}{path}")
}

/// The first URL of `urls` that repeats an earlier one once normalized ([`normalized`]): its
/// position (from 0) and the earlier one's.
pub fn first_duplicate(urls: &[String]) -> Option<(usize, usize)> {
    let seen: Vec<String> = urls.iter().map(|u| normalized(u)).collect();
    (1..seen.len()).find_map(|i| seen[..i].iter().position(|s| *s == seen[i]).map(|j| (i, j)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_that_differ_only_in_case_port_or_slash_are_one() {
        let urls = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            first_duplicate(&urls(&["http://a:8000", "http://b:8000", "HTTP://A:8000/"])),
            Some((2, 0))
        );
        assert_eq!(
            first_duplicate(&urls(&["http://a", "http://a:80"])),
            Some((1, 0))
        );
        assert_eq!(
            first_duplicate(&urls(&["http://a:8000", "http://a:8001"])),
            None
        );
        assert_eq!(
            first_duplicate(&urls(&["http://a/v1", "http://a/v2"])),
            None
        );
    }

    #[test]
    fn its_rules_refuse_in_one_line() {
        let zero = Routing {
            max_prefill_concurrency: Some(0),
            ..Routing::default()
        };
        assert!(zero
            .check(true)
            .unwrap_err()
            .to_string()
            .contains("--max-prefill-concurrency"));
        let affinity = Routing {
            affinity: Some(Affinity::Session),
            ..Routing::default()
        };
        assert!(affinity
            .check(false)
            .unwrap_err()
            .to_string()
            .contains("--affinity session"));
        affinity.check(true).unwrap();
        let header = Routing {
            session_header: Some("bad name".into()),
            ..affinity.clone()
        };
        assert!(header
            .check(true)
            .unwrap_err()
            .to_string()
            .contains("--session-header"));
        let failover = Routing {
            failover: Some(0),
            ..Routing::default()
        };
        assert!(failover.check(true).is_err());
    }
}
