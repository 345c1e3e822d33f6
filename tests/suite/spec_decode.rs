//! Speculative decoding, over real HTTP on 127.0.0.1 against the built-in
//! simulator in exact mode with `K = 3` draft tokens and the acceptance pattern 3, 1, 0, 2:
//! a 40-token answer is 17 chunks (1, then 4, 2, 1, 3 three times, then 4, 2, 1 and a last
//! step cut to 2), one every `itl` after `ttft`. The tokens-per-chunk distribution, the
//! latencies and the acceptance figures from the server's `vllm:spec_decode_*` counters equal
//! that truth, the result has vLLM's keys, and bad simulator flags are refused in one line.

use crate::common;

use std::time::Duration;

use serde_json::{json, Value};
use servebench::config::figure::RunFigure;
use servebench::config::{BackendKind, ScrapeSpec};
use servebench::drive::run::{execute, RunOptions};
use servebench::measure::client::Secrets;
use servebench::sim::{SimConfig, SimServer, SpecDecode};
use tokio_util::sync::CancellationToken;

const TTFT_MS: u64 = 30;
const ITL_MS: u64 = 6;
const N: u64 = 40;
/// Chunks of a 40-token answer, and per answer: steps, draft tokens, accepted tokens, and the
/// steps that accepted at least 1, 2, 3 tokens.
const CHUNKS: u64 = 17;
const STEPS: u64 = CHUNKS - 1;
const ACCEPTED: u64 = N - CHUNKS;
const PER_POSITION: [u64; 3] = [12, 7, 4];

async fn spec_sim() -> SimServer {
    let cfg = SimConfig {
        ttft: Duration::from_millis(TTFT_MS),
        itl: Duration::from_millis(ITL_MS),
        spec: Some(SpecDecode {
            draft_tokens: 3,
            accepted: vec![3, 1, 0, 2],
        }),
        seed: 5,
        ..SimConfig::default()
    };
    common::spawn_sim(cfg).await
}

/// Counts exactly the simulator's (17 chunks of 1, 4, 2, 1, 3, ... tokens per
/// request from llama.cpp's per-chunk `tokens`; 16 drafts of 3, 23 accepted, by position 12,
/// 7, 4 from the scraped counters: acceptance rate 23/48, length 1 + 23/16), ITL one step and
/// TPOT 16 steps over 39 tokens within 1 ms (medians, best of up to 3 runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_decoding_against_the_exact_simulator_equals_its_truth() {
    let n = 8u64;
    let tpot_ms = (STEPS * ITL_MS) as f64 / (N - 1) as f64;
    let mut misses = Vec::new();
    for _ in 0..3 {
        let server = spec_sim().await;
        let dir = tempfile::tempdir().unwrap();
        let cfg = common::run_config(server.base_url(), BackendKind::Llamacpp, n, 4, 8, N);
        let opts = RunOptions {
            scrape: Some(ScrapeSpec {
                url: format!("{}/metrics", server.base_url()),
                more_urls: Vec::new(),
                interval: Duration::from_millis(200),
                insecure: false,
            }),
            ..RunOptions::new(dir.path().join("r.json"), true)
        };
        let result = execute(cfg, &Secrets::default(), &opts, CancellationToken::new())
            .await
            .expect("the run completes");
        let records = common::read_records(&opts.records_path);
        server.shutdown().await;

        let s = &result.summary;
        assert_eq!((s.completed, s.failed), (n, 0), "{records:?}");
        assert_eq!(s.total_output_tokens, n * N);
        assert_eq!(s.total_output_chunks, n * CHUNKS);
        for r in records.iter().filter(|r| !r.warmup) {
            let want: Vec<u32> = [1, 4, 2, 1, 3, 4, 2, 1, 3, 4, 2, 1, 3, 4, 2, 1, 2].to_vec();
            assert_eq!(r.chunk_tokens.as_ref(), Some(&want));
        }
        let d = s.tokens_per_chunk.as_ref().expect("tokens per chunk");
        assert_eq!((d.count, d.max, d.min), (n * CHUNKS, 4.0, 1.0));
        assert!((d.mean - N as f64 / CHUNKS as f64).abs() < 1e-9);
        let f = (result.server_metrics.as_ref())
            .and_then(|m| m.summary.spec_decode.clone())
            .expect("the server's spec-decode counters");
        assert_eq!(f.num_drafts, Some((n * STEPS) as f64));
        assert_eq!(f.draft_tokens, Some((3 * n * STEPS) as f64));
        assert_eq!(f.accepted_tokens, Some((n * ACCEPTED) as f64));
        let rate = ACCEPTED as f64 / (3 * STEPS) as f64;
        let length = 1.0 + ACCEPTED as f64 / STEPS as f64;
        assert!((f.acceptance_rate.unwrap() - rate).abs() < 1e-12);
        assert!((f.acceptance_length.unwrap() - length).abs() < 1e-12);
        let by_position: Vec<f64> = PER_POSITION
            .iter()
            .map(|&p| p as f64 / STEPS as f64)
            .collect();
        assert_eq!(f.per_position_acceptance_rates, by_position);
        // vLLM's keys, as `vllm bench serve` saves them (the rate in percent).
        let doc: Value = common::json(&dir.path().join("r.json"));
        assert_eq!(doc["spec_decode_num_drafts"], json!(n * STEPS));
        assert_eq!(doc["spec_decode_draft_tokens"], json!(3 * n * STEPS));
        assert_eq!(doc["spec_decode_accepted_tokens"], json!(n * ACCEPTED));
        let saved_rate = doc["spec_decode_acceptance_rate"].as_f64().unwrap();
        assert!((saved_rate - 100.0 * rate).abs() < 1e-9);
        let saved_length = doc["spec_decode_acceptance_length"].as_f64().unwrap();
        assert!((saved_length - length).abs() < 1e-12);
        let step = servebench::views::open::step_of(&dir.path().join("r.json"), &result, false);
        assert_eq!(
            step.metric(RunFigure::SpecDecodeAcceptanceLength),
            Some(saved_length)
        );
        let csv = servebench::render::csv::result(&result);
        assert!(
            csv.lines()
                .next()
                .unwrap()
                .contains("spec_decode_acceptance_rate"),
            "{csv}"
        );
        let report = servebench::render::report::text(&result);
        assert!(report.contains("Mean acceptance length:"), "{report}");
        assert!(report.contains(&format!("{length:.2}")), "{report}");
        assert!(report.contains("0.750, 0.438, 0.250"), "{report}");

        // Latencies: a step per chunk, medians within 1 ms; never early.
        let e2el = (TTFT_MS + STEPS * ITL_MS) as f64;
        assert!(s.e2el_ms.as_ref().unwrap().min >= e2el - 0.05);
        let off = [
            (s.itl_ms.as_ref().unwrap().median - ITL_MS as f64).abs(),
            (s.tpot_ms.as_ref().unwrap().median - tpot_ms).abs(),
            (s.e2el_ms.as_ref().unwrap().median - e2el).abs(),
        ];
        if off.iter().all(|d| *d < 1.0) {
            return;
        }
        misses.push(off);
    }
    panic!("no run within 1 ms of the schedule: {misses:?}");
}

/// Counters a lying server answers at scrape `i`: drafts, draft tokens, accepted tokens,
/// generated tokens.
type Counters = fn(u64) -> [f64; 4];

/// A `/metrics` endpoint whose vLLM counters lie: scrape `i` answers `counters(i)` as
/// (drafts, draft tokens, accepted tokens, generated tokens); its URL.
fn lying_metrics(counters: Counters) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for (i, conn) in listener.incoming().enumerate() {
            let Ok(mut conn) = conn else { break };
            if common::http::read_request(&mut conn).is_none() {
                continue;
            }
            let [drafts, tokens, accepted, generated] = counters(i as u64);
            let l = r#"{model_name="m"}"#;
            let body = format!(
                "vllm:num_requests_running{l} 1\nvllm:generation_tokens_total{l} {generated}\n\
                 vllm:spec_decode_num_drafts_total{l} {drafts}\n\
                 vllm:spec_decode_num_draft_tokens_total{l} {tokens}\n\
                 vllm:spec_decode_num_accepted_tokens_total{l} {accepted}\n"
            );
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = std::io::Write::write_all(&mut conn, answer.as_bytes());
        }
    });
    url
}

/// Hostile counters: 7M accepted of 210 draft tokens in a run that generated 240 (a rate of
/// 3,333,333%, a length of 100,001), and drafts that fall by a third every other scrape (read
/// as restarts, 3e9 drafts in seconds): each named in `server_metrics.summary.implausible` and
/// the report, and no spec-decode count, ratio or vLLM key shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_decode_counters_that_cannot_be_true_are_named_not_shown() {
    let cases: [(Counters, &str); 2] = [
        (
            |i| [70.0, 210.0, 7e6, 240.0].map(|x| x * i as f64),
            "spec_accepted_over_draft_tokens",
        ),
        (
            |i| [[3e9, 1e9][i as usize % 2], 9e9, 1e9, 1e10 * (i + 1) as f64],
            "spec_drafts_fell",
        ),
    ];
    for (counters, named) in cases {
        let server = spec_sim().await;
        let dir = tempfile::tempdir().unwrap();
        let cfg = common::run_config(server.base_url(), BackendKind::Llamacpp, 16, 4, 8, N);
        let opts = RunOptions {
            scrape: Some(ScrapeSpec {
                url: lying_metrics(counters),
                more_urls: Vec::new(),
                interval: Duration::from_millis(100),
                insecure: false,
            }),
            ..RunOptions::new(dir.path().join("r.json"), true)
        };
        let result = execute(cfg, &Secrets::default(), &opts, CancellationToken::new())
            .await
            .expect("the run completes");
        server.shutdown().await;
        assert_eq!(result.summary.completed, 16);
        let m = result.server_metrics.as_ref().expect("scraped");
        assert!(m.samples.len() >= 3, "{m:?}");
        assert!(
            m.summary.implausible.iter().any(|n| n == named),
            "{named}: {:?}",
            m.summary.implausible
        );
        let f = m.summary.spec_decode.as_ref().expect("reported");
        assert_eq!(
            (
                f.num_drafts,
                f.accepted_tokens,
                f.acceptance_rate,
                f.acceptance_length
            ),
            (None, None, None, None),
            "{named}"
        );
        let doc: Value = common::json(&dir.path().join("r.json"));
        assert!(doc.get("spec_decode_acceptance_rate").is_none(), "{named}");
        assert!(
            doc.get("spec_decode_acceptance_length").is_none(),
            "{named}"
        );
        let report = servebench::render::report::text(&result);
        assert!(report.contains("Implausible server counters:"), "{report}");
        assert!(report.contains(named), "{report}");
        assert!(!report.contains("Mean acceptance length:"), "{report}");
    }
}

/// Bad flags: an acceptance pattern without draft tokens, an accepted count past
/// K, and speculative decoding with an engine preset are each refused in one line naming the
/// setting, exit 2.
#[test]
fn bad_spec_decode_flags_are_refused_in_one_line() {
    for (args, named) in [
        (vec!["--spec-accepted", "1,2"], "--spec-draft-tokens"),
        (
            vec!["--spec-draft-tokens", "2", "--spec-accepted", "1,3"],
            "spec_accepted",
        ),
        (vec!["--spec-draft-tokens", "2"], "spec_accepted"),
        (
            vec!["--spec-draft-tokens", "99", "--spec-accepted", "1"],
            "spec_draft_tokens",
        ),
        (
            vec![
                "--spec-draft-tokens",
                "2",
                "--spec-accepted",
                "1",
                "--preset",
                "vllm-llama-405b",
            ],
            "exact mode",
        ),
    ] {
        let mut all = vec!["sim"];
        all.extend(&args);
        let err = common::run_fails(&all);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(named), "{args:?}: {err}");
    }
}
