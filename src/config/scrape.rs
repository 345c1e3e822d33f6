//! What `--scrape-metrics` samples during a run, and how often: [`ScrapeSpec`] (made by
//! `cli::plan`, used by `drive::scrape`). Not saved in the result. Pure values.

use std::time::Duration;

/// What to scrape and how often.
#[derive(Clone, Debug, PartialEq)]
pub struct ScrapeSpec {
    /// The full URL of the metrics endpoint, e.g. `http://127.0.0.1:8000/metrics`.
    pub url: String,
    /// More endpoints sampled with it (a DCGM exporter's, for GPU power and utilisation).
    pub more_urls: Vec<String>,
    /// Time between two scrapes (at least 1 ms; `cli` rejects 0).
    pub interval: Duration,
    /// Do not verify the server's TLS certificate (as `--insecure` for requests).
    pub insecure: bool,
}
