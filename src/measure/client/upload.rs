//! The upload of a request with media over reqwest (HTTPS), timed. reqwest
//! does not say when it connects or writes, so a body with media goes to it as [`Timed`]:
//! the same bytes in pieces of [`PIECE`], its exact length announced (hyper sends a
//! `Content-Length`, as for a whole body), each piece's hand-over noted. The HTTP library
//! takes the first piece once the connection is up and the request's head is written, and the
//! last once it has room for it: the upload is first piece taken to last piece taken.
//!
//! How close that is to the socket: hyper holds at most 16 pieces (64 KiB) before it writes,
//! and rustls at most 64 KiB of records it could not yet write, so the last piece is taken at
//! most about 128 KiB before the body's last byte reaches the kernel. Over the lean
//! transport (`http://`) the upload is timed at the socket itself (`http1.rs`).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use tokio::time::Instant;

/// Bytes handed to the HTTP library at a time.
pub(super) const PIECE: usize = 4 << 10;

/// When the body's first and last pieces were taken (set once each, by the HTTP library's
/// task; read after the response head arrived).
#[derive(Debug, Default)]
pub(super) struct Taken {
    pub first: OnceLock<Instant>,
    pub last: OnceLock<Instant>,
}

/// A request body handed over in pieces, each hand-over noted in [`Taken`].
pub(super) struct Timed {
    data: Bytes,
    at: usize,
    taken: Arc<Taken>,
}

impl Timed {
    pub(super) fn new(data: Vec<u8>) -> (Timed, Arc<Taken>) {
        let taken = Arc::new(Taken::default());
        let body = Timed {
            data: Bytes::from(data),
            at: 0,
            taken: taken.clone(),
        };
        (body, taken)
    }
}

impl hyper::body::Body for Timed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let len = self.data.len();
        if self.at >= len {
            return Poll::Ready(None);
        }
        let now = Instant::now();
        self.taken.first.get_or_init(|| now);
        let end = (self.at + PIECE).min(len);
        let piece = self.data.slice(self.at..end);
        self.at = end;
        if end == len {
            self.taken.last.get_or_init(|| now);
        }
        Poll::Ready(Some(Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.at >= self.data.len()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact((self.data.len() - self.at) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Body;

    /// The pieces make the body whole, its length is announced exactly, and both hand-overs
    /// are noted, the last with the last piece.
    #[tokio::test]
    async fn a_timed_body_is_whole_and_notes_its_hand_overs() {
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let (mut body, taken) = Timed::new(data.clone());
        assert_eq!(body.size_hint().exact(), Some(10_000));
        let mut got = Vec::new();
        let mut pieces = 0;
        while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
        {
            assert!(taken.first.get().is_some());
            pieces += 1;
            let piece = frame.unwrap().into_data().unwrap();
            got.extend_from_slice(&piece);
            assert_eq!(taken.last.get().is_some(), got.len() == data.len());
        }
        assert_eq!((got, pieces), (data, 3));
    }
}
