//! A response body's read loop, on either transport: each read handed on with its arrival,
//! every wait bounded by one timer (the request's end, the first byte's limit, then the idle
//! limit between reads: a `stall`). Over the lean transport the loop is one poll function, so
//! a read costs no future's state and no timer poll of its own ([`read_lean`]). Knows nothing
//! of what the bytes mean: `exchange.rs` parses them.

use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{Poll, Waker};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::body::{lean_failure, Body};
use super::{http1, Limits};
use crate::measure::record::{FailureKind, Outcome};

/// Reads `body` to its end, giving each read and its arrival (`None` over reqwest: taken as
/// it is read) to `each`, until `each` breaks with an outcome, a read fails or a limit passes
/// ([`waited`]); `Continue` at the body's clean end. Both shapes of answer, streamed and
/// whole, read through it. One timer bounds every read: `wait` (set to the first byte's
/// limit, or the request's end) is reset once, at the first read, to the idle limit, and after
/// that moved only when it fires, so a read polls no other timer.
pub(super) async fn read_body(
    body: &mut Body,
    mut wait: Pin<&mut Sleep>,
    limits: Limits,
    (end, limit): (Instant, Duration),
    mut each: impl FnMut(&[u8], Option<Instant>) -> ControlFlow<Outcome>,
) -> ControlFlow<Outcome> {
    if let Body::Lean(r) = body {
        return read_lean(r, wait, limits, (end, limit), each).await;
    }
    // The last read's arrival; `None` until the body's first byte.
    let mut last_read: Option<Instant> = None;
    loop {
        let next = tokio::select! {
            biased;
            next = body.next_chunk() => next,
            () = wait.as_mut() => match waited(wait.as_mut(), last_read, limits, (end, limit)) {
                Some(failure) => return ControlFlow::Break(failure),
                None => continue,
            },
        };
        match next {
            Ok(Some((bytes, arrived))) => {
                let at = arrived.unwrap_or_else(Instant::now);
                if last_read.replace(at).is_none() {
                    wait.as_mut().reset((at + limits.idle).min(end));
                }
                each(bytes, arrived)?;
            }
            Ok(None) => return ControlFlow::Continue(()),
            Err(failure) => return ControlFlow::Break(failure),
        }
    }
}

/// [`read_body`] over the lean transport, as one poll function: every read that the socket
/// has is taken and handed to `each` in the same task poll, and the timer is polled only when
/// the read would block and the timer may have fired (its deadline passed) or does not hold
/// this task's waker yet; between those, a read costs no timer poll and no future's state of
/// its own (at thousands of streams per thread, each such state is a cache miss per event:
/// docs/performance.md). The timer fires at or after its deadline, and a task woken by it
/// reads the clock after the wake, so a firing is never missed.
async fn read_lean(
    r: &mut http1::Response,
    mut wait: Pin<&mut Sleep>,
    limits: Limits,
    (end, limit): (Instant, Duration),
    mut each: impl FnMut(&[u8], Option<Instant>) -> ControlFlow<Outcome>,
) -> ControlFlow<Outcome> {
    let mut last_read: Option<Instant> = None;
    // The timer's deadline as last set, and the waker it was last polled with.
    let mut deadline = wait.deadline();
    let mut armed: Option<Waker> = None;
    std::future::poll_fn(|cx| loop {
        match r.poll_chunk(cx) {
            Poll::Ready(Ok(Some((range, at)))) => {
                if last_read.replace(at).is_none() {
                    deadline = (at + limits.idle).min(end);
                    wait.as_mut().reset(deadline);
                    armed = None;
                }
                if let ControlFlow::Break(o) = each(r.bytes(range), Some(at)) {
                    return Poll::Ready(ControlFlow::Break(o));
                }
            }
            Poll::Ready(Ok(None)) => return Poll::Ready(ControlFlow::Continue(())),
            Poll::Ready(Err(e)) => return Poll::Ready(ControlFlow::Break(lean_failure(e))),
            Poll::Pending => {
                let held = armed.as_ref().is_some_and(|w| w.will_wake(cx.waker()));
                if held && Instant::now() < deadline {
                    return Poll::Pending;
                }
                if wait.as_mut().poll(cx).is_pending() {
                    armed = Some(cx.waker().clone());
                    return Poll::Pending;
                }
                if let Some(failure) = waited(wait.as_mut(), last_read, limits, (end, limit)) {
                    return Poll::Ready(ControlFlow::Break(failure));
                }
                // Moved to the next limit: read again, then poll the timer to hold the waker.
                deadline = wait.deadline();
                armed = None;
            }
        }
    })
    .await
}

/// The timer fired: the failure when a limit has passed (the request's time, the first byte,
/// the idle limit: a `stall`), else `None` with the timer moved to the next limit.
fn waited(
    wait: Pin<&mut Sleep>,
    last_read: Option<Instant>,
    limits: Limits,
    (end, limit): (Instant, Duration),
) -> Option<Outcome> {
    if Instant::now() >= end {
        return Some(timed_out(limit));
    }
    let Some(last) = last_read else {
        return Some(no_first_byte(limits.first_byte));
    };
    let quiet = last.elapsed();
    if quiet >= limits.idle {
        return Some(Outcome::failed(
            FailureKind::Stall,
            format!(
                "stream stalled: no data for {:.1} s (--idle-timeout)",
                quiet.as_secs_f64()
            ),
        ));
    }
    wait.reset((last + limits.idle).min(end));
    None
}

/// The failure of a request that did not finish within its time limit.
pub(super) fn timed_out(limit: Duration) -> Outcome {
    Outcome::failed(
        FailureKind::Timeout,
        format!("no complete answer within {:.1} s", limit.as_secs_f64()),
    )
}

/// The failure of a response whose body did not start within the first-byte limit.
pub(super) fn no_first_byte(limit: Duration) -> Outcome {
    Outcome::failed(
        FailureKind::Timeout,
        format!(
            "no response within {:.1} s of sending (--first-byte-timeout)",
            limit.as_secs_f64()
        ),
    )
}
