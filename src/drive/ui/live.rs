//! What a run in progress shares with its displays: lock-free counters the run updates
//! (`drive::load` sets `planned`, `drive::talk` bumps `sent` as each request's first byte is
//! written, the record writer, `drive::records`, calls [`Live::record`] as each one ends) and
//! windows of the recent requests' figures. The progress line and the dashboard only read
//! them.
//!
//! Each driver thread of a run (`--client-threads`, `drive::lanes`) counts into a lane of its
//! own ([`Live::lane`]), so no thread writes a counter another writes; the readers
//! ([`Live::done`], [`Live::recent`], ...) sum the lanes.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use crate::measure::record::RequestRecord;
use crate::results::stats::{itl_gaps_ns, percentile, RequestMetrics};

/// How many recent TTFTs the running median is taken over.
const TTFT_WINDOW: usize = 512;

/// How many recent ITL gaps and schedule lags the dashboard's percentiles are taken over.
const GAP_WINDOW: usize = 4096;

/// Counters of a run in progress.
#[derive(Debug, Default)]
pub struct Live {
    /// Measured requests whose first byte was written (or that ended before it was).
    pub sent: AtomicU64,
    /// The requests a count-bounded run planned (every turn of its conversations), set when
    /// its load starts; 0 until then and for a time-bounded run.
    pub planned: AtomicU64,
    pub done: AtomicU64,
    pub failed: AtomicU64,
    pub output_tokens: AtomicU64,
    /// Windows over the recent requests (one lock per finished request).
    recent: Mutex<Recent>,
    /// When the measured load's schedule started (after warm-ups).
    pub measuring_since: std::sync::OnceLock<std::time::Instant>,
    /// The driver threads' own counters, summed by the readers.
    lanes: Mutex<Vec<std::sync::Arc<Live>>>,
}

/// Recent TTFTs, ITL gaps and schedule lags (ms), and the failures by kind.
#[derive(Debug, Default)]
struct Recent {
    ttfts_ms: VecDeque<f64>,
    itls_ms: VecDeque<f64>,
    lags_ms: VecDeque<f64>,
    failures: std::collections::BTreeMap<&'static str, u64>,
}

impl Recent {
    /// Adds `other`'s windows and failure counts to these.
    fn extend(&mut self, other: &Recent) {
        self.ttfts_ms.extend(&other.ttfts_ms);
        self.itls_ms.extend(&other.itls_ms);
        self.lags_ms.extend(&other.lags_ms);
        for (k, n) in &other.failures {
            *self.failures.entry(k).or_insert(0) += n;
        }
    }
}

/// Appends `v` to a window of at most `cap` values.
fn push_window(w: &mut VecDeque<f64>, cap: usize, v: f64) {
    if w.len() == cap {
        w.pop_front();
    }
    w.push_back(v);
}

/// p50 and p99 of a window.
fn p50_p99(w: &VecDeque<f64>) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = w.iter().copied().collect();
    v.sort_unstable_by(f64::total_cmp);
    Some((percentile(&v, 50.0)?, percentile(&v, 99.0)?))
}

/// What the dashboard shows of the recent requests.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecentFigures {
    pub ttft_ms: Option<(f64, f64)>,
    pub itl_ms: Option<(f64, f64)>,
    pub schedule_lag_ms: Option<(f64, f64)>,
    pub failures: Vec<(&'static str, u64)>,
}

impl Live {
    /// A new lane of these counters for one driver thread: it counts there, and every reader
    /// of `self` sums it in.
    pub fn lane(&self) -> std::sync::Arc<Live> {
        let lane = std::sync::Arc::<Live>::default();
        if let Ok(mut lanes) = self.lanes.lock() {
            lanes.push(lane.clone());
        }
        lane
    }

    /// `f` of these counters and of every lane's, summed.
    fn sum(&self, f: impl Fn(&Live) -> &AtomicU64) -> u64 {
        let lanes = self.lanes.lock().map(|l| l.clone()).unwrap_or_default();
        (lanes.iter().map(|l| f(l).load(Relaxed))).fold(f(self).load(Relaxed), u64::saturating_add)
    }

    /// Measured requests whose first byte was written (or that ended before), every lane's.
    pub fn sent(&self) -> u64 {
        self.sum(|l| &l.sent)
    }

    /// Measured requests that ended, every lane's.
    pub fn done(&self) -> u64 {
        self.sum(|l| &l.done)
    }

    /// Measured requests that failed, every lane's.
    pub fn failed(&self) -> u64 {
        self.sum(|l| &l.failed)
    }

    /// Output tokens of the measured requests, every lane's.
    pub fn output_tokens(&self) -> u64 {
        self.sum(|l| &l.output_tokens)
    }

    /// The requests planned, every lane's (0 until known).
    pub fn planned(&self) -> u64 {
        self.sum(|l| &l.planned)
    }

    /// The recent windows of these counters and every lane's, side by side.
    fn windows(&self) -> Recent {
        let mut all = Recent::default();
        let lanes = self.lanes.lock().map(|l| l.clone()).unwrap_or_default();
        if let Ok(r) = self.recent.lock() {
            all.extend(&r);
        }
        for lane in lanes {
            all.extend(&lane.windows());
        }
        all
    }

    /// Counts a finished measured request.
    pub fn record(&self, r: &RequestRecord) {
        if r.warmup {
            return;
        }
        self.done.fetch_add(1, Relaxed);
        let metrics = RequestMetrics::of(r);
        match &metrics {
            Some(m) => self.output_tokens.fetch_add(m.output_tokens, Relaxed),
            None => self.failed.fetch_add(1, Relaxed),
        };
        let Ok(mut recent) = self.recent.lock() else {
            return;
        };
        let lag = r.began_ns().saturating_sub(r.scheduled_ns) as f64 / 1e6;
        push_window(&mut recent.lags_ms, GAP_WINDOW, lag);
        match metrics {
            Some(m) => {
                push_window(&mut recent.ttfts_ms, TTFT_WINDOW, m.ttft_ns as f64 / 1e6);
                for g in itl_gaps_ns(r) {
                    push_window(&mut recent.itls_ms, GAP_WINDOW, g as f64 / 1e6);
                }
            }
            None => {
                let kind = r.outcome.failure_kind().map_or("no_output", |k| k.as_str());
                *recent.failures.entry(kind).or_insert(0) += 1;
            }
        }
    }

    /// p50/p99 of the recent TTFTs, ITL gaps and schedule lags, and the failures by kind. The
    /// times are the client's (real) ms.
    pub fn recent(&self) -> RecentFigures {
        let r = self.windows();
        RecentFigures {
            ttft_ms: p50_p99(&r.ttfts_ms),
            itl_ms: p50_p99(&r.itls_ms),
            schedule_lag_ms: p50_p99(&r.lags_ms),
            failures: r.failures.iter().map(|(k, n)| (*k, *n)).collect(),
        }
    }

    /// The requests the run planned once its load has started (a count-bounded run),
    /// else `fallback` (what its pool was built for).
    pub fn planned_or(&self, fallback: u64) -> u64 {
        match self.planned() {
            0 => fallback,
            planned => planned,
        }
    }

    /// Median of the recent TTFTs, ms.
    pub fn recent_ttft_p50_ms(&self) -> Option<f64> {
        let mut v: Vec<f64> = self.windows().ttfts_ms.into_iter().collect();
        v.sort_unstable_by(f64::total_cmp);
        percentile(&v, 50.0)
    }

    /// The progress line: done of `total` (or of the planned requests, once known), failed,
    /// sent (first byte written), in flight (sent − done), rates and the running TTFT.
    pub(super) fn line(&self, total: u64, elapsed: Duration) -> String {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let total = self.planned_or(total);
        // Done first: every request done was counted sent before, so in flight is never < 0.
        let (done, sent) = (self.done(), self.sent());
        let ttft = self
            .recent_ttft_p50_ms()
            .map_or_else(|| "-".to_string(), |t| format!("{t:.1} ms"));
        format!(
            "{done}/{total} done ({} failed), {sent} sent, {} in flight, {:.0} tok/s, p50 TTFT {ttft}",
            self.failed(),
            sent.saturating_sub(done),
            self.output_tokens() as f64 / secs,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::{FailureKind, Outcome};

    #[test]
    fn counts_and_running_median() {
        let live = Live::default();
        for (i, ttft_ms) in [10u64, 30, 20].into_iter().enumerate() {
            live.record(&RequestRecord {
                id: i as u64,
                chunk_ns: vec![ttft_ms * 1_000_000],
                output_tokens: Some(5),
                ..RequestRecord::default()
            });
        }
        live.record(&RequestRecord {
            outcome: Outcome::failed(FailureKind::Timeout, "t"),
            ..RequestRecord::default()
        });
        live.record(&RequestRecord {
            warmup: true,
            chunk_ns: vec![1],
            ..RequestRecord::default()
        });
        assert_eq!(live.done.load(Relaxed), 4);
        assert_eq!(live.failed.load(Relaxed), 1);
        assert_eq!(live.output_tokens.load(Relaxed), 15);
        assert_eq!(live.recent_ttft_p50_ms(), Some(20.0));
    }

    /// Each driver thread counts in its own lane; the readers sum them.
    #[test]
    fn lanes_are_summed_by_the_readers() {
        let live = Live::default();
        let (a, b) = (live.lane(), live.lane());
        a.sent.fetch_add(2, Relaxed);
        b.sent.fetch_add(3, Relaxed);
        b.planned.store(7, Relaxed);
        for (lane, ttft_ms) in [(&a, 10u64), (&b, 30), (&b, 20)] {
            lane.record(&RequestRecord {
                chunk_ns: vec![ttft_ms * 1_000_000],
                output_tokens: Some(4),
                ..RequestRecord::default()
            });
        }
        b.record(&RequestRecord {
            outcome: Outcome::failed(FailureKind::Timeout, "t"),
            ..RequestRecord::default()
        });
        assert_eq!((live.sent(), live.done(), live.failed()), (5, 4, 1));
        assert_eq!((live.output_tokens(), live.planned()), (12, 7));
        assert_eq!(live.recent_ttft_p50_ms(), Some(20.0));
        assert_eq!(live.recent().failures, vec![("timeout", 1)]);
    }
}
