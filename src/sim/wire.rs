//! The HTTP/1.1 wire format of the simulator's server: parsing a request head (with
//! `httparse`) and its framing headers, and writing a response head, a chunk of chunked
//! coding and the plain-text answers to requests and connections the server refuses.
//!
//! # What it owns
//! - [`Bad`]: a request that cannot be answered normally, its status and one-line reason
//!   (431 for an oversized head, 413 for an oversized body, 408 past a deadline, else 400),
//!   and the text of each such reason.
//! - [`parse_head`], [`has_token`], [`content_length`], [`chunk_size`], [`chunk_ext_bytes`]:
//!   what a request's bytes say.
//! - [`response_head`], [`chunk`], [`rejection`], [`refusal`]: the bytes of an answer.
//!
//! # What it must not touch
//! Sockets, deadlines and buffers are the connection's (`http1.rs`); the answers' bodies are
//! the router's. It imports nothing of the simulator, so both the connection and any later
//! writer of HTTP/1.1 can use it. Like all of `sim`, nothing of servebench's client side.
//!
//! # Extending it
//! A new framing rule (a header the server must read or write) goes here as a pure function
//! over bytes or headers; `http1.rs` calls it where the connection reads or writes.

use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode};

/// Most header fields in a request head (431 beyond).
const MAX_HEADERS: usize = 100;

/// A chunk-size line without its extensions: 16 hex digits and CRLF.
pub(crate) const CHUNK_SIZE_LINE: usize = 18;

/// A request that cannot be answered normally: its status and a one-line reason.
pub(crate) struct Bad(pub(crate) StatusCode, pub(crate) String);

impl Bad {
    /// 400 with `why`.
    pub(crate) fn request(why: impl Into<String>) -> Bad {
        Bad(StatusCode::BAD_REQUEST, why.into())
    }

    /// 400: a chunked body that does not read, saying why.
    pub(crate) fn chunked(why: &str) -> Bad {
        Bad::request(format!("bad chunked body: {why}"))
    }

    /// 400: the client closed the connection before the request was whole.
    pub(crate) fn closed() -> Bad {
        Bad::request("connection closed mid-request")
    }

    /// 431: a request head over `max` bytes.
    pub(crate) fn head_too_large(max: usize) -> Bad {
        Bad(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!("request head larger than {max} bytes"),
        )
    }

    /// 413: a request body over `max` bytes.
    pub(crate) fn body_too_large(max: usize) -> Bad {
        Bad(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body larger than {max} bytes"),
        )
    }

    /// 400: a chunked body's extensions over `max` bytes in all.
    pub(crate) fn ext_too_large(max: usize) -> Bad {
        Bad::chunked(&format!("chunk extensions larger than {max} bytes"))
    }

    /// 431: a chunked body's trailers over `max` bytes.
    pub(crate) fn trailers_too_large(max: usize) -> Bad {
        Bad(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!("trailers larger than {max} bytes"),
        )
    }

    /// 408: a request's head or body did not arrive within `limit`.
    pub(crate) fn timed_out(what: &str, limit: Duration) -> Bad {
        Bad(
            StatusCode::REQUEST_TIMEOUT,
            format!("request {what} not received within {limit:?}"),
        )
    }
}

/// Parses a complete request head: the request without its body, the head's length and
/// whether it is HTTP/1.1. `None` if the head is incomplete.
pub(crate) fn parse_head(
    buf: &[u8],
) -> Result<Option<(axum::http::request::Builder, usize, bool)>, Bad> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Bad(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "too many headers".into(),
            ))
        }
        Err(e) => return Err(Bad::request(format!("bad request: {e}"))),
    };
    let http11 = req.version == Some(1);
    let method = Method::from_bytes(req.method.unwrap_or("").as_bytes())
        .map_err(|_| Bad::request("invalid method"))?;
    let mut builder = Request::builder()
        .method(method)
        .uri(req.path.unwrap_or("/"))
        .version(if http11 {
            axum::http::Version::HTTP_11
        } else {
            axum::http::Version::HTTP_10
        });
    for h in req.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes());
        let value = HeaderValue::from_bytes(h.value);
        let (Ok(name), Ok(value)) = (name, value) else {
            return Err(Bad::request("invalid header"));
        };
        builder = builder.header(name, value);
    }
    Ok(Some((builder, len, http11)))
}

/// Whether a comma-separated header has `token` (case-insensitive).
pub(crate) fn has_token(headers: &HeaderMap, name: HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.to_str()
            .is_ok_and(|s| s.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    })
}

/// The request's `content-length` (0 without one): digits only (`+5` and `-0` are refused,
/// though Rust's integer parser takes them), and every copy of the header the same.
pub(crate) fn content_length(headers: &HeaderMap) -> Result<usize, Bad> {
    let mut len = None;
    for v in headers.get_all(header::CONTENT_LENGTH) {
        let digits = v.as_bytes().trim_ascii();
        let this = (!digits.is_empty() && digits.iter().all(u8::is_ascii_digit))
            .then(|| std::str::from_utf8(digits).ok()?.parse::<usize>().ok())
            .flatten();
        match (this, len) {
            (Some(n), None) => len = Some(n),
            (Some(n), Some(m)) if n == m => {}
            _ => return Err(Bad::request("invalid content-length")),
        }
    }
    Ok(len.unwrap_or(0))
}

/// The bytes of a whole chunk-size line's (`line`, ending in LF) extensions: what follows the
/// size in hex, less the CRLF.
pub(crate) fn chunk_ext_bytes(line: &[u8]) -> usize {
    let digits = (line.iter())
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(line.len());
    line.len().saturating_sub(digits + 2)
}

/// The chunk size a whole chunk-size line (`line`, ending in LF) gives.
pub(crate) fn chunk_size(line: &[u8]) -> Result<u64, Bad> {
    match httparse::parse_chunk_size(line) {
        Ok(httparse::Status::Complete((n, size))) if n == line.len() => Ok(size),
        _ => Err(Bad::chunked("invalid chunk size")),
    }
}

/// Where `needle` first occurs in `haystack`.
pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The head of a response with `status` and `headers` (their framing headers replaced):
/// `content-length` when `length` is known (informational answers aside), else
/// `transfer-encoding: chunked` when `chunked`, and `connection: close` unless `keep_alive`.
pub(crate) fn response_head(
    status: StatusCode,
    headers: &HeaderMap,
    length: Option<u64>,
    chunked: bool,
    keep_alive: bool,
) -> Vec<u8> {
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(
        format!(
            "HTTP/1.1 {} {}\r\n",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        )
        .as_bytes(),
    );
    // A `date` header as real servers send (RFC 9110, section 6.6.1): sharded runs estimate
    // their clock offset from it (`shard::probe_clock_offset`).
    let date = httpdate::fmt_http_date(std::time::SystemTime::now());
    head.extend_from_slice(format!("date: {date}\r\n").as_bytes());
    for (name, value) in headers {
        if [
            header::CONTENT_LENGTH,
            header::TRANSFER_ENCODING,
            header::CONNECTION,
        ]
        .contains(name)
        {
            continue;
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    if let Some(len) = length.filter(|_| !status.is_informational()) {
        head.extend_from_slice(format!("content-length: {len}\r\n").as_bytes());
    } else if chunked {
        head.extend_from_slice(b"transfer-encoding: chunked\r\n");
    }
    if !keep_alive {
        head.extend_from_slice(b"connection: close\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// Replaces `wire` with `data` as it goes on the wire: one chunk of chunked coding when
/// `chunked`, else as is.
pub(crate) fn chunk(wire: &mut Vec<u8>, data: &[u8], chunked: bool) {
    wire.clear();
    if chunked {
        wire.extend_from_slice(format!("{:X}\r\n", data.len()).as_bytes());
    }
    wire.extend_from_slice(data);
    if chunked {
        wire.extend_from_slice(b"\r\n");
    }
}

/// The whole answer to a request that cannot be answered normally: its status, its reason as
/// a plain-text line, and `connection: close`.
pub(crate) fn rejection(bad: &Bad) -> String {
    let Bad(status, why) = bad;
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{why}\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        why.len() + 1
    )
}

/// The whole answer to a connection over the server's `max_connections`: 503, and close.
pub(crate) fn refusal(max_connections: usize) -> String {
    let why = format!("too many connections (limit {max_connections})\n");
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{why}",
        why.len()
    )
}
