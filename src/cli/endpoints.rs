//! `servebench run`'s flags for how requests reach the server: the prefill gate
//! (`--max-prefill-concurrency`) and several endpoints (`--base-url` given more than once, or
//! `--base-urls-file`; `--balance`, `--affinity`, `--session-header`, `--failover`), set into
//! `RunConfig::routing` by [`EndpointArgs::routing`]. The URLs are read and checked here
//! (one URL given twice is refused); the rules on the values are `config::routing`'s.

use std::path::{Path, PathBuf};

use clap::Args;

use super::error::{FileError, PlanError};
use super::heading;
use crate::config::routing::{first_duplicate, Affinity, Balance, Routing};
use crate::config::url::redact_url;

/// Most bytes of a `--base-urls-file` read.
const MAX_URLS_FILE_BYTES: u64 = 1 << 20;

/// `--balance`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BalanceArg {
    RoundRobin,
    LeastInFlight,
    Random,
}

/// `--affinity`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AffinityArg {
    Session,
}

#[derive(Debug, Args)]
pub struct EndpointArgs {
    /// A file of server base URLs, one per line (blank lines and lines starting with # are
    /// skipped), after those of --base-url: requests are spread over all of them. Pre-flight,
    /// tokenizer and other side calls go to the first.
    #[arg(help_heading = heading::TARGET, hide_short_help = true, long, value_name = "FILE")]
    pub base_urls_file: Option<PathBuf>,
    /// How requests are spread over several endpoints (each new session's first request,
    /// with --affinity session): in turn, to the one with the fewest in flight, or at random
    /// (from --seed).
    #[arg(help_heading = heading::TARGET, hide_short_help = true, long, value_enum,
          default_value = "round-robin")]
    pub balance: BalanceArg,
    /// Keep each conversation's turns (or job's calls) on the endpoint its first request went
    /// to (a multi-turn or agentic dataset).
    #[arg(help_heading = heading::TARGET, hide_short_help = true, long, value_enum)]
    pub affinity: Option<AffinityArg>,
    /// A response header (a router's session token) whose value the session's later requests
    /// send back (with --affinity session).
    #[arg(help_heading = heading::TARGET, hide_short_help = true, long, value_name = "NAME")]
    pub session_header: Option<String>,
    /// Stop sending new requests to an endpoint after K consecutive connection failures
    /// (default 3); without it, its requests fail and are recorded with their cause.
    #[arg(help_heading = heading::TARGET, hide_short_help = true, long, value_name = "K",
          num_args = 0..=1, default_missing_value = "3")]
    pub failover: Option<u32>,
    /// At most K requests between sent and first token (a prefill gate): a request waits for
    /// its turn in the client, and that wait is its client queue, part of its TTFT.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "K")]
    pub max_prefill_concurrency: Option<u64>,
}

impl EndpointArgs {
    /// Every server URL: `--base-url`'s, then the file's; refused when one is no http(s) URL,
    /// the file cannot be read, or one URL is given twice.
    pub fn urls(&self, given: &[String]) -> Result<Vec<String>, PlanError> {
        let mut urls = given.to_vec();
        if let Some(path) = &self.base_urls_file {
            let bad = |why: String| PlanError::UrlsFile {
                path: path.clone(),
                why,
            };
            let text = read_urls_file(path).map_err(|e| bad(e.to_string()))?;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                if !(line.starts_with("http://") || line.starts_with("https://")) {
                    let shown = redact_url(line).escape_debug().to_string();
                    return Err(bad(format!(
                        "line {}: '{shown}' is not an http:// or https:// URL",
                        n + 1
                    )));
                }
                urls.push(line.to_string());
            }
            if urls.len() == given.len() {
                return Err(bad("it holds no URL".into()));
            }
        }
        if let Some(u) = urls
            .iter()
            .find(|u| !(u.starts_with("http://") || u.starts_with("https://")))
        {
            let shown = redact_url(u).escape_debug().to_string();
            let why = format!("'{shown}' must start with http:// or https://");
            return Err(crate::config::error::ConfigError::invalid("--base-url", why).into());
        }
        if let Some((again, first)) = first_duplicate(&urls) {
            return Err(PlanError::UrlTwice {
                url: redact_url(&urls[again]).escape_debug().to_string(),
                first: first + 1,
                again: again + 1,
            });
        }
        Ok(urls)
    }

    /// Whether a server was given by a file (the simulator is not started then).
    pub fn has_file(&self) -> bool {
        self.base_urls_file.is_some()
    }

    /// The run's routing: the gate, and the endpoints after the first (`urls`, as given),
    /// saved redacted.
    pub fn routing(&self, urls: &[String]) -> Routing {
        Routing {
            max_prefill_concurrency: self.max_prefill_concurrency,
            more_base_urls: urls.iter().skip(1).map(|u| redact_url(u)).collect(),
            balance: match self.balance {
                BalanceArg::RoundRobin => Balance::RoundRobin,
                BalanceArg::LeastInFlight => Balance::LeastInFlight,
                BalanceArg::Random => Balance::Random,
            },
            affinity: self.affinity.map(|AffinityArg::Session| Affinity::Session),
            session_header: self.session_header.clone(),
            failover: self.failover,
        }
    }
}

/// A `--base-urls-file`'s text, at most [`MAX_URLS_FILE_BYTES`] of it.
fn read_urls_file(path: &Path) -> Result<String, FileError> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_URLS_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_URLS_FILE_BYTES {
        return Err(FileError::TooLong(MAX_URLS_FILE_BYTES));
    }
    String::from_utf8(bytes).map_err(|_| FileError::NotUtf8)
}
