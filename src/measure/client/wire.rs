//! The HTTP/1.1 wire format of the lean transport (`http1.rs`): a request's head as bytes, a
//! response head parsed into what the transport needs ([`Head`]: status, framing, keep-alive,
//! the headers it keeps), and the chunked transfer coding decoded in place ([`Chunked`]).
//!
//! Pure: no socket, no clock, no allocation per body chunk. What the body's read calls per
//! chunk (`Framing::finished`, `Chunked::decode`) is `#[inline]`, so that it inlines into the
//! connection's read loop as it did when both lived in one file. A leaf: the connection handling
//! in `http1.rs` uses it, and it imports nothing of the client. A header the transport must
//! read is a field of [`Head`], filled in [`parse_head`].

/// A request head: `POST <path> HTTP/1.1`, `host` and `content-type` unless `headers` give
/// them, then `headers`; each line ends in CRLF (the `content-length` line and the blank line
/// follow per request: [`content_length`]).
pub(super) fn request_head(path: &str, host: &str, headers: &[(String, String)]) -> Vec<u8> {
    let given = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let mut head = format!("POST {path} HTTP/1.1\r\n");
    if !given("host") {
        head.push_str(&format!("host: {host}\r\n"));
    }
    if !given("content-type") {
        head.push_str("content-type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.into_bytes()
}

/// The end of a request head: its body's length, and the blank line.
pub(super) fn content_length(len: usize) -> String {
    format!("content-length: {len}\r\n\r\n")
}

/// Why a response head cannot be read (the transport reports it as a broken response).
#[derive(Debug, thiserror::Error)]
pub(super) enum HeadError {
    #[error("malformed response head: {0}")]
    Malformed(httparse::Error),
    #[error("malformed response head: content-length '{0}'")]
    ContentLength(String),
}

/// How the body's end is known.
#[derive(Debug)]
pub(super) enum Framing {
    Chunked(Chunked),
    Length(u64),
    Close { ended: bool },
}

impl Framing {
    #[inline]
    pub(super) fn finished(&self) -> bool {
        match self {
            Framing::Chunked(c) => c.is_done(),
            Framing::Length(n) => *n == 0,
            Framing::Close { ended } => *ended,
        }
    }
}

/// What a response head says.
#[derive(Debug)]
pub(super) struct Head {
    pub(super) status: u16,
    pub(super) framing: Framing,
    pub(super) keep_alive: bool,
    pub(super) location: Option<String>,
    pub(super) retry_after: Option<String>,
    /// The `Content-Type` header, as sent (a streamed answer's is named when no event came).
    pub(super) content_type: Option<String>,
    /// The value of the header asked for ([`parse_head`]'s `echo`); of several names, their
    /// values joined by newlines (an absent one empty), none when none came.
    pub(super) echoed: Option<String>,
    /// TGI's timing headers (`server_forms.rs`), bounded there; `None` when none came.
    pub(super) timing_headers: Option<serde_json::Value>,
}

/// Parses a response head at the start of `bytes`: its length and content (with the value of
/// the header `echo`, its last; `echo` may name several headers, one per line, an empty line
/// naming none), or `None` when more bytes are needed.
pub(super) fn parse_head(
    bytes: &[u8],
    echo: Option<&str>,
) -> Result<Option<(usize, Head)>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(HeadError::Malformed(e)),
    };
    let status = resp.code.unwrap_or(0);
    let mut keep_alive = resp.version == Some(1);
    let mut chunked = false;
    let mut length = None;
    let mut location = None;
    let mut retry_after = None;
    let mut content_type = None;
    let names: Vec<&str> = echo.map_or(Vec::new(), |e| e.split('\n').collect());
    let mut values: Vec<Option<String>> = vec![None; names.len()];
    let timing_headers =
        super::server_forms::tgi_headers((resp.headers.iter()).map(|h| (h.name, h.value)));
    for h in resp.headers.iter() {
        for (n, v) in names.iter().zip(values.iter_mut()) {
            if !n.is_empty() && h.name.eq_ignore_ascii_case(n) {
                *v = Some(String::from_utf8_lossy(h.value).into_owned());
            }
        }
        let value = std::str::from_utf8(h.value).unwrap_or("");
        let has = |token: &str| {
            value
                .split(',')
                .any(|t| t.trim().eq_ignore_ascii_case(token))
        };
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = has("chunked");
        } else if h.name.eq_ignore_ascii_case("content-length") {
            // Digits only, as RFC 9110 has it: `+5` or `5, 6` is refused, not guessed at.
            let digits = value.trim();
            let n = Some(digits)
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<u64>().ok())
                .filter(|n| length.is_none_or(|l| l == *n))
                .ok_or_else(|| HeadError::ContentLength(value.to_string()))?;
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("connection") && has("close") {
            keep_alive = false;
        } else if h.name.eq_ignore_ascii_case("location") {
            location = Some(String::from_utf8_lossy(h.value).into_owned());
        } else if h.name.eq_ignore_ascii_case("retry-after") {
            retry_after = Some(String::from_utf8_lossy(h.value).into_owned());
        } else if h.name.eq_ignore_ascii_case("content-type") {
            content_type = Some(String::from_utf8_lossy(h.value).into_owned());
        }
    }
    let echoed = match values.len() {
        0 | 1 => values.pop().flatten(),
        _ if values.iter().all(Option::is_none) => None,
        _ => Some(
            (values.into_iter().map(Option::unwrap_or_default))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    };
    // Both framings at once is how request smuggling starts (RFC 9112, 6.1): the chunked coding
    // wins, and the connection is not used again.
    if chunked && length.is_some() {
        keep_alive = false;
    }
    let framing = if status == 204 || status == 304 {
        Framing::Length(0)
    } else if chunked {
        Framing::Chunked(Chunked::default())
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        keep_alive = false;
        Framing::Close { ended: false }
    };
    Ok(Some((
        len,
        Head {
            status,
            framing,
            keep_alive,
            location,
            retry_after,
            content_type,
            echoed,
            timing_headers,
        },
    )))
}

/// A decoder for the chunked transfer coding that works in place and keeps its state between
/// reads, so a chunk may be split anywhere.
#[derive(Debug, Default)]
pub(super) struct Chunked {
    state: State,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum State {
    /// In the size line's hex digits.
    #[default]
    SizeStart,
    Size {
        size: u64,
    },
    /// After the size: extensions or whitespace up to the line's end.
    SizeRest {
        size: u64,
    },
    /// The data still to come in this chunk.
    Data {
        left: u64,
    },
    /// The CRLF after a chunk's data.
    DataEnd {
        cr_seen: bool,
    },
    /// Trailer lines after the last chunk; `empty` while the current line has no byte yet.
    Trailer {
        empty: bool,
    },
    Done,
}

impl Chunked {
    #[inline]
    pub(super) fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes `buf` in place: returns how many of its bytes were consumed (all, unless the
    /// body ended inside it) and where in it the data now lies. The data stays where its first
    /// piece was and later pieces move up behind it, so a read holding one chunk's data (a
    /// streamed event, usually) is not moved at all.
    #[inline]
    pub(super) fn decode(
        &mut self,
        buf: &mut [u8],
    ) -> Result<(usize, std::ops::Range<usize>), &'static str> {
        let mut i = 0;
        let (mut start, mut out) = (0, 0);
        while i < buf.len() {
            let b = buf[i];
            self.state = match self.state {
                State::SizeStart | State::Size { .. } => {
                    let size = match self.state {
                        State::Size { size } => Some(size),
                        _ => None,
                    };
                    match (hex_value(b), size) {
                        (Some(d), s) => {
                            let s = s.unwrap_or(0);
                            if s >> 60 != 0 {
                                return Err("chunk size too large");
                            }
                            State::Size { size: s << 4 | d }
                        }
                        (None, None) => return Err("chunk size missing"),
                        (None, Some(size)) => match b {
                            b'\n' => end_of_size(size),
                            b';' | b' ' | b'\t' | b'\r' => State::SizeRest { size },
                            _ => return Err("invalid chunk size"),
                        },
                    }
                }
                State::SizeRest { size } => match b {
                    b'\n' => end_of_size(size),
                    _ => State::SizeRest { size },
                },
                State::Data { left } => {
                    let n = (left as usize).min(buf.len() - i);
                    if out == 0 {
                        start = i;
                    } else {
                        buf.copy_within(i..i + n, start + out);
                    }
                    out += n;
                    i += n;
                    let left = left - n as u64;
                    self.state = if left == 0 {
                        State::DataEnd { cr_seen: false }
                    } else {
                        State::Data { left }
                    };
                    continue;
                }
                State::DataEnd { cr_seen } => match b {
                    b'\r' if !cr_seen => State::DataEnd { cr_seen: true },
                    b'\n' => State::SizeStart,
                    _ => return Err("missing CRLF after chunk data"),
                },
                State::Trailer { empty } => match b {
                    b'\n' if empty => State::Done,
                    b'\n' => State::Trailer { empty: true },
                    b'\r' => State::Trailer { empty },
                    _ => State::Trailer { empty: false },
                },
                State::Done => break,
            };
            i += 1;
        }
        Ok((i, start..start + out))
    }
}

fn end_of_size(size: u64) -> State {
    if size == 0 {
        State::Trailer { empty: true }
    } else {
        State::Data { left: size }
    }
}

fn hex_value(b: u8) -> Option<u64> {
    (b as char).to_digit(16).map(u64::from)
}
