//! The simulator holds under hostile clients. Each test drives raw TCP on
//! 127.0.0.1 against `sim::spawn` with tiny limits (`HttpLimits`), so nothing waits for the
//! defaults; every test is bounded by [`BOUND`] and shuts its server down. Timing is only
//! checked as "the connection was closed", never against a wall-clock figure. The tests of the
//! simulator's timers run on a paused clock (the simulator keeps them on tokio's clock when
//! `precise_timing` is off): a slow client's pace, an idle span and the limits are virtual,
//! so a busy machine cannot reorder them.

use std::net::SocketAddr;
use std::time::Duration;

use servebench::sim::{self, HttpLimits, SimConfig, SimServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest any test may take (a hang fails instead of blocking the suite).
const BOUND: Duration = Duration::from_secs(20);

async fn start(limits: HttpLimits) -> SimServer {
    let config = SimConfig {
        precise_timing: false,
        limits,
        ..SimConfig::default()
    };
    sim::spawn(config, ([127, 0, 0, 1], 0).into())
        .await
        .expect("sim starts")
}

/// Reads until the server closes the connection: what it sent, and that it closed (a reset
/// also counts as closed; what was read before it is kept).
async fn read_to_close(stream: &mut (impl AsyncReadExt + Unpin)) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// Reads one response with a `content-length` body from a kept-alive connection.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text[..end]
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if got.len() >= end + 4 + len {
                return text;
            }
        }
        let n = stream.read(&mut buf).await.expect("read");
        assert!(n > 0, "closed mid-response: {text:?}");
        got.extend_from_slice(&buf[..n]);
    }
}

const HEALTH: &[u8] = b"GET /health HTTP/1.1\r\nhost: sim\r\n\r\n";

/// `GET /health` on a new connection that closes after it; "" if it was refused or reset.
async fn health(addr: SocketAddr) -> String {
    let Ok(mut s) = TcpStream::connect(addr).await else {
        return String::new();
    };
    let request = b"GET /health HTTP/1.1\r\nhost: sim\r\nconnection: close\r\n\r\n";
    if s.write_all(request).await.is_err() {
        return String::new();
    }
    read_to_close(&mut s).await
}

/// Asserts that what a closed connection got, if anything, is the answer `status`.
fn assert_answer_or_nothing(got: &str, status: &str) {
    assert!(
        got.is_empty() || got.starts_with(&format!("HTTP/1.1 {status}")),
        "expected {status} or a bare close, got {got:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn slow_head_is_dropped_after_head_timeout() {
    tokio::time::timeout(BOUND, async {
        let limits = HttpLimits {
            head_timeout: Duration::from_millis(300),
            ..HttpLimits::default()
        };
        let server = start(limits).await;
        let stream = TcpStream::connect(server.local_addr()).await.unwrap();
        let (mut rx, mut tx) = stream.into_split();
        // Slowloris: one byte of a never-ending head every 20 ms (of the paused clock).
        let writer = tokio::spawn(async move {
            let head = b"POST /v1/completions HTTP/1.1\r\nx-slow: ";
            for &b in head.iter().chain(std::iter::repeat_n(&b'a', 2000)) {
                if tx.write_all(&[b]).await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        let got = read_to_close(&mut rx).await;
        assert_answer_or_nothing(&got, "408");
        assert_eq!(server.stats().rejected_requests, 1);
        // The server still serves others.
        assert!(health(server.local_addr())
            .await
            .starts_with("HTTP/1.1 200"));
        writer.abort();
        server.shutdown().await;
    })
    .await
    .expect("bounded");
}

#[tokio::test(start_paused = true)]
async fn silent_connection_is_closed_after_head_timeout() {
    tokio::time::timeout(BOUND, async {
        let limits = HttpLimits {
            head_timeout: Duration::from_millis(200),
            ..HttpLimits::default()
        };
        let server = start(limits).await;
        let mut s = TcpStream::connect(server.local_addr()).await.unwrap();
        assert_eq!(read_to_close(&mut s).await, "", "closed without an answer");
        server.shutdown().await;
    })
    .await
    .expect("bounded");
}

#[tokio::test(start_paused = true)]
async fn kept_alive_connection_idle_between_requests_is_not_timed() {
    tokio::time::timeout(BOUND, async {
        let limits = HttpLimits {
            head_timeout: Duration::from_millis(200),
            ..HttpLimits::default()
        };
        let server = start(limits).await;
        let mut s = TcpStream::connect(server.local_addr()).await.unwrap();
        s.write_all(HEALTH).await.unwrap();
        assert!(read_response(&mut s).await.starts_with("HTTP/1.1 200"));
        // Idle for three head timeouts, on the paused clock.
        tokio::time::advance(Duration::from_millis(600)).await;
        s.write_all(HEALTH).await.unwrap();
        assert!(read_response(&mut s).await.starts_with("HTTP/1.1 200"));
        server.shutdown().await;
    })
    .await
    .expect("bounded");
}

#[tokio::test(start_paused = true)]
async fn slow_body_is_dropped_after_body_timeout() {
    tokio::time::timeout(BOUND, async {
        let limits = HttpLimits {
            body_timeout: Duration::from_millis(300),
            ..HttpLimits::default()
        };
        let server = start(limits).await;
        let mut s = TcpStream::connect(server.local_addr()).await.unwrap();
        s.write_all(b"POST /v1/completions HTTP/1.1\r\ncontent-length: 100\r\n\r\n{\"prompt\"")
            .await
            .unwrap();
        let got = read_to_close(&mut s).await;
        assert!(got.starts_with("HTTP/1.1 408"), "{got:?}");
        assert_eq!(server.stats().rejected_requests, 1);
        server.shutdown().await;
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn oversized_head_gets_431() {
    tokio::time::timeout(BOUND, async {
        let limits = HttpLimits {
            max_head_bytes: 1024,
            ..HttpLimits::default()
        };
        let server = start(limits).await;
        let mut s = TcpStream::connect(server.local_addr()).await.unwrap();
        let head = format!(
            "GET /health HTTP/1.1\r\nx-big: {}\r\n\r\n",
            "a".repeat(4000)
        );
        s.write_all(head.as_bytes()).await.unwrap();
        let got = read_to_close(&mut s).await;
        assert!(got.starts_with("HTTP/1.1 431"), "{got:?}");
        server.shutdown().await;
    })
    .await
    .expect("bounded");
}

/// Sends `head`, then `filler` forever (until the server closes), and returns what came back.
async fn endless(addr: SocketAddr, head: &'static [u8], filler: &'static [u8]) -> String {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut rx, mut tx) = stream.into_split();
    let writer = tokio::spawn(async move {
        if tx.write_all(head).await.is_err() {
            return;
        }
        // At most 16 MiB, far past any limit under test.
        for _ in 0..(16 << 20) / filler.len() {
            if tx.write_all(filler).await.is_err() {
                return;
            }
            tokio::task::yield_now().await;
        }
    });
    let got = read_to_close(&mut rx).await;
    writer.abort();
    got
}

#[tokio::test]
async fn endless_chunk_extension_is_an_error_and_closed() {
    tokio::time::timeout(BOUND, async {
        let limits = HttpLimits {
            max_chunk_ext_bytes: 256,
            ..HttpLimits::default()
        };
        let server = start(limits).await;
        let addr = server.local_addr();
        // One extension that never ends.
        let got = endless(
            addr,
            b"POST /v1/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n5;ext=",
            &[b'a'; 100],
        )
        .await;
        assert_answer_or_nothing(&got, "400");
        // Small extensions on every chunk, more than the budget together.
        let got = endless(
            addr,
            b"POST /v1/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n",
            b"1;aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nx\r\n",
        )
        .await;
        assert_answer_or_nothing(&got, "400");
        // Trailers that never end.
        let got = endless(
            addr,
            b"POST /v1/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n0\r\n",
            b"x-trailer: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
        )
        .await;
        assert_answer_or_nothing(&got, "431");
        assert_eq!(server.stats().rejected_requests, 3);
        // Within the limits, extensions and trailers are skipped and the request is served.
        let mut s = TcpStream::connect(addr).await.unwrap();
        let body = r#"{"prompt":"a b","max_tokens":2}"#;
        let req = format!(
            "POST /v1/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n{:x};name=value\r\n{body}\r\n0\r\nx-t: 1\r\n\r\n",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let got = read_to_close(&mut s).await;
        assert!(got.starts_with("HTTP/1.1 200"), "{got:?}");
        server.shutdown().await;
    })
    .await
    .expect("bounded");
}

#[tokio::test(start_paused = true)]
async fn connection_cap_refuses_the_extra_connection() {
    tokio::time::timeout(BOUND, async {
        let limits = HttpLimits {
            max_connections: 2,
            ..HttpLimits::default()
        };
        let server = start(limits).await;
        let addr = server.local_addr();
        let mut a = TcpStream::connect(addr).await.unwrap();
        let mut b = TcpStream::connect(addr).await.unwrap();
        // Accepted in order: the third is over the cap while the first two are open.
        let mut c = TcpStream::connect(addr).await.unwrap();
        let got = read_to_close(&mut c).await;
        assert!(got.starts_with("HTTP/1.1 503"), "{got:?}");
        assert_eq!(server.stats().refused_connections, 1);
        for s in [&mut a, &mut b] {
            s.write_all(HEALTH).await.unwrap();
            assert!(read_response(s).await.starts_with("HTTP/1.1 200"));
        }
        // Once one closes, its slot is free again (when the server has seen the close).
        drop(a);
        let mut served = false;
        for _ in 0..100 {
            if health(addr).await.starts_with("HTTP/1.1 200") {
                served = true;
                break;
            }
            // The paused clock's 20 ms: the server's task sees the close meanwhile.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(served, "a freed slot is reused");
        server.shutdown().await;
    })
    .await
    .expect("bounded");
}

/// Sends `request` on a new connection and reads until the simulator closes it.
async fn answer_then_close(addr: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(request).await.expect("write");
    tokio::time::timeout(BOUND, read_to_close(&mut s))
        .await
        .expect("the simulator closed the connection")
}

#[tokio::test]
async fn content_length_is_digits_and_both_framings_close_the_connection() {
    let sim = start(HttpLimits::default()).await;
    let addr = sim.local_addr();
    for length in ["+5", "-0", "5, 6", " ", "0x5"] {
        let request =
            format!("POST /health HTTP/1.1\r\nhost: sim\r\ncontent-length: {length}\r\n\r\nhello");
        let got = answer_then_close(addr, request.as_bytes()).await;
        assert!(
            got.starts_with("HTTP/1.1 400"),
            "content-length {length:?}: {got:?}"
        );
    }
    let twice = b"POST /health HTTP/1.1\r\nhost: sim\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello!";
    let got = answer_then_close(addr, twice).await;
    assert!(got.starts_with("HTTP/1.1 400"), "two lengths: {got:?}");
    // Both framings: read as chunked, answered once, then the connection is closed (a
    // pipelined request behind it is never read as a second request).
    let both = b"POST /health HTTP/1.1\r\nhost: sim\r\ntransfer-encoding: chunked\r\ncontent-length: 5\r\n\r\n0\r\n\r\nGET /health HTTP/1.1\r\nhost: sim\r\n\r\n";
    let got = answer_then_close(addr, both).await;
    assert_eq!(got.matches("HTTP/1.1 ").count(), 1, "{got:?}");
    assert!(got.contains("connection: close"), "{got:?}");
    // The same length twice is one length.
    let same = b"POST /health HTTP/1.1\r\nhost: sim\r\ncontent-length: 5\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello";
    let got = answer_then_close(addr, same).await;
    assert!(!got.starts_with("HTTP/1.1 400"), "{got:?}");
    sim.shutdown().await;
}
