//! Sampling the server's Prometheus `/metrics` during the measured load.
//!
//! [`Scraper`] runs on a thread of its own, with its own single-threaded tokio runtime and HTTP
//! client, so neither fetching nor parsing an answer (which may be 16 MiB of series) ever holds
//! the runtime that sends requests and reads their streams. It samples one URL (and any more
//! given) at a fixed interval from the start of the measured load to its end, stamping each
//! sample with the run's clock. Each answer is read up to [`METRICS_MAX`] bytes and parsed
//! within [`LIMITS`] (`measure::prom::parse_known`): what is past a limit is counted in the
//! result, not read. A failed scrape is counted and kept as a warning; it never fails the run.
//! The figures over the series are `results::server_metrics::summarize`. This module does not
//! aggregate, print or write files.

use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::config::url::redact_url;
use crate::config::ScrapeSpec;
use crate::measure::client::read_at_most;
use crate::measure::clock::Clock;
use crate::measure::error::describe;
use crate::measure::prom::{
    extract, extract_gpu, parse_known, MetricsSample, ParseLimits, ServerFamily,
};
use crate::results::server_metrics::{summarize_server_metrics, ServerMetrics};

/// At most this long for one scrape; a slower one counts as a failure.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);
/// The most a `/metrics` answer may hold (vLLM's is a few hundred KiB); a larger one is a
/// failed scrape, not read whole.
const METRICS_MAX: usize = 16 << 20;
/// What one answer is read for at most (`ParseLimits::SCRAPE`).
const LIMITS: ParseLimits = ParseLimits::SCRAPE;
/// Distinct failure messages kept in the result (all failures are counted).
const MAX_ERRORS_KEPT: usize = 5;

/// Scrapes a metrics endpoint in the background, on its own thread; see the module doc.
pub struct Scraper {
    stop: CancellationToken,
    /// The series, sent by the scraper's thread once stopped (and its last sample taken).
    done: oneshot::Receiver<Series>,
    url: String,
    interval: Duration,
}

struct Series {
    spec: ScrapeSpec,
    http: Option<reqwest::Client>,
    clock: Clock,
    server: Option<ServerFamily>,
    samples: Vec<MetricsSample>,
    failures: u64,
    errors: Vec<String>,
    over_limit: u64,
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
                Ok(answer) => {
                    self.over_limit += answer.over_limit;
                    self.server = self.server.or(answer.family);
                    merge(&mut sample, answer.sample);
                    any = true;
                }
                Err((e, over_limit)) => {
                    self.over_limit += over_limit;
                    self.fail(e);
                }
            }
        }
        if any {
            self.samples.push(sample);
        }
    }

    fn fail(&mut self, e: String) {
        self.failures += 1;
        if self.errors.len() < MAX_ERRORS_KEPT && !self.errors.contains(&e) {
            self.errors.push(e);
        }
    }

    fn metrics(self) -> ServerMetrics {
        ServerMetrics {
            summary: summarize_server_metrics(&self.samples),
            url: redact_url(&self.spec.url),
            interval_s: self.spec.interval.as_secs_f64(),
            server: self.server,
            samples: self.samples,
            failures: self.failures,
            errors: self.errors,
            over_limit: self.over_limit,
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
        (&mut into.spec_drafts_total, from.spec_drafts_total),
        (
            &mut into.spec_draft_tokens_total,
            from.spec_draft_tokens_total,
        ),
        (
            &mut into.spec_accepted_tokens_total,
            from.spec_accepted_tokens_total,
        ),
        (&mut into.spec_accept_length, from.spec_accept_length),
    ];
    for (slot, v) in pairs {
        *slot = slot.or(v);
    }
    if into.spec_accepted_per_position_total.is_empty() {
        into.spec_accepted_per_position_total = from.spec_accepted_per_position_total;
    }
}

/// What one URL answered.
struct Answer {
    family: Option<ServerFamily>,
    sample: MetricsSample,
    /// Lines left unread past [`LIMITS`].
    over_limit: u64,
}

/// One URL's figures; a failure's message and the lines it left unread past [`LIMITS`].
async fn fetch(http: Option<&reqwest::Client>, url: &str) -> Result<Answer, (String, u64)> {
    let http = http.ok_or(("cannot build an HTTP client for scraping".to_string(), 0))?;
    // Shown in errors and saved: redacted (the URL may hold credentials).
    let shown = redact_url(url);
    let failed = |why: String| (format!("GET {shown}: {why}"), 0);
    let response = (http.get(url).send().await).map_err(|e| failed(describe(&e.without_url())))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(format!("HTTP {status}")));
    }
    let (bytes, over) = read_at_most(response, METRICS_MAX)
        .await
        .map_err(|e| failed(describe(&e.without_url())))?;
    if over {
        return Err(failed(format!("the answer is over {METRICS_MAX} bytes")));
    }
    let exposition = parse_known(&String::from_utf8_lossy(&bytes), LIMITS);
    let (family, mut sample) = extract(&exposition.samples);
    let gpu = extract_gpu(&exposition.samples, &mut sample);
    let over_limit = exposition.over_limit;
    match family {
        Some(_) => Ok(Answer {
            family,
            sample,
            over_limit,
        }),
        None if gpu => Ok(Answer {
            family: None,
            sample,
            over_limit,
        }),
        None => Err((
            format!(
                "GET {shown}: no vLLM, SGLang, TGI, llama.cpp or DCGM metric in the answer ({} unreadable lines of their names, {over_limit} past the scrape's limits)",
                exposition.bad_lines.len()
            ),
            over_limit,
        )),
    }
}

/// The scraper thread: a first sample (then `first` hears), one every `interval` until `stop`,
/// a last one, and the series handed to `done`.
fn scrape_thread(
    mut series: Series,
    stop: CancellationToken,
    first: oneshot::Sender<()>,
    done: oneshot::Sender<Series>,
) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            series.fail(format!("cannot start the scraper's runtime: {e}"));
            let _ = done.send(series);
            return;
        }
    };
    runtime.block_on(async move {
        // reqwest's client belongs to the runtime it first runs on: built here.
        series.http = reqwest::Client::builder()
            .no_proxy()
            .timeout(SCRAPE_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .tls_danger_accept_invalid_certs(series.spec.insecure)
            .build()
            .ok();
        series.scrape().await;
        let _ = first.send(());
        let interval = series.spec.interval.max(Duration::from_millis(1));
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                _ = ticker.tick() => {}
            }
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                () = series.scrape() => {}
            }
        }
        // The last sample, so counters cover the whole load.
        series.scrape().await;
        let _ = done.send(series);
    });
}

impl Scraper {
    /// Starts the scraper's thread and waits for its first sample (so it comes before any
    /// measured request); it then takes one every `spec.interval` until [`Scraper::finish`].
    pub async fn start(spec: ScrapeSpec, clock: Clock) -> Scraper {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (url, interval) = (redact_url(&spec.url), spec.interval);
        let series = Series {
            spec,
            http: None,
            clock,
            server: None,
            samples: Vec::new(),
            failures: 0,
            errors: Vec::new(),
            over_limit: 0,
        };
        let stop = CancellationToken::new();
        let (first_tx, first_rx) = oneshot::channel();
        let (done_tx, done) = oneshot::channel();
        let token = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("servebench-scrape".into())
            .spawn(move || scrape_thread(series, token, first_tx, done_tx));
        if spawned.is_ok() {
            // An error here means the thread ended early: `finish` says so.
            let _ = first_rx.await;
        }
        Scraper {
            stop,
            done,
            url,
            interval,
        }
    }

    /// Stops sampling, lets the scraper take a last sample (so counters cover the whole load),
    /// and returns the series with its summary.
    pub async fn finish(self) -> ServerMetrics {
        self.stop.cancel();
        match self.done.await {
            Ok(series) => series.metrics(),
            // The thread could not start, or ended without its series: no sample, one failure.
            Err(_) => ServerMetrics {
                summary: summarize_server_metrics(&[]),
                url: self.url,
                interval_s: self.interval.as_secs_f64(),
                server: None,
                samples: Vec::new(),
                failures: 1,
                errors: vec!["the scraper's thread stopped without its samples".into()],
                over_limit: 0,
            },
        }
    }
}
