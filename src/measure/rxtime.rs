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
//! The stamp is on the system's real-time clock; [`Stamp::instant`] turns it into a monotonic
//! instant by subtracting its age (real-time now − stamp) from monotonic now, so a clock step
//! between runs cannot shift it. An age below zero or above [`MAX_AGE`] (the real-time clock
//! was stepped between the stamp and now) falls back to now.
//!
//! When several packets are read at once the stamp is the newest one's (Linux merges queued
//! segments and keeps the later stamp), so a stamp is never earlier than the last byte's
//! arrival and never later than the read: it is at least as exact as timestamping the read.
//! Elsewhere than Linux, or on a socket without the option, [`recv`] is a plain read and
//! returns no stamp; so does Linux for the first packets after the first socket of the host
//! asks (it turns stamping on from a work queue): callers then take the read time.

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
                None => socket.readable().await?,
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

    #[test]
    fn a_stepped_clock_falls_back_to_now() {
        let before = Instant::now();
        let future = Stamp(unix_now_ns() + 1_000_000_000);
        assert!(future.instant() >= before);
        let ancient = Stamp(unix_now_ns() - 3_600 * 1_000_000_000);
        assert!(ancient.instant() >= before);
    }
}
