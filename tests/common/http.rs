//! The tests' own small servers on 127.0.0.1 read each request with these: one HTTP/1.1
//! request, its head up to the blank line and a body of its `content-length`, as text (what
//! a test matches its answer on). Blocking for a server on threads, async for one on tokio.

use tokio::io::{AsyncRead, AsyncReadExt};

/// Whether `got` holds a whole request: its head and the body its `content-length` names.
fn whole(got: &[u8]) -> bool {
    let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
    let len: usize = (head.lines())
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    got.len() >= end + 4 + len
}

/// Reads one request from `conn`: all of it as text, `None` when the connection ended (or
/// failed) first.
pub fn read_request(conn: &mut impl std::io::Read) -> Option<String> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !whole(&got) {
        let n = conn.read(&mut buf).ok().filter(|n| *n > 0)?;
        got.extend_from_slice(&buf[..n]);
    }
    Some(String::from_utf8_lossy(&got).into_owned())
}

/// [`read_request`] on a tokio connection.
pub async fn read_request_async(conn: &mut (impl AsyncRead + Unpin)) -> Option<String> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !whole(&got) {
        let n = conn.read(&mut buf).await.ok().filter(|n| *n > 0)?;
        got.extend_from_slice(&buf[..n]);
    }
    Some(String::from_utf8_lossy(&got).into_owned())
}
