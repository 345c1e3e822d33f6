//! A stream's task state brought into the cache before it is polled.
//!
//! At thousands of streams a stream's task is cold each time its socket wakes it, and its poll
//! walks the nested `async` states (the conversation, the request, the exchange, the read), each
//! at its own offset in a future of several KiB: one cache miss after another, each waiting for
//! the last. [`Warm`] asks for every line of its future at once before polling it, so the misses
//! overlap (docs/performance.md, "A stream's task state prefetched before each poll").

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// `F`, its state prefetched at every poll.
pub(super) struct Warm<F>(pub(super) F);

impl<F: Future> Future for Warm<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: the one field is pinned with `Warm` (structural pinning): `Warm` has no `Drop`,
        // is `Unpin` only when `F` is, and never moves `F` out.
        let fut = unsafe { self.map_unchecked_mut(|w| &mut w.0) };
        let at: *const F = &*fut;
        prefetch(at.cast(), std::mem::size_of::<F>());
        fut.poll(cx)
    }
}

/// Asks for the `len` bytes at `at` in the cache, a line at a time; a hint only.
fn prefetch(at: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..len).step_by(64) {
        // SAFETY: a prefetch never faults and reads nothing into the program; `at + off` stays
        // within the one object of `len` bytes.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                at.add(off).cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the wrapped future gives and when: a future that waits on a channel is woken
    /// through the wrapper and ends with its own output.
    #[tokio::test]
    async fn polls_through_to_the_wrapped_future() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let waiting = tokio::spawn(Warm(async move { rx.await.map(|v: u32| v + 1) }));
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        tx.send(41).unwrap();
        assert_eq!(waiting.await.unwrap(), Ok(42));
        // A state larger than a page is read through whole.
        let big = [7u8; 10_000];
        let sum = Warm(async move { big.iter().map(|&b| u64::from(b)).sum::<u64>() }).await;
        assert_eq!(sum, 70_000);
    }
}
