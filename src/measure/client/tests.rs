//! Tests of the client over real sockets on 127.0.0.1.

use super::api::{Answer, Answered, BodySpec, Whole};
use super::*;
use crate::measure::clock::Clock;
use crate::measure::record::TokenSource;
use crate::measure::record::{FailureKind, Outcome};
use std::io::{Read, Write};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Answers two requests on one kept-alive connection with an SSE stream of three output
/// events, each written `GAP` after the previous one; sends the instant before each write.
fn serve_slowly(listener: std::net::TcpListener, sent: std::sync::mpsc::Sender<Vec<Instant>>) {
    const GAP: Duration = Duration::from_millis(60);
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_nodelay(true).unwrap();
    for _ in 0..2 {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        // The request: a head and a body of its content-length.
        loop {
            let n = conn.read(&mut buf).unwrap();
            assert!(n > 0, "request cut short");
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).to_lowercase();
            if let Some(head_end) = text.find("\r\n\r\n") {
                let len: usize = text[..head_end]
                    .split("content-length:")
                    .nth(1)
                    .and_then(|v| v.lines().next()?.trim().parse().ok())
                    .unwrap();
                if got.len() >= head_end + 4 + len {
                    break;
                }
            }
        }
        conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n").unwrap();
        let mut times = Vec::new();
        for i in 0..3 {
            std::thread::sleep(GAP);
            let event = format!("data: {{\"choices\":[{{\"text\":\"t{i}\"}}]}}\n\n");
            let mut chunk = format!("{:x}\r\n{event}\r\n", event.len());
            if i == 2 {
                chunk.push_str("e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
            }
            times.push(Instant::now());
            conn.write_all(chunk.as_bytes()).unwrap();
        }
        sent.send(times).unwrap();
    }
}

/// A chunk's time is when it reached the host, not when the client got round to reading
/// it: the only runtime thread is blocked from 5 to 95 ms after the request, the first
/// chunk is written at 60 ms (the next at 120) and still timestamped within 3 ms of its
/// write (a read time would be ~35 ms late).
///
/// On a busy machine the server thread may write later than planned (past the block), or be
/// preempted between taking the time and writing: an attempt whose first write missed the
/// block proves nothing and is run again, and the 3 ms accuracy is asserted on the best of up
/// to 5 attempts. In every attempt whose write fell inside the block, the first chunk must be
/// stamped before the runtime was free to read it, which no read time can be.
#[test]
fn lean_chunk_times_are_kernel_arrivals() {
    let mut attempts = Vec::new();
    for _ in 0..5 {
        match stamp_while_blocked() {
            Ok(()) => return,
            Err(why) => attempts.push(why),
        }
    }
    panic!("no attempt within the bounds: {attempts:#?}");
}

/// One attempt of [`lean_chunk_times_are_kernel_arrivals`]: Err says why it proves nothing
/// (the write missed the block) or how far from its write a chunk was stamped.
fn stamp_while_blocked() -> Result<(), String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let cfg = RunConfig {
        base_url: format!("http://{}", listener.local_addr().unwrap()),
        ..RunConfig::default()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || serve_slowly(listener, tx));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let clock = Clock::start();
    let (records, blocked) = rt.block_on(async {
        let client = Client::new(&cfg, &Secrets::default(), None, None).unwrap();
        assert!(client.targets[0].lean.is_some());
        let spec = RequestSpec {
            id: 0,
            prompt: "hi".into(),
            messages: None,
            input_len: None,
            output_len: 3,
            warmup: false,
            ..Default::default()
        };
        let (mut records, mut blocked) = (Vec::new(), Vec::new());
        for _ in 0..2 {
            let busy = tokio::spawn(async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                let from = Instant::now();
                std::thread::sleep(Duration::from_millis(90));
                (from, Instant::now())
            });
            let cancel = CancellationToken::new();
            records.push(client.send(&spec, 0, &clock, &cancel).await);
            blocked.push(busy.await.unwrap());
        }
        (records, blocked)
    });
    server.join().unwrap();
    // The first request may meet the kernel before it stamps (rxtime's docs); the second,
    // on the same kept-alive connection, is the one checked.
    let writes: Vec<Vec<Instant>> = rx.iter().collect();
    let (r, written) = (&records[1], &writes[1]);
    assert!(r.outcome.is_ok(), "{:?}", r.outcome);
    assert_eq!(r.connection_retries, 0);
    assert_eq!(r.chunk_ns.len(), 3);
    // The check could fail only if the first chunk came while the only thread was blocked,
    // well before it was free to read it.
    let (from, to) = blocked[1];
    if !(from < written[0] && to > written[0] + Duration::from_millis(10)) {
        return Err(format!(
            "the first chunk was written {:?} after the block began, which lasted {:?}",
            written[0].saturating_duration_since(from),
            to - from
        ));
    }
    assert!(
        r.chunk_ns[0] < clock.ns_at(to),
        "the first chunk is timestamped when it was read, after the runtime was free"
    );
    let ms = |ns: u64| ns as f64 / 1e6;
    let late: Vec<f64> = (r.chunk_ns.iter().zip(written))
        .map(|(&t, &w)| ms(t) - ms(clock.ns_at(w)))
        .collect();
    if late.iter().all(|l| (-0.5..3.0).contains(l)) {
        Ok(())
    } else {
        Err(format!(
            "chunks timestamped {late:+.2?} ms after their writes"
        ))
    }
}

/// A non-streamed completion (`"stream": false`), written here as a new whole-answer API
/// would be: the request shape's whole answer carries generated text and its counts too.
struct WholeCompletions;

impl Api for WholeCompletions {
    fn body(&self, spec: &BodySpec) -> Result<serde_json::Value, api::Failure> {
        let (prompt, max) = (spec.prompt, spec.max_tokens);
        Ok(serde_json::json!({"prompt": prompt, "max_tokens": max, "stream": false}))
    }
    fn answer(&self) -> Answer<'_> {
        Answer::Whole(self)
    }
}

impl Whole for WholeCompletions {
    fn inputs(&self, _body: &serde_json::Value) -> Option<u64> {
        None
    }
    fn read(&self, answer: &[u8], _body: &serde_json::Value) -> Result<Answered, api::Failure> {
        let v: serde_json::Value = serde_json::from_slice(answer)
            .map_err(|e| (FailureKind::MalformedAnswer, e.to_string()))?;
        let count = |k: &str| v["usage"].get(k).and_then(usage::Reported::of);
        Ok(Answered {
            content: v["choices"][0]["text"].as_str().unwrap_or_default().into(),
            usage: Some(api::Usage {
                prompt_tokens: count("prompt_tokens"),
                completion_tokens: count("completion_tokens"),
                cached_tokens: None,
                reasoning_tokens: None,
            }),
        })
    }
}

/// Answers one request on `listener` with a JSON body of `answer`, written in two pieces
/// `GAP` apart; sends the instant before the second write.
fn serve_whole(
    listener: std::net::TcpListener,
    answer: String,
    sent: std::sync::mpsc::Sender<Instant>,
) {
    const GAP: Duration = Duration::from_millis(60);
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_nodelay(true).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("\r\n\r\n") {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0, "request cut short");
        got.extend_from_slice(&buf[..n]);
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        answer.len()
    );
    let (first, second) = answer.split_at(answer.len() / 2);
    conn.write_all(format!("{head}{first}").as_bytes()).unwrap();
    std::thread::sleep(GAP);
    sent.send(Instant::now()).unwrap();
    // A client that stopped reading (an answer over its limit) may have closed already.
    let _ = conn.write_all(second.as_bytes());
    std::thread::sleep(GAP);
}

/// One request shape for every kind of endpoint. A whole (non-streamed) answer, here
/// a completion written as a new whole-answer API would be, is one output chunk at the
/// arrival of its last byte, with its text and counts; it has no stream terminator. An answer
/// that is not the API's, or longer than `--max-answer-size`, is `malformed_answer`; a request
/// holding media its API cannot carry fails unsent, by name.
#[test]
fn a_whole_answer_is_one_chunk_at_its_last_byte() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answer = r#"{"choices":[{"text":" a b c","finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":3}}"#;
    let run = |answer: &str, max: Option<u64>, parts: Vec<Part>| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let cfg = RunConfig {
            base_url: format!("http://{}", listener.local_addr().unwrap()),
            max_answer_size: max,
            ..RunConfig::default()
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let answer = answer.to_string();
        let server = std::thread::spawn(move || serve_whole(listener, answer, tx));
        let clock = Clock::start();
        let record = rt.block_on(async {
            let mut client = Client::new(&cfg, &Secrets::default(), None, None).unwrap();
            Arc::get_mut(&mut client).unwrap().api = Box::new(WholeCompletions);
            let spec = RequestSpec {
                prompt: "one two three".into(),
                input_len: Some(3),
                output_len: 3,
                parts,
                ..RequestSpec::default()
            };
            client
                .send(&spec, 0, &clock, &CancellationToken::new())
                .await
        });
        let written = rx.recv_timeout(Duration::from_secs(5)).ok();
        if written.is_some() {
            server.join().unwrap();
        }
        (record, written.map(|w| clock.ns_at(w)), clock)
    };
    let (r, written, _) = run(answer, None, Vec::new());
    assert!(r.outcome.is_ok(), "{:?}", r.outcome);
    assert_eq!(r.chunk_ns.len(), 1);
    let late_ms = (r.chunk_ns[0] as f64 - written.unwrap() as f64) / 1e6;
    assert!(
        (-0.5..30.0).contains(&late_ms),
        "the answer's time is {late_ms:+.2} ms after its last byte"
    );
    assert_eq!(r.first_answer_ns, Some(r.chunk_ns[0]));
    assert_eq!(
        (r.output_tokens, r.output_tokens_source),
        (Some(3), Some(TokenSource::ServerUsage))
    );
    assert_eq!(
        (r.prompt_tokens, r.inputs, r.done_marker),
        (Some(3), None, None)
    );
    assert!(r.implausible_usage.is_empty(), "{:?}", r.implausible_usage);

    let (r, _, _) = run("{\"choices\": 5", None, Vec::new());
    assert_eq!(
        r.outcome.failure_kind(),
        Some(FailureKind::MalformedAnswer),
        "{:?}",
        r.outcome
    );
    let (r, _, _) = run(answer, Some(16), Vec::new());
    let Outcome::Failed { kind, message } = &r.outcome else {
        panic!("an answer over the limit was read")
    };
    assert_eq!(*kind, FailureKind::MalformedAnswer);
    assert!(message.contains("--max-answer-size"), "{message}");
}

/// A request holding media for an API that takes only text is never sent: it fails as
/// `prompt`, naming what it holds.
#[test]
fn media_for_a_text_api_fails_unsent_by_name() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for backend in [
        crate::config::BackendKind::Openai,
        crate::config::BackendKind::OpenaiEmbeddings,
    ] {
        // Nothing listens there: a request sent would fail as `connect`.
        let cfg = RunConfig {
            backend,
            base_url: "http://127.0.0.1:9".into(),
            ..RunConfig::default()
        };
        let spec = RequestSpec {
            prompt: "see".into(),
            parts: vec![Part::Image {
                url: "https://x/y.png".into(),
            }],
            ..RequestSpec::default()
        };
        let r = rt.block_on(async {
            let client = Client::new(&cfg, &Secrets::default(), None, None).unwrap();
            client
                .send(&spec, 0, &Clock::start(), &CancellationToken::new())
                .await
        });
        let Outcome::Failed { kind, message } = &r.outcome else {
            panic!("{backend:?} sent it")
        };
        assert_eq!(*kind, FailureKind::Prompt, "{backend:?}: {message}");
        assert!(message.contains("an image"), "{message}");
        assert_eq!(r.http_status, None);
    }
}

/// A stream whose chunk times go backwards (two clocks mixed in one stream: a read time taken
/// after a stall, then kernel stamps taken during it) is failed as `malformed_stream`, naming
/// the chunk that stepped back and by how much: no TTFT or TPOT is computed from it.
#[test]
fn a_stream_whose_times_go_backwards_is_malformed() {
    use super::apis::completions::OpenAiStream;
    use super::stream::{Bounds, Stream};
    let event = r#"{"choices":[{"index":0,"text":"a","finish_reason":null}]}"#;
    let finished = |times: &[u64]| {
        let mut state = Stream::new(1, false, 0, (Some(4), 8), None, None, Bounds::default());
        state.rec.sent_ns = 1_000_000;
        state.rec.http_status = Some(200);
        for &t in times {
            state.event(&OpenAiStream, None, event, t).unwrap();
        }
        state.finish(Outcome::Ok, 30_000_000_000, 1.0, Default::default())
    };
    let r = finished(&[20_000_000_000, 9_442_000_000, 9_443_000_000]);
    let Outcome::Failed { kind, message } = &r.outcome else {
        panic!("accepted: {:?}", r.chunk_ns);
    };
    assert_eq!(*kind, FailureKind::MalformedStream);
    assert!(
        message.contains("chunk 1") && message.contains("10558.000 ms before chunk 0"),
        "{message}"
    );
    // Ordered times, equal ones included, are a stream like any other.
    let ok = finished(&[2_000_000, 2_000_000, 3_000_000]);
    assert_eq!(ok.outcome, Outcome::Ok);
    // A first chunk before the request was sent is no stream either.
    let early = finished(&[500_000, 2_000_000]);
    assert_eq!(
        early.outcome.failure_kind(),
        Some(FailureKind::MalformedStream)
    );
}
