//! Sampling the server's Prometheus `/metrics` during the measured load.
//!
//! [`Scraper`] is a tokio task with its own HTTP client that samples one URL at a fixed
//! interval from the start of the measured load to its end, stamping each sample with the
//! run's clock. A failed scrape is counted and kept as a warning; it never fails the run.
//! Parsing is `measure::prom`; the figures over the series are
//! `results::server_metrics::summarize`. This module does not aggregate, print or write files.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::url::redact_url;
use crate::config::ScrapeSpec;
use crate::measure::client::read_at_most;
use crate::measure::clock::Clock;
use crate::measure::error::describe;
use crate::measure::prom::{extract, extract_gpu, parse, MetricsSample, ServerFamily};
use crate::results::server_metrics::{summarize_server_metrics, ServerMetrics};

/// At most this long for one scrape; a slower one counts as a failure.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);
/// Distinct failure messages kept in the result (all failures are counted).
/// The most a `/metrics` answer may hold (vLLM's is a few hundred KiB); a larger one is a
/// failed scrape, not read whole.
const METRICS_MAX: usize = 16 << 20;
const MAX_ERRORS_KEPT: usize = 5;

/// Scrapes a metrics endpoint in the background; see the module doc.
pub struct Scraper {
    task: JoinHandle<Series>,
    stop: CancellationToken,
}

struct Series {
    spec: ScrapeSpec,
    http: Option<reqwest::Client>,
    clock: Clock,
    server: Option<ServerFamily>,
    samples: Vec<MetricsSample>,
    failures: u64,
    errors: Vec<String>,
}

impl Series {
    /// One sample: every URL, its figures together (the server's, a DCGM exporter's).
    async fn scrape(&mut self) {
        let at_ns = self.clock.now_ns();
        let urls = std::iter::once(&self.spec.url).chain(&self.spec.more_urls);
        let answers = futures_util::future::join_all(urls.map(|u| fetch(self.http.as_ref(), u)));
        let mut sample = MetricsSample {
            at_ns,
            ..MetricsSample::default()
        };
        let mut any = false;
        for answer in answers.await {
            match answer {
                Ok((family, exposition)) => {
                    self.server = self.server.or(family);
                    merge(&mut sample, exposition);
                    any = true;
                }
                Err(e) => {
                    self.failures += 1;
                    if self.errors.len() < MAX_ERRORS_KEPT && !self.errors.contains(&e) {
                        self.errors.push(e);
                    }
                }
            }
        }
        if any {
            self.samples.push(sample);
        }
    }
}

/// Fills the figures of `into` that `from` has.
fn merge(into: &mut MetricsSample, from: MetricsSample) {
    let pairs = [
        (&mut into.running, from.running),
        (&mut into.waiting, from.waiting),
        (&mut into.kv_cache_usage, from.kv_cache_usage),
        (&mut into.prompt_tokens_total, from.prompt_tokens_total),
        (
            &mut into.generation_tokens_total,
            from.generation_tokens_total,
        ),
        (&mut into.gpu_power_w, from.gpu_power_w),
        (&mut into.gpu_util_pct, from.gpu_util_pct),
    ];
    for (slot, v) in pairs {
        *slot = slot.or(v);
    }
}

async fn fetch(
    http: Option<&reqwest::Client>,
    url: &str,
) -> Result<(Option<ServerFamily>, MetricsSample), String> {
    let http = http.ok_or("cannot build an HTTP client for scraping")?;
    // Shown in errors and saved: redacted (the URL may hold credentials).
    let shown = redact_url(url);
    let response = http
        .get(url)
        .send()
        .await
        .map_err(|e| format!("GET {shown}: {}", describe(&e.without_url())))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("GET {shown}: HTTP {status}"));
    }
    let (bytes, over) = read_at_most(response, METRICS_MAX)
        .await
        .map_err(|e| format!("GET {shown}: {}", describe(&e.without_url())))?;
    if over {
        return Err(format!(
            "GET {shown}: the answer is over {METRICS_MAX} bytes"
        ));
    }
    let exposition = parse(&String::from_utf8_lossy(&bytes));
    let (family, mut sample) = extract(&exposition.samples);
    let gpu = extract_gpu(&exposition.samples, &mut sample);
    match family {
        Some(_) => Ok((family, sample)),
        None if gpu => Ok((None, sample)),
        None => Err(format!(
            "GET {shown}: no vLLM, SGLang, TGI, llama.cpp or DCGM metric in the answer ({} samples, {} unreadable lines)",
            exposition.samples.len(),
            exposition.bad_lines.len()
        )),
    }
}

impl Scraper {
    /// Takes a first sample (awaited, so it comes before any measured request) and then one
    /// every `spec.interval` in a background task, until [`Scraper::finish`].
    pub async fn start(spec: ScrapeSpec, clock: Clock) -> Scraper {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(SCRAPE_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .tls_danger_accept_invalid_certs(spec.insecure)
            .build()
            .ok();
        let interval = spec.interval.max(Duration::from_millis(1));
        let mut series = Series {
            spec,
            http,
            clock,
            server: None,
            samples: Vec::new(),
            failures: 0,
            errors: Vec::new(),
        };
        series.scrape().await;
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            let first = tokio::time::Instant::now() + interval;
            let mut ticker = tokio::time::interval_at(first, interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    biased;
                    () = token.cancelled() => break,
                    _ = ticker.tick() => {}
                }
                tokio::select! {
                    biased;
                    () = token.cancelled() => break,
                    () = series.scrape() => {}
                }
            }
            series
        });
        Scraper { task, stop }
    }

    /// Stops sampling, takes a last sample (so counters cover the whole load), and returns the
    /// series with its summary.
    pub async fn finish(self) -> ServerMetrics {
        self.stop.cancel();
        let mut series = match self.task.await {
            Ok(series) => series,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        series.scrape().await;
        ServerMetrics {
            summary: summarize_server_metrics(&series.samples),
            url: redact_url(&series.spec.url),
            interval_s: series.spec.interval.as_secs_f64(),
            server: series.server,
            samples: series.samples,
            failures: series.failures,
            errors: series.errors,
        }
    }
}
