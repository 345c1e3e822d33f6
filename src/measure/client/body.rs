//! A response body being read, from either transport (the lean `http1` one or reqwest), so
//! `super`'s one read loop serves both; the outcome of a lean-transport failure; a bounded read
//! of a reqwest body.

use bytes::Bytes;
use tokio::time::Instant;

use super::http1;
use crate::measure::error::describe;
use crate::measure::record::{FailureKind, Outcome};

/// A response body being read, from either transport: one read loop for both.
pub(super) enum Body {
    Lean(http1::Response),
    /// The response and the piece last read from it.
    Reqwest(reqwest::Response, Bytes),
}

impl Body {
    pub(super) fn status(&self) -> u16 {
        match self {
            Body::Lean(r) => r.status,
            Body::Reqwest(r, _) => r.status().as_u16(),
        }
    }

    /// The next piece of the body as read, with when it arrived where the transport knows
    /// (the lean one); `None` at its end; a failure as the outcome.
    #[inline]
    pub(super) async fn next_chunk(&mut self) -> Result<Option<(&[u8], Option<Instant>)>, Outcome> {
        match self {
            Body::Lean(r) => match r.next_chunk().await {
                Ok(piece) => Ok(piece.map(|(bytes, at)| (bytes, Some(at)))),
                Err(e) => Err(lean_failure(e)),
            },
            Body::Reqwest(r, last) => match r.chunk().await {
                Ok(Some(bytes)) => {
                    *last = bytes;
                    Ok(Some((&last[..], None)))
                }
                Ok(None) => Ok(None),
                Err(e) => {
                    let e = e.without_url();
                    let kind = if e.is_timeout() {
                        FailureKind::Timeout
                    } else {
                        FailureKind::StreamBroken
                    };
                    Err(Outcome::failed(
                        kind,
                        format!("stream broken: {}", describe(&e)),
                    ))
                }
            },
        }
    }

    /// A redirect's target (`Location`), for a 3xx response.
    pub(super) fn location(&self) -> Option<String> {
        if !(300..400).contains(&self.status()) {
            return None;
        }
        match self {
            Body::Lean(r) => r.location.clone(),
            Body::Reqwest(r, _) => r
                .headers()
                .get(reqwest::header::LOCATION)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        }
    }

    /// The `Retry-After` header of a response, as sent.
    pub(super) fn retry_after(&self) -> Option<String> {
        match self {
            Body::Lean(r) => r.retry_after.clone(),
            Body::Reqwest(r, _) => r
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        }
    }

    /// The `Content-Type` header of a response, as sent.
    pub(super) fn content_type(&self) -> Option<String> {
        match self {
            Body::Lean(r) => r.content_type.clone(),
            Body::Reqwest(r, _) => r
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        }
    }

    /// An error response's body (its first `max` bytes), as text.
    pub(super) async fn error_text(self, max: usize) -> String {
        let bytes = match self {
            Body::Lean(mut r) => r.error_body(max).await,
            Body::Reqwest(r, _) => read_at_most(r, max)
                .await
                .map(|(b, _)| b)
                .unwrap_or_default(),
        };
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Leaves a lean response in `slot` (its connection may serve another request).
    pub(super) fn keep(self, slot: &mut Option<http1::Response>) {
        if let Body::Lean(r) = self {
            *slot = Some(r);
        }
    }
}

/// The outcome of a lean-transport failure. A connection closed before any response byte (on a
/// fresh connection) counts as a broken stream: the server cut the exchange off, as in a
/// disconnect mid-body. Malformed HTTP framing is a broken stream too, not `malformed_stream`,
/// which is about the SSE events carried inside a well-framed body (reqwest classed chunked
/// coding errors as body errors, which were `stream_broken` as well).
pub(super) fn lean_failure(e: http1::Error) -> Outcome {
    match e {
        http1::Error::Connect(msg) => Outcome::failed(FailureKind::Connect, msg),
        http1::Error::Closed(msg) | http1::Error::Broken(msg) => {
            Outcome::failed(FailureKind::StreamBroken, format!("stream broken: {msg}"))
        }
    }
}

/// Reads at most `max` bytes of a reqwest body, chunk by chunk (never the whole body at once);
/// the flag says the body held more, which is left unread.
pub async fn read_at_most(
    mut resp: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = max - bytes.len();
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() > room {
            return Ok((bytes, true));
        }
    }
    Ok((bytes, false))
}
