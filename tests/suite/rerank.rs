//! Rerank (`--backend rerank`, vLLM's Jina/Cohere-style `/v1/rerank`, and
//! `--backend tei-rerank`, TEI's `/rerank`), over real HTTP on 127.0.0.1 against the built-in
//! simulator, whose answer time is exactly known (exact mode: every request is answered `ttft`
//! after it arrives, whatever its documents): the figures servebench reports equal the
//! simulator's truth (counts exactly, latencies within 1 ms), the report and CSV show them,
//! and bad input (flags, a server's answer) is a named failure, never a crash.

use crate::common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{execute, json, run_config, run_fails, stdout_of};
use servebench::config::{BackendKind, Metric, RequestRate, RunConfig};
use servebench::measure::record::{FailureKind, TokenSource};
use servebench::sim::{SimConfig, SimServer};

const TTFT_MS: f64 = 30.0;
/// Documents per request.
const N: u32 = 4;
/// Words of each document.
const D: u64 = 16;
/// Words of each query.
const Q: u64 = 5;

async fn rerank_sim() -> SimServer {
    let cfg = SimConfig {
        ttft: Duration::from_millis(TTFT_MS as u64),
        seed: 11,
        ..SimConfig::default()
    };
    common::spawn_sim(cfg).await
}

/// `n` rerank requests of a Q-word query and N documents of D words, `conc` at a time.
fn config(base_url: String, backend: BackendKind, n: u64, conc: u64) -> RunConfig {
    let mut cfg = run_config(base_url, backend, n, conc, D, 128);
    cfg.inputs_per_request = N;
    cfg.rerank_query_len = Some(Q);
    cfg.load.request_rate = RequestRate::PerSecond(conc as f64 * 20.0);
    cfg.percentile_metrics = vec![Metric::E2el];
    cfg
}

/// Against the exact simulator, for both rerank APIs, every count equals the
/// truth (requests, documents, the pairs' tokens the server reports against the built ones)
/// and every request's latency is the simulator's `ttft` within 1 ms. The machine is shared: a
/// measurement disturbed by other processes is repeated (up to 3 times); a client that is off
/// fails every attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerank_against_the_exact_simulator_equals_its_truth() {
    let n = 24u64;
    let pairs = u64::from(N) * Q + u64::from(N) * D;
    for backend in [BackendKind::Rerank, BackendKind::TeiRerank] {
        let mut attempts = Vec::new();
        let mut punctual = false;
        for _ in 0..3 {
            let server = rerank_sim().await;
            let dir = tempfile::tempdir().unwrap();
            let cfg = config(server.base_url(), backend, n, 4);
            let (result, records) = execute(cfg, dir.path(), "result.json", true).await;
            server.shutdown().await;

            // Counts: exact, every time.
            let s = &result.summary;
            assert_eq!((s.completed, s.failed), (n, 0), "{:?}", s.failures_by_kind);
            let measured: Vec<_> = records.iter().filter(|r| !r.warmup).collect();
            assert_eq!(measured.len() as u64, n);
            let docs = n * u64::from(N);
            assert_eq!(s.total_input_sequences, Some(docs), "documents");
            assert_eq!(s.total_input_tokens, n * pairs, "the pairs' tokens");
            assert_eq!(s.input_len_disagreements, 0);
            assert_eq!((s.total_output_tokens, s.total_output_chunks), (0, 0));
            let per_s = s.input_sequence_throughput.unwrap();
            assert!((per_s - s.request_throughput * f64::from(N)).abs() < 1e-9);
            assert!((s.total_token_throughput - s.request_throughput * pairs as f64).abs() < 1e-6);
            let source = match backend {
                // TEI reports no usage: the built count is the one there is.
                BackendKind::TeiRerank => TokenSource::Requested,
                _ => TokenSource::ServerUsage,
            };
            for r in &measured {
                assert!(r.is_ok(), "{:?}", r.outcome);
                assert_eq!(r.inputs, Some(u64::from(N)));
                assert_eq!(r.input_len_requested, Some(pairs));
                assert_eq!(r.prompt_tokens, Some(pairs));
                assert_eq!(r.prompt_tokens_source, Some(source));
                assert_eq!((r.chunk_ns.len(), r.done_marker), (1, None));
                assert!(r.implausible_usage.is_empty(), "{:?}", r.implausible_usage);
            }
            let doc = json(&dir.path().join("result.json"));
            assert_eq!(doc["backend"], backend.as_str());
            assert_eq!(doc["total_input_sequences"], docs);
            assert!(doc["mean_e2el_ms"].is_number() && doc["mean_ttft_ms"].is_null());

            // Latencies: never early, in every attempt; the median within 1 ms on the best
            // of 3.
            for r in &measured {
                let ms = (r.chunk_ns[0] - r.sent_ns) as f64 / 1e6;
                assert!(ms >= TTFT_MS - 0.05, "answered {ms} ms after the send");
            }
            let median = s.e2el_ms.as_ref().unwrap().median;
            if (median - TTFT_MS).abs() <= 1.0 {
                punctual = true;
                break;
            }
            attempts.push(median);
        }
        assert!(
            punctual,
            "{}: median latency off the truth ({TTFT_MS} ms) in every attempt: {attempts:?}",
            backend.as_str()
        );
    }
}

/// A server that answers a rerank with fewer scores than documents, or with what is not a
/// rerank answer: every request fails as `malformed_answer` naming what was wrong, the run
/// goes on and saves (no crash, nothing dropped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_rerank_answer_is_a_named_failure() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for (i, conn) in listener.incoming().enumerate() {
            let Ok(mut conn) = conn else { break };
            let mut got = Vec::new();
            let mut buf = [0u8; 8192];
            while !String::from_utf8_lossy(&got).contains("\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let body = if i % 2 == 0 {
                r#"{"results":[{"index":0,"relevance_score":0.5}],"usage":{"total_tokens":9}}"#
            } else {
                r#"{"data":[{"index":0,"embedding":[0.1]}]}"#
            };
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(url, BackendKind::Rerank, 6, 1);
    let (result, records) = execute(cfg, dir.path(), "result.json", false).await;
    assert_eq!((result.summary.completed, result.summary.failed), (0, 6));
    assert_eq!(
        result.summary.failures_by_kind.get("malformed_answer"),
        Some(&6)
    );
    let messages: Vec<String> = records
        .iter()
        .map(|r| {
            let (kind, message) = common::failure(r);
            assert_eq!(kind, FailureKind::MalformedAnswer);
            message
        })
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("scores 1 documents, 4 asked")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("no `results` list")),
        "{messages:?}"
    );
}

/// Bad flags are one line naming the flag, exit 2, before anything runs; a request the
/// simulator refuses (more documents than it takes) stops the run at its pre-flight with the
/// server's words.
#[test]
fn bad_rerank_flags_name_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["--backend", "openai", "--rerank-query-len", "8"],
            "--rerank-query-len",
        ),
        (
            &["--backend", "rerank", "--rerank-query-len", "0"],
            "--rerank-query-len",
        ),
        (&["--backend", "rerank", "--turns", "2"], "--turns"),
        (
            &[
                "--backend",
                "tei-rerank",
                "--extra-body",
                r#"{"texts":[]}"#,
                "--sim-preset",
                "exact",
            ],
            "`texts` holds 0 documents",
        ),
    ];
    for (args, named) in cases {
        let mut all = vec!["run", "--num-prompts", "2", "--quiet", "--result-dir"];
        all.push(common::path_str(dir.path()));
        all.extend_from_slice(args);
        let err = run_fails(&all);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(named), "{args:?}: names {named}: {err}");
    }
}

/// The built-in simulator serves `run --backend rerank`; the text report prints the
/// documents answered and their throughput, and the CSV carries them.
#[test]
fn the_report_and_csv_show_the_rerank_figures() {
    let dir = tempfile::tempdir().unwrap();
    let report = stdout_of(&[
        "run",
        "--backend",
        "rerank",
        "--sim-preset",
        "exact",
        "--rerank-documents",
        "3",
        "--rerank-query-len",
        "2",
        "--input-len",
        "8",
        "--num-prompts",
        "6",
        "--max-concurrency",
        "2",
        "--no-tui",
        "--result-filename",
        "a.json",
        "--result-dir",
        common::path_str(dir.path()),
    ]);
    let value = |label: &str| {
        let line = report.lines().find(|l| l.starts_with(label));
        line.map(|l| l[label.len()..].trim().to_string())
    };
    assert_eq!(value("Inputs answered:").as_deref(), Some("18"), "{report}");
    // 6 requests of 3 pairs of 2 + 8 tokens.
    assert_eq!(
        value("Total input tokens:").as_deref(),
        Some("180"),
        "{report}"
    );
    assert!(value("Input throughput (inputs/s):").is_some(), "{report}");
    let a = dir.path().join("a.json");
    let csv = stdout_of(&["report", common::path_str(&a), "--format", "csv"]);
    let mut lines = csv.lines();
    let head = lines.next().unwrap_or_default();
    assert!(
        head.contains("total_input_sequences") && head.contains("input_sequence_throughput"),
        "{head}"
    );
    let row: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    assert!(row.contains(&"18"), "{csv}");
    assert_eq!(json(&a)["backend"], "rerank");
}

/// A word-level tokenizer.json in `dir` (one token a whitespace-separated word, as the
/// simulator counts).
fn word_tokenizer(dir: &std::path::Path) {
    use tokenizers::models::wordlevel::WordLevel;
    use tokenizers::pre_tokenizers::whitespace::WhitespaceSplit;
    let vocab = [("[UNK]".to_string(), 0)].into_iter().collect();
    let model = WordLevel::builder()
        .vocab(vocab)
        .unk_token("[UNK]".into())
        .build()
        .unwrap();
    let mut tok = tokenizers::Tokenizer::new(model);
    tok.with_pre_tokenizer(Some(WhitespaceSplit));
    tok.save(dir.join("tokenizer.json"), false).unwrap();
}

/// A jsonl file of real pairs (`{"query", "documents"}` lines, one with its own
/// `model`) is sent as its lines: each request's documents and its pairs' length exactly,
/// the server's count equal to it; the line's model is the record's adapter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jsonl_of_real_pairs_is_sent_as_its_lines() {
    use servebench::config::{Dataset, WorkloadSpec};
    let dir = tempfile::tempdir().unwrap();
    word_tokenizer(dir.path());
    let pairs = dir.path().join("pairs.jsonl");
    std::fs::write(
        &pairs,
        concat!(
            r#"{"query": "q1 q2", "documents": ["a b c", "d"]}"#,
            "\n",
            r#"{"query": "x", "documents": ["y z"], "model": "ad1"}"#,
            "\n"
        ),
    )
    .unwrap();
    let server = rerank_sim().await;
    let mut cfg = config(server.base_url(), BackendKind::Rerank, 4, 1);
    (cfg.inputs_per_request, cfg.rerank_query_len) = (1, None);
    cfg.workload = WorkloadSpec {
        dataset: Dataset::Jsonl {
            path: pairs,
            output_len: None,
        },
        tokenizer: Some(dir.path().to_string_lossy().into_owned()),
    };
    let (result, records) = execute(cfg, dir.path(), "r.json", true).await;
    server.shutdown().await;
    assert_eq!(
        result.summary.completed, 4,
        "{:?}",
        result.summary.failures_by_kind
    );
    let mut measured: Vec<_> = records.iter().filter(|r| !r.warmup).collect();
    measured.sort_by_key(|r| r.id);
    // Line 1: 2 documents, 2 × 2 + 3 + 1 tokens; line 2: 1 document, 1 + 2; then again.
    let seen: Vec<_> = (measured.iter())
        .map(|r| {
            (
                r.inputs,
                r.input_len_requested,
                r.prompt_tokens,
                r.adapter.as_deref(),
            )
        })
        .collect();
    let one = (Some(2), Some(8), Some(8), None);
    let two = (Some(1), Some(3), Some(3), Some("ad1"));
    assert_eq!(seen, [one, two, one, two]);
    assert_eq!(result.summary.total_input_sequences, Some(6));
    assert_eq!(result.per_adapter["ad1"].sent, 2);
}
