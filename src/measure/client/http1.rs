//! The lean HTTP/1.1 transport for measured streaming requests to plain `http://` servers.
//!
//! Why not reqwest/hyper here (README, "Hand-written, and why"): per connection hyper held about
//! 37 KiB (16 KiB read buffer, a 9 KiB dispatch-channel block, another 8 KiB buffer, task
//! cells), and every body chunk crossed a channel from hyper's connection task to the measuring
//! task: one more wake per event, and a timestamp taken one hand-off after the socket read. Here
//! the measuring task reads the socket itself into one 4 KiB buffer per stream (it grows only
//! for a larger response head) and decodes the chunked coding in place.
//!
//! Every read goes through [`rxtime::recv`], and a response keeps when the bytes of its latest
//! read reached the host, all on one clock per response ([`rxtime::StreamClock`]: the kernel's
//! receive stamps, or the read times when its first read came unstamped), so the caller's
//! chunk timestamps do not depend on when its task got round to reading, and never go back.
//!
//! This file is the connection side: the pool, connecting, writing a request, reading a
//! response's head and body off the socket. The bytes' format (the request head, the response
//! head parsed, the chunked coding decoded) is `wire.rs`'s.
//!
//! What it speaks: one POST at a time per connection (no pipelining); responses framed by
//! `transfer-encoding: chunked`, `content-length`, or the connection's end. Connections are kept
//! alive when the server allows it and the body was read to its end, until the server is seen
//! closing a kept-alive connection within a second of its response: from then on every
//! request has its own connection (llama.cpp announces keep-alive and closes after every
//! stream; reusing its connections races that close, and a request lost to it cannot be resent).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::Instant;

use super::source::{connect_from, Sources};
use super::wire::{content_length, parse_head, request_head, Framing};
use crate::measure::{ahead, rxtime};

/// Bytes read per socket read; also the starting size of a response head's buffer.
const BUF_SIZE: usize = 2048;
/// Largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// A server that closes a kept-alive connection sooner than this after its response does not
/// keep connections alive (an idle timeout, such as uvicorn's 5 s, is longer).
const PROMPT_CLOSE: Duration = Duration::from_secs(1);

/// Why an exchange failed.
#[derive(Debug, PartialEq)]
pub enum Error {
    /// No TCP connection could be made.
    Connect(String),
    /// The connection was closed or reset after the request was sent and before any response
    /// byte. Not sent again: the server may have received it.
    Closed(String),
    /// The response broke off or could not be framed.
    Broken(String),
}

/// A plain-HTTP endpoint: where to connect, the request head's fixed part, idle connections.
pub struct Endpoint {
    addr: String,
    /// `POST <path> HTTP/1.1` and every header but `content-length`, each ending in CRLF.
    head: Vec<u8>,
    /// Kept-alive connections, each with when it was put back.
    idle: Mutex<Vec<(TcpStream, Instant)>>,
    /// False once the server has closed a kept-alive connection within [`PROMPT_CLOSE`] of
    /// its response: it does not keep connections alive whatever it announces (llama.cpp
    /// closes after every stream), and a reused one would race its close.
    reuse: AtomicBool,
    /// Longest wait for a new connection.
    connect_timeout: Duration,
    /// The response header whose value a [`Response`] keeps (`--request-id-header`,
    /// lowercase), if any.
    echo: Option<String>,
    /// `--source-addresses`: what each new connection binds to, in turn.
    sources: Sources,
}

impl Endpoint {
    /// For an `http://` URL; `headers` are sent with every request (already validated as header
    /// names and values). `None` for any other scheme.
    pub fn new(
        url: &str,
        headers: &[(String, String)],
        connect_timeout: Duration,
    ) -> Option<Endpoint> {
        let url = reqwest::Url::parse(url).ok()?;
        if url.scheme() != "http" {
            return None;
        }
        let host = url.host_str()?;
        let port = url.port_or_known_default()?;
        let host_header = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        Some(Endpoint {
            addr: format!("{host}:{port}"),
            head: request_head(&path, &host_header, headers),
            idle: Mutex::new(Vec::new()),
            reuse: AtomicBool::new(true),
            connect_timeout,
            echo: None,
            sources: Sources::default(),
        })
    }

    /// This endpoint, keeping the value of the response header `name` (the server's request
    /// id, `--request-id-header`) in each [`Response`].
    pub fn echoing(mut self, name: Option<&str>) -> Endpoint {
        self.echo = name.map(str::to_ascii_lowercase);
        self
    }

    /// This endpoint, binding each new connection to the next of `sources` in turn.
    pub fn binding_to(mut self, sources: &[std::net::IpAddr]) -> Endpoint {
        self.sources = Sources::new(sources);
        self
    }

    /// Sends `body` and reads the response head. The request goes to another connection only
    /// when the server provably never saw it (hyper-util's rule): a pooled connection found
    /// closed (or holding stray bytes, such as an idle 408) before any byte of the request was
    /// written, one whose write failed (reset, broken pipe) before the request was complete, or
    /// one that answered 408 (the server did not take the request); `retried` counts that
    /// (once per request). A connection closed after the whole request was written is not sent
    /// again: the server may have received it, and would run it twice.
    #[cfg(test)]
    pub async fn post(&self, body: &[u8], retried: &mut u32) -> Result<Response, Error> {
        self.post_noting(body, b"", retried, None).await
    }

    /// As [`Endpoint::post`], with `extra` (this request's own header lines, each ending in
    /// CRLF, already checked: a mix class's tenant, its request id) after the fixed ones,
    /// calling `written` just before each
    /// attempt's first byte is written (a request sent again on a new connection calls it
    /// again).
    pub async fn post_noting(
        &self,
        body: &[u8],
        extra: &[u8],
        retried: &mut u32,
        written: Option<&(dyn Fn() + Sync)>,
    ) -> Result<Response, Error> {
        let mut request = Vec::with_capacity(self.head.len() + extra.len() + 32 + body.len());
        request.extend_from_slice(&self.head);
        request.extend_from_slice(extra);
        request.extend_from_slice(content_length(body.len()).as_bytes());
        request.extend_from_slice(body);
        let mut stale = false;
        while let Some((stream, since)) = self.take_idle() {
            let closes_promptly = since.elapsed() < PROMPT_CLOSE;
            if !usable_while_idle(&stream) {
                stale = true;
                if closes_promptly {
                    self.reuse.store(false, Ordering::Relaxed);
                }
                continue;
            }
            let now = Instant::now();
            let mut phase = SendPhase {
                connect: None,
                written: now,
                body_written: now,
                body_whole: false,
            };
            written.inspect(|w| w());
            let sent = send(&stream, &request).await;
            phase.body_written = Instant::now();
            let echo = self.echo.as_deref();
            let response = match sent {
                Sent::Whole => {
                    phase.body_whole = true;
                    Response::read_head(stream, true, phase, echo).await
                }
                // The server answered, closed or reset before the request was whole: what it
                // said, if anything; an incomplete request is never processed, so without an
                // answer it goes to a new connection.
                Sent::Early | Sent::Failed(_) => match answer_to_part(stream, phase, echo).await {
                    Some(r) => Ok(r),
                    None => {
                        stale = true;
                        continue;
                    }
                },
            };
            // A 408 on a kept-alive connection is the server closing it for idleness
            // (it may have been sent before the request arrived): by its definition
            // the server did not take the request, so it goes to a new connection.
            if matches!(&response, Ok(r) if r.status == 408) {
                stale = true;
                continue;
            }
            if closes_promptly && matches!(&response, Err(Error::Closed(_))) {
                self.reuse.store(false, Ordering::Relaxed);
            }
            *retried += u32::from(stale);
            return response;
        }
        *retried += u32::from(stale);
        let began = Instant::now();
        let stream = Box::pin(self.connect()).await?; // boxed: rare, not in every stream
        let connected = Instant::now();
        let mut phase = SendPhase {
            connect: Some((began, connected)),
            written: connected,
            body_written: connected,
            body_whole: false,
        };
        written.inspect(|w| w());
        let sent = send(&stream, &request).await;
        phase.body_written = Instant::now();
        let echo = self.echo.as_deref();
        match sent {
            Sent::Whole => {
                phase.body_whole = true;
                Response::read_head(stream, false, phase, echo).await
            }
            // An answer before the request was whole (a 413 for a body over the server's
            // limit) is the server's answer, not a broken connection.
            Sent::Early => match answer_to_part(stream, phase, echo).await {
                Some(r) => Ok(r),
                None => Err(Error::Broken(
                    "cannot send the request: the server closed the connection before it was whole"
                        .into(),
                )),
            },
            Sent::Failed(e) => match answer_to_part(stream, phase, echo).await {
                Some(r) => Ok(r),
                None => Err(Error::Broken(format!("cannot send the request: {e}"))),
            },
        }
    }

    fn take_idle(&self) -> Option<(TcpStream, Instant)> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    /// Keeps a connection whose response was read to its end for the next request (unless
    /// the server was seen to close kept-alive connections promptly).
    pub fn put_back(&self, stream: TcpStream) {
        if self.reuse.load(Ordering::Relaxed) {
            self.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((stream, Instant::now()));
        }
    }

    async fn connect(&self) -> Result<TcpStream, Error> {
        let source = self.sources.next();
        let from = source.map_or(String::new(), |ip| format!(" from {ip}"));
        let fail =
            |why: String| Error::Connect(format!("cannot connect to {}{from}: {why}", self.addr));
        let limit = self.connect_timeout;
        let connecting = async {
            match source {
                Some(ip) => connect_from(ip, &self.addr).await,
                None => TcpStream::connect(&self.addr).await,
            }
        };
        let stream = tokio::time::timeout(limit, connecting)
            .await
            .map_err(|_| {
                fail(format!(
                    "no answer within {:.1} s (--connect-timeout)",
                    limit.as_secs_f64()
                ))
            })?
            .map_err(|e| fail(e.to_string()))?;
        stream.set_nodelay(true).map_err(|e| fail(e.to_string()))?;
        // Where the kernel refuses, reads carry no stamp and their time is taken instead.
        rxtime::enable(&stream);
        Ok(stream)
    }
}

/// How writing a request ended.
enum Sent {
    /// All of it was handed to the socket.
    Whole,
    /// The server sent something (or closed) while the request waited for room: the rest is
    /// not written (a server that answers early, such as a 413 for a body over its limit, may
    /// read no more of it).
    Early,
    /// The write failed (reset, broken pipe): an answer may still lie in the socket.
    Failed(io::Error),
}

/// Writes `request`, watching the socket for an answer whenever the write has to wait for
/// room ([`Sent`]). A request that fits the socket's buffer is written at once, as before.
async fn send(stream: &TcpStream, request: &[u8]) -> Sent {
    let mut at = 0;
    while at < request.len() {
        match stream.try_write(&request[at..]) {
            Ok(0) => return Sent::Failed(io::ErrorKind::WriteZero.into()),
            Ok(n) => at += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let mut byte = [0u8; 1];
                tokio::select! {
                    biased;
                    // A byte to read, the server's close or an error: stop writing.
                    _ = stream.peek(&mut byte) => return Sent::Early,
                    ready = stream.writable() => {
                        if let Err(e) = ready {
                            return Sent::Failed(e);
                        }
                    }
                }
            }
            Err(e) => return Sent::Failed(e),
        }
    }
    Sent::Whole
}

/// How long an answer to a request that could not be written whole is waited for: whatever
/// the server sent before it closed or reset the connection is already in the socket.
const ANSWER_TO_PART: Duration = Duration::from_secs(1);

/// The server's answer to a request it stopped taking part-way (`send` ended `Early` or
/// `Failed`), read from what it sent before closing; `None` when it sent no whole response
/// head. The connection is not used again: the request was cut short.
async fn answer_to_part(
    stream: TcpStream,
    phase: SendPhase,
    echo: Option<&str>,
) -> Option<Response> {
    let read = Response::read_head(stream, false, phase, echo);
    let mut r = tokio::time::timeout(ANSWER_TO_PART, read)
        .await
        .ok()?
        .ok()?;
    r.keep_alive = false;
    Some(r)
}

/// True when an idle pooled connection can carry a request: the server has not closed or
/// reset it, and sent nothing since its last response (asked of the kernel, without waiting).
#[cfg(unix)]
fn usable_while_idle(stream: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut byte = 0u8;
    // SAFETY: a one-byte peek into a local buffer on a socket this stream owns.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}

#[cfg(not(unix))]
fn usable_while_idle(_stream: &TcpStream) -> bool {
    true
}

/// A response whose head has been read; its body is read with [`Response::next_chunk`].
pub struct Response {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    framing: Framing,
    /// The server allows the connection to be used again.
    keep_alive: bool,
    /// More bytes came than the body holds: the connection is out of step.
    overrun: bool,
    /// When the newest byte of the latest read reached the host.
    arrived: Instant,
    /// The one clock of this response's times.
    rx: rxtime::StreamClock,
    pub status: u16,
    /// The `Location` header (a redirect's target), as sent.
    pub location: Option<String>,
    /// The `Retry-After` header (a 429's or 503's advice), as sent.
    pub retry_after: Option<String>,
    /// The `Content-Type` header, as sent.
    pub content_type: Option<String>,
    /// How the request reached the server: its connection's setup (if new), its first write.
    pub phase: SendPhase,
    /// The value of the endpoint's echoed header ([`Endpoint::echoing`]), as sent.
    pub echoed: Option<String>,
    /// TGI's timing headers, bounded (`server_forms.rs`).
    pub timing_headers: Option<serde_json::Value>,
}

/// When a request's connection was set up and its first byte written.
#[derive(Clone, Copy, Debug)]
pub struct SendPhase {
    /// A new connection's TCP connect: its start and the moment it was established; `None`
    /// for a kept-alive connection reused.
    pub connect: Option<(Instant, Instant)>,
    /// Just before the first byte of the request was handed to the socket.
    pub written: Instant,
    /// Just after its last byte was handed to the socket (the kernel holds the rest), or when
    /// the writing stopped (`body_whole` false).
    pub body_written: Instant,
    /// The whole request was written; false when the server answered or closed before that
    /// (the upload did not end: a 413 for a body over the server's limit).
    pub body_whole: bool,
}

/// One read: the byte count and when its newest byte arrived, on the response's one clock
/// (`rxtime::StreamClock`: the kernel's stamps, or the read times when its first read was
/// unstamped).
async fn read(
    stream: &TcpStream,
    buf: &mut [u8],
    clock: &mut rxtime::StreamClock,
) -> io::Result<(usize, Instant)> {
    let (n, stamp) = rxtime::recv(stream, buf).await?;
    Ok((n, clock.time(stamp)))
}

impl Response {
    /// Reads the response head; `reused`: the request went over a kept-alive connection (named
    /// in the message when it is closed before any response byte); the value of the header
    /// `echo` is kept.
    async fn read_head(
        stream: TcpStream,
        reused: bool,
        phase: SendPhase,
        echo: Option<&str>,
    ) -> Result<Response, Error> {
        let not_resent = if reused {
            " on a kept-alive connection, after the request was sent (not sent again: the server may have received it)"
        } else {
            ""
        };
        let mut buf = vec![0u8; BUF_SIZE];
        let mut end = 0;
        let mut arrived = Instant::now();
        let mut rx = rxtime::StreamClock::default();
        loop {
            if end > 0 {
                let parsed = parse_head(&buf[..end], echo);
                if let Some((len, head)) = parsed.map_err(|e| Error::Broken(e.to_string()))? {
                    // An interim 1xx answer (100 Continue) is skipped; 101 is not expected.
                    if (100..200).contains(&head.status) && head.status != 101 {
                        buf.copy_within(len..end, 0);
                        end -= len;
                        continue;
                    }
                    return Ok(Response {
                        stream,
                        buf,
                        start: len,
                        end,
                        framing: head.framing,
                        keep_alive: head.keep_alive,
                        overrun: false,
                        arrived,
                        rx,
                        status: head.status,
                        location: head.location,
                        retry_after: head.retry_after,
                        content_type: head.content_type,
                        phase,
                        echoed: head.echoed,
                        timing_headers: head.timing_headers,
                    });
                }
            }
            if end == buf.len() {
                if buf.len() >= MAX_HEAD {
                    return Err(Error::Broken(format!(
                        "response head larger than {} KiB",
                        MAX_HEAD / 1024
                    )));
                }
                buf.resize(buf.len() * 2, 0);
            }
            let n = match read(&stream, &mut buf[end..], &mut rx).await {
                Ok((n, at)) => {
                    arrived = at;
                    n
                }
                Err(e) if end == 0 => {
                    return Err(Error::Closed(format!("connection lost{not_resent}: {e}")))
                }
                Err(e) => return Err(broken(&e)),
            };
            if n == 0 {
                return Err(if end == 0 {
                    Error::Closed(format!("connection closed before the response{not_resent}"))
                } else {
                    Error::Broken("connection closed in the middle of the response head".into())
                });
            }
            end += n;
        }
    }

    /// The next piece of body data as it was read from the socket (several chunks of the
    /// chunked coding that arrived together come as one piece) and when the read that completed
    /// it arrived; `None` at the body's end.
    pub async fn next_chunk(&mut self) -> Result<Option<(&[u8], Instant)>, Error> {
        loop {
            if self.start == self.end {
                if self.framing.finished() {
                    return Ok(None);
                }
                // The buffer only grew for a large head; bodies are read in BUF_SIZE pieces.
                // Both ends reset before the read: a read cancelled by a timer leaves nothing
                // to decode twice.
                let n = self.buf.len().min(BUF_SIZE);
                (self.start, self.end) = (0, 0);
                ahead::note(ahead::Slot::Read, self.buf.as_ptr());
                (self.end, self.arrived) =
                    match read(&self.stream, &mut self.buf[..n], &mut self.rx).await {
                        Ok(read) => read,
                        Err(e) => return Err(broken(&e)),
                    };
                if self.end == 0 {
                    if let Framing::Close { ended } = &mut self.framing {
                        *ended = true;
                        return Ok(None);
                    }
                    return Err(Error::Broken(
                        "connection closed in the middle of the body".into(),
                    ));
                }
            }
            if let Some(range) = self.take_buffered()? {
                return Ok(Some((&self.buf[range], self.arrived)));
            }
        }
    }

    /// Decodes the buffered bytes; the data they hold, as a range of `buf`.
    fn take_buffered(&mut self) -> Result<Option<std::ops::Range<usize>>, Error> {
        let (s, e) = (self.start, self.end);
        self.start = e;
        let (used, data) = match &mut self.framing {
            Framing::Close { .. } => (e - s, 0..e - s),
            Framing::Length(left) => {
                let n = (*left).min((e - s) as u64);
                *left -= n;
                (n as usize, 0..n as usize)
            }
            Framing::Chunked(c) => c
                .decode(&mut self.buf[s..e])
                .map_err(|why| Error::Broken(format!("malformed chunked body: {why}")))?,
        };
        self.overrun |= used < e - s;
        Ok((!data.is_empty()).then_some(s + data.start..s + data.end))
    }

    /// The body's first bytes (at most `max`), for an error response's message.
    pub async fn error_body(&mut self, max: usize) -> Vec<u8> {
        let mut text = Vec::new();
        while text.len() < max {
            match self.next_chunk().await {
                Ok(Some((b, _))) => text.extend_from_slice(&b[..b.len().min(max - text.len())]),
                _ => break,
            }
        }
        text
    }

    /// The connection, when the response can be finished from what has arrived without waiting
    /// (the chunked coding's last chunk usually follows the final event at once) and the server
    /// allows another request on it.
    pub fn into_reusable(mut self) -> Option<TcpStream> {
        if !self.keep_alive {
            return None;
        }
        loop {
            if self.start < self.end {
                self.take_buffered().ok()?;
                continue;
            }
            if self.framing.finished() {
                break;
            }
            let n = self.buf.len().min(BUF_SIZE);
            match self.stream.try_read(&mut self.buf[..n]) {
                Ok(0) | Err(_) => return None,
                Ok(n) => (self.start, self.end) = (0, n),
            }
        }
        (!self.overrun).then_some(self.stream)
    }
}

fn broken(e: &io::Error) -> Error {
    Error::Broken(format!("connection lost: {e}"))
}

#[cfg(test)]
#[path = "http1_tests.rs"]
mod tests;
