//! End-to-end tests of the simulated server over real sockets, with a minimal raw HTTP/1.1
//! client (so the tests share nothing with servebench's client code and can see frame
//! boundaries, arrival times and cut connections).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::*;

mod engine;
mod http1;
mod lifecycle;
mod timing_faults;
mod wire;

// ---------------------------------------------------------------------------------------------
// A tiny HTTP/1.1 client

#[derive(Debug)]
struct RawResponse {
    status: u16,
    headers: Vec<(String, String)>,
    /// Body frames (chunks of a chunked body) with their arrival time since the request.
    frames: Vec<(Duration, Vec<u8>)>,
    /// Whether the body ended properly (terminal chunk or full content-length).
    complete: bool,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn body(&self) -> String {
        let bytes: Vec<u8> = self.frames.iter().flat_map(|(_, f)| f.clone()).collect();
        String::from_utf8(bytes).unwrap()
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body()).unwrap()
    }

    /// SSE payloads (after `data: `), in order.
    fn events(&self) -> Vec<String> {
        split_events(&self.body())
    }
}

fn split_events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("event without data prefix: {e:?}"))
                .to_string()
        })
        .collect()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

async fn request(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> RawResponse {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: sim\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let sent = Instant::now();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();

    let mut buf: Vec<u8> = Vec::new();
    let mut status = 0;
    let mut headers = Vec::new();
    let mut in_body = false;
    let mut chunked = false;
    let mut content_length: Option<usize> = None;
    let mut frames = Vec::new();
    let mut complete = false;
    let mut body_len = 0;
    let mut tmp = vec![0u8; 64 * 1024];
    loop {
        let n = match stream.read(&mut tmp).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let at = sent.elapsed();
        buf.extend_from_slice(&tmp[..n]);
        if !in_body {
            let Some(end) = find(&buf, b"\r\n\r\n") else {
                continue;
            };
            let text = String::from_utf8(buf[..end].to_vec()).unwrap();
            let mut lines = text.split("\r\n");
            status = lines
                .next()
                .unwrap()
                .split(' ')
                .nth(1)
                .unwrap()
                .parse()
                .unwrap();
            for line in lines {
                let (k, v) = line.split_once(':').unwrap();
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
            chunked = headers
                .iter()
                .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
            content_length = headers
                .iter()
                .find(|(k, _)| k == "content-length")
                .map(|(_, v)| v.parse().unwrap());
            buf.drain(..end + 4);
            in_body = true;
        }
        if chunked {
            while let Some(line_end) = find(&buf, b"\r\n") {
                let size_text = std::str::from_utf8(&buf[..line_end]).unwrap();
                let size = usize::from_str_radix(size_text.trim(), 16).unwrap();
                if buf.len() < line_end + 2 + size + 2 {
                    break;
                }
                if size == 0 {
                    complete = true;
                    buf.clear();
                    break;
                }
                let data = buf[line_end + 2..line_end + 2 + size].to_vec();
                buf.drain(..line_end + 2 + size + 2);
                frames.push((at, data));
            }
        } else if !buf.is_empty() {
            body_len += buf.len();
            frames.push((at, std::mem::take(&mut buf)));
        }
        if complete || content_length.is_some_and(|l| body_len >= l) {
            complete = true;
            break;
        }
    }
    if !chunked && content_length.is_none() && in_body {
        // Read-to-EOF body: complete when the connection closed cleanly.
        complete = true;
    }
    RawResponse {
        status,
        headers,
        frames,
        complete,
    }
}

async fn post(addr: SocketAddr, path: &str, body: &str) -> RawResponse {
    request(addr, "POST", path, Some(body)).await
}

/// The fast config with these faults.
fn with_faults(faults: FaultConfig) -> SimConfig {
    SimConfig { faults, ..fast() }
}

fn fast() -> SimConfig {
    SimConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        ..SimConfig::default()
    }
}

async fn start(config: SimConfig) -> SimServer {
    // These tests pause tokio's clock; the precise timer reads the real one.
    let config = SimConfig {
        precise_timing: false,
        ..config
    };
    spawn(config, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

fn parse(event: &str) -> Value {
    serde_json::from_str(event).unwrap_or_else(|e| panic!("bad JSON {event:?}: {e}"))
}

fn assert_sse_headers(r: &RawResponse) {
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("cache-control"), Some("no-cache"));
}
