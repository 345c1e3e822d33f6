//! The send timer: waits for a request's scheduled send time with sub-millisecond precision,
//! on the thread that sends it.
//!
//! tokio's timer has millisecond granularity (a deadline rounds up to the next tick, and the
//! driver parks with a millisecond timeout), so a request sent after `tokio::time::sleep_until`
//! leaves 0–2 ms after its scheduled time. [`SendTimer`] arms a Linux `timerfd` (a kernel
//! high-resolution timer, tens of µs of slack) for the deadline and waits for it to become
//! readable through the runtime's own epoll: the wake-up arrives on the sending thread itself,
//! with no timer thread and no cross-thread wake. A tokio sleep to the same deadline races it:
//! on a paused tokio clock (tests) that one ends first, in virtual time, so the timer never
//! makes such a test wait in real time; on the real clock the timerfd ends first.
//!
//! The simulator keeps its own precise timer (`sim/precise.rs`: a heap of many sleepers served
//! by one thread): it times thousands of concurrent streams, where one timerfd each would be a
//! file descriptor each; the client's send loop has one sleeper per driver thread, where a
//! timerfd in that thread's epoll saves the hand-over between threads. Where no timerfd can be
//! made (another OS, no file descriptor left) the tokio sleep alone is used.

use tokio::time::Instant;

/// A timer for one task's successive waits (one driver's send loop).
pub struct SendTimer {
    #[cfg(target_os = "linux")]
    fd: Option<tokio::io::unix::AsyncFd<TimerFd>>,
}

impl SendTimer {
    /// A timer on the current runtime (its I/O driver must be enabled); without a timerfd it
    /// falls back to tokio's timer.
    pub fn new() -> SendTimer {
        SendTimer {
            #[cfg(target_os = "linux")]
            fd: TimerFd::new().and_then(|t| {
                // SAFETY: `t` owns its descriptor, open until `t` is dropped with the AsyncFd,
                // and its `as_raw_fd` always returns that one.
                unsafe {
                    tokio::io::unix::AsyncFd::register_with_interest(
                        t,
                        tokio::io::Interest::READABLE,
                    )
                }
                .ok()
            }),
        }
    }

    /// True when waits are precise (a timerfd is armed for each one).
    pub fn is_precise(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.fd.is_some()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    /// Waits until `at`: never returns before it (by the real clock), and on the real clock
    /// within the kernel's timer slack after it, unless the thread is busy. Cancel-safe: a wait
    /// dropped early leaves the timer to be re-armed by the next.
    pub async fn sleep_until(&mut self, at: Instant) {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.fd {
            let precise = async {
                let left = at.saturating_duration_since(Instant::now());
                if left.is_zero() || !fd.get_ref().arm(left) {
                    // Already due, or not armed: the tokio sleep decides.
                    return std::future::pending().await;
                }
                loop {
                    let Ok(mut ready) = fd.readable().await else {
                        return std::future::pending().await;
                    };
                    match ready.try_io(|f| f.get_ref().expired()) {
                        Ok(Ok(())) => return,
                        // Not a timer any more: the tokio sleep decides.
                        Ok(Err(_)) => return std::future::pending().await,
                        // Not expired yet (readiness left from an earlier wait).
                        Err(_) => {}
                    }
                }
            };
            tokio::select! {
                biased;
                () = precise => {}
                () = tokio::time::sleep_until(at) => {}
            }
            return;
        }
        tokio::time::sleep_until(at).await;
    }
}

impl Default for SendTimer {
    fn default() -> Self {
        SendTimer::new()
    }
}

/// A non-blocking `CLOCK_MONOTONIC` timerfd (the clock `Instant` reads on Linux).
#[cfg(target_os = "linux")]
struct TimerFd(std::os::fd::OwnedFd);

#[cfg(target_os = "linux")]
impl TimerFd {
    fn new() -> Option<TimerFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: timerfd_create takes no pointers; a non-negative result is a new descriptor
        // this process owns, wrapped at once so it is closed on drop.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        // SAFETY: `fd` was just returned by timerfd_create and is owned by nothing else.
        (fd >= 0).then(|| TimerFd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    /// Arms the timer to expire once, `after` from now (at least 1 ns: zero would disarm it).
    /// Re-arming replaces an earlier deadline and clears an expiry not yet read.
    fn arm(&self, after: std::time::Duration) -> bool {
        use std::os::fd::AsRawFd;
        let secs = after.as_secs().min(i64::MAX as u64 / 2);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: secs as libc::time_t,
                tv_nsec: (after.subsec_nanos().max(u32::from(secs == 0))) as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec and the old value is not asked for (null).
        unsafe { libc::timerfd_settime(self.0.as_raw_fd(), 0, &spec, std::ptr::null_mut()) == 0 }
    }

    /// Reads the expiry count: `Ok` once the timer has expired, `WouldBlock` before.
    fn expired(&self) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let mut count = 0u64;
        // SAFETY: reads 8 bytes into `count`, which is 8 bytes long and writable.
        let n = unsafe {
            libc::read(
                self.0.as_raw_fd(),
                (&mut count as *mut u64).cast::<libc::c_void>(),
                8,
            )
        };
        if n == 8 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

#[cfg(target_os = "linux")]
impl std::os::fd::AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Never early, on the real clock; how late is printed, not asserted (a shared machine can
    /// always delay a thread).
    #[tokio::test]
    async fn never_wakes_early() {
        let mut timer = SendTimer::new();
        assert!(timer.is_precise() || !cfg!(target_os = "linux"));
        let mut late = Vec::new();
        for i in 0..50u64 {
            let at = Instant::now() + Duration::from_micros(300 + 97 * i);
            timer.sleep_until(at).await;
            let now = Instant::now();
            assert!(now >= at, "woke {:?} early", at - now);
            late.push(now - at);
        }
        late.sort();
        eprintln!("median lateness over 50 waits: {:?}", late[25]);
    }

    /// A deadline already past returns at once; a wait dropped before its deadline leaves the
    /// timer usable for the next.
    #[tokio::test]
    async fn past_deadlines_and_dropped_waits() {
        let mut timer = SendTimer::new();
        timer.sleep_until(Instant::now()).await;
        let far = Instant::now() + Duration::from_secs(3600);
        let dropped = tokio::time::timeout(Duration::from_millis(5), timer.sleep_until(far)).await;
        assert!(dropped.is_err(), "an hour's wait ended");
        let at = Instant::now() + Duration::from_millis(2);
        timer.sleep_until(at).await;
        assert!(Instant::now() >= at);
    }

    /// On a paused clock the wait ends in virtual time: an hour passes at once.
    #[tokio::test(start_paused = true)]
    async fn a_paused_clock_does_not_wait_in_real_time() {
        let real = std::time::Instant::now();
        let mut timer = SendTimer::new();
        let at = Instant::now() + Duration::from_secs(3600);
        timer.sleep_until(at).await;
        assert!(Instant::now() >= at);
        assert!(real.elapsed() < Duration::from_secs(600));
    }
}
