//! Batched wake-ups: fewer, fuller `epoll_wait` returns when streamed events come fast.
//!
//! A chunk that arrives alone wakes the client's runtime: a wake-up and an `epoll_wait` for
//! that one event. Since chunk timestamps are the kernel's receive stamps ([`crate::rxtime`]),
//! they no longer depend on when the runtime gets round to a socket, so the runtime may wait a
//! little before it parks and then find many sockets ready at once.
//!
//! The wait is adaptive: a worker about to park waits `window` first only when its previous
//! park ended sooner than `window` after it began, i.e. when events come more often than once
//! per window. At one stream, or at any load where the runtime idles longer than the window
//! between events, it parks at once, exactly as without batching.
//!
//! What the wait delays is work, never a measured time on `http://`: a request of
//! `--request-rate`'s schedule, or the next one `--max-concurrency` lets in, can leave up to
//! `window` late, which the run's schedule lag (`crate::monitor`) reports; `sent_ns` is taken
//! when the request is really written, so TTFT and E2EL are not shifted by it. On `https://`
//! chunk times are read times, which the wait would delay, so `main` refuses the option there.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The default window, µs (`servebench run --wake-batch-us`): off. On the 2-core VM measured
/// (docs/performance.md, "Client CPU per streamed event") a 500 µs window cut `epoll_wait`
/// calls per event from 0.5-0.8 to 0.25 and context switches by 40 %, but the client's CPU per
/// event stayed within the run-to-run noise (12-15 µs): the kernel's cost there is in the reads
/// and TCP, not the wake-ups. So by default nothing is delayed; the option is for hosts where
/// wake-ups are the larger cost.
pub const DEFAULT_WINDOW_US: u64 = 0;

thread_local! {
    /// When this worker last began to park, and when it last woke.
    static PARKED: Cell<Option<Instant>> = const { Cell::new(None) };
    static WOKE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Installs the adaptive wait on `builder`'s worker threads; a zero window installs nothing.
pub fn batch_wakes(builder: &mut tokio::runtime::Builder, window: Duration) {
    if window.is_zero() {
        return;
    }
    builder
        .on_thread_park(move || {
            if should_wait(PARKED.get(), WOKE.get(), window) {
                std::thread::sleep(window);
            }
            PARKED.set(Some(Instant::now()));
        })
        .on_thread_unpark(|| WOKE.set(Some(Instant::now())));
}

/// True when the previous park (from `parked` to `woke`) lasted less than `window`.
fn should_wait(parked: Option<Instant>, woke: Option<Instant>, window: Duration) -> bool {
    match (parked, woke) {
        (Some(p), Some(w)) => w >= p && w - p < window,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_only_after_a_short_park() {
        let w = Duration::from_micros(500);
        let p = Instant::now();
        assert!(should_wait(
            Some(p),
            Some(p + Duration::from_micros(100)),
            w
        ));
        assert!(!should_wait(
            Some(p),
            Some(p + Duration::from_millis(10)),
            w
        ));
        assert!(!should_wait(Some(p), Some(p + w), w));
        // First park, or a park whose wake-up has not been seen: no wait.
        assert!(!should_wait(None, None, w));
        assert!(!should_wait(Some(p + Duration::from_millis(1)), Some(p), w));
    }

    /// With batching on, a runtime still runs timers and I/O (and a lone event does not wait).
    #[test]
    fn a_batched_runtime_still_works() {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(1).enable_all();
        batch_wakes(&mut b, Duration::from_micros(500));
        let rt = b.build().unwrap();
        rt.block_on(async {
            let h = tokio::spawn(async {
                for _ in 0..20 {
                    tokio::time::sleep(Duration::from_micros(100)).await;
                }
                7
            });
            assert_eq!(h.await.unwrap(), 7);
        });
    }
}
