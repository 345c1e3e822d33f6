//! `--source-addresses`: the local addresses new connections are bound to, in turn. A leaf:
//! the lean transport (`http1.rs`) takes [`Sources::next`] for each connection it opens and
//! connects with [`connect_from`]; over reqwest (HTTPS), which binds a whole client to one
//! local address, the [`super::Client`] keeps one reqwest client per address and takes them
//! in turn per request (each pools its own connections, so they spread the same way).
//!
//! Each connection asks the kernel to choose its port at `connect`, not at `bind`
//! (`IP_BIND_ADDRESS_NO_PORT` on Linux): a port bound with port 0 would be reserved for every
//! destination, and a source address would give fewer connections than the kernel's default
//! choice does.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::net::{TcpSocket, TcpStream};

/// The addresses, and which is next.
#[derive(Debug, Default)]
pub struct Sources {
    list: Vec<IpAddr>,
    next: AtomicUsize,
}

impl Sources {
    pub fn new(list: &[IpAddr]) -> Sources {
        Sources {
            list: list.to_vec(),
            next: AtomicUsize::new(0),
        }
    }

    /// The address the next connection binds to (round-robin); `None` without a list.
    pub fn next(&self) -> Option<IpAddr> {
        let n = self.list.len();
        (n > 0).then(|| self.list[self.next.fetch_add(1, Ordering::Relaxed) % n])
    }

    /// The index of the next one, for callers that keep one thing per address.
    pub fn next_index(&self) -> Option<usize> {
        let n = self.list.len();
        (n > 0).then(|| self.next.fetch_add(1, Ordering::Relaxed) % n)
    }
}

/// A TCP connection to `addr` (`HOST:PORT`) from `source`: to the first of the host's
/// addresses of `source`'s family that accepts.
pub async fn connect_from(source: IpAddr, addr: &str) -> io::Result<TcpStream> {
    let mut last = None;
    for target in tokio::net::lookup_host(addr).await? {
        if target.is_ipv4() != source.is_ipv4() {
            continue;
        }
        let socket = match source {
            IpAddr::V4(_) => TcpSocket::new_v4()?,
            IpAddr::V6(_) => TcpSocket::new_v6()?,
        };
        bind_no_port(&socket);
        socket.bind(SocketAddr::new(source, 0))?;
        match socket.connect(target).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        let family = if source.is_ipv4() { "IPv4" } else { "IPv6" };
        io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            format!("the server has no {family} address (the source address's family)"),
        )
    }))
}

/// Best effort: the port is then chosen at `connect`, per destination.
#[cfg(target_os = "linux")]
fn bind_no_port(socket: &TcpSocket) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid descriptor and a pointer to a c_int of the length given.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn bind_no_port(_socket: &TcpSocket) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_taken_in_turn() {
        let list: Vec<IpAddr> = vec!["127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap()];
        let s = Sources::new(&list);
        let taken: Vec<IpAddr> = (0..4).filter_map(|_| s.next()).collect();
        assert_eq!(taken, [list[0], list[1], list[0], list[1]]);
        assert_eq!(Sources::new(&[]).next(), None);
    }

    #[tokio::test]
    async fn a_connection_leaves_from_its_source_address() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let source: IpAddr = "127.0.0.3".parse().unwrap();
        let (conn, accepted) = tokio::join!(connect_from(source, &addr), listener.accept());
        assert_eq!(conn.unwrap().local_addr().unwrap().ip(), source);
        assert_eq!(accepted.unwrap().1.ip(), source);
        let v6: IpAddr = "::1".parse().unwrap();
        let e = connect_from(v6, &addr).await.unwrap_err().to_string();
        assert!(e.contains("no IPv6 address"), "{e}");
    }
}
