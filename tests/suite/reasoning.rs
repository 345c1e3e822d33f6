//! Reasoning phases, over real HTTP on 127.0.0.1 against the built-in simulator
//! in exact mode, whose schedule is known: the first R of each answer's N tokens are reasoning
//! (`reasoning_content`), one token per chunk every `itl` after `ttft`. The figures servebench
//! reports equal that truth (counts exactly, latencies within 1 ms on the best of up to 3
//! runs), `ttfa` is a goodput SLO on the first answer token (not the first token), and a
//! server's reasoning count that contradicts its own output count is a named flag, not used.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};
use servebench::config::figure::RunFigure;
use servebench::config::{BackendKind, Slo, SloMetric};
use servebench::measure::record::{Implausible, TokenSource};
use servebench::sim::{SimConfig, SimServer};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

const TTFT_MS: u64 = 30;
const ITL_MS: u64 = 4;
/// Tokens per answer, and of them reasoning.
const N: u64 = 24;
const R: u64 = 16;

async fn reasoning_sim(usage: bool) -> SimServer {
    let cfg = SimConfig {
        ttft: Duration::from_millis(TTFT_MS),
        itl: Duration::from_millis(ITL_MS),
        usage,
        reasoning_tokens: R as u32,
        seed: 3,
        ..SimConfig::default()
    };
    common::spawn_sim(cfg).await
}

/// Counts exactly the simulator's (R reasoning and N − R answer tokens per
/// request, from the server's `completion_tokens_details`; R reasoning chunks; R − 1 gaps in
/// the reasoning phase and N − R from its end), the phase ITLs and the time to the first
/// answer token its schedule's within 1 ms (medians, best of up to 3 runs; never early, on
/// every request), and `--goodput ttfa:50` keeps no request although every TTFT (30 ms) is
/// under 50 ms: the first answer token comes at 30 + 16 × 4 = 94 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_phases_against_the_exact_simulator_equal_its_truth() {
    let n = 12u64;
    let ttfa_ms = (TTFT_MS + R * ITL_MS) as f64;
    let mut misses = Vec::new();
    for _ in 0..3 {
        let server = reasoning_sim(true).await;
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = common::run_config(server.base_url(), BackendKind::OpenaiChat, n, 4, 8, N);
        cfg.goodput = vec![Slo {
            metric: SloMetric::Ttfa,
            max_ms: 50.0,
        }];
        let (result, records) = common::execute(cfg, dir.path(), "r.json", true).await;
        server.shutdown().await;

        let s = &result.summary;
        assert_eq!((s.completed, s.failed), (n, 0), "{records:?}");
        assert_eq!(s.total_output_tokens, n * N);
        assert_eq!(s.good_requests, Some(0), "ttfa is not TTFT");
        assert!(
            s.ttft_ms.as_ref().unwrap().median < 50.0,
            "TTFT meets 50 ms"
        );
        for r in &records {
            assert_eq!(r.reasoning_tokens, Some(R));
            assert_eq!(r.reasoning_tokens_source, Some(TokenSource::ServerUsage));
            assert_eq!(r.reasoning_chunks, Some(R));
            assert!(r.implausible_usage.is_empty(), "{:?}", r.implausible_usage);
            // Never early: the first answer chunk cannot come before its schedule.
            let ttfa = (r.first_answer_ns.unwrap() - r.sent_ns) as f64 / 1e6;
            assert!(ttfa >= ttfa_ms - 0.05, "{ttfa} ms");
        }
        let x = s.reasoning.as_ref().expect("reasoning figures");
        assert_eq!(x.requests, n);
        assert_eq!(x.token_sources.get("server_usage"), Some(&n));
        assert_eq!(
            (x.total_reasoning_tokens, x.total_answer_tokens),
            (n * R, n * (N - R))
        );
        assert!((x.reasoning_share - R as f64 / N as f64).abs() < 1e-12);
        let per_s = |t: u64| t as f64 / s.duration_s;
        assert!((x.reasoning_throughput - per_s(n * R)).abs() < 1e-9);
        assert!((x.answer_throughput - per_s(n * (N - R))).abs() < 1e-9);
        let (ri, ai) = (
            x.reasoning_itl_ms.as_ref().unwrap(),
            x.answer_itl_ms.as_ref().unwrap(),
        );
        assert_eq!((ri.count, ai.count), (n * (R - 1), n * (N - R)));
        // The result's keys, read back by compare and plot as figures.
        let doc: Value = common::json(&dir.path().join("r.json"));
        assert_eq!(doc["total_reasoning_tokens"], json!(n * R));
        assert_eq!(doc["total_answer_tokens"], json!(n * (N - R)));
        assert_eq!(doc["reasoning_share"], json!(x.reasoning_share));
        assert!(doc["median_reasoning_itl_ms"].is_number());
        // CSV carries them; compare and plot read them as run figures.
        let csv = servebench::render::csv::result(&result);
        let head = csv.lines().next().unwrap();
        assert!(
            head.contains("total_reasoning_tokens")
                && head.contains("summary.reasoning.answer_itl_ms.median"),
            "{head}"
        );
        let step = servebench::views::open::step_of(&dir.path().join("r.json"), &result, false);
        assert_eq!(
            step.metric(RunFigure::TotalReasoningTokens),
            Some((n * R) as f64)
        );
        assert_eq!(
            step.metric(RunFigure::ReasoningThroughput),
            Some(x.reasoning_throughput)
        );
        let report = servebench::render::report::text(&result);
        assert!(report.contains("Output spent reasoning:"), "{report}");
        assert!(report.contains("66.7%"), "{report}");

        // Latencies: the medians within 1 ms of the schedule's.
        let ttfa_median = s.time_to_first_answer_ms.as_ref().unwrap().median;
        let off = [
            (ri.median - ITL_MS as f64).abs(),
            (ai.median - ITL_MS as f64).abs(),
            (ttfa_median - ttfa_ms).abs(),
        ];
        if off.iter().all(|d| *d < 1.0) {
            return;
        }
        misses.push(off);
    }
    panic!("no run within 1 ms of the schedule: {misses:?}");
}

/// Without the server's usage and without a tokenizer, the reasoning count is
/// the reasoning chunks' (one token each here), labelled so, as N is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_is_counted_from_the_chunks_without_usage() {
    let server = reasoning_sim(false).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::run_config(server.base_url(), BackendKind::OpenaiChat, 4, 4, 8, N);
    let (result, records) = common::execute(cfg, dir.path(), "r.json", true).await;
    server.shutdown().await;
    assert_eq!(result.summary.completed, 4, "{records:?}");
    for r in &records {
        assert_eq!(r.output_tokens_source, Some(TokenSource::ChunkCount));
        assert_eq!(
            (r.reasoning_tokens, r.reasoning_tokens_source),
            (Some(R), Some(TokenSource::ChunkCount))
        );
    }
    let x = result.summary.reasoning.unwrap();
    assert_eq!(x.token_sources.get("chunk_count"), Some(&4));
    assert_eq!(
        (x.total_reasoning_tokens, x.total_answer_tokens),
        (4 * R, 4 * (N - R))
    );
}

/// A chat server whose usage claims `reasoning` reasoning tokens of 3 output tokens, after two
/// reasoning chunks and one answer chunk; its address.
async fn contradicting_server(reasoning: u64) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut c, _)) = listener.accept().await {
            tokio::spawn(async move {
                if common::http::read_request_async(&mut c).await.is_none() {
                    return;
                }
                let usage = format!(
                    r#"{{"choices":[],"usage":{{"prompt_tokens":4,"completion_tokens":3,"completion_tokens_details":{{"reasoning_tokens":{reasoning}}}}}}}"#
                );
                let events = [
                    r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
                    r#"{"choices":[{"index":0,"delta":{"reasoning_content":" think"}}]}"#,
                    r#"{"choices":[{"index":0,"delta":{"reasoning_content":" more"}}]}"#,
                    r#"{"choices":[{"index":0,"delta":{"content":" yes"}}]}"#,
                    r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
                    &usage,
                    "[DONE]",
                ];
                let mut out = String::from(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
                );
                for e in events {
                    out.push_str(&format!("data: {e}\n\n"));
                }
                let _ = c.write_all(out.as_bytes()).await;
                let _ = c.shutdown().await;
            });
        }
    });
    addr
}

/// Bad input: a reasoning count past the output count (50 of 3) is flagged
/// (`reasoning_tokens`), not used (the reasoning chunks count instead, labelled), and named
/// in the run's verdict; the requests still succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reasoning_count_past_the_output_is_flagged_not_believed() {
    reasoning_count_is_flagged(contradicting_server(50).await).await;
}

/// Bad input: a reasoning count equal to the output count (3 of 3, 100% reasoning) while
/// answer text streamed is flagged the same way: the answer's text took a token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reasoning_count_of_all_the_output_beside_answer_text_is_flagged() {
    reasoning_count_is_flagged(contradicting_server(3).await).await;
}

/// Six requests to the server at `addr`: each record flags its reasoning count and counts
/// the reasoning chunks instead.
async fn reasoning_count_is_flagged(addr: SocketAddr) {
    let dir = tempfile::tempdir().unwrap();
    let n = 6;
    let cfg = common::run_config(
        format!("http://{addr}"),
        BackendKind::OpenaiChat,
        n,
        n,
        4,
        3,
    );
    let (result, records) = common::execute(cfg, dir.path(), "r.json", false).await;
    let s = &result.summary;
    assert_eq!(s.completed, n, "{records:?}");
    assert_eq!(
        s.implausible_usage_by_field.get("reasoning_tokens"),
        Some(&n)
    );
    for r in &records {
        assert_eq!(r.implausible_usage, [Implausible::ReasoningTokens]);
        assert_eq!(r.output_tokens, Some(3), "the output count stands");
        assert_eq!(r.reasoning_chunks, Some(2));
        assert_eq!(
            (r.reasoning_tokens, r.reasoning_tokens_source),
            (Some(2), Some(TokenSource::ChunkCount))
        );
    }
    let x = s.reasoning.as_ref().unwrap();
    assert_eq!(
        (x.total_reasoning_tokens, x.total_answer_tokens),
        (2 * n, n)
    );
    let v = result.validity.as_ref().unwrap();
    assert!(
        v.reasons.iter().any(|r| r.contains("reasoning_tokens")),
        "{:?}",
        v.reasons
    );
}

/// Bad flags: a `ttfa` SLO that is not a positive number of ms, or an SLO of
/// no known metric, is refused by the flag's parser (exit 2), its first line naming the value
/// and the metrics an SLO takes.
#[test]
fn a_bad_ttfa_slo_is_refused_naming_it() {
    for bad in ["ttfa:0", "ttfa:soon", "ttfb:100"] {
        let err = common::run_fails(&["run", "--num-prompts", "1", "--goodput", bad]);
        let first = err.lines().next().unwrap_or_default();
        assert!(first.contains(bad) && first.contains("--goodput"), "{err}");
        assert!(first.contains("ttfa"), "{err}");
    }
}
