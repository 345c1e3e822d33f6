//! Tests of the lean HTTP/1.1 transport against in-process servers on 127.0.0.1.

use super::super::wire::{parse_head, Chunked, Framing, Head, HeadError};
use super::*;
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Decodes `wire` fed in the given pieces: the data, and whether the body ended.
fn decode_in_pieces(wire: &[u8], cuts: &[usize]) -> Result<(Vec<u8>, bool), &'static str> {
    let mut d = Chunked::default();
    let mut data = Vec::new();
    let mut at = 0;
    for &cut in cuts.iter().chain(std::iter::once(&wire.len())) {
        let cut = cut.clamp(at, wire.len());
        let mut piece = wire[at..cut].to_vec();
        let (used, out) = d.decode(&mut piece)?;
        data.extend_from_slice(&piece[out]);
        if d.is_done() {
            assert_eq!(used, piece.len(), "nothing follows the body here");
        }
        at = cut;
    }
    Ok((data, d.is_done()))
}

fn encode(chunks: &[Vec<u8>]) -> Vec<u8> {
    let mut wire = Vec::new();
    for c in chunks.iter().filter(|c| !c.is_empty()) {
        wire.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        wire.extend_from_slice(c);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    wire
}

#[test]
fn chunked_split_at_every_byte_boundary() {
    let wire = b"5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nx-trailer: 1\r\n\r\n";
    let want = b"helloabcdefghijklmnopqrstuvwxyz".to_vec();
    for i in 0..=wire.len() {
        for j in i..=wire.len() {
            let (data, done) = decode_in_pieces(wire, &[i, j]).unwrap();
            assert_eq!(data, want, "cut at {i}, {j}");
            assert!(done);
        }
    }
}

#[test]
fn chunked_stops_at_the_end_of_the_body() {
    let mut wire = b"3\r\nabc\r\n0\r\n\r\nHTTP/1.1 200 OK".to_vec();
    let mut d = Chunked::default();
    let (used, out) = d.decode(&mut wire).unwrap();
    assert_eq!((used, &wire[out]), (13, &b"abc"[..]));
    assert!(d.is_done());
}

#[test]
fn chunked_rejects_bad_framing() {
    for (wire, why) in [
        (&b"zz\r\n"[..], "chunk size missing"),
        (b"3x\r\n", "invalid chunk size"),
        (b"3\r\nabcX", "missing CRLF after chunk data"),
        (b"fffffffffffffffff\r\n", "chunk size too large"),
    ] {
        assert_eq!(decode_in_pieces(wire, &[]), Err(why));
    }
    // Cut short: no error, but not done either.
    assert_eq!(
        decode_in_pieces(b"3\r\nab", &[]),
        Ok((b"ab".to_vec(), false))
    );
}

proptest! {
    #[test]
    fn chunked_round_trips_any_split(
        chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..6),
        cuts in prop::collection::vec(0usize..300, 0..8),
    ) {
        let wire = encode(&chunks);
        let mut cuts = cuts;
        cuts.sort_unstable();
        let (data, done) = decode_in_pieces(&wire, &cuts).unwrap();
        prop_assert_eq!(data, chunks.concat());
        prop_assert!(done);
    }
}

fn head(text: &str) -> Head {
    parse_head(text.as_bytes(), None).unwrap().unwrap().1
}

#[test]
fn head_gives_status_framing_and_keep_alive() {
    let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(h.status, 200);
    assert!(matches!(h.framing, Framing::Chunked(_)) && h.keep_alive);
    let h = head("HTTP/1.1 500 Oops\r\ncontent-length: 12\r\nConnection: close\r\n\r\n");
    assert_eq!(h.status, 500);
    assert!(matches!(h.framing, Framing::Length(12)) && !h.keep_alive);
    // No length: the body ends with the connection, which cannot be reused.
    let h = head("HTTP/1.1 200 OK\r\n\r\n");
    assert!(matches!(h.framing, Framing::Close { .. }) && !h.keep_alive);
    // HTTP/1.0 does not keep the connection by default.
    assert!(!head("HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n").keep_alive);
    assert!(matches!(
        head("HTTP/1.1 204 No Content\r\n\r\n").framing,
        Framing::Length(0)
    ));
}

#[test]
fn head_partial_and_malformed() {
    let full = "HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc";
    for i in 0..full.len() - 3 {
        assert!(
            parse_head(&full.as_bytes()[..i], None).unwrap().is_none(),
            "{i}"
        );
    }
    assert_eq!(
        parse_head(full.as_bytes(), None).unwrap().unwrap().0,
        full.len() - 3
    );
    assert!(matches!(
        parse_head(b"HTTX/1.1 200 OK\r\n\r\n", None),
        Err(HeadError::Malformed(_))
    ));
    assert!(matches!(
        parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n", None),
        Err(HeadError::ContentLength(_))
    ));
}

/// Reads one request (the tests send the body `{}`) from `conn`.
async fn read_request(conn: &mut TcpStream) {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !(got.windows(4).any(|w| w == b"\r\n\r\n") && got.ends_with(b"{}")) {
        let n = conn.read(&mut buf).await.unwrap();
        assert!(n > 0, "request cut short");
        got.extend_from_slice(&buf[..n]);
    }
}

/// A kept-alive connection is reused; one the server closed while idle is replaced once,
/// counted as a retry; `connection: close` keeps it out of the pool.
#[tokio::test]
async fn reuses_connections_and_retries_a_closed_one_once() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/completions", listener.local_addr().unwrap());
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
    let server = tokio::spawn(async move {
        let ok = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        // Connection 1: two requests, then closed while idle.
        let (mut c1, _) = listener.accept().await.unwrap();
        for _ in 0..2 {
            read_request(&mut c1).await;
            c1.write_all(ok).await.unwrap();
        }
        drop(c1);
        closed_tx.send(()).unwrap();
        // Connection 2: the retried request, answered with `connection: close`.
        let (mut c2, _) = listener.accept().await.unwrap();
        read_request(&mut c2).await;
        c2.write_all(b"HTTP/1.1 500 Internal Server Error\r\nconnection: close\r\ncontent-length: 4\r\n\r\noops")
            .await
            .unwrap();
        // No third connection.
        tokio::time::timeout(Duration::from_millis(200), listener.accept())
            .await
            .is_err()
    });
    let e = Endpoint::new(&url, &[], Duration::from_secs(5)).unwrap();
    let mut retries = 0;
    for _ in 0..2 {
        let mut r = e.post(b"{}", &mut retries).await.unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.next_chunk().await.unwrap().unwrap().0, b"hello");
        assert_eq!(r.next_chunk().await.unwrap(), None);
        e.put_back(r.into_reusable().expect("kept alive"));
    }
    assert_eq!(retries, 0);
    closed_rx.await.unwrap();
    let mut r = e.post(b"{}", &mut retries).await.unwrap();
    assert_eq!(retries, 1);
    assert_eq!(r.status, 500);
    assert_eq!(r.error_body(1024).await, b"oops");
    assert!(r.into_reusable().is_none(), "connection: close");
    assert!(server.await.unwrap(), "no third connection expected");
}

#[test]
fn endpoint_builds_the_request_head() {
    let headers = vec![("X-Key".to_string(), "v".to_string())];
    let e = Endpoint::new(
        "http://127.0.0.1:8080/v1/completions?a=1",
        &headers,
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(e.addr, "127.0.0.1:8080");
    assert_eq!(
        String::from_utf8(e.head).unwrap(),
        "POST /v1/completions?a=1 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n\
         content-type: application/json\r\nX-Key: v\r\n"
    );
    assert!(Endpoint::new("https://example.com/v1", &[], Duration::from_secs(5)).is_none());
}

/// A kept-alive connection closed after the whole request was written is
/// not sent again (the server may have run it); the request fails and names why.
#[tokio::test]
async fn a_request_written_on_a_reused_connection_is_never_sent_twice() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/completions", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (mut c1, _) = listener.accept().await.unwrap();
        read_request(&mut c1).await;
        c1.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            .await
            .unwrap();
        // The second request arrives whole, and the server closes without answering.
        read_request(&mut c1).await;
        drop(c1);
        // Nothing is sent again on a new connection.
        tokio::time::timeout(Duration::from_millis(300), listener.accept())
            .await
            .is_err()
    });
    let e = Endpoint::new(&url, &[], Duration::from_secs(5)).unwrap();
    let mut retries = 0;
    let mut r = e.post(b"{}", &mut retries).await.unwrap();
    assert_eq!(r.next_chunk().await.unwrap().unwrap().0, b"ok");
    e.put_back(r.into_reusable().expect("kept alive"));
    let err = e.post(b"{}", &mut retries).await.err().expect("fails");
    assert_eq!(retries, 0);
    match err {
        Error::Closed(msg) => assert!(msg.contains("not sent again"), "{msg}"),
        other => panic!("{other:?}"),
    }
    assert!(server.await.unwrap(), "the request was sent a second time");
}

/// A kept-alive connection that answers the written request with 408 (the server
/// timed it out as idle, so by definition did not take the request) is replaced once; the
/// request is answered on a new connection.
#[tokio::test]
async fn a_408_on_a_reused_connection_goes_to_a_new_one() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/completions", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (mut c1, _) = listener.accept().await.unwrap();
        read_request(&mut c1).await;
        c1.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            .await
            .unwrap();
        read_request(&mut c1).await;
        c1.write_all(
            b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
        )
        .await
        .unwrap();
        let (mut c2, _) = listener.accept().await.unwrap();
        read_request(&mut c2).await;
        c2.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nyes")
            .await
            .unwrap();
    });
    let e = Endpoint::new(&url, &[], Duration::from_secs(5)).unwrap();
    let mut retries = 0;
    let mut r = e.post(b"{}", &mut retries).await.unwrap();
    assert_eq!(r.next_chunk().await.unwrap().unwrap().0, b"ok");
    e.put_back(r.into_reusable().expect("kept alive"));
    let mut r = e.post(b"{}", &mut retries).await.unwrap();
    assert_eq!((r.status, retries), (200, 1));
    assert_eq!(r.next_chunk().await.unwrap().unwrap().0, b"yes");
    server.await.unwrap();
}

/// A server that announces keep-alive and closes after every response (llama.cpp): once one
/// pooled connection is found closed within a second of its response, no connection is pooled
/// again, so no later request can race the close.
#[tokio::test]
async fn a_server_that_closes_promptly_gets_no_reused_connections() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/completions", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        for _ in 0..3 {
            let (mut c, _) = listener.accept().await.unwrap();
            read_request(&mut c).await;
            c.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                .await
                .unwrap();
            // Closed at once, although the answer did not say so.
        }
    });
    let e = Endpoint::new(&url, &[], Duration::from_secs(5)).unwrap();
    let mut retries = 0;
    for round in 0..3 {
        let mut r = e.post(b"{}", &mut retries).await.unwrap();
        assert_eq!(r.next_chunk().await.unwrap().unwrap().0, b"ok");
        let conn = r.into_reusable().expect("announced keep-alive");
        // Let the server's close arrive before the next request looks at the pool.
        tokio::time::sleep(Duration::from_millis(50)).await;
        e.put_back(conn);
        assert_eq!(
            e.idle.lock().unwrap().len(),
            usize::from(round == 0),
            "round {round}"
        );
    }
    assert_eq!(retries, 1, "only the first pooled connection was tried");
    server.await.unwrap();
}

/// `+5` is no content-length, two different lengths are refused, and a response
/// framed both ways is read as chunked and its connection not reused.
#[test]
fn content_length_is_digits_and_both_framings_close_the_connection() {
    for bad in [
        "content-length: +5\r\n",
        "content-length: 5, 6\r\n",
        "content-length: \r\n",
        "content-length: 5\r\ncontent-length: 6\r\n",
    ] {
        let text = format!("HTTP/1.1 200 OK\r\n{bad}\r\n");
        assert!(
            matches!(
                parse_head(text.as_bytes(), None),
                Err(HeadError::ContentLength(_))
            ),
            "{bad:?} accepted"
        );
    }
    assert!(matches!(
        head("HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 5\r\n\r\n").framing,
        Framing::Length(5)
    ));
    let h = head("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 5\r\n\r\n");
    assert!(matches!(h.framing, Framing::Chunked(_)));
    assert!(
        !h.keep_alive,
        "a response framed both ways must not be reused"
    );
}
