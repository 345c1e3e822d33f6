//! The fault matrix, client side: hostile servers on 127.0.0.1 (port 0,
//! one tiny tokio server per case, stopped with its runtime), each case bounded in time. Every
//! wait of the client is bounded, what a server sends cannot grow its memory, no redirect is
//! followed, no secret given on the command line is printed or written anywhere (not even when
//! the server echoes it), the numbers a server reports are checked before they are believed, and
//! a stream that ends cleanly after its finish chunk without `[DONE]` is a success.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use servebench::config::{BackendKind, RunConfig};
use servebench::measure::record::{FailureKind, Implausible, RequestRecord, TokenSource};
use servebench::results::validity::Verdict;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common;

use common::{failure, output as servebench};

/// A server that hands every connection to `answer`; its address.
async fn hostile<F, Fut>(answer: F) -> SocketAddr
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            tokio::spawn(answer(conn));
        }
    });
    addr
}

/// Reads one request (head and content-length body); false when the connection ended first.
async fn read_request(conn: &mut TcpStream) -> bool {
    request_line(conn).await.is_some()
}

/// Reads one request (head and content-length body): its request line (`POST /v1/... HTTP/1.1`),
/// `None` when the connection ended first.
async fn request_line(conn: &mut TcpStream) -> Option<String> {
    let request = common::http::read_request_async(conn).await?;
    request.lines().next().map(str::to_ascii_lowercase)
}

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

/// `n` requests at once of 4 tokens in and out, to the OpenAI completions API at `addr`.
fn config(addr: SocketAddr, n: u64) -> RunConfig {
    common::run_config(format!("http://{addr}"), BackendKind::Openai, n, n, 4, 4)
}

/// An OpenAI-style stream of three text chunks and a finish chunk carrying `finish_reason`
/// and usage, as HF `transformers serve` sends it: no `data: [DONE]`, the body then ends
/// (`done`: with `[DONE]` after all), 60 ms after the finish chunk. `chunked`: framed by
/// chunked coding, else by the connection's end.
async fn no_done_server(chat: bool, chunked: bool, done: bool) -> SocketAddr {
    hostile(move |mut c| async move {
        if !read_request(&mut c).await {
            return;
        }
        let framing = if chunked {
            "transfer-encoding: chunked"
        } else {
            "connection: close"
        };
        let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n{framing}\r\n\r\n");
        let _ = c.write_all(head.as_bytes()).await;
        let choice = |text: &str, finish: &str| {
            if chat {
                format!(r#"{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":{finish}}}"#)
            } else {
                format!(r#"{{"index":0,"text":"{text}","finish_reason":{finish}}}"#)
            }
        };
        let mut events: Vec<String> = ["a", " b", " c"]
            .iter()
            .map(|t| format!("data: {{\"choices\":[{}]}}\n\n", choice(t, "null")))
            .collect();
        events.push(format!(
            "data: {{\"choices\":[{}],\"usage\":{{\"prompt_tokens\":4,\"completion_tokens\":3,\"total_tokens\":7}}}}\n\n",
            choice("", "\"length\"")
        ));
        if done {
            events.push("data: [DONE]\n\n".into());
        }
        for (i, e) in events.iter().enumerate() {
            let bytes = if chunked {
                format!("{:x}\r\n{e}\r\n", e.len())
            } else {
                e.clone()
            };
            let _ = c.write_all(bytes.as_bytes()).await;
            // The gaps are what the test measures, on the client's real clock (kernel
            // receive stamps): a server's pace, not a wait for something to happen.
            if i == 2 {
                tokio::time::sleep(Duration::from_millis(60)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(60)).await;
        if chunked {
            let _ = c.write_all(b"0\r\n\r\n").await;
        }
        let _ = c.shutdown().await;
    })
    .await
}

/// A stream whose last chunk carries `finish_reason` and usage and whose
/// body then ends without `data: [DONE]` (HF `transformers serve`) is a success on both
/// OpenAI APIs and both framings, recorded `done_marker: false` and counted; E2EL still ends
/// at the last output chunk, `end_ns` at the end of the body. With `[DONE]` it is `true`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_ends_after_its_finish_chunk_without_done_succeeds() {
    for (chat, chunked, done) in [
        (false, false, false),
        (false, true, false),
        (true, false, false),
        (true, true, false),
        (false, true, true),
    ] {
        let what = format!("chat {chat}, chunked {chunked}, [DONE] {done}");
        let addr = no_done_server(chat, chunked, done).await;
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(addr, 3);
        if chat {
            cfg.backend = BackendKind::OpenaiChat;
            cfg.endpoint = BackendKind::OpenaiChat.default_endpoint().into();
        }
        let (result, records) = common::execute(cfg, dir.path(), "r.json", false).await;
        assert_eq!(result.summary.completed, 3, "{what}: {records:?}");
        let without = if done { 0 } else { 3 };
        assert_eq!(
            result.summary.completed_without_done_marker, without,
            "{what}"
        );
        for r in &records {
            assert!(r.is_ok(), "{what}: {:?}", r.outcome);
            assert_eq!(r.done_marker, Some(done), "{what}");
            assert_eq!(
                r.chunk_ns.len(),
                3,
                "{what}: the finish chunk carries no text"
            );
            assert_eq!(r.output_tokens, Some(3), "{what}: the final usage is read");
            // The body ended 60 ms after the finish chunk, which came 60 ms after the last
            // output chunk: E2EL ends at that chunk, `end_ns` at the body's end.
            let last = r.last_chunk_ns().unwrap();
            if !done {
                assert!(
                    r.end_ns >= last + 100_000_000,
                    "{what}: {} {last}",
                    r.end_ns
                );
            }
        }
    }
}

/// An SSE answer of `events` (each `(event name, data)`), then the connection closed.
async fn sse_server(events: Vec<(&'static str, String)>) -> SocketAddr {
    let events = Arc::new(events);
    hostile(move |mut c| {
        let events = events.clone();
        async move {
            if !read_request(&mut c).await {
                return;
            }
            let mut body = String::new();
            for (name, data) in events.iter() {
                if !name.is_empty() {
                    body.push_str(&format!("event: {name}\n"));
                }
                body.push_str(&format!("data: {data}\n\n"));
            }
            let _ = c.write_all(SSE_HEAD).await;
            let _ = c.write_all(body.as_bytes()).await;
            let _ = c.shutdown().await;
        }
    })
    .await
}

/// An Anthropic-style server that reports `output_tokens: 10^18` for every
/// request. Its sum wrapped ("Total generated tokens 1553255926290448384", 3.5e20 tok/s) and the
/// run was "valid". Now each record is flagged, N comes from the tokenizer, the totals are the
/// text's, and the verdict and the report say the server's usage is implausible.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_count_of_10_18_is_flagged_and_the_tokenizer_counts() {
    let huge = 1_000_000_000_000_000_000u64;
    let delta = |t: &str| {
        format!(
            r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{t}"}}}}"#
        )
    };
    let addr = sse_server(vec![
        ("message_start", r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":9,"output_tokens":1}}}"#.into()),
        ("content_block_delta", delta(" one")),
        ("content_block_delta", delta(" two")),
        ("content_block_delta", delta(" three")),
        ("message_delta", format!(r#"{{"type":"message_delta","delta":{{"stop_reason":"max_tokens"}},"usage":{{"output_tokens":{huge}}}}}"#)),
        ("message_stop", r#"{"type":"message_stop"}"#.into()),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let n = 20;
    let mut cfg = config(addr, n);
    cfg.backend = BackendKind::AnthropicMessages;
    cfg.endpoint = BackendKind::AnthropicMessages.default_endpoint().into();
    cfg.workload.tokenizer = Some("cl100k_base".into());
    let (result, records) = common::execute(cfg, dir.path(), "r.json", false).await;
    let s = &result.summary;
    assert_eq!(s.completed, n, "{records:?}");
    assert_eq!(
        s.total_output_tokens,
        3 * n,
        "the tokenizer's count of ' one two three'"
    );
    assert_eq!(s.output_token_sources.get("tokenizer"), Some(&n));
    assert!(s.output_throughput < 1e6, "{}", s.output_throughput);
    assert_eq!(s.implausible_usage, n);
    assert_eq!(s.implausible_usage_by_field.get("output_tokens"), Some(&n));
    for r in &records {
        assert_eq!(r.implausible_usage, [Implausible::OutputTokens]);
        assert_eq!(
            r.usage_output_tokens,
            Some(huge),
            "the server's claim is kept"
        );
        assert_eq!(r.output_tokens, Some(3));
        assert_eq!(
            r.prompt_tokens,
            Some(9),
            "a plausible prompt count is believed"
        );
    }
    // usage-implausible, unless a loaded machine made the run client-bound first (the
    // verdicts' order is `validity::tests`'); the reason is there either way.
    let v = result.validity.as_ref().unwrap();
    assert_ne!(v.verdict, Verdict::Valid, "{:?}", v.reasons);
    let why = "the server's usage is implausible: 20 of 20 requests";
    assert!(v.reasons.iter().any(|r| r.contains(why)), "{:?}", v.reasons);
    let report = servebench::render::report::text(&result);
    assert!(report.contains(why), "{report}");
    assert!(
        report.contains("20 requests (output_tokens=20; not believed)"),
        "{report}"
    );
    // The records' CSV names the flag per request, so a spreadsheet can filter them.
    let csv = servebench::render::csv::records(records.into_iter());
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = head.iter().position(|h| *h == "implausible_usage").unwrap();
    assert!(
        lines.all(|l| l.split(',').nth(col) == Some("output_tokens")),
        "{csv}"
    );
}

/// Prompt and cached counts past what the request could hold, and llama.cpp
/// timings and vLLM metrics that are negative, not numbers, or longer than the exchange, are
/// flagged and left out: the prompt count is the built length, the server-timing figures are
/// absent, and N falls back to the chunks (no tokenizer) when the output count is no count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_cached_and_timings_are_checked_before_they_are_believed() {
    let text =
        |t: &str| format!(r#"{{"choices":[{{"index":0,"text":"{t}","finish_reason":null}}]}}"#);
    let addr = sse_server(vec![
        ("", text("a")),
        ("", text(" b")),
        ("", r#"{"choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":18446744073709551615,"completion_tokens":-2,"prompt_tokens_details":{"cached_tokens":1e40}},"timings":{"prompt_ms":1e12,"predicted_per_token_ms":-5,"predicted_n":2},"metrics":{"queue_time_ms":"n/a","time_to_first_token_ms":3}}"#.into()),
        ("", "[DONE]".into()),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (result, records) = common::execute(config(addr, 3), dir.path(), "r.json", false).await;
    let s = &result.summary;
    assert_eq!(s.completed, 3, "{records:?}");
    for r in &records {
        assert_eq!(
            r.implausible_usage,
            [
                Implausible::OutputTokens,
                Implausible::PromptTokens,
                Implausible::CachedTokens,
                Implausible::ServerTimings,
                Implausible::ServerRequestMetrics
            ]
        );
        assert_eq!(r.prompt_tokens, Some(4), "the built length");
        assert_eq!(r.prompt_tokens_source, Some(TokenSource::Requested));
        assert_eq!(
            (r.output_tokens, r.output_tokens_source),
            (Some(2), Some(TokenSource::ChunkCount))
        );
        assert_eq!(r.cached_prompt_tokens, None);
    }
    assert_eq!((s.total_input_tokens, s.total_output_tokens), (12, 6));
    assert_eq!(s.server_prompt_ms, None, "implausible timings are left out");
    assert_eq!(s.server_decode_per_token_ms, None);
    assert_eq!(s.implausible_usage, 3);
    assert_ne!(result.validity.unwrap().verdict, Verdict::Valid);
}

/// A server that echoes the request's head — in a 401 body (the pre-flight
/// request) and the 500 body of odd requests (the secret placed across the 200-character
/// excerpt's end), and in an error event inside the stream of even ones. The API key, a `--header` value and the URL's userinfo and
/// query appear in none of the run's stderr and stdout, the result, the records, the report or
/// the records' CSV; the pre-flight failure's line on stderr quotes the body without them.
#[test]
fn secrets_echoed_by_a_server_are_scrubbed_everywhere() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    let addr = rt.block_on(hostile(move |mut c| {
        let counter = counter.clone();
        async move {
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            let head = loop {
                match c.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
                if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    break String::from_utf8_lossy(&got[..end]).into_owned();
                }
            };
            // A run asks a given server whether it is a servebench sim (`GET /sim/info`,
            // `/sim/stats`; the plan asks before the pre-flight request): not requests of
            // the run, so not counted.
            if head.starts_with("GET ") {
                let answer =
                    "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                let _ = c.write_all(answer.as_bytes()).await;
                let _ = c.shutdown().await;
                return;
            }
            let i = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if i % 2 == 1 || i == 0 {
                let at = head.find("TOPSECRET1").unwrap_or(0);
                let body = format!("{}{head}", "x".repeat(195usize.saturating_sub(at)));
                // The first (the pre-flight request) a 401, which stops the run.
                let status = if i == 0 {
                    "401 Unauthorized"
                } else {
                    "500 Internal Server Error"
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = c.write_all(answer.as_bytes()).await;
            } else {
                let echo = serde_json::json!({"error": {"message": head}});
                let body =
                    format!("data: {{\"choices\":[{{\"text\":\"a\"}}]}}\n\ndata: {echo}\n\n");
                let _ = c.write_all(SSE_HEAD).await;
                let _ = c.write_all(body.as_bytes()).await;
            }
            let _ = c.shutdown().await;
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let base = format!("http://me:TOPSECRET4@{addr}?key=TOPSECRET2");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "run",
            "--base-url",
            &base,
            "--tokenizer",
            "words",
            "--api-key",
            "TOPSECRET1xyz",
            "--header",
            "x-custom:TOPSECRET3abc",
            "--num-prompts",
            "4",
            "--max-concurrency",
            "1",
            "--result-dir",
            d,
        ]
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // The pre-flight request gets the 500 echo: one line on stderr, quoting it scrubbed.
    let a = args(&["--result-filename", "pre.json"]);
    let pre = servebench(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let pre_err = String::from_utf8_lossy(&pre.stderr).into_owned();
    assert_eq!(pre.status.code(), Some(2), "{pre_err}");
    assert!(
        pre_err.contains("HTTP 401") && pre_err.contains("Bearer ***"),
        "{pre_err}"
    );
    let a = args(&["--no-preflight", "--result-filename", "r.json"]);
    let run = servebench(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let records = dir.path().join("r.records.jsonl");
    let csv = servebench(&["report", records.to_str().unwrap(), "--format", "csv"]);
    let report = servebench(&["report", &format!("{d}/r.json")]);
    assert!(
        csv.status.success(),
        "{}",
        String::from_utf8_lossy(&csv.stderr)
    );
    let lines = std::fs::read_to_string(&records).unwrap();
    let messages: Vec<String> = lines
        .lines()
        .map(|l| serde_json::from_str::<RequestRecord>(l).unwrap())
        .map(|r| failure(&r).1)
        .collect();
    assert_eq!(messages.len(), 4, "{lines}");
    // The key began at the body's character 195, across the excerpt's end: hidden whole, not
    // cut in two (a cut would have left "Bearer TOPSE" at the end).
    assert!(
        messages[0].starts_with("HTTP 500") && messages[0].contains("Bearer ***\r\n"),
        "{messages:?}"
    );
    assert!(
        messages[1].starts_with("server error in stream") && messages[1].contains("x-custom: ***"),
        "{messages:?}"
    );
    let mut outputs = vec![
        ("pre-flight stderr".to_string(), pre.stderr),
        ("run stdout".to_string(), run.stdout),
        ("run stderr".to_string(), run.stderr),
        ("csv".to_string(), csv.stdout),
        ("report".to_string(), report.stdout),
    ];
    outputs.extend(files_under(dir.path()));
    for (name, bytes) in &outputs {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains("TOPSECRET"), "a secret in {name}:\n{text}");
    }
    assert!(
        seen.load(std::sync::atomic::Ordering::SeqCst) >= 5,
        "the requests reached the server"
    );
}

/// A body that ends without a chunk that ended the answer (mid-answer, or
/// in the middle of the finish chunk's event) is still `stream_broken`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_ends_mid_answer_stays_stream_broken() {
    let cut = "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"len";
    for (tail, says) in [
        ("", "no chunk ended the answer"),
        (cut, "in the middle of an event"),
    ] {
        let addr = hostile(move |mut c| async move {
            if read_request(&mut c).await {
                let _ = c.write_all(SSE_HEAD).await;
                let _ = c
                    .write_all(b"data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":null}]}\n\n")
                    .await;
                let _ = c.write_all(tail.as_bytes()).await;
                let _ = c.shutdown().await;
            }
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let (result, records) = common::execute(config(addr, 2), dir.path(), "r.json", false).await;
        assert_eq!(
            result.summary.failures_by_kind.get("stream_broken"),
            Some(&2)
        );
        for r in &records {
            let (kind, message) = failure(r);
            assert_eq!(kind, FailureKind::StreamBroken);
            assert!(message.contains(says), "{message}");
            assert_eq!(r.done_marker, Some(false));
        }
    }
}

/// A stream that starts and then goes silent is a `stall` after `--idle-timeout`, with how long
/// it waited, well before the request timeout; the run goes on and keeps every record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stream_is_a_stall_and_the_run_goes_on() {
    let addr = hostile(|mut c| async move {
        if read_request(&mut c).await {
            let _ = c.write_all(SSE_HEAD).await;
            let _ = c
                .write_all(b"data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
                .await;
            std::future::pending::<()>().await;
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(addr, 3);
    cfg.load.idle_timeout_s = 0.3;
    let began = Instant::now();
    let (result, records) = common::execute(cfg, dir.path(), "r.json", false).await;
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(records.len(), 3);
    assert_eq!(result.summary.failures_by_kind.get("stall"), Some(&3));
    for r in &records {
        let (kind, message) = failure(r);
        assert_eq!(kind, FailureKind::Stall);
        assert!(message.contains("no data for 0.3 s"), "{message}");
        assert_eq!(r.chunk_ns.len(), 1, "the chunk before the stall is kept");
    }
}

/// A body that never starts fails at `--first-byte-timeout`, not at the request timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_starts_fails_at_the_first_byte_limit() {
    let addr = hostile(|mut c| async move {
        if read_request(&mut c).await {
            let _ = c.write_all(SSE_HEAD).await;
            std::future::pending::<()>().await;
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(addr, 2);
    cfg.load.first_byte_timeout_s = Some(0.3);
    let began = Instant::now();
    let (_, records) = common::execute(cfg, dir.path(), "r.json", false).await;
    assert!(began.elapsed() < Duration::from_secs(10));
    for r in &records {
        let (kind, message) = failure(r);
        assert_eq!(kind, FailureKind::Timeout);
        assert!(message.contains("--first-byte-timeout"), "{message}");
    }
}

/// One `data:` line that never ends (10 MB and more) fails the request as `malformed_stream`
/// naming the limit, instead of growing the client's memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_line_is_malformed_stream_at_the_event_limit() {
    let addr = hostile(|mut c| async move {
        if read_request(&mut c).await {
            let _ = c.write_all(SSE_HEAD).await;
            let _ = c.write_all(b"data: ").await;
            let block = vec![b'x'; 64 * 1024];
            for _ in 0..160 {
                if c.write_all(&block).await.is_err() {
                    return;
                }
            }
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(addr, 1);
    cfg.max_event_bytes = 256 * 1024;
    let (_, records) = common::execute(cfg, dir.path(), "r.json", false).await;
    let (kind, message) = failure(&records[0]);
    assert_eq!(kind, FailureKind::MalformedStream);
    assert!(
        message.contains("262144 bytes") && message.contains("--max-event-size"),
        "{message}"
    );
}

/// A redirect is a failed request whose message names the target, redacted; it is not
/// followed (the target here would refuse the connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_not_followed_and_names_its_target_redacted() {
    let addr = hostile(|mut c| async move {
        if read_request(&mut c).await {
            let _ = c
                .write_all(
                    b"HTTP/1.1 307 Temporary Redirect\r\nlocation: http://user:TOPSECRET@127.0.0.1:9/v1?key=TOPSECRET2\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (_, records) = common::execute(config(addr, 1), dir.path(), "r.json", false).await;
    let (kind, message) = failure(&records[0]);
    assert_eq!(kind, FailureKind::HttpStatus);
    assert_eq!(records[0].http_status, Some(307));
    assert!(
        message.contains("redirect to http://***@127.0.0.1:9/v1?key=*** not followed"),
        "{message}"
    );
}

/// A 429 with `Retry-After` is a failed request that says so; it is neither retried nor
/// waited for (the run ends long before the 30 s the server asked for), and the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_with_retry_after_is_recorded_not_retried() {
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    let addr = hostile(move |mut c| {
        let counter = counter.clone();
        async move {
            while let Some(line) = request_line(&mut c).await {
                if line.starts_with("post") {
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                let body = b"{\"error\":\"rate limited\"}";
                let head = format!(
                    "HTTP/1.1 429 Too Many Requests\r\nretry-after: 30\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                let _ = c.write_all(head.as_bytes()).await;
                let _ = c.write_all(body).await;
            }
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let began = Instant::now();
    let (result, records) = common::execute(config(addr, 4), dir.path(), "r.json", false).await;
    assert!(began.elapsed() < Duration::from_secs(20));
    assert_eq!(records.len(), 4);
    assert_eq!(result.summary.failures_by_kind.get("http_status"), Some(&4));
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        4,
        "each sent once"
    );
    for r in &records {
        let (kind, message) = failure(r);
        assert_eq!(kind, FailureKind::HttpStatus);
        assert_eq!(r.http_status, Some(429));
        assert_eq!(r.connection_retries, 0);
        assert_eq!(
            message,
            "HTTP 429 Too Many Requests (Retry-After: 30, not retried): {\"error\":\"rate limited\"}"
        );
    }
}

/// An error body that never ends is read up to `--max-error-body` and no further: the request
/// fails with an excerpt of it, and the run ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_error_body_is_read_only_to_its_limit() {
    let addr = hostile(|mut c| async move {
        if read_request(&mut c).await {
            let _ = c
                .write_all(
                    b"HTTP/1.1 500 Internal Server Error\r\ntransfer-encoding: chunked\r\n\r\n",
                )
                .await;
            let block = format!("10000\r\n{}\r\n", "E".repeat(0x10000));
            // 64 KiB chunks for ever, until the client hangs up.
            while c.write_all(block.as_bytes()).await.is_ok() {}
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(addr, 2);
    cfg.max_error_body_bytes = 1024;
    let (_, records) = common::execute(cfg, dir.path(), "r.json", false).await;
    for r in &records {
        let (kind, message) = failure(r);
        assert_eq!(kind, FailureKind::HttpStatus);
        assert_eq!(
            message,
            format!("HTTP 500 Internal Server Error: {}", "E".repeat(200))
        );
    }
}

/// A server that answers and then, idle, sends `408` and closes the kept-alive connection
/// (as nginx and many servers do): the next request goes to a new connection, counted in
/// `connection_retries`, and the server runs each request once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_408_sends_the_next_request_on_a_new_connection() {
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    let addr = hostile(move |mut c| {
        let counter = counter.clone();
        async move {
            match request_line(&mut c).await {
                Some(line) if line.starts_with("post") => {
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                _ => return,
            }
            let body = b"data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n";
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            let _ = c.write_all(head.as_bytes()).await;
            let _ = c.write_all(body).await;
            // Later, as a server's idle timer would (in the same write, the client would see
            // bytes past the body and not keep the connection at all): once the client has
            // kept the connection and sent its next request on it (or closed it).
            let _ = c.peek(&mut [0u8; 1]).await;
            let _ = c
                .write_all(b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
                .await;
            // A graceful close: no more answers, and whatever the client still sends is read,
            // so the client sees the 408 rather than a reset.
            let _ = c.shutdown().await;
            let mut sink = [0u8; 4096];
            while matches!(c.read(&mut sink).await, Ok(n) if n > 0) {}
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(addr, 4);
    cfg.load.max_concurrency = Some(1);
    let (result, records) = common::execute(cfg, dir.path(), "r.json", false).await;
    assert_eq!(result.summary.completed, 4, "{records:?}");
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        4,
        "each run once"
    );
    let retries: u32 = records.iter().map(|r| r.connection_retries).sum();
    assert!(
        retries >= 1,
        "the idle connections were found closed: {records:?}"
    );
}

/// A server that accepts and never answers: the pre-flight request fails within
/// `--preflight-timeout` with one line naming the flag, exit code 2 (it hung before).
#[test]
fn a_silent_server_fails_the_preflight_within_its_limit() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let addr = rt.block_on(hostile(|mut c| async move {
        let _ = read_request(&mut c).await;
        std::future::pending::<()>().await;
    }));
    let began = Instant::now();
    let url = format!("http://{addr}");
    let out = servebench(&[
        "run",
        "--base-url",
        &url,
        "--tokenizer",
        "words",
        "--num-prompts",
        "2",
        "--preflight-timeout",
        "0.5",
        "--quiet",
    ]);
    assert!(began.elapsed() < Duration::from_secs(15));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("pre-flight") && stderr.contains("--preflight-timeout"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// Each new limit refuses a value that is not one, naming the flag.
#[test]
fn limit_flags_refuse_what_is_not_a_limit() {
    for (flag, value) in [
        ("--connect-timeout", "0"),
        ("--first-byte-timeout", "-1"),
        ("--idle-timeout", "inf"),
        ("--preflight-timeout", "1e20"),
        ("--max-event-size", "0"),
        ("--max-error-body", "lots"),
        ("--max-generated-text", "-5"),
    ] {
        let out = servebench(&["run", &format!("{flag}={value}"), "--num-prompts", "1"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(flag), "{flag} {value}: {stderr}");
    }
}

/// Every file under `dir`, read.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

/// Secrets in `--base-url` (userinfo, query), `--scrape-metrics` and `--header` appear in no
/// byte printed and no file written; requests still reach the server with them.
#[test]
fn secrets_are_never_printed_or_written() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt
        .block_on(servebench::sim::spawn(
            servebench::sim::SimConfig::default(),
            ([127, 0, 0, 1], 0).into(),
        ))
        .unwrap();
    let port = sim.base_url().rsplit(':').next().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let base = format!("http://user:TOPSECRET@127.0.0.1:{port}?key=TOPSECRET2");
    let scrape = format!("http://u:TOPSECRET4@127.0.0.1:{port}/metrics?token=TOPSECRET5");
    let run = servebench(&[
        "run",
        "--base-url",
        &base,
        "--tokenizer",
        "words",
        "--header",
        "x-api-key:TOPSECRET3",
        "--scrape-metrics",
        &scrape,
        "--num-prompts",
        "4",
        "--save-generated-text",
        "--result-dir",
        d,
        "--result-filename",
        "r.json",
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let html = dir.path().join("r.html");
    let report = servebench(&[
        "report",
        &format!("{d}/r.json"),
        "--html",
        html.to_str().unwrap(),
    ]);
    let mut outputs = vec![
        ("run stdout".to_string(), run.stdout),
        ("run stderr".to_string(), run.stderr),
        ("report stdout".to_string(), report.stdout),
        ("report stderr".to_string(), report.stderr),
    ];
    outputs.extend(files_under(dir.path()));
    assert!(outputs.len() >= 7, "result, records and HTML written");
    for (name, bytes) in &outputs {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains("TOPSECRET"), "a secret in {name}:\n{text}");
    }
    let saved = std::fs::read_to_string(dir.path().join("r.json")).unwrap();
    assert!(
        saved.contains(&format!("http://***@127.0.0.1:{port}?key=***")),
        "the redacted URL is saved"
    );
    let served = sim.stats().requests;
    rt.block_on(sim.shutdown());
    assert!(served >= 4, "the requests reached the server");
}

/// A server that refuses a large request as soon as it has read its head (`413`, as a proxy's
/// body-size limit does), while servebench is still writing a body of megabytes: the answer is
/// recorded with its status and message, not as a reset connection; whether the server then
/// closes (the rest of the body unread: a reset) or keeps the connection open and reads no
/// more (the write could wait for ever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_early_413_during_a_large_upload_is_recorded_with_its_status() {
    for close in [true, false] {
        let addr = hostile(move |mut c| async move {
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut buf).await {
                    Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                    _ => return,
                }
            }
            let body = b"{\"error\":\"request entity too large\"}";
            let head = format!(
                "HTTP/1.1 413 Payload Too Large\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            let _ = c.write_all(head.as_bytes()).await;
            let _ = c.write_all(body).await;
            if !close {
                tokio::time::sleep(Duration::from_secs(20)).await;
            }
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        // About 6 MB of prompt per request: far more than the sockets' buffers hold.
        let cfg = common::run_config(
            format!("http://{addr}"),
            BackendKind::Openai,
            2,
            2,
            1_000_000,
            4,
        );
        let began = Instant::now();
        let (result, records) = common::execute(cfg, dir.path(), "r.json", false).await;
        assert!(began.elapsed() < Duration::from_secs(20), "close {close}");
        assert_eq!(records.len(), 2);
        assert_eq!(
            result.summary.failures_by_kind.get("http_status"),
            Some(&2),
            "close {close}: {records:?}"
        );
        for r in &records {
            let (kind, message) = failure(r);
            assert_eq!((kind, r.http_status), (FailureKind::HttpStatus, Some(413)));
            // A server that closes with the body unread resets the connection, and the reset
            // may reach the client before the error body's bytes are read: the status is
            // what must be kept, the body where it could be read.
            let full = "HTTP 413 Payload Too Large: {\"error\":\"request entity too large\"}";
            match close {
                true => assert!(full.starts_with(message.as_str()), "{message}"),
                false => assert_eq!(message, full),
            }
            assert!(
                message.starts_with("HTTP 413 Payload Too Large:"),
                "{message}"
            );
            assert_eq!(r.connection_retries, 0, "sent once");
        }
    }
}

/// A server (or a proxy before it) that answers a streamed request with `200` and a whole
/// JSON document, no event stream: the pre-flight refuses the run in one line naming what
/// came back (exit 2), where every request of the run failed before; each such request is
/// `malformed_stream` naming the content type and the body's start.
#[test]
fn a_200_that_is_not_an_event_stream_fails_the_preflight() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let addr = rt.block_on(hostile(|mut c| async move {
        while read_request(&mut c).await {
            let body = b"{\"id\":\"x\",\"choices\":[{\"text\":\"hello\"}]}";
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            let _ = c.write_all(head.as_bytes()).await;
            let _ = c.write_all(body).await;
        }
    }));
    let url = format!("http://{addr}");
    let dir = tempfile::tempdir().unwrap();
    let out = servebench(&[
        "run",
        "--base-url",
        &url,
        "--tokenizer",
        "words",
        "--num-prompts",
        "2",
        "--quiet",
        "--result-dir",
        common::path_str(dir.path()),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("pre-flight")
            && stderr.contains("HTTP 200 without an event stream")
            && stderr.contains("content-type application/json")
            && stderr.contains(r#"a body beginning "{\"id\":\"x\""#),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    // Without the pre-flight, each request names it.
    let (_, records) = rt.block_on(common::execute(
        config(addr, 2),
        dir.path(),
        "r.json",
        false,
    ));
    assert_eq!(records.len(), 2);
    for r in &records {
        let (kind, message) = failure(r);
        assert_eq!(kind, FailureKind::MalformedStream, "{message}");
        assert!(message.contains("without an event stream"), "{message}");
    }
}
