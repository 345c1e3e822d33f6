//! A stream's task state brought into the cache before it is polled.
//!
//! At thousands of streams a stream's task is cold each time its socket wakes it, and its poll
//! walks the nested `async` states (the conversation, the request, the exchange, the read), each
//! at its own offset in a future of several KiB: one cache miss after another, each waiting for
//! the last. [`Warm`] asks for every line of its future at once before polling it, so the misses
//! overlap (docs/performance.md, "A stream's task state prefetched before each poll"), with
//! the heap lines its last poll said the next one would touch (`measure::ahead`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::measure::ahead::{prefetch, Ahead};

/// `F`, its state prefetched at every poll. `ahead` first, in the line the poll reads first.
#[repr(C)]
pub(super) struct Warm<F> {
    ahead: Ahead,
    fut: F,
}

impl<F> Warm<F> {
    pub(super) fn new(fut: F) -> Self {
        Warm {
            fut,
            ahead: Ahead::default(),
        }
    }
}

impl<F: Future> Future for Warm<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `fut` is pinned with `Warm` (structural pinning): `Warm` has no `Drop`, is
        // `Unpin` only when `F` and `Ahead` (plain integers) are, and never moves `fut` out;
        // `ahead` is not pinned and only borrowed.
        let this = unsafe { self.get_unchecked_mut() };
        let at: *const Self = this;
        prefetch(at.cast(), std::mem::size_of::<Self>());
        // SAFETY: as above; `this.fut` stays where it is.
        let fut = unsafe { Pin::new_unchecked(&mut this.fut) };
        this.ahead.polling(|| fut.poll(cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the wrapped future gives and when: a future that waits on a channel is woken
    /// through the wrapper and ends with its own output.
    #[tokio::test]
    async fn polls_through_to_the_wrapped_future() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let waiting = tokio::spawn(Warm::new(async move { rx.await.map(|v: u32| v + 1) }));
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        tx.send(41).unwrap();
        assert_eq!(waiting.await.unwrap(), Ok(42));
        // A state larger than a page is read through whole.
        let big = [7u8; 10_000];
        let sum = Warm::new(async move { big.iter().map(|&b| u64::from(b)).sum::<u64>() }).await;
        assert_eq!(sum, 70_000);
    }
}
