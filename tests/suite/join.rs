//! Each request joined with the server's own account of it, over real HTTP on
//! 127.0.0.1 against the built-in simulator: every request carries a unique id, which the
//! simulator returns; the simulator's spans (`GET /sim/otlp`, OTLP JSON with vLLM's names)
//! joined with the run by `servebench join` recover the simulator's known queue and prefill
//! exactly, request by request; and bad input (a trace matching nothing, a malformed file, a
//! run that sent no ids) is refused in one line naming what was wrong.

use crate::common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{output, path_str, run_config, stdout_of};
use serde_json::Value;
use servebench::config::BackendKind;
use servebench::measure::record::RequestRecord;
use servebench::sim::{self, SimConfig, SimServer};

const TTFT_MS: u64 = 40;

/// The simulator's spans, as the file a collector would have written.
async fn save_spans(server: &SimServer, path: &Path) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = format!("{}/sim/otlp", server.base_url());
    let body = reqwest::get(url).await.unwrap().bytes().await.unwrap();
    std::fs::write(path, &body).unwrap();
}

/// Runs `n` requests, `conc` at once, against `server`; the result's path and the records.
async fn run(server: &SimServer, dir: &Path, n: u64, conc: u64) -> (PathBuf, Vec<RequestRecord>) {
    let cfg = run_config(server.base_url(), BackendKind::Openai, n, conc, 64, 8);
    let (_, records) = common::execute(cfg, dir, "run.json", false).await;
    (dir.join("run.json"), records)
}

/// `servebench join RESULT TRACE --format json`, parsed.
fn join(result: &Path, trace: &Path) -> Value {
    let text = stdout_of(&[
        "join",
        path_str(result),
        path_str(trace),
        "--format",
        "json",
    ]);
    serde_json::from_str(&text).unwrap()
}

fn ms(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} in {v}"))
}

/// Every request is sent with its own id, the simulator returns it, and the
/// exact simulator's spans, joined, give its known truth for every request: no queue, a
/// prefill (and a time to first token) of exactly its `ttft`, and the rest of the client's
/// TTFT as network.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_recovers_the_exact_simulators_queue_and_prefill() {
    let server = common::spawn_sim(SimConfig {
        ttft: Duration::from_millis(TTFT_MS),
        usage: true,
        ..SimConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (result, records) = run(&server, dir.path(), 24, 6).await;
    let trace = dir.path().join("trace.json");
    save_spans(&server, &trace).await;
    server.shutdown().await;

    let measured: Vec<&RequestRecord> = records.iter().filter(|r| !r.warmup).collect();
    assert_eq!(measured.len(), 24);
    let ids: HashSet<&str> = measured
        .iter()
        .filter_map(|r| r.request_id.as_deref())
        .collect();
    assert_eq!(ids.len(), 24, "every request has its own id");
    for r in &measured {
        assert!(r.is_ok(), "{:?}", r.outcome);
        assert_eq!(
            r.server_request_id, r.request_id,
            "the simulator returns the id"
        );
    }

    let j = join(&result, &trace);
    assert_eq!(j["matched"], 24, "{j}");
    assert_eq!(j["implausible"], 0, "{j}");
    assert_eq!(j["duplicate_ids"], 0, "{j}");
    for r in j["joined"].as_array().unwrap() {
        assert_eq!(ms(r, "queue_ms"), 0.0, "{r}");
        assert!((ms(r, "prefill_ms") - TTFT_MS as f64).abs() < 1e-9, "{r}");
        assert!(
            (ms(r, "server_ttft_ms") - TTFT_MS as f64).abs() < 1e-9,
            "{r}"
        );
        let network = ms(r, "ttft_ms") - TTFT_MS as f64;
        assert!((ms(r, "network_ms") - network).abs() < 1e-9, "{r}");
        // The simulator is never early: nothing of the TTFT is before its schedule.
        assert!(ms(r, "network_ms") >= 0.0, "{r}");
    }
}

/// With an engine preset each request queues and prefills for its own time; the
/// join pairs every span with its own request: its queue and time to first token equal those
/// the simulator wrote into that request's own answer (vLLM's `metrics` object).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_pairs_each_span_with_its_own_request() {
    let server = common::spawn_sim(SimConfig {
        usage: true,
        ..SimConfig::from_preset(sim::Preset::VllmLlama8bRtx4090)
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (result, records) = run(&server, dir.path(), 48, 48).await;
    let trace = dir.path().join("trace.json");
    save_spans(&server, &trace).await;
    server.shutdown().await;

    let j = join(&result, &trace);
    assert_eq!(j["matched"], 48, "{j}");
    let mut queues = HashSet::new();
    for r in j["joined"].as_array().unwrap() {
        let id = r["request_id"].as_str().unwrap();
        let rec = records
            .iter()
            .find(|x| x.request_id.as_deref() == Some(id))
            .unwrap();
        let metrics = rec
            .server_request_metrics
            .as_ref()
            .expect("the answer's metrics");
        let queue = metrics["queue_time_ms"].as_f64().unwrap();
        let ttft = metrics["time_to_first_token_ms"].as_f64().unwrap();
        assert!((ms(r, "queue_ms") - queue).abs() < 1e-6, "{r} vs {metrics}");
        assert!(
            (ms(r, "server_ttft_ms") - ttft).abs() < 1e-6,
            "{r} vs {metrics}"
        );
        queues.insert((queue * 1e3) as u64);
    }
    // Pairing is only tested when the requests differ.
    assert!(queues.len() > 1, "every request queued alike: {queues:?}");
}

/// A trace whose ids match no request, a file that is not OTLP JSON, and a run
/// that sent no ids are each refused with exit code 2 in one line naming the file and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_refuses_bad_input_in_one_line() {
    let server = common::spawn_sim(SimConfig {
        ttft: Duration::from_millis(5),
        usage: true,
        ..SimConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (result, _) = run(&server, dir.path(), 4, 2).await;
    let other = tempfile::tempdir().unwrap();
    let mut cfg = run_config(server.base_url(), BackendKind::Openai, 4, 2, 16, 4);
    cfg.request_id_header = None;
    common::execute(cfg, other.path(), "noids.json", false).await;
    server.shutdown().await;

    let refused = |trace: &Path, result: &Path| {
        let out = output(&["join", path_str(result), path_str(trace)]);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        err
    };
    let nothing = dir.path().join("nothing.json");
    let span = r#"{"startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"gen_ai.request.id","value":{"stringValue":"cmpl-elsewhere-0"}}]}"#;
    std::fs::write(
        &nothing,
        format!(r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{span}]}}]}}]}}"#),
    )
    .unwrap();
    let err = refused(&nothing, &result);
    assert!(
        err.contains("no span of") && err.contains("cmpl-elsewhere-0"),
        "{err}"
    );

    let malformed = dir.path().join("malformed.json");
    let text = std::fs::read_to_string(&nothing).unwrap();
    std::fs::write(
        &malformed,
        format!("{text}\n{{\"resourceSpans\": [{{\"scopeSpans\": \"x\"}}]}}\n"),
    )
    .unwrap();
    let err = refused(&malformed, &result);
    assert!(
        err.contains("malformed.json") && err.contains("line 2"),
        "{err}"
    );

    let err = refused(&nothing, &other.path().join("noids.json"));
    assert!(err.contains("carries an id"), "{err}");
}

/// A one-connection-at-a-time OTLP/HTTP collector on 127.0.0.1: answers every POST with 200
/// and sends each body.
fn collector(tx: std::sync::mpsc::Sender<String>) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let mut conn = conn.unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 65536];
            loop {
                let n = conn.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got).into_owned();
                let Some(end) = text.find("\r\n\r\n") else {
                    continue;
                };
                let lower = text[..end].to_lowercase();
                let len: usize = (lower.split("content-length:").nth(1))
                    .and_then(|v| v.lines().next()?.trim().parse().ok())
                    .unwrap_or(0);
                if got.len() >= end + 4 + len {
                    tx.send(text[end + 4..].to_string()).unwrap();
                    let _ = conn.write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
                    );
                    break;
                }
            }
        }
    });
    url
}

/// `--otel-file` and `--otel-endpoint` export each request's own spans after the
/// run: every request's trace (the one its `traceparent` named), with its client queue,
/// connect and response spans, in the file (one OTLP document per line) and at the collector.
#[test]
fn run_exports_its_own_spans() {
    let dir = tempfile::tempdir().unwrap();
    let spans = dir.path().join("spans.jsonl");
    let (tx, rx) = std::sync::mpsc::channel();
    let url = collector(tx);
    let d = path_str(dir.path());
    stdout_of(&[
        "run",
        "--num-prompts",
        "6",
        "--max-concurrency",
        "2",
        "--input-len",
        "16",
        "--output-len",
        "4",
        "--result-dir",
        d,
        "--result-filename",
        "r",
        "--quiet",
        "--otel-file",
        path_str(&spans),
        "--otel-endpoint",
        &url,
    ]);
    let records = common::read_records(&dir.path().join("r.records.jsonl"));
    let text = std::fs::read_to_string(&spans).unwrap();
    let posted: Vec<String> = rx.try_iter().collect();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert_eq!(posted.len(), 1);
    for doc in [text.lines().next().unwrap(), posted[0].as_str()] {
        let doc: Value = serde_json::from_str(doc).unwrap();
        let spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array()
            .unwrap();
        for r in records.iter().filter(|r| !r.warmup) {
            let id = r.request_id.as_deref().unwrap();
            let parent = servebench::measure::traceid::traceparent(id);
            let mine: Vec<&str> = (spans.iter())
                .filter(|s| parent.contains(s["traceId"].as_str().unwrap()))
                .map(|s| s["name"].as_str().unwrap())
                .collect();
            assert!(mine.starts_with(&["servebench.request"]), "{id}: {mine:?}");
            assert!(mine.contains(&"response"), "{id}: {mine:?}");
        }
    }
}
