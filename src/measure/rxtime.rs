//! Kernel receive timestamps: when bytes reached this host's TCP stack, not when a task got
//! round to reading them.
//!
//! A latency benchmark that timestamps a chunk when its task reads the socket adds the time
//! the task waited to run (a busy runtime, a descheduled process) to every figure. Linux can
//! stamp each received packet as the network stack takes it (`SO_TIMESTAMPNS`) and hands the
//! stamp of the newest packet read back with `recvmsg` (a control message). Both the client
//! (the arrival of each streamed chunk) and the simulator (the arrival of a request, which
//! anchors its schedule) read sockets through [`recv`], so neither figure depends on its own
//! process's scheduling.
//!
//! The stamp is on the system's real-time clock. A client's stream converts its stamps with a
//! [`StreamClock`], which also keeps all of the stream's times on one clock (the kernel's, or
//! the read times when its first read came unstamped: never a mix). The simulator's single
//! stamps go through [`Stamp::instant`], which turns one into a monotonic instant by
//! subtracting its age (real-time now − stamp) from monotonic now, so a clock step between
//! runs cannot shift it; an age below zero or above [`MAX_AGE`] (the real-time clock was
//! stepped between the stamp and now) falls back to now.
//!
//! When several packets are read at once the stamp is the newest one's (Linux merges queued
//! segments and keeps the later stamp), so a stamp is never earlier than the last byte's
//! arrival and never later than the read: it is at least as exact as timestamping the read.
//! Elsewhere than Linux, or on a socket without the option, [`recv`] is a plain read and
//! returns no stamp; so does Linux for the first packets after the first socket of the host
//! asks (it turns stamping on from a work queue): a stream whose first read comes so takes
//! its read times throughout ([`StreamClock`]).

use std::io;
use std::time::Duration;

use tokio::time::Instant;

/// Ages beyond this mean the real-time clock was stepped; the read time is used instead.
pub const MAX_AGE: Duration = Duration::from_secs(10);

/// When the newest packet of a read reached the host: Unix time, nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp(pub i128);

impl Stamp {
    /// The monotonic instant of the stamp (see the module docs).
    pub fn instant(self) -> Instant {
        let now = Instant::now();
        let age = unix_now_ns() - self.0;
        if (0..=MAX_AGE.as_nanos() as i128).contains(&age) {
            now - Duration::from_nanos(age as u64)
        } else {
            now
        }
    }
}

/// Which clock one stream's times come from: chosen at its first read, kept to its end.
///
/// Linux stamps a socket's packets only once stamping is on for the host (turned on from a
/// work queue after the first socket asks), so a stream's first reads may come unstamped and
/// its later ones stamped. Times from both would mix two clocks in one record: after a stall of
/// the reading thread, the first chunks would carry read times taken after the stall and the
/// later ones the kernel's stamps taken during it, so time would run backwards. Hence:
///
/// - a stream whose first read is stamped takes every time from the kernel's stamps,
///   converted with one anchor taken at that read (real-time minus monotonic, which only a
///   step of the real-time clock changes), so the gaps between its stamps are kept exactly;
///   a read without a stamp then takes the stream's latest time (its bytes came no earlier);
/// - a stream whose first read is unstamped takes every time from its reads (user space),
///   whatever later reads carry.
///
/// Bytes are read in order, so no time is earlier than the stream's latest (a segment that
/// arrived before a lost one was sent again is readable only when the gap is filled), and none
/// is later than its read (a stamp ahead of the read means the real-time clock was stepped
/// forward: the anchor is taken again).
#[derive(Clone, Copy, Debug, Default)]
pub struct StreamClock {
    source: Source,
    /// The stream's latest time.
    last: Option<Instant>,
}

#[derive(Clone, Copy, Debug, Default)]
enum Source {
    /// No read yet.
    #[default]
    Unchosen,
    /// The read times.
    Reads,
    /// The kernel's stamps, through this anchor.
    Kernel(Anchor),
}

/// One monotonic instant and the real-time clock's reading at the same moment.
#[derive(Clone, Copy, Debug)]
struct Anchor {
    at: Instant,
    unix_ns: i128,
}

/// A stamp this far ahead of its read means the real-time clock was stepped.
const AHEAD: Duration = Duration::from_millis(1);

impl Anchor {
    /// The two clocks read together: of three tries, the one whose monotonic readings either
    /// side of the real-time reading are closest (a preempted try is not used).
    fn now() -> Anchor {
        let mut best: Option<(Duration, Anchor)> = None;
        for _ in 0..3 {
            let before = Instant::now();
            let unix_ns = unix_now_ns();
            let after = Instant::now();
            let width = after - before;
            if best.is_none_or(|(w, _)| width < w) {
                let at = before + width / 2;
                best = Some((width, Anchor { at, unix_ns }));
            }
        }
        best.map_or_else(
            || Anchor {
                at: Instant::now(),
                unix_ns: unix_now_ns(),
            },
            |(_, a)| a,
        )
    }

    /// The monotonic instant of `stamp`.
    fn instant(self, stamp: Stamp) -> Instant {
        let ns = stamp.0 - self.unix_ns;
        let d = Duration::from_nanos(ns.unsigned_abs().min(u64::MAX as u128) as u64);
        let t = if ns >= 0 {
            self.at.checked_add(d)
        } else {
            self.at.checked_sub(d)
        };
        t.unwrap_or(self.at)
    }
}

impl StreamClock {
    /// When the bytes of a read whose kernel stamp is `stamp` (if any) arrived, on the
    /// stream's one clock.
    pub fn time(&mut self, stamp: Option<Stamp>) -> Instant {
        let now = Instant::now();
        if matches!(self.source, Source::Unchosen) {
            self.source = match stamp {
                Some(_) => Source::Kernel(Anchor::now()),
                None => Source::Reads,
            };
        }
        let t = match (self.source, stamp) {
            (Source::Kernel(anchor), Some(s)) => {
                let mut t = anchor.instant(s);
                if t > now + AHEAD {
                    let again = Anchor::now();
                    self.source = Source::Kernel(again);
                    t = again.instant(s);
                }
                t.min(now)
            }
            (Source::Kernel(_), None) => self.last.unwrap_or(now),
            _ => now,
        };
        let t = self.last.map_or(t, |last| t.max(last));
        self.last = Some(t);
        t
    }
}

fn unix_now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

#[cfg(target_os = "linux")]
mod imp {
    use super::Stamp;
    use std::io;
    use std::os::fd::AsRawFd;

    /// Asks the kernel to stamp what `socket` receives. False if it refused.
    pub fn enable(socket: &impl AsRawFd) -> bool {
        let on: libc::c_int = 1;
        // SAFETY: a valid descriptor and a pointer to a c_int of the length given.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ) == 0
        }
    }

    /// One non-blocking read into `buf`: the byte count and the stamp, if the kernel gave one.
    pub fn recv(socket: &impl AsRawFd, buf: &mut [u8]) -> io::Result<(usize, Option<Stamp>)> {
        // Room for one cmsghdr with a timespec, aligned as cmsghdr requires.
        let mut control = [0u64; 8];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain old data; all-zero is a valid empty value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg points at live buffers of the lengths it states.
        let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut stamp = None;
        // SAFETY: the CMSG_* walk stays within msg_controllen, which the kernel set.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                let c = &*cmsg;
                if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                    stamp = Some(Stamp(
                        ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128,
                    ));
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
        Ok((n as usize, stamp))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {

    /// Receive timestamps are read on Linux only.
    pub fn enable<T>(_socket: &T) -> bool {
        false
    }
}

pub use imp::enable;

/// Reads what `socket` has into `buf`, waiting until it is readable: the byte count (0 at the
/// end of the stream) and the kernel's stamp of the newest byte, when there is one.
pub async fn recv(
    socket: &tokio::net::TcpStream,
    buf: &mut [u8],
) -> io::Result<(usize, Option<Stamp>)> {
    #[cfg(target_os = "linux")]
    loop {
        // A read that does not fill the buffer drained the socket. Reporting it to tokio as
        // `WouldBlock` (the bytes kept aside) clears tokio's readiness flag, so the next call
        // waits for the kernel's next readiness event instead of making a `recvmsg` that
        // returns `EAGAIN`: one system call per streamed chunk instead of two. `try_io` clears
        // the flag only if no readiness event was applied since before the read, so bytes that
        // arrive meanwhile are not missed.
        let len = buf.len();
        let mut short = None;
        let read = socket.try_io(tokio::io::Interest::READABLE, || {
            let (n, stamp) = imp::recv(socket, buf)?;
            if n > 0 && n < len {
                short = Some((n, stamp));
                return Err(io::ErrorKind::WouldBlock.into());
            }
            Ok((n, stamp))
        });
        match read {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => match short {
                Some(got) => return Ok(got),
                // The socket's one reader slot, not `readable()`: that queues a waiter (in the
                // task's state) on a locked list the driver walks at every readiness event.
                None => std::future::poll_fn(|cx| socket.poll_read_ready(cx)).await?,
            },
            r => return r,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        loop {
            socket.readable().await?;
            match socket.try_read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return r.map(|n| (n, None)),
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// The stamp is the packet's arrival, not the read: bytes left unread for 60 ms carry a
    /// stamp about 60 ms before the read, and bytes read at once carry one close to the read.
    /// The margins leave room for a busy machine, where the kernel may take in a loopback
    /// packet from its softirq thread some ms after the write returned.
    #[tokio::test]
    async fn stamps_arrival_not_read() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut writer = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (reader, _) = listener.accept().await.unwrap();
        assert!(enable(&reader));
        let mut buf = [0u8; 64];
        // Linux turns stamping on for the whole stack from a work queue after the first socket
        // asks, so the first packets may come unstamped; wait until they are stamped.
        let mut stamped = false;
        for _ in 0..200 {
            writer.write_all(b"w").await.unwrap();
            if recv(&reader, &mut buf).await.unwrap().1.is_some() {
                stamped = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(stamped, "the kernel never stamped a packet");

        writer.write_all(b"first").await.unwrap();
        let written = Instant::now();
        tokio::time::sleep(Duration::from_millis(60)).await;
        let (n, stamp) = recv(&reader, &mut buf).await.unwrap();
        let read = Instant::now();
        assert_eq!(&buf[..n], b"first");
        let at = stamp.expect("a stamp").instant();
        assert!(
            at <= written + Duration::from_millis(15),
            "stamped at the read"
        );
        assert!(read - at >= Duration::from_millis(45), "{:?}", read - at);

        writer.write_all(b"second").await.unwrap();
        let (n, stamp) = recv(&reader, &mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"second");
        assert!(stamp.unwrap().instant() <= Instant::now());

        drop(writer);
        let (n, _) = recv(&reader, &mut buf).await.unwrap();
        assert_eq!(n, 0, "end of stream");
    }

    /// Every byte of many small writes is read, on a runtime whose driver other threads poll,
    /// with no read stalled: clearing readiness after a short read loses no wake-up.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn short_reads_lose_no_bytes() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut writer = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (reader, _) = listener.accept().await.unwrap();
        enable(&reader);
        const WRITES: usize = 2_000;
        let write = tokio::spawn(async move {
            for i in 0..WRITES {
                writer.write_all(&[(i % 251) as u8; 7]).await.unwrap();
                if i % 7 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        });
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        while got.len() < WRITES * 7 {
            let (n, _) = tokio::time::timeout(Duration::from_secs(10), recv(&reader, &mut buf))
                .await
                .expect("a read stalled with bytes pending")
                .unwrap();
            assert!(n > 0, "end of stream before every byte");
            got.extend_from_slice(&buf[..n]);
        }
        write.await.unwrap();
        let want: Vec<u8> = (0..WRITES).flat_map(|i| [(i % 251) as u8; 7]).collect();
        assert_eq!(got, want);
    }

    /// A stream whose first read came unstamped (stamping not on for its socket yet) keeps the
    /// read time to its end: the later reads' stamps, taken while the reading thread stalled,
    /// would put their bytes before the first ones.
    #[test]
    fn a_stream_that_began_unstamped_keeps_the_read_time() {
        let mut c = StreamClock::default();
        let first = c.time(None);
        // Bytes that reached the host 50 ms ago, during a stall, read now.
        let later = c.time(Some(Stamp(unix_now_ns() - 50_000_000)));
        assert!(later >= first, "{:?} before the first read", first - later);
    }

    /// A stream whose first read was stamped stays on the kernel's clock: an unstamped read
    /// takes the stream's latest time, not the read time, and the gaps between stamps are
    /// kept exactly (one conversion for the whole stream, not one per read).
    #[test]
    fn a_stamped_stream_keeps_the_kernel_clock() {
        let mut c = StreamClock::default();
        let s0 = unix_now_ns() - 40_000_000;
        let a = c.time(Some(Stamp(s0)));
        let b = c.time(None);
        let d = c.time(Some(Stamp(s0 + 1_000)));
        assert!(a <= b && b <= d, "{a:?} {b:?} {d:?}");
        assert_eq!(d - a, Duration::from_nanos(1_000));
        // Many stamps 1 ns apart: never a step back, every gap exact.
        let mut prev = d;
        for i in 1..=2_000 {
            let t = c.time(Some(Stamp(s0 + 1_000 + i)));
            assert_eq!(t - prev, Duration::from_nanos(1), "read {i}");
            prev = t;
        }
    }

    /// Bytes are never read before the bytes before them: a stamp older than the stream's
    /// latest (a segment that arrived before a lost one was sent again) takes the latest time,
    /// and no time is later than its read.
    #[test]
    fn a_stream_never_steps_back_nor_ahead_of_its_reads() {
        let mut c = StreamClock::default();
        let s0 = unix_now_ns() - 40_000_000;
        let a = c.time(Some(Stamp(s0 + 5_000)));
        assert_eq!(c.time(Some(Stamp(s0))), a);
        let before = Instant::now();
        let ahead = c.time(Some(Stamp(unix_now_ns() + 3_600_000_000_000)));
        assert!(ahead >= a && ahead <= Instant::now() && ahead >= before);
    }

    #[test]
    fn a_stepped_clock_falls_back_to_now() {
        let before = Instant::now();
        let future = Stamp(unix_now_ns() + 1_000_000_000);
        assert!(future.instant() >= before);
        let ancient = Stamp(unix_now_ns() - 3_600 * 1_000_000_000);
        assert!(ancient.instant() >= before);
    }
}
