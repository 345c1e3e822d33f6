//! Live progress of a run: counters the run updates, and a renderer that shows them.
//!
//! [`Live`] holds lock-free counters (sent, done, failed, output tokens) and a window of recent
//! TTFTs; `load` bumps `sent`, the record writer calls [`Live::record`]. [`Progress`] renders
//! them: an indicatif bar on a terminal, a plain line every few seconds otherwise, nothing
//! when quiet. It only reads the counters, so it cannot change what is measured.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::measure::record::RequestRecord;
use crate::results::stats::{percentile, RequestMetrics};

/// How many recent TTFTs the running median is taken over.
const TTFT_WINDOW: usize = 512;

/// Counters of a run in progress.
#[derive(Debug, Default)]
pub struct Live {
    pub sent: AtomicU64,
    pub done: AtomicU64,
    pub failed: AtomicU64,
    pub output_tokens: AtomicU64,
    ttfts_ms: Mutex<VecDeque<f64>>,
}

impl Live {
    /// Counts a finished measured request.
    pub fn record(&self, r: &RequestRecord) {
        if r.warmup {
            return;
        }
        self.done.fetch_add(1, Relaxed);
        match RequestMetrics::of(r) {
            Some(m) => {
                self.output_tokens.fetch_add(m.output_tokens, Relaxed);
                if let Ok(mut w) = self.ttfts_ms.lock() {
                    if w.len() == TTFT_WINDOW {
                        w.pop_front();
                    }
                    w.push_back(m.ttft_ns as f64 / 1e6);
                }
            }
            None => {
                self.failed.fetch_add(1, Relaxed);
            }
        }
    }

    /// Median of the recent TTFTs, ms.
    pub fn recent_ttft_p50_ms(&self) -> Option<f64> {
        let mut v: Vec<f64> = self.ttfts_ms.lock().ok()?.iter().copied().collect();
        v.sort_unstable_by(f64::total_cmp);
        percentile(&v, 50.0)
    }

    fn line(&self, total: u64, elapsed: Duration) -> String {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let ttft = self
            .recent_ttft_p50_ms()
            .map_or_else(|| "-".to_string(), |t| format!("{t:.1} ms"));
        format!(
            "{}/{total} done ({} failed), {} sent, {:.0} tok/s, p50 TTFT {ttft}",
            self.done.load(Relaxed),
            self.failed.load(Relaxed),
            self.sent.load(Relaxed),
            self.output_tokens.load(Relaxed) as f64 / secs,
        )
    }
}

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    Bar,
    Lines,
    Quiet,
}

impl ProgressMode {
    /// A bar on a terminal, lines otherwise, nothing when quiet.
    pub fn detect(quiet: bool) -> Self {
        if quiet {
            ProgressMode::Quiet
        } else if std::io::stderr().is_terminal() {
            ProgressMode::Bar
        } else {
            ProgressMode::Lines
        }
    }
}

/// A running renderer; stop it with [`Progress::finish`].
pub struct Progress {
    task: Option<tokio::task::JoinHandle<()>>,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// Starts rendering `live` for a run of `total` requests.
    pub fn start(live: Arc<Live>, total: u64, label: String, mode: ProgressMode) -> Progress {
        let bar = (mode == ProgressMode::Bar).then(|| {
            let bar = indicatif::ProgressBar::new(total);
            if let Ok(style) = indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(label.clone());
            bar
        });
        let task = (mode != ProgressMode::Quiet).then(|| {
            let bar = bar.clone();
            tokio::spawn(async move {
                let started = tokio::time::Instant::now();
                let every = if bar.is_some() {
                    Duration::from_millis(200)
                } else {
                    Duration::from_secs(10)
                };
                loop {
                    tokio::time::sleep(every).await;
                    let line = live.line(total, started.elapsed());
                    match &bar {
                        Some(bar) => {
                            bar.set_position(live.done.load(Relaxed));
                            bar.set_message(line);
                        }
                        None => eprintln!("servebench: {label} {line}"),
                    }
                }
            })
        });
        Progress { task, bar }
    }

    /// Stops the renderer and clears the bar.
    pub fn finish(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
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
}
