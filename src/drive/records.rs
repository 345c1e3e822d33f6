//! A run's records as they arrive, lane by lane (`lanes.rs`): the one records file every
//! lane appends to ([`RecordsFile`], one lock per finished request), and each lane's writer
//! ([`write_records`]) that feeds every record to the lane's summary, its send facts
//! ([`Sends`]), the live counters and the early-stop watch as it writes it. No record is
//! kept: memory does not grow with a run's length.
//!
//! Imports nothing of `lanes.rs`; a new per-record figure is one more call in
//! [`write_records`]'s loop (it runs once per finished request: keep it cheap).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::drive::early_stop::ErrorWatch;
use crate::drive::ui::live::Live;
use crate::measure::record::{RecordsWriter, RequestRecord};
use crate::results::error::ResultsError;
use crate::results::stats::{steady, SampleSet, Summarizer};

/// The run's one records file, appended to by every lane (one lock per record). A write that
/// fails closes it for all: the first error is kept, and the measured records that did not
/// reach the file are counted ([`RecordsFile::lost`]).
pub(super) struct RecordsFile {
    path: PathBuf,
    state: Mutex<(Option<RecordsWriter>, Option<std::io::Error>)>,
    /// Measured records (warm-ups not) the lanes had, written or not.
    measured: AtomicU64,
    /// Of them, those not in the file after a failed write (set by `finish`).
    lost: AtomicU64,
}

impl RecordsFile {
    /// Creates the file (a failure is kept, and every write after it fails).
    pub(super) fn create(path: PathBuf) -> RecordsFile {
        let state = match RecordsWriter::create(&path) {
            Ok(w) => (Some(w), None),
            Err(e) => (None, Some(e)),
        };
        RecordsFile {
            path,
            state: Mutex::new(state),
            measured: AtomicU64::new(0),
            lost: AtomicU64::new(0),
        }
    }

    /// Counts a record the run measured, whether or not it can be written.
    fn count(&self, r: &RequestRecord) {
        if !r.warmup {
            self.measured.fetch_add(1, Relaxed);
        }
    }

    /// The measured records whose line is not in the file (docs/metrics.md, "Records lost"):
    /// 0 unless a write failed; known after [`RecordsFile::finish`].
    pub(super) fn lost(&self) -> u64 {
        self.lost.load(Relaxed)
    }

    /// True when the file could not be created or written.
    pub(super) fn failed(&self) -> bool {
        self.state.lock().map(|s| s.1.is_some()).unwrap_or(true)
    }

    /// Appends `r` (and flushes when `flush`); false when the file has failed, now or before.
    fn write(&self, r: &RequestRecord, flush: bool) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        let Some(w) = state.0.as_mut() else {
            return false;
        };
        let written = w
            .write(r)
            .and_then(|()| if flush { w.flush() } else { Ok(()) });
        match written {
            Ok(()) => true,
            Err(e) => {
                *state = (None, Some(e));
                false
            }
        }
    }

    /// Flushes what is left; the first error the file met, if any. After an error, counts the
    /// measured records that are not in the file: what was given to it less the whole
    /// measured lines it holds (a failed write loses what it had buffered too, so the lines
    /// are counted, not the writes).
    pub(super) fn finish(&self) -> Option<ResultsError> {
        let mut state = self.state.lock().ok()?;
        if let Some(Err(e)) = state.0.as_mut().map(RecordsWriter::flush) {
            *state = (None, Some(e));
        }
        let source = state.1.take()?;
        state.0 = None;
        let written = crate::measure::record::read_jsonl(&self.path)
            .map(|lines| lines.filter(|r| !r.warmup).count() as u64)
            .unwrap_or(0);
        let measured = self.measured.load(Relaxed);
        self.lost.store(measured.saturating_sub(written), Relaxed);
        Some(ResultsError::Write {
            path: self.path.clone(),
            source,
        })
    }
}

/// The sends of the measured requests, gathered as their records arrive: real-time schedule
/// lag (ms), the first and last start (`began_ns`), and the first and last send (`sent_ns`,
/// the span of the steady-state series).
pub(super) struct Sends {
    pub(super) lags: SampleSet,
    pub(super) first: u64,
    pub(super) last: u64,
    pub(super) count: u64,
    sent: Option<(u64, u64)>,
}

impl Sends {
    pub(super) fn new() -> Sends {
        Sends {
            lags: SampleSet::default(),
            first: u64::MAX,
            last: 0,
            count: 0,
            sent: None,
        }
    }

    pub(super) fn add(&mut self, r: &RequestRecord) {
        if r.warmup {
            return;
        }
        self.lags
            .add(r.began_ns().saturating_sub(r.scheduled_ns) as f64 / 1e6);
        self.first = self.first.min(r.began_ns());
        self.last = self.last.max(r.began_ns());
        self.count += 1;
        self.sent = steady::span(self.sent, Some((r.sent_ns, r.sent_ns)));
    }

    pub(super) fn merge(&mut self, o: Sends) {
        self.lags.merge(o.lags);
        self.first = self.first.min(o.first);
        self.last = self.last.max(o.last);
        self.count += o.count;
        self.sent = steady::span(self.sent, o.sent);
    }

    /// The first and last send; `None` before any.
    pub(super) fn sent_span(&self) -> Option<(u64, u64)> {
        self.sent
    }
}

/// What a lane's record writer gathered.
pub(super) struct Written {
    pub(super) summary: Summarizer,
    pub(super) sends: Sends,
    /// `--max-errors` / `--max-error-rate` stopped the sends: why.
    pub(super) stopped_early: Option<String>,
}

/// What watches each finished request besides the summary: the early-stop limits
/// (`--max-errors`, `--max-error-rate`) and the SLO controller's windows (`run --adaptive`).
pub(super) type Watchers = (
    Option<Arc<Mutex<ErrorWatch>>>,
    Option<Arc<crate::drive::throttle::Throttle>>,
);

/// Appends each record of the lane (its kept warm-ups first) as one JSON line as it arrives
/// and feeds it to the lane's summary, its send facts and the early-stop watch (which cancels
/// `halt` when a limit is crossed); keeps no record (memory does not grow with the run's
/// length, up to the summary's exact samples, `stats::EXACT_SAMPLES_MAX` per metric). A write
/// that fails (a full disk) cancels `halt`, so no new request is sent; the records still
/// arriving are summarized, and the file keeps the error. Each record also goes to the
/// controller's windows (`run --adaptive`).
pub(super) async fn write_records(
    mut rx: mpsc::UnboundedReceiver<RequestRecord>,
    warmups: Vec<RequestRecord>,
    file: Arc<RecordsFile>,
    live: Arc<Live>,
    mut summary: Summarizer,
    halt: CancellationToken,
    (watch, throttle): Watchers,
) -> Written {
    let mut sends = Sends::new();
    let mut stopped_early = None;
    let mut writing = !file.failed();
    if !writing {
        halt.cancel();
    }
    let mut pending = warmups.into_iter();
    loop {
        let r = match pending.next() {
            Some(r) => r,
            None => match rx.recv().await {
                Some(r) => {
                    live.record(&r);
                    r
                }
                None => break,
            },
        };
        file.count(&r);
        // Flushed whenever no other record of this lane is waiting.
        if writing && !file.write(&r, rx.is_empty()) {
            halt.cancel();
            writing = false;
        }
        summary.add(&r);
        sends.add(&r);
        if let Some(t) = &throttle {
            t.observe(&r);
        }
        let crossed = watch
            .as_ref()
            .and_then(|w| w.lock().ok().and_then(|mut w| w.add(&r)));
        if let Some(why) = crossed {
            stopped_early.get_or_insert(why);
            halt.cancel();
        }
    }
    Written {
        summary,
        sends,
        stopped_early,
    }
}
