//! The threads that check structured answers, off the threads that read streams: a request
//! whose answer is to be checked hands its [`Checker`] to one of [`CHECK_THREADS`] checker
//! threads (started once per process, on first use) and awaits the verdict ([`judged`]),
//! which its record holds before it is handed over, so records stay whole and counts exact.
//! While it waits, the thread that read the stream reads every other stream and hears every
//! signal: a hostile answer costs a checker thread at most its work budget
//! (`output_check.rs`), never the measurement.
//!
//! A check waits in the queue at most [`MAX_CHECK_WAIT`] before it starts; past that it is
//! `unchecked` (`over_budget`), so answers that each cost their whole budget cannot pile up
//! behind one another for minutes. When the run stops (its cancellation) the waiting request
//! takes `unchecked` at once and the check, if running, stops at its next look.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::output_check::{Checker, OutputCheck};
use super::workers::{Priority, Workers};

/// The checker threads of the process.
pub const CHECK_THREADS: usize = 2;

/// The longest a check may wait for a checker thread before it is `unchecked`.
pub const MAX_CHECK_WAIT: Duration = Duration::from_secs(10);

/// One answer to check, and where its verdict goes.
struct Job {
    checker: Checker,
    queued: Instant,
    /// Set when the request no longer waits (the run stopped): the check is skipped, or ends
    /// at its next look.
    stop: Arc<AtomicBool>,
    reply: oneshot::Sender<OutputCheck>,
}

/// The checker threads, started on first use; `None` when no thread could be started (the
/// check then runs where it is asked, as before: the only way left to a verdict).
fn pool() -> Option<&'static Workers<Job>> {
    static POOL: OnceLock<Option<Workers<Job>>> = OnceLock::new();
    POOL.get_or_init(|| Workers::start("servebench-check", CHECK_THREADS, Priority::Normal, check))
        .as_ref()
}

/// A checker thread's work on one job.
fn check(job: Job) {
    if job.stop.load(Ordering::Relaxed) {
        return;
    }
    let Job {
        checker,
        queued,
        stop,
        reply,
    } = job;
    let waited = queued.elapsed();
    let verdict = if waited > MAX_CHECK_WAIT {
        let why = format!(
            "over the check's budget: waited {:.1} s for a checker thread (at most {} s)",
            waited.as_secs_f64(),
            MAX_CHECK_WAIT.as_secs()
        );
        checker.unchecked(&why, true)
    } else {
        // A check that panics is a failed check, and the thread lives on.
        let failed = checker.unchecked("the check failed", false);
        catch_unwind(AssertUnwindSafe(|| checker.finish_unless(&stop))).unwrap_or(failed)
    };
    let _ = reply.send(verdict);
}

/// The verdict on `checker`'s answer, from a checker thread; `unchecked` at once when
/// `cancel` fires first (the run stopped).
pub async fn judged(checker: Checker, cancel: &CancellationToken) -> OutputCheck {
    let Some(pool) = pool() else {
        return checker.finish();
    };
    let stopped = checker.unchecked("the run stopped before the check ended", false);
    let lost = checker.unchecked("the check failed", false);
    let stop = Arc::new(AtomicBool::new(false));
    let (reply, verdict) = oneshot::channel();
    let job = Job {
        checker,
        queued: Instant::now(),
        stop: Arc::clone(&stop),
        reply,
    };
    if let Err(job) = pool.send(job) {
        return job.checker.finish();
    }
    // Dropped unfinished (the request's task ended), the check is not wanted either.
    let _unwanted = SetOnDrop(Arc::clone(&stop));
    tokio::select! {
        biased;
        v = verdict => v.unwrap_or(lost),
        () = cancel.cancelled() => stopped,
    }
}

/// Sets its flag when dropped.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
