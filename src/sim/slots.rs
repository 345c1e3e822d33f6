//! Exact mode's slots (`SimConfig::slots`): at most that many streams at once; a request that
//! finds every slot taken waits in a queue, served first come first served, or by vLLM's
//! `priority` field (lower first, then arrival) when `SimConfig::priority_scheduling` is on.
//!
//! # What it owns
//! [`Slots`] and the [`Slot`] a stream holds. A slot is handed on at the instant its stream's
//! last content chunk was scheduled ([`Slot::ends_at`]), not when the stream's task got round
//! to dropping it, so the next request's schedule starts exactly there: its TTFT is the wait
//! (that instant − its arrival) plus `ttft`, an exactly known value.
//!
//! # What it must not touch
//! Sockets, streams and the clock: it only orders waiters and hands slots on.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use tokio::time::Instant;

/// The slots of exact mode and the queue of requests waiting for one.
pub(crate) struct Slots {
    inner: Mutex<Inner>,
    by_priority: bool,
}

struct Inner {
    free: usize,
    /// Slots held by streams.
    held: usize,
    /// Slots to retire as they are handed back (the count was lowered while they were held).
    debt: usize,
    /// Waiters by (priority, arrival number); their slot is sent with the instant it freed.
    waiting: BTreeMap<(i64, u64), oneshot::Sender<(Slot, Instant)>>,
    arrivals: u64,
}

/// One slot, held by a stream until it is dropped; it is handed on at [`Slot::ends_at`].
pub(crate) struct Slot {
    slots: Option<Arc<Slots>>,
    ends: Option<Instant>,
}

impl Slots {
    pub(crate) fn new(count: usize, by_priority: bool) -> Arc<Slots> {
        Arc::new(Slots {
            inner: Mutex::new(Inner {
                free: count,
                held: 0,
                debt: 0,
                waiting: BTreeMap::new(),
                arrivals: 0,
            }),
            by_priority,
        })
    }

    /// A slot for a request that arrived at `t0` with `priority`, and the instant its
    /// schedule starts: `t0` when a slot was free, else when the slot it waited for freed.
    pub(crate) async fn take(self: &Arc<Slots>, t0: Instant, priority: i64) -> (Slot, Instant) {
        let rx = {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            if inner.free > 0 && inner.waiting.is_empty() {
                inner.free -= 1;
                inner.held += 1;
                return (self.slot(), t0);
            }
            let (tx, rx) = oneshot::channel();
            let n = inner.arrivals;
            inner.arrivals += 1;
            let key = if self.by_priority { priority } else { 0 };
            inner.waiting.insert((key, n), tx);
            rx
        };
        match rx.await {
            Ok((slot, freed)) => (slot, freed.max(t0)),
            // The server is going away (the sender cannot be dropped otherwise): serve it.
            Err(_) => (
                Slot {
                    slots: None,
                    ends: None,
                },
                t0,
            ),
        }
    }

    fn slot(self: &Arc<Slots>) -> Slot {
        Slot {
            slots: Some(self.clone()),
            ends: None,
        }
    }

    /// A slot freed at `at`: retired when the count was lowered, else to the first waiter
    /// still waiting, else back to the free ones.
    fn hand_on(self: &Arc<Slots>, at: Instant) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.debt > 0 {
            inner.debt -= 1;
            inner.held = inner.held.saturating_sub(1);
            return;
        }
        Self::give(self, &mut inner, at);
    }

    /// One slot from the pool, at `at`: to the first waiter still waiting, else free.
    fn give(self: &Arc<Slots>, inner: &mut Inner, at: Instant) {
        while let Some((_, tx)) = inner.waiting.pop_first() {
            match tx.send((self.slot(), at)) {
                Ok(()) => return,
                // The waiter went away (its client closed): the slot goes on, not dropped
                // here, which would take this lock again.
                Err((mut slot, _)) => slot.slots = None,
            }
        }
        inner.held = inner.held.saturating_sub(1);
        inner.free += 1;
    }

    /// Requests holding a slot or waiting for one.
    pub(crate) fn in_flight(&self) -> usize {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.held + inner.waiting.len()
    }

    /// Changes the number of slots from `from` to `to` at `at` (an autoscaler's replicas
    /// arriving or leaving): new slots go to the waiters first; removed ones are taken from
    /// the free ones, then retired as their streams hand them back.
    pub(crate) fn resize(self: &Arc<Slots>, from: usize, to: usize, at: Instant) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if to >= from {
            for _ in from..to {
                if inner.debt > 0 {
                    inner.debt -= 1;
                } else {
                    // As if a held slot were handed on: `give` counts it as no longer held.
                    inner.held += 1;
                    Self::give(self, &mut inner, at);
                }
            }
        } else {
            let less = from - to;
            let now = less.min(inner.free);
            inner.free -= now;
            inner.debt += less - now;
        }
    }
}

impl Slot {
    /// The instant the stream's last content chunk is scheduled: the slot is handed on there.
    pub(crate) fn ends_at(&mut self, at: Instant) {
        self.ends = Some(at);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take() {
            // A stream that ended before its schedule did (cut, failed) frees it now.
            let at = self
                .ends
                .map_or_else(Instant::now, |e| e.min(Instant::now()));
            slots.hand_on(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn a_freed_slot_goes_to_the_lowest_priority_value_then_the_first_arrival() {
        let slots = Slots::new(1, true);
        let t0 = Instant::now();
        let (mut held, start) = slots.take(t0, 5).await;
        assert_eq!(start, t0);
        let waiter = |p: i64, d: u64| {
            let slots = slots.clone();
            tokio::spawn(async move {
                let arrived = t0 + Duration::from_millis(d);
                let (slot, start) = slots.take(arrived, p).await;
                (p, d, slot, start)
            })
        };
        let low = waiter(10, 1);
        tokio::task::yield_now().await;
        let high_late = waiter(0, 3);
        tokio::task::yield_now().await;
        let high = waiter(0, 2);
        tokio::task::yield_now().await;
        held.ends_at(t0 + Duration::from_millis(50));
        tokio::time::advance(Duration::from_millis(60)).await;
        drop(held);
        // The first of priority 0 to arrive (arrival order is the queue's, here 3 ms then 2 ms).
        let (p, d, mut slot, start) = high_late.await.unwrap();
        assert_eq!((p, d, start), (0, 3, t0 + Duration::from_millis(50)));
        slot.ends_at(t0 + Duration::from_millis(70));
        drop(slot);
        let (p, _, slot, start) = high.await.unwrap();
        assert_eq!((p, start), (0, t0 + Duration::from_millis(60)));
        drop(slot);
        let (p, _, _slot, _) = low.await.unwrap();
        assert_eq!(p, 10);
    }

    #[tokio::test(start_paused = true)]
    async fn without_priority_the_queue_is_first_come_first_served() {
        let slots = Slots::new(1, false);
        let t0 = Instant::now();
        let (held, _) = slots.take(t0, 0).await;
        let s = slots.clone();
        let first = tokio::spawn(async move { s.take(t0, 9).await.0 });
        tokio::task::yield_now().await;
        let s = slots.clone();
        let second = tokio::spawn(async move { s.take(t0, 0).await.0 });
        tokio::task::yield_now().await;
        drop(held);
        // The first arrival gets the slot although its priority value is higher; the second
        // waits until it is given back.
        let slot = first.await.unwrap();
        tokio::task::yield_now().await;
        assert!(!second.is_finished());
        drop(slot);
        assert!(second.await.is_ok());
    }
}
