//! The replica count during the measured load (`--replicas-metric URL QUERY`): Prometheus'
//! HTTP query API, `GET URL/api/v1/query?query=QUERY`, polled on a thread and runtime of its
//! own (as the scraper, `scrape.rs`) every interval of server time, each answer stamped with
//! the run's clock. The value read is the first series' `value[1]`; an answer is read up to
//! [`ANSWER_MAX`] bytes, and a value is believed only when it is a finite number from 0 to
//! `MAX_REPLICAS`. The first poll is made before the load starts: a query that answers no
//! series (or fails) refuses the run in one line. A later failure is a gap in the series
//! (`ReplicaSample::replicas` absent), counted with its message, never a value made up.
//! A `--replicas-file` needs none of this: its points are the series.

use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::config::autoscale::{ReplicaSource, MAX_REPLICAS};
use crate::config::RunConfig;
use crate::measure::client::read_at_most;
use crate::measure::clock::Clock;
use crate::measure::error::describe;
use crate::results::autoscale::{
    compute, AutoscaleInputs, ReplicaSample, ReplicaSeries, MAX_REPLICA_SAMPLES,
};
use crate::results::document::BenchResult;

/// The most bytes of one answer read; a longer one is a failed poll.
pub const ANSWER_MAX: usize = 1 << 20;
/// At most this long for one poll.
const POLL_TIMEOUT: Duration = Duration::from_secs(5);
/// Distinct failure messages kept.
const MAX_ERRORS_KEPT: usize = 5;

/// Why the replica count cannot be read at the start of a run.
#[derive(Debug, thiserror::Error)]
#[error("--replicas-metric: {0}")]
pub struct ReplicasError(pub String);

/// The replica count of one answer's JSON: `data.result[0].value[1]`, plausible; the error
/// says what was wrong, `no_series` when the answer held no series.
pub fn read_answer(body: &[u8]) -> Result<f64, (bool, String)> {
    let v: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| (false, format!("the answer is not JSON: {e}")))?;
    if v.get("status").and_then(|s| s.as_str()) != Some("success") {
        let why = v
            .get("error")
            .and_then(|e| e.as_str())
            .unwrap_or("no \"status\": \"success\"");
        let why: String = why.chars().take(200).collect();
        return Err((false, format!("the query failed: {why}")));
    }
    let result = v.pointer("/data/result").and_then(|r| r.as_array());
    let Some(first) = result.and_then(|r| r.first()) else {
        return Err((true, "the query answers no series".into()));
    };
    let value = first.pointer("/value/1");
    let text = value.and_then(|x| x.as_str()).map(str::to_string);
    let number = text
        .as_deref()
        .and_then(|t| t.trim().parse::<f64>().ok())
        .or_else(|| value.and_then(serde_json::Value::as_f64));
    match number {
        Some(r) if r.is_finite() && (0.0..=MAX_REPLICAS).contains(&r) => Ok(r),
        Some(r) => Err((
            false,
            format!("{r} replicas is not a count from 0 to {MAX_REPLICAS}"),
        )),
        None => Err((false, "the first series has no numeric value[1]".into())),
    }
}

struct Poll {
    http: reqwest::Client,
    url: String,
    query: String,
}

impl Poll {
    async fn once(&self) -> Result<f64, (bool, String)> {
        let mut url = reqwest::Url::parse(&format!("{}/api/v1/query", self.url))
            .map_err(|e| (false, format!("not a URL: {e}")))?;
        url.query_pairs_mut().append_pair("query", &self.query);
        let response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| (false, describe(&e.without_url())))?;
        let status = response.status();
        if !status.is_success() {
            return Err((false, format!("HTTP {status}")));
        }
        let (bytes, over) = read_at_most(response, ANSWER_MAX)
            .await
            .map_err(|e| (false, describe(&e.without_url())))?;
        if over {
            return Err((false, format!("the answer is over {ANSWER_MAX} bytes")));
        }
        read_answer(&bytes)
    }
}

/// Polls the replica count in the background; see the module doc.
pub struct ReplicaPoller {
    stop: CancellationToken,
    done: oneshot::Receiver<Gather>,
    source: String,
    time_scale: f64,
}

/// The series being gathered: each reading with its clock time (made seconds from the
/// load's start by [`ReplicaPoller::finish`]).
struct Gather {
    series: ReplicaSeries,
    clock: Clock,
    raw: Vec<(u64, Option<f64>)>,
}

impl Gather {
    fn push(&mut self, at_ns: u64, answer: Result<f64, (bool, String)>) {
        let replicas = match answer {
            Ok(r) => Some(r),
            Err((_, e)) => {
                self.series.failures += 1;
                if self.series.errors.len() < MAX_ERRORS_KEPT && !self.series.errors.contains(&e) {
                    self.series.errors.push(e);
                }
                None
            }
        };
        if self.raw.len() >= MAX_REPLICA_SAMPLES {
            self.series.dropped += 1;
            return;
        }
        self.raw.push((at_ns, replicas));
    }
}

impl ReplicaPoller {
    /// The series of a `--replicas-file` (nothing to poll), or `None` for a metric.
    pub fn from_file(source: &ReplicaSource, name: &str) -> Option<ReplicaSeries> {
        let ReplicaSource::File { points } = source else {
            return None;
        };
        let samples = points.iter().map(|p| ReplicaSample {
            at_s: p[0],
            replicas: Some(p[1]),
        });
        Some(ReplicaSeries {
            source: format!("file {name}"),
            samples: samples.collect(),
            ..ReplicaSeries::default()
        })
    }

    /// Makes the first poll (refusing a query with no series, or one that fails), then polls
    /// every `interval_s` of server time (`time_scale` faster in real time) on a thread of
    /// its own until [`ReplicaPoller::finish`].
    pub async fn start(
        (url, query): (&str, &str),
        interval_s: f64,
        time_scale: f64,
        clock: Clock,
    ) -> Result<ReplicaPoller, ReplicasError> {
        let source = format!("prometheus {url} {query}");
        let interval = Duration::try_from_secs_f64(interval_s / time_scale.max(1e-9))
            .unwrap_or(Duration::from_secs(1))
            .max(Duration::from_millis(1));
        let (first_tx, first_rx) = oneshot::channel();
        let (done_tx, done) = oneshot::channel();
        let stop = CancellationToken::new();
        let gather = Gather {
            series: ReplicaSeries {
                source: source.clone(),
                interval_s: Some(interval_s),
                ..ReplicaSeries::default()
            },
            clock,
            raw: Vec::new(),
        };
        let (url, query, token) = (url.to_string(), query.to_string(), stop.clone());
        let spawned = std::thread::Builder::new()
            .name("servebench-replicas".into())
            .spawn(move || poll_thread(gather, (url, query), interval, token, first_tx, done_tx));
        if spawned.is_err() {
            return Err(ReplicasError("cannot start the polling thread".into()));
        }
        match first_rx.await {
            Ok(Ok(_)) => Ok(ReplicaPoller {
                stop,
                done,
                source,
                time_scale,
            }),
            Ok(Err((_, why))) => Err(ReplicasError(format!("{url_q}: {why}", url_q = source))),
            Err(_) => Err(ReplicasError("the polling thread stopped".into())),
        }
    }

    /// Stops polling (after one last reading) and returns the series, its readings stamped
    /// in server seconds from `start_ns`, the load's start (a reading before it at 0).
    pub async fn finish(mut self, start_ns: u64) -> ReplicaSeries {
        self.stop.cancel();
        let done = std::mem::replace(&mut self.done, oneshot::channel().1);
        let Ok(gather) = done.await else {
            return ReplicaSeries {
                source: self.source.clone(),
                failures: 1,
                errors: vec!["the polling thread stopped without its readings".into()],
                ..ReplicaSeries::default()
            };
        };
        let k = self.time_scale;
        let mut series = gather.series;
        series.samples = (gather.raw.into_iter())
            .map(|(at_ns, replicas)| ReplicaSample {
                at_s: at_ns.saturating_sub(start_ns) as f64 / 1e9 * k,
                replicas,
            })
            .collect();
        series
    }
}

impl Drop for ReplicaPoller {
    /// A run that ends on an error stops the polling too.
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The replica count of a run: polled, or given by a file.
pub enum Replicas {
    Polled(ReplicaPoller),
    Given(ReplicaSeries),
}

/// Starts what `cfg` asks for the replica count (nothing without `--replicas-*`): before
/// the measured load, so that a query with no series refuses the run before any file.
pub async fn begin(cfg: &RunConfig, clock: Clock) -> Result<Option<Replicas>, ReplicasError> {
    let source = cfg.autoscale.as_ref().and_then(|a| a.replicas.as_ref());
    Ok(match source {
        None => None,
        Some(ReplicaSource::Metric {
            url,
            query,
            interval_s,
        }) => {
            let poller = ReplicaPoller::start((url, query), *interval_s, cfg.time_scale, clock);
            Some(Replicas::Polled(poller.await?))
        }
        Some(file) => ReplicaPoller::from_file(file, "--replicas-file").map(Replicas::Given),
    })
}

/// The series, once the measured load (which started at `start_ns`) is over.
pub async fn end(replicas: Option<Replicas>, start_ns: u64) -> Option<ReplicaSeries> {
    match replicas? {
        Replicas::Polled(p) => Some(p.finish(start_ns).await),
        Replicas::Given(series) => Some(series),
    }
}

/// Sets `result.autoscale` from its slices, its load shape and `series`, when the run is an
/// autoscaler benchmark.
pub fn attach(result: &mut BenchResult, series: Option<ReplicaSeries>) {
    let Some(spec) = &result.config.autoscale else {
        return;
    };
    let figures = compute(AutoscaleInputs {
        spec,
        curve: result.config.load.shape.curve.as_ref(),
        slices: result.slices.as_ref(),
        series,
        span_s: result.summary.duration_s,
        window_s: result.config.load.shape.window_s(),
    });
    result.autoscale = Some(figures);
}

impl Poll {
    fn build(url: String, query: String) -> Option<Poll> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(POLL_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .ok()?;
        Some(Poll { http, url, query })
    }
}

/// The polling thread: the first reading (then `first` hears how it went: a failure ends
/// the thread), one every `interval` until `stop`, a last one, and the series to `done`.
fn poll_thread(
    mut gather: Gather,
    (url, query): (String, String),
    interval: Duration,
    stop: CancellationToken,
    first: oneshot::Sender<Result<f64, (bool, String)>>,
    done: oneshot::Sender<Gather>,
) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let Ok(runtime) = runtime else {
        let _ = first.send(Err((false, "cannot start the polling runtime".into())));
        return;
    };
    runtime.block_on(async move {
        // reqwest's client belongs to the runtime it first runs on: built here.
        let Some(poll) = Poll::build(url, query) else {
            let _ = first.send(Err((false, "cannot build an HTTP client".into())));
            return;
        };
        let answer = poll.once().await;
        let at_ns = gather.clock.now_ns();
        if let Err(e) = &answer {
            let _ = first.send(Err(e.clone()));
            return;
        }
        gather.push(at_ns, answer.clone());
        let _ = first.send(answer);
        let t0 = tokio::time::Instant::now();
        let mut ticker = tokio::time::interval_at(t0 + interval, interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                _ = ticker.tick() => {}
            }
            let at_ns = gather.clock.now_ns();
            let answer = poll.once().await;
            gather.push(at_ns, answer);
        }
        let at_ns = gather.clock.now_ns();
        let answer = poll.once().await;
        gather.push(at_ns, answer);
        let _ = done.send(gather);
    });
}

#[cfg(test)]
mod tests {
    use super::read_answer;

    #[test]
    fn an_answer_is_believed_only_when_plausible() {
        let ok = br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1.5,"3"]}]}}"#;
        assert_eq!(read_answer(ok), Ok(3.0));
        let none = br#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        assert!(matches!(read_answer(none), Err((true, _))));
        for bad in [
            &br#"{"status":"success","data":{"result":[{"value":[1,"NaN"]}]}}"#[..],
            br#"{"status":"success","data":{"result":[{"value":[1,"-1"]}]}}"#,
            br#"{"status":"success","data":{"result":[{"value":[1,"20000"]}]}}"#,
            br#"{"status":"error","error":"bad query"}"#,
            b"not json",
        ] {
            let e = read_answer(bad).unwrap_err();
            assert!(!e.0 && !e.1.contains('\n'), "{e:?}");
        }
    }
}
