//! The simulator's HTTP/1.1 server, its connections: accepts them, reads requests (their
//! bytes read by `wire.rs`), answers them through the axum [`Router`] (one route table for
//! every way of serving it), and writes responses straight to the socket.
//!
//! Why not hyper: the simulator is the ground truth for measuring clients, so it must keep its
//! schedule at thousands of concurrent streams on one core (`docs/performance.md`,
//! "Simulator throughput"). With hyper every chunk of every stream passed through a task
//! wake-up, the body stream and hyper's dispatcher and encoder. Here an exact-mode stream is
//! taken out of its response (the [`Handoff`] extension) and handed to a scheduler thread
//! (`sched.rs`), which writes its chunks itself; other responses are written from their body:
//! with `content-length` when its size is known, else in chunked coding (each body frame one
//! chunk, written as it comes).
//!
//! What it speaks: HTTP/1.1 with keep-alive and pipelining, `content-length` or chunked
//! request bodies, `Expect: 100-continue`; HTTP/1.0 requests get one response each, the
//! connection closing after it (a streamed body is then delimited by the close). A malformed
//! request gets 400 (431 for an oversized head, 413 for an oversized body) and the connection
//! is closed.
//!
//! Hostile clients (`HttpLimits` in `config.rs`, with their defaults): at most
//! `max_connections` connections are open (one more is answered 503 and closed at once); a
//! request head must arrive within `head_timeout` and its body within `body_timeout` (else
//! 408 and close: a slowloris client that sends a byte a second is dropped after 10 s);
//! heads, bodies, chunk extensions and trailers are bounded in bytes (431, 413, 400, 431). The
//! read buffer holds at most one head, or one body in progress, and shrinks back after a
//! large request; a chunked body is copied out chunk by chunk as it arrives.
//!
//! The wire format itself (parsing a head, the framing headers, writing a response head or a
//! chunk, the text of each 4xx answer) is `wire.rs`'s: this file owns sockets, buffers,
//! deadlines and the order of things.
//!
//! Arrival: accepted sockets ask the kernel for receive timestamps (`rxtime.rs`), and each
//! request carries the stamp of the read that completed it as an [`Arrival`] extension; the
//! handlers start the request's schedule there (see "The schedule" in `mod.rs`), so time a
//! request spent waiting for this one thread to get round to it is not added to its TTFT.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, Method, Request, StatusCode};
use axum::response::Response;
use axum::Router;
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tower_service::Service;

use super::config::HttpLimits;
use super::sched::{Outcome, Scheduler, Ticket};
use super::state::{Counters, Shared};
use super::stream::Handoff;
use super::time::offset;
use super::wire::{self, Bad, CHUNK_SIZE_LINE};
use crate::measure::rxtime;

/// When a request arrived (see the module docs); a handler's extractor. Requests that did not
/// come through this server (or came without a stamp) arrive when the server finished reading
/// them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arrival(pub(crate) Instant);

impl<S: Send + Sync> FromRequestParts<S> for Arrival {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<Arrival>()
            .copied()
            .unwrap_or(Arrival(Instant::now())))
    }
}

/// Read buffer capacity kept between requests (a larger one is shrunk back).
const BUF_KEEP: usize = 64 << 10;
/// Longest wait to write the answer to a rejected request before closing anyway.
const REJECT_WRITE: Duration = Duration::from_secs(1);

/// Connections open now; a slot is held by each connection's task.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Answers a connection over `limits.max_connections` with 503 and closes it, without
/// waiting: whatever the client already sent is read and dropped first (so the close is a
/// FIN, not a reset that could discard the answer).
fn refuse(tcp: TcpStream, limits: &HttpLimits) {
    let answer = wire::refusal(limits.max_connections);
    // A fresh socket's send buffer takes it; if not, the client only sees the close.
    let _ = tcp.try_write(answer.as_bytes());
    let mut sink = [0u8; 4096];
    for _ in 0..16 {
        if !matches!(tcp.try_read(&mut sink), Ok(n) if n > 0) {
            break;
        }
    }
}

/// Accepts connections on `listener` until shutdown, then waits for open connections to end.
/// Accepted connections get `TCP_NODELAY` (small frames must not wait for Nagle's algorithm).
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    app: Router,
) -> io::Result<()> {
    // Exact mode with the real clock: streams are served by the scheduler threads.
    let scheduler = if shared.engine.is_none() && shared.config.precise_timing {
        // One scheduler thread per worker of this runtime (`servebench sim --threads N`).
        let threads = tokio::runtime::Handle::current().metrics().num_workers();
        Some(Arc::new(Scheduler::start(shared.clone(), threads)?))
    } else {
        None
    };
    let (alive, mut all_closed) = mpsc::channel::<()>(1);
    let limits = shared.config.limits;
    let open = Arc::new(AtomicUsize::new(0));
    let stop = shared.shutdown.wait();
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = &mut stop => break,
        };
        match accepted {
            Ok((tcp, peer)) => {
                shared.stats.record_peer(peer.ip());
                if open.load(Ordering::Relaxed) >= limits.max_connections {
                    Counters::bump(&shared.stats.refused_connections);
                    refuse(tcp, &limits);
                    continue;
                }
                // Only this loop adds: the count cannot pass the cap.
                open.fetch_add(1, Ordering::Relaxed);
                let slot = Slot(open.clone());
                // Best effort: without it, small frames may wait for Nagle's algorithm.
                let _ = tcp.set_nodelay(true);
                // Stamps are on the real clock: useless when tokio's clock is paused (tests).
                if shared.config.precise_timing {
                    rxtime::enable(&tcp);
                }
                let conn = Connection {
                    sock: Arc::new(tcp),
                    shared: shared.clone(),
                    app: app.clone(),
                    scheduler: scheduler.clone(),
                    buf: Vec::new(),
                    stamp: None,
                    limits,
                    accepted: Instant::now(),
                    requests: 0,
                    deadline: None,
                };
                let alive = alive.clone();
                tokio::spawn(async move {
                    conn.run().await;
                    drop(slot);
                    drop(alive);
                });
            }
            // Out of file descriptors, or a connection reset before it was accepted: retry.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    drop(listener);
    drop(alive);
    if let Some(scheduler) = &scheduler {
        scheduler.wake();
    }
    // Every connection task holds a sender; `None` once all have ended.
    let _ = all_closed.recv().await;
    Ok(())
}

/// A parsed request, with what the response needs to know about it.
struct Incoming {
    request: Request<Body>,
    keep_alive: bool,
    http11: bool,
}

struct Connection {
    sock: Arc<TcpStream>,
    shared: Arc<Shared>,
    app: Router,
    scheduler: Option<Arc<Scheduler>>,
    /// Bytes read but not consumed yet (pipelined requests).
    buf: Vec<u8>,
    /// The kernel's arrival stamp of the latest read, if it had one.
    stamp: Option<Instant>,
    limits: HttpLimits,
    /// When the connection was accepted (its first head is timed from there).
    accepted: Instant,
    /// Requests read so far on this connection.
    requests: u64,
    /// Reads past this instant fail with `TimedOut` (the head's or the body's deadline).
    deadline: Option<Instant>,
}

impl Connection {
    async fn run(mut self) {
        let shared = self.shared.clone();
        let stop = shared.shutdown.wait();
        tokio::pin!(stop);
        loop {
            let read = tokio::select! {
                r = self.read_request() => r,
                _ = &mut stop => return,
            };
            let incoming = match read {
                Ok(Some(incoming)) => incoming,
                Ok(None) => return,
                Err(bad) => {
                    Counters::bump(&shared.stats.rejected_requests);
                    let answer = wire::rejection(&bad);
                    let write = write_all(&self.sock, answer.as_bytes());
                    let _ = tokio::time::timeout(REJECT_WRITE, write).await;
                    return;
                }
            };
            let head_only = incoming.request.method() == Method::HEAD;
            let response = match self.app.call(incoming.request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            let keep_alive = incoming.keep_alive && !shared.shutdown.is_triggered();
            let reusable = self
                .respond(response, keep_alive, head_only, incoming.http11)
                .await;
            if !(reusable && keep_alive) {
                return;
            }
        }
    }

    /// Reads more bytes into the buffer, keeping their arrival stamp; 0 at end of stream.
    /// Past `self.deadline`, fails with `TimedOut` and reads nothing.
    async fn read_more(&mut self) -> io::Result<usize> {
        let len = self.buf.len();
        self.buf.resize(len + (8 << 10), 0);
        let recv = rxtime::recv(&self.sock, &mut self.buf[len..]);
        let read = match self.deadline {
            Some(at) => tokio::time::timeout_at(at, recv)
                .await
                .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into())),
            None => recv.await,
        };
        let n = read.as_ref().map_or(0, |(n, _)| *n);
        self.buf.truncate(len + n);
        let (n, stamp) = read?;
        self.stamp = stamp.map(rxtime::Stamp::instant);
        Ok(n)
    }

    /// The next request, or `None` when the client closed the connection between requests.
    async fn read_request(&mut self) -> Result<Option<Incoming>, Bad> {
        let limits = self.limits;
        // The first head is timed from the accept, later ones from their first byte.
        self.deadline = (self.requests == 0).then(|| offset(self.accepted, limits.head_timeout));
        let (builder, head_len, http11) = loop {
            if !self.buf.is_empty() {
                let head = wire::parse_head(&self.buf)?;
                let len = head.as_ref().map_or(self.buf.len(), |(_, len, _)| *len);
                if len > limits.max_head_bytes {
                    return Err(Bad::head_too_large(limits.max_head_bytes));
                }
                if let Some(head) = head {
                    break head;
                }
                if self.deadline.is_none() {
                    self.deadline = Some(offset(Instant::now(), limits.head_timeout));
                }
            }
            match self.read_more().await {
                Ok(0) | Err(_) if self.buf.is_empty() => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    return Err(Bad::timed_out("head", limits.head_timeout))
                }
                Ok(0) | Err(_) => return Err(Bad::closed()),
                Ok(_) => {}
            }
        };
        self.requests += 1;
        self.buf.drain(..head_len);
        self.deadline = Some(offset(Instant::now(), limits.body_timeout));
        let headers = builder.headers_ref().cloned().unwrap_or_default();
        let chunked = wire::has_token(&headers, header::TRANSFER_ENCODING, "chunked");
        // Both framings at once is how request smuggling starts (RFC 9112, section 6.1): the
        // body is read as chunked and the connection closed after the answer, as hyper does.
        let keep_alive = http11
            && !wire::has_token(&headers, header::CONNECTION, "close")
            && !(chunked && headers.contains_key(header::CONTENT_LENGTH));
        if wire::has_token(&headers, header::EXPECT, "100-continue") {
            let write = write_all(&self.sock, b"HTTP/1.1 100 Continue\r\n\r\n");
            if let Some(at) = self.deadline {
                let _ = tokio::time::timeout_at(at, write).await;
            }
        }
        let body = if chunked {
            self.read_chunked().await?
        } else {
            let len = wire::content_length(&headers)?;
            if len > limits.max_body_bytes {
                return Err(Bad::body_too_large(limits.max_body_bytes));
            }
            while self.buf.len() < len {
                self.more_or(Bad::closed()).await?;
            }
            Bytes::from(self.buf.drain(..len).collect::<Vec<u8>>())
        };
        self.deadline = None;
        if self.buf.capacity() > BUF_KEEP {
            self.buf.shrink_to(BUF_KEEP.max(self.buf.len()));
        }
        let mut request = builder
            .body(Body::from(body))
            .map_err(|e| Bad::request(format!("invalid request: {e}")))?;
        let now = Instant::now();
        let arrival = match self.stamp {
            Some(at) => {
                self.shared
                    .stats
                    .record_intake(now.saturating_duration_since(at));
                at.min(now)
            }
            None => now,
        };
        request.extensions_mut().insert(Arrival(arrival));
        Ok(Some(Incoming {
            request,
            keep_alive,
            http11,
        }))
    }

    /// A chunked request body (chunk extensions and trailers are skipped, within
    /// `limits.max_chunk_ext_bytes` and `limits.max_trailer_bytes`). Consumed bytes leave the
    /// read buffer as they are parsed, and chunk data is copied out as it arrives.
    async fn read_chunked(&mut self) -> Result<Bytes, Bad> {
        let limits = self.limits;
        let too_large = || Bad::body_too_large(limits.max_body_bytes);
        let mut body = Vec::new();
        let mut ext_bytes = 0usize;
        loop {
            // A chunk-size line: the size in hex, extensions, CRLF.
            let line = loop {
                if let Some(i) = wire::find(&self.buf, b"\n") {
                    break i + 1;
                }
                let budget = limits.max_chunk_ext_bytes.saturating_sub(ext_bytes);
                if self.buf.len() > CHUNK_SIZE_LINE.saturating_add(budget) {
                    return Err(Bad::ext_too_large(limits.max_chunk_ext_bytes));
                }
                self.more_or(Bad::chunked("truncated")).await?;
            };
            ext_bytes = ext_bytes.saturating_add(wire::chunk_ext_bytes(&self.buf[..line]));
            if ext_bytes > limits.max_chunk_ext_bytes {
                return Err(Bad::ext_too_large(limits.max_chunk_ext_bytes));
            }
            let size = wire::chunk_size(&self.buf[..line])?;
            self.buf.drain(..line);
            if size == 0 {
                return self.skip_trailers(body).await;
            }
            let size = usize::try_from(size).map_err(|_| too_large())?;
            if body.len().saturating_add(size) > limits.max_body_bytes {
                return Err(too_large());
            }
            let mut left = size;
            loop {
                let take = left.min(self.buf.len());
                body.extend_from_slice(&self.buf[..take]);
                self.buf.drain(..take);
                left -= take;
                if left == 0 {
                    break;
                }
                self.more_or(Bad::chunked("truncated")).await?;
            }
            while self.buf.len() < 2 {
                self.more_or(Bad::chunked("truncated")).await?;
            }
            if &self.buf[..2] != b"\r\n" {
                return Err(Bad::chunked("missing CRLF after chunk data"));
            }
            self.buf.drain(..2);
        }
    }

    /// After the last chunk: skips trailer lines up to the empty line and returns `body`.
    async fn skip_trailers(&mut self, body: Vec<u8>) -> Result<Bytes, Bad> {
        let max = self.limits.max_trailer_bytes;
        let too_large = || Bad::trailers_too_large(max);
        let mut trailers = 0usize;
        loop {
            match wire::find(&self.buf, b"\r\n") {
                Some(0) => {
                    self.buf.drain(..2);
                    return Ok(Bytes::from(body));
                }
                Some(i) => {
                    trailers = trailers.saturating_add(i + 2);
                    if trailers > max {
                        return Err(too_large());
                    }
                    self.buf.drain(..i + 2);
                }
                None if trailers.saturating_add(self.buf.len()) > max.saturating_add(2) => {
                    return Err(too_large())
                }
                None => self.more_or(Bad::chunked("truncated")).await?,
            }
        }
    }

    /// Reads more of a body; `err` at end of stream, 408 past the body's deadline.
    async fn more_or(&mut self, err: Bad) -> Result<(), Bad> {
        match self.read_more().await {
            Ok(n) if n > 0 => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                Err(Bad::timed_out("body", self.limits.body_timeout))
            }
            _ => Err(err),
        }
    }

    /// Writes `response`; false if the connection cannot be used any more.
    async fn respond(
        &mut self,
        response: Response,
        keep_alive: bool,
        head_only: bool,
        http11: bool,
    ) -> bool {
        let (parts, body) = response.into_parts();
        let status = parts.status;
        let no_body = head_only
            || status.is_informational()
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED;
        let length = body.size_hint().exact();
        let chunked = http11 && length.is_none() && !no_body;
        // Without chunked coding, an unsized body ends when the connection closes.
        let keep_alive = keep_alive && (length.is_some() || chunked || no_body);
        let mut head = wire::response_head(status, &parts.headers, length, chunked, keep_alive);
        if no_body {
            return write_all(&self.sock, &head).await.is_ok();
        }
        if length.is_some() {
            let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
                return false;
            };
            head.extend_from_slice(&bytes);
            return write_all(&self.sock, &head).await.is_ok();
        }
        if write_all(&self.sock, &head).await.is_err() {
            return false;
        }
        let scheduled = self.scheduler.as_ref().and_then(|scheduler| {
            let machine = parts.extensions.get::<Handoff>()?.take()?;
            Some((scheduler, machine))
        });
        if let Some((scheduler, machine)) = scheduled {
            let mut ticket = Ticket::new(machine, self.sock.clone(), chunked);
            loop {
                let Some((back, outcome)) = scheduler.serve(ticket).await else {
                    return false;
                };
                ticket = back;
                match outcome {
                    Outcome::End => return true,
                    Outcome::Cut | Outcome::Closed => return false,
                    Outcome::Blocked => {
                        if write_all(&self.sock, &ticket.pending).await.is_err() {
                            return false;
                        }
                        ticket.pending.clear();
                    }
                }
            }
        }
        let mut frames = body.into_data_stream();
        let mut framed = Vec::new();
        while let Some(frame) = frames.next().await {
            // A body error (a simulated disconnect) cuts the connection.
            let Ok(data) = frame else { return false };
            if data.is_empty() {
                continue;
            }
            wire::chunk(&mut framed, &data, chunked);
            if write_all(&self.sock, &framed).await.is_err() {
                return false;
            }
        }
        !chunked || write_all(&self.sock, b"0\r\n\r\n").await.is_ok()
    }
}

/// Writes all of `buf`, waiting for the socket as needed.
async fn write_all(sock: &TcpStream, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        sock.writable().await?;
        match sock.try_write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
