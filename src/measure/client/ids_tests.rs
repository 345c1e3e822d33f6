//! Each request's id, sent and returned, over real sockets on 127.0.0.1.

use std::io::{Read, Write};

use super::*;
use crate::measure::clock::Clock;
use tokio_util::sync::CancellationToken;

/// Answers one request per connection with a two-event completions stream and the header
/// `x-request-id: <echo(i)>`; sends each request's head.
fn serve(
    listener: std::net::TcpListener,
    echo: Vec<String>,
    heads: std::sync::mpsc::Sender<String>,
) {
    for id in echo {
        let (mut conn, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let head = loop {
            let n = conn.read(&mut buf).unwrap();
            assert!(n > 0, "request cut short");
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).into_owned();
            if let Some(end) = text.find("\r\n\r\n") {
                let lower = text[..end].to_lowercase();
                let len: usize = (lower.split("content-length:").nth(1))
                    .and_then(|v| v.lines().next()?.trim().parse().ok())
                    .unwrap();
                if got.len() >= end + 4 + len {
                    break text[..end].to_string();
                }
            }
        };
        heads.send(head).unwrap();
        let body = "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
        let answer = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-request-id: {id}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
        conn.write_all(answer.as_bytes()).unwrap();
    }
}

/// Each request is sent with its own id in `x-request-id` (a warm-up's marked
/// `w`) and, when spans are exported, its `traceparent`; the record keeps the id, and keeps the id the server returns when it is plausible; one
/// of 200 characters is not kept.
#[test]
fn an_implausible_returned_id_is_not_kept() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let cfg = RunConfig {
        base_url: format!("http://{}", listener.local_addr().unwrap()),
        propagate_trace: true,
        ..RunConfig::default()
    };
    let echo = vec!["srv-1".to_string(), "x".repeat(200), "srv-3".to_string()];
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || serve(listener, echo, tx));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let records = rt.block_on(async {
        let client = Client::new(&cfg, &Secrets::default(), None, None).unwrap();
        let clock = Clock::start();
        let mut records = Vec::new();
        for (id, warmup) in [(7, false), (8, false), (0, true)] {
            let spec = RequestSpec {
                id,
                prompt: "hi".into(),
                output_len: 1,
                warmup,
                ..Default::default()
            };
            records.push(
                client
                    .send(&spec, 0, &clock, &CancellationToken::new())
                    .await,
            );
        }
        records
    });
    server.join().unwrap();
    let heads: Vec<String> = rx.try_iter().collect();
    for (r, head) in records.iter().zip(&heads) {
        assert!(r.is_ok(), "{:?}", r.outcome);
        let id = r.request_id.as_deref().expect("an id was sent");
        assert!(head.contains(&format!("\r\nx-request-id: {id}")), "{head}");
        let parent = crate::measure::traceid::traceparent(id);
        assert!(
            head.contains(&format!("\r\ntraceparent: {parent}")),
            "{head}"
        );
    }
    let ids: Vec<&str> = records
        .iter()
        .map(|r| r.request_id.as_deref().unwrap())
        .collect();
    let tag = ids[0].strip_suffix("-7").expect("<tag>-<id>");
    assert_eq!(
        ids,
        [format!("{tag}-7"), format!("{tag}-8"), format!("{tag}-w0")]
    );
    assert_eq!(records[0].server_request_id.as_deref(), Some("srv-1"));
    assert_eq!(
        records[1].server_request_id, None,
        "200 characters are no id"
    );
    assert_eq!(records[2].server_request_id.as_deref(), Some("srv-3"));
}

/// `--header x-request-id:...` beside `--request-id-header x-request-id` is
/// refused naming both flags (one value for every request would match nothing, or all).
#[test]
fn a_fixed_header_of_the_id_s_name_is_refused() {
    let cfg = RunConfig::default();
    let secrets = Secrets {
        headers: vec![("X-Request-Id".into(), "mine".into())],
        ..Secrets::default()
    };
    let e = Client::new(&cfg, &secrets, None, None)
        .err()
        .expect("refused");
    let e = e.to_string();
    assert!(
        e.contains("--header x-request-id") && e.contains("--request-id-header"),
        "{e}"
    );
    let none = RunConfig {
        request_id_header: None,
        ..RunConfig::default()
    };
    assert!(Client::new(&none, &secrets, None, None).is_ok());
}
