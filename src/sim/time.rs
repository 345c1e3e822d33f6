//! Time helpers shared by the engine model and the streams: instants that saturate instead of
//! panicking, and one sleep that is precise or tokio's.
//!
//! # What it owns
//! [`offset`] and [`mul`] (saturating arithmetic on `Instant`/`Duration`) and [`sleep_until`]
//! (the choice between `precise.rs`'s sub-millisecond sleep and tokio's timer).
//!
//! # What it must not touch
//! It knows nothing of requests, streams or the server's state: it sits below `engine.rs` and
//! `stream/`, which both use it (this is what keeps them from importing each other).
//!
//! # Adding a helper
//! Only pure time arithmetic, or a sleep, that more than one module needs belongs here.

use std::time::Duration;

use tokio::time::Instant;

use super::precise;

/// `base + d`, saturating at a far-future instant instead of panicking.
pub(crate) fn offset(base: Instant, d: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);
    base.checked_add(d)
        .or_else(|| base.checked_add(FAR))
        .unwrap_or(base)
}

/// `d * n`, saturating at `Duration::MAX`.
pub(crate) fn mul(d: Duration, n: u32) -> Duration {
    d.checked_mul(n).unwrap_or(Duration::MAX)
}

/// Sleeps until `deadline`: with the precise timer thread when `precise` (the real clock), else
/// on tokio's timer (which follows a paused clock in tests).
pub(crate) async fn sleep_until(precise: bool, deadline: Instant) {
    if precise {
        precise::sleep_until(deadline).await;
    } else {
        tokio::time::sleep_until(deadline).await;
    }
}
