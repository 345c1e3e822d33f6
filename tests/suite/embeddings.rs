//! Embeddings (`--backend openai-embeddings`), over real HTTP on 127.0.0.1
//! against the built-in simulator, whose answer time is exactly known (exact mode: every
//! request is answered `ttft` after it arrives, whatever its batch): the figures servebench
//! reports equal the simulator's truth (counts exactly, latencies within 1 ms), vLLM's keys
//! are in the result, the report, CSV, compare and plot show them, and bad input (flags, a
//! server's answer) is a named failure, never a crash.

use crate::common;

use common::{exact_sim, path_str, run_config, servebench, stdout_of, EXACT_TTFT_MS as TTFT_MS};

use std::io::{Read, Write};
use std::path::Path;

use serde_json::{json, Value};
use servebench::config::{BackendKind, Metric, RequestRate, RunConfig, WorkloadSpec};
use servebench::measure::record::{FailureKind, RequestRecord, TokenSource};
use servebench::results::document::BenchResult;
use servebench::sim::{self, SimConfig};

/// `n` embeddings requests of `batch` inputs of 16 words, `conc` at a time.
fn config(base_url: String, n: u64, batch: u32, conc: u64) -> RunConfig {
    let mut cfg = run_config(base_url, BackendKind::OpenaiEmbeddings, n, conc, 16, 128);
    cfg.inputs_per_request = batch;
    cfg.load.request_rate = RequestRate::PerSecond(conc as f64 * 20.0);
    cfg.percentile_metrics = vec![Metric::E2el];
    cfg
}

async fn run(cfg: RunConfig, dir: &Path, preflight: bool) -> (BenchResult, Vec<RequestRecord>) {
    common::execute(cfg, dir, "result.json", preflight).await
}

/// Against the exact simulator, every count equals the truth (requests, inputs,
/// the server's prompt tokens against the built ones, vLLM's keys) and every request's latency
/// is the simulator's `ttft` within 1 ms. The machine is shared: a measurement disturbed by
/// other processes is repeated (up to 3 times); a client that is off fails every attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_against_the_exact_simulator_equal_its_truth() {
    let (n, batch) = (24u64, 4u32);
    let mut attempts = Vec::new();
    for _ in 0..3 {
        let server = exact_sim().await;
        let dir = tempfile::tempdir().unwrap();
        let (result, records) = run(config(server.base_url(), n, batch, 4), dir.path(), true).await;
        server.shutdown().await;

        // Counts: exact, every time.
        let s = &result.summary;
        assert_eq!((s.completed, s.failed), (n, 0));
        assert_eq!(records.len() as u64, n);
        let inputs = n * u64::from(batch);
        assert_eq!(s.total_input_sequences, Some(inputs));
        assert_eq!(s.total_input_tokens, inputs * 16, "the server's count");
        assert_eq!(s.input_len_disagreements, 0);
        assert_eq!(s.input_token_sources.get("server_usage"), Some(&n));
        assert_eq!((s.total_output_tokens, s.total_output_chunks), (0, 0));
        assert!(s.output_token_sources.is_empty() && s.ttft_ms.is_none() && s.itl_ms.is_none());
        let per_s = s.input_sequence_throughput.unwrap();
        assert!((per_s - s.request_throughput * f64::from(batch)).abs() < 1e-9);
        assert!((s.total_token_throughput - per_s * 16.0).abs() < 1e-6);
        for r in &records {
            assert!(r.is_ok(), "{:?}", r.outcome);
            assert_eq!(r.inputs, Some(u64::from(batch)));
            assert_eq!(
                (r.input_len_requested, r.prompt_tokens),
                (Some(64), Some(64))
            );
            assert_eq!(r.prompt_tokens_source, Some(TokenSource::ServerUsage));
            assert_eq!((r.output_tokens, r.output_tokens_source), (Some(0), None));
            assert_eq!((r.chunk_ns.len(), r.done_marker), (1, None));
            assert!(r.implausible_usage.is_empty(), "{:?}", r.implausible_usage);
        }
        // vLLM's keys of an embeddings run, as `vllm bench serve` saves them.
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("result.json")).unwrap())
                .unwrap();
        assert_eq!(doc["backend"], "openai-embeddings");
        assert_eq!(doc["total_input_sequences"], inputs);
        assert_eq!(doc["input_sequence_throughput"], json!(per_s));
        assert_eq!(doc["completed"], n);
        assert!(doc["mean_e2el_ms"].is_number() && doc["p99_e2el_ms"].is_number());
        assert!(doc["mean_ttft_ms"].is_null(), "no TTFT: nothing streams");

        // Latencies: each request's is the simulator's answer time. Never early, in every
        // attempt; the median within 1 ms on the best of 3 (a busy machine delays some reads,
        // so the worst of 24 is not the client's accuracy).
        for r in &records {
            let ms = (r.chunk_ns[0] - r.sent_ns) as f64 / 1e6;
            assert!(
                ms >= TTFT_MS - 0.05,
                "answered {ms} ms after the send, before the truth"
            );
        }
        let median = s.e2el_ms.as_ref().unwrap().median;
        if (median - TTFT_MS).abs() <= 1.0 {
            return;
        }
        attempts.push(median);
    }
    panic!("median latency off the truth ({TTFT_MS} ms) in every attempt: {attempts:?}");
}

/// With an engine preset the simulator batches embeddings as its engine batches prompts
/// (prefill only): every request is answered, after at least its front-end latency, and a
/// request of 32 inputs takes longer than one of 1 (more to prefill).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_presets_answer_embeddings_after_their_prefill() {
    let preset = sim::Preset::VllmLlama8bRtx4090;
    let cfg = SimConfig {
        usage: true,
        ..SimConfig::from_preset(preset)
    };
    let server = common::spawn_sim(cfg).await;
    let mut means = Vec::new();
    for batch in [1, 32] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(server.base_url(), 6, batch, 1);
        cfg.workload = WorkloadSpec::random(256, 128);
        let (result, records) = run(cfg, dir.path(), false).await;
        assert_eq!(
            result.summary.completed, 6,
            "{:?}",
            result.summary.failures_by_kind
        );
        assert!(records.iter().all(|r| r.inputs == Some(u64::from(batch))));
        means.push(result.summary.e2el_ms.unwrap().mean);
    }
    server.shutdown().await;
    // 32 × 256 prompt tokens at 0.08 ms each are about 650 ms of prefill more than 256.
    assert!(means[0] >= 5.0, "at least the front-end's 5 ms: {means:?}");
    assert!(means[1] > means[0] + 100.0, "{means:?}");
}

/// `dimensions` and `encoding_format` go in through `--extra-body`, and the answer is judged
/// against them: the simulator answers in base64 of the asked size, the client checks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dimensions_and_encoding_format_are_asked_and_checked() {
    let server = exact_sim().await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(server.base_url(), 4, 2, 2);
    cfg.extra_body = Some(json!({"dimensions": 24, "encoding_format": "base64"}));
    let (result, records) = run(cfg, dir.path(), true).await;
    server.shutdown().await;
    assert_eq!(result.summary.completed, 4);
    assert!(records.iter().all(|r| r.inputs == Some(2)));
}

/// A server that answers an embeddings batch with fewer vectors than inputs, or with what is
/// not an embeddings answer: every request fails as `malformed_answer` naming what was
/// wrong, the run goes on and saves (no crash, nothing dropped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_embeddings_answer_is_a_named_failure() {
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
                r#"{"object":"list","data":[{"index":0,"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":32}}"#
            } else {
                r#"{"choices":[{"text":"not an embedding"}]}"#
            };
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let (result, records) = run(config(url, 6, 2, 1), dir.path(), false).await;
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
            .any(|m| m.contains("1 embeddings for 2 inputs")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("no `data` list")),
        "{messages:?}"
    );
}

/// A server that answers base64 vectors (as asked) holding a NaN or an infinity, by turns:
/// every request fails as `malformed_answer` naming the number that is not finite, as a float
/// list's would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base64_embedding_holding_nan_is_a_named_failure() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for (i, conn) in listener.incoming().enumerate() {
            let Ok(mut conn) = conn else { break };
            if common::http::read_request(&mut conn).is_none() {
                continue;
            }
            // Little-endian f32: (1.0, NaN), then (+inf, 2.0).
            let vector = ["AACAPwAAwH8=", "AACAfwAAAEA="][i % 2];
            let body = format!(
                r#"{{"object":"list","data":[{{"index":0,"embedding":"{vector}"}}],"usage":{{"prompt_tokens":16}}}}"#
            );
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(url, 4, 1, 1);
    cfg.extra_body = Some(json!({"encoding_format": "base64"}));
    let (result, records) = run(cfg, dir.path(), false).await;
    assert_eq!((result.summary.completed, result.summary.failed), (0, 4));
    for r in &records {
        let (kind, message) = common::failure(r);
        assert_eq!(kind, FailureKind::MalformedAnswer, "{message}");
        assert!(message.contains("not finite"), "{message}");
    }
}

/// Bad flags are one line naming the flag, exit 2, before anything runs; a request the
/// simulator refuses (an unknown `encoding_format`) stops the run at its pre-flight with the
/// server's words.
#[test]
fn bad_embeddings_flags_name_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &[
                "--backend",
                "openai-embeddings",
                "--embedding-batch-size",
                "0",
            ],
            "--embedding-batch-size",
        ),
        (
            &[
                "--backend",
                "openai-embeddings",
                "--embedding-batch-size",
                "5000",
            ],
            "2048",
        ),
        (
            &["--backend", "openai-chat", "--embedding-batch-size", "4"],
            "openai-embeddings",
        ),
        (
            &["--backend", "openai-embeddings", "--turns", "3"],
            "--turns",
        ),
        (
            &[
                "--backend",
                "openai-embeddings",
                "--extra-body",
                r#"{"encoding_format":"int8"}"#,
                "--sim-preset",
                "exact",
            ],
            "encoding_format",
        ),
    ];
    for (args, named) in cases {
        let out = servebench()
            .args(["run", "--num-prompts", "2", "--quiet", "--result-dir"])
            .arg(dir.path())
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(named), "{args:?}: names {named}: {err}");
    }
}

/// The built-in simulator serves `run --backend openai-embeddings`; the text report prints
/// vLLM's embeddings block and servebench's input lines, and the CSV, compare and plot of the
/// saved documents carry the input figures.
#[test]
fn the_report_csv_compare_and_plot_show_the_embeddings_figures() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, counts: &str| {
        let out = servebench()
            .args([
                "run",
                "--backend",
                "openai-embeddings",
                "--sim-preset",
                "exact",
            ])
            .args([
                "--embedding-batch-size",
                "3",
                "--input-len",
                "8",
                "--no-tui",
            ])
            .args(["--num-prompts", counts, "--max-concurrency", "2"])
            .args(["--result-filename", name, "--result-dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let report = run("a.json", "6");
    let value = |label: &str| {
        let line = report.lines().find(|l| l.starts_with(label));
        line.map(|l| l[label.len()..].trim().to_string())
    };
    assert_eq!(value("Inputs answered:").as_deref(), Some("18"), "{report}");
    assert_eq!(
        value("Inputs per request (mean):").as_deref(),
        Some("3.00"),
        "{report}"
    );
    for label in [
        "Input throughput (inputs/s):",
        "Mean E2EL (ms):",
        "P99 E2EL (ms):",
    ] {
        assert!(value(label).is_some(), "{label}:\n{report}");
    }
    for absent in [
        "TTFT",
        "Total generated tokens",
        "Output token count source",
    ] {
        assert!(!report.contains(absent), "{absent}:\n{report}");
    }
    run("b.json", "9");
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    let csv = stdout_of(&["report", path_str(&a), "--format", "csv"]);
    let head = csv.lines().next().unwrap_or_default();
    assert!(
        head.contains("total_input_sequences") && head.contains("input_sequence_throughput"),
        "{head}"
    );
    let cmp = stdout_of(&["compare", path_str(&a), path_str(&b)]);
    assert!(
        cmp.contains("input_sequence_throughput") && cmp.contains("total_input_sequences"),
        "{cmp}"
    );
    // A sweep's plot has an input-throughput chart.
    run("s.json", "3,6");
    let names = common::sweep_chart_names(dir.path());
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("input_sequence_throughput")),
        "{names:?}"
    );
}
