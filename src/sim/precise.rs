//! Sub-millisecond sleeps for the simulator's schedule.
//!
//! tokio's timer has millisecond granularity (deadlines round up to the next tick, and the
//! driver parks with a millisecond timeout), so a chunk scheduled with `tokio::time::sleep_until`
//! leaves 0–2 ms late. As ground truth the simulator must do better. [`sleep_until`] sleeps on
//! tokio's timer until shortly before the deadline, then hands the last stretch to one timer
//! thread that waits on a condition variable (futex, ~50 µs slack) and wakes the task.
//!
//! Used by streams driven as async bodies (engine mode, `router()` users) and non-streamed
//! answers; exact-mode streams under `http1.rs` are timed by the scheduler threads
//! (`sched.rs`) instead. Only used when `SimConfig::precise_timing` is on: the precise phase reads the real clock, so
//! tests that pause tokio's clock turn it off.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Condvar, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// How long before the deadline tokio's timer hands over to the precise thread.
const COARSE_MARGIN: Duration = Duration::from_millis(3);

struct Entry {
    at: Instant,
    seq: u64,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

#[derive(Default)]
struct Timer {
    heap: Mutex<(BinaryHeap<Reverse<Entry>>, u64)>,
    cv: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let t: &'static Timer = Box::leak(Box::default());
        let spawned = std::thread::Builder::new()
            .name("sim-precise-timer".into())
            .spawn(move || run(t));
        if spawned.is_err() {
            // Without the thread every precise sleep would hang: the caller falls back.
            return Box::leak(Box::new(Timer {
                heap: Mutex::new((BinaryHeap::new(), u64::MAX)),
                cv: Condvar::new(),
            }));
        }
        t
    })
}

fn run(t: &Timer) {
    let mut due = Vec::new();
    let Ok(mut guard) = t.heap.lock() else { return };
    loop {
        let now = Instant::now();
        while guard.0.peek().is_some_and(|Reverse(e)| e.at <= now) {
            if let Some(Reverse(e)) = guard.0.pop() {
                due.push(e.waker);
            }
        }
        if !due.is_empty() {
            drop(guard);
            due.drain(..).for_each(Waker::wake);
            guard = match t.heap.lock() {
                Ok(g) => g,
                Err(_) => return,
            };
            continue;
        }
        let wait = guard
            .0
            .peek()
            .map(|Reverse(e)| e.at.saturating_duration_since(now));
        guard = match wait {
            Some(d) => match t.cv.wait_timeout(guard, d) {
                Ok((g, _)) => g,
                Err(_) => return,
            },
            None => match t.cv.wait(guard) {
                Ok(g) => g,
                Err(_) => return,
            },
        };
    }
}

struct PreciseSleep {
    at: Instant,
}

impl Future for PreciseSleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.at {
            return Poll::Ready(());
        }
        let t = timer();
        let Ok(mut guard) = t.heap.lock() else {
            return Poll::Ready(());
        };
        if guard.1 == u64::MAX {
            return Poll::Ready(()); // no timer thread: do not hang
        }
        guard.1 += 1;
        let seq = guard.1;
        let earliest = guard.0.peek().is_none_or(|Reverse(e)| self.at < e.at);
        guard.0.push(Reverse(Entry {
            at: self.at,
            seq,
            waker: cx.waker().clone(),
        }));
        drop(guard);
        if earliest {
            t.cv.notify_one();
        }
        Poll::Pending
    }
}

/// Sleeps until `deadline` with sub-millisecond precision.
pub(crate) async fn sleep_until(deadline: tokio::time::Instant) {
    let coarse = deadline.checked_sub(COARSE_MARGIN);
    if let Some(c) = coarse.filter(|c| *c > tokio::time::Instant::now()) {
        tokio::time::sleep_until(c).await;
    }
    PreciseSleep {
        at: deadline.into_std(),
    }
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wakes_close_to_the_deadline() {
        let mut worst = Duration::ZERO;
        for i in 0..20u64 {
            let deadline = tokio::time::Instant::now() + Duration::from_micros(4_000 + 137 * i);
            sleep_until(deadline).await;
            let now = tokio::time::Instant::now();
            assert!(now >= deadline, "never early");
            worst = worst.max(now - deadline);
        }
        // Lateness is reported, not asserted: a shared machine can always delay a thread.
        eprintln!("worst lateness over 20 sleeps: {worst:?}");
    }
}
