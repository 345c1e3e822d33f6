//! The server's account of each request, read from its answers in every server's form: the
//! exact simulator answers in the form `--timings` names from its own schedule, so the split
//! of each request's TTFT is checked exactly (queue 0 and prefill = its TTFT; with slots, the
//! queue is each request's computed wait), and the "Server's account" block counts them.

use std::time::Duration;

use servebench::config::BackendKind;
use servebench::results::stats::{ServerTimings, TimingsForm};
use servebench::sim::{self, SimConfig, TimingsShape};

use crate::common;

const TTFT_MS: f64 = 50.0;
const ITL_MS: f64 = 10.0;

async fn start(shape: TimingsShape, slots: Option<u32>) -> sim::SimServer {
    let cfg = SimConfig {
        ttft: Duration::from_millis(TTFT_MS as u64),
        itl: Duration::from_millis(ITL_MS as u64),
        usage: true,
        seed: 42,
        timings: shape,
        slots,
        ..SimConfig::default()
    };
    sim::spawn(cfg, ([127, 0, 0, 1], 0).into())
        .await
        .expect("sim starts")
}

/// Each form, 12 requests of 8 tokens, 4 at once: every record carries the account in that
/// form, queue 0 (llama.cpp's has none), prefill 50 ms (TGI: its headers carry no prefill: the inference time, whole
/// ms, is prefill + 7 decode steps), decode 70 ms (7 gaps of 10 ms), and the block counts
/// them all with no disagreement of TTFT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_form_splits_ttft_exactly() {
    let _guard = common::serial_async().await;
    for (shape, form) in [
        (TimingsShape::Vllm, TimingsForm::Vllm),
        (TimingsShape::Llamacpp, TimingsForm::Llamacpp),
        (TimingsShape::Sglang, TimingsForm::Sglang),
        (TimingsShape::Tgi, TimingsForm::Tgi),
    ] {
        let server = start(shape, None).await;
        let dir = tempfile::tempdir().unwrap();
        let cfg = common::run_config(server.base_url(), BackendKind::Openai, 12, 4, 16, 8);
        let (result, records) = common::execute(cfg, dir.path(), "result.json", true).await;
        server.shutdown().await;
        assert_eq!(result.summary.completed, 12, "{shape:?}");
        for r in &records {
            let s = ServerTimings::of(r);
            assert_eq!(s.form, Some(form), "{shape:?}: {r:?}");
            // llama.cpp's `timings` carry no queue: unknown, not 0.
            let queue = (form != TimingsForm::Llamacpp).then_some(0.0);
            assert_eq!(s.queue_ms, queue, "{shape:?}");
            assert!(r.implausible_usage.is_empty(), "{shape:?}: {r:?}");
            let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-6);
            if form == TimingsForm::Tgi {
                assert_eq!(s.prefill_ms(), None);
                assert_eq!(s.prompt_tokens, r.prompt_tokens, "{shape:?}");
            } else {
                assert!(close(s.prefill_ms(), TTFT_MS), "{shape:?}: {s:?}");
                assert!(close(s.decode_ms, 7.0 * ITL_MS), "{shape:?}: {s:?}");
                assert!(close(s.itl_ms, ITL_MS), "{shape:?}: {s:?}");
                assert_eq!(s.prompt_tokens, r.prompt_tokens, "{shape:?}");
                assert_eq!(s.cached_tokens, Some(0), "{shape:?}");
            }
        }
        let a = result.summary.server_account.as_ref().expect("the block");
        assert_eq!((a.requests_with_account, a.successful_requests), (12, 12));
        assert_eq!(a.disagreements.server_ttft_longer, 0, "{shape:?}");
        assert_eq!(a.disagreements.cached_above_prompt, 0, "{shape:?}");
        if form != TimingsForm::Llamacpp {
            assert_eq!(a.queue_ms.as_ref().unwrap().max, 0.0, "{shape:?}");
        }
        let text = servebench::render::report::text(&result);
        assert!(text.contains("Server's account"), "{text}");
        assert!(text.contains("12 of 12 successful"), "{text}");
        let csv = servebench::render::csv::records(records.into_iter());
        assert!(csv
            .lines()
            .next()
            .unwrap()
            .contains("server_account.queue_ms"));
    }
}

/// With one slot, 4 requests sent at once queue behind each other: request i waits for the
/// i requests before it, each holding the slot for TTFT + 7 ITL = 120 ms. The server's queue is
/// that wait (to the scheduler's ms), its prefill still exactly 50 ms, and the client's TTFT
/// covers the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_slots_the_queue_is_the_computed_wait() {
    let _guard = common::serial_async().await;
    let server = start(TimingsShape::Vllm, Some(1)).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::run_config(server.base_url(), BackendKind::Openai, 4, 4, 16, 8);
    let (result, records) = common::execute(cfg, dir.path(), "result.json", true).await;
    server.shutdown().await;
    assert_eq!(result.summary.completed, 4);
    let mut queues: Vec<f64> = (records.iter())
        .map(|r| {
            let s = ServerTimings::of(r);
            let prefill = s.prefill_ms().unwrap();
            assert!((prefill - TTFT_MS).abs() < 1e-6, "{s:?}");
            s.queue_ms.unwrap()
        })
        .collect();
    queues.sort_by(f64::total_cmp);
    let hold = TTFT_MS + 7.0 * ITL_MS;
    for (i, q) in queues.iter().enumerate() {
        // Arrivals within a few ms of each other: the wait is i holds less that spread.
        let want = i as f64 * hold;
        assert!((q - want).abs() < 30.0, "queues {queues:?}");
    }
    let a = result.summary.server_account.as_ref().unwrap();
    assert_eq!(a.disagreements.server_ttft_longer, 0);
}

/// Runs `n` requests, `conc` at once, against `server`; the result's path and its records.
async fn saved_run(
    server: &sim::SimServer,
    dir: &std::path::Path,
    name: &str,
    n: u64,
    conc: u64,
) -> (
    std::path::PathBuf,
    Vec<servebench::measure::record::RequestRecord>,
) {
    let cfg = common::run_config(server.base_url(), BackendKind::Openai, n, conc, 16, 8);
    let (_, records) = common::execute(cfg, dir, name, true).await;
    (dir.join(name), records)
}

/// The HTML page has its own "Server's account" section with the exact truths (8 of 8
/// requests, queue 0, prefill 50 ms at every statistic), and `compare` shows the account's
/// figures with units and direction beside the client's: the run with one slot queues (its
/// p99 server queue is the wait behind 3 others, the other's 0, the better), both prefill
/// exactly 50 ms, both cover every request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_html_page_and_compare_show_the_servers_account() {
    use servebench::config::figure::{AccountFigure, Better, FigureKey};
    let _guard = common::serial_async().await;
    let dir = tempfile::tempdir().unwrap();
    let server = start(TimingsShape::Vllm, None).await;
    let (a_path, _) = saved_run(&server, dir.path(), "a.json", 8, 4).await;
    server.shutdown().await;
    let server = start(TimingsShape::Vllm, Some(1)).await;
    let (b_path, _) = saved_run(&server, dir.path(), "b.json", 4, 4).await;
    server.shutdown().await;
    let a = servebench::views::open::load(&a_path).unwrap();
    let b = servebench::views::open::load(&b_path).unwrap();

    let page =
        servebench::render::html::page(&a, &servebench::render::html::PageOptions::default())
            .unwrap();
    assert!(page.contains("<h2 id=\"server_account\">Server's account</h2>"));
    assert!(page.contains("<b>8 of 8</b> successful requests carried an account (100.0%)"));
    let exact = |name: &str, v: &str| {
        format!(
            "<tr><td>{name}</td><td>8</td><td>{v}</td><td>{v}</td><td>{v}</td><td>{v}</td></tr>"
        )
    };
    assert!(page.contains(&exact("Server queue", "0.00")), "{page}");
    assert!(page.contains(&exact("Server prefill", "50.00")), "{page}");
    assert!(page.contains(&exact("Server ITL", "10.00")), "{page}");
    assert!(page.contains("<tr><td>server_ttft_longer</td><td>0</td></tr>"));
    // The section comes after the time slices' place and before the full table.
    let at = |s: &str| page.find(s).unwrap();
    assert!(at("id=\"server_account\"") < at("id=\"series\""));

    let c = servebench::views::compare::compare(&[a, b], None);
    let rows = &c.groups[0].steps[0].rows;
    let row = |f: AccountFigure| {
        (rows.iter())
            .find(|r| r.metric == FigureKey::Account(f))
            .unwrap_or_else(|| panic!("{f:?} in {rows:?}"))
    };
    let queue = row(AccountFigure::P99Queue);
    assert_eq!(queue.values[0], Some(0.0));
    let waited = queue.values[1].unwrap();
    assert!(waited > 2.0 * (TTFT_MS + 7.0 * ITL_MS) - 30.0, "{queue:?}");
    assert_eq!(queue.best, Some(0));
    assert_eq!(queue.metric.better(), Some(Better::Lower));
    assert_eq!(
        queue.metric.label_with_unit(),
        "Server's account: P99 server queue (ms)"
    );
    for v in &row(AccountFigure::MeanPrefill).values {
        assert!((v.unwrap() - TTFT_MS).abs() < 1e-9, "{v:?}");
    }
    assert_eq!(row(AccountFigure::Coverage).values, [Some(1.0), Some(1.0)]);
    assert_eq!(row(AccountFigure::Coverage).best, None);
    assert!(row(AccountFigure::MeanClientPart).values[0].unwrap() >= 0.0);
    // The client's own figures are still there, beside them.
    assert!(rows.iter().any(|r| r.metric.name() == "p99_ttft_ms"));
}

/// `join` prefers the spans and falls back to each answer's own account: with a trace that
/// names only the even requests, those 6 are split by their span and the 6 others by the
/// `metrics` in their answer, each named by its source and both counted; either way the
/// split is the simulator's truth (queue 0, prefill and server TTFT 50 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_falls_back_to_each_answers_own_account() {
    use servebench::results::join::{join_files, Source};
    let _guard = common::serial_async().await;
    let dir = tempfile::tempdir().unwrap();
    let server = start(TimingsShape::Vllm, None).await;
    let (result, records) = saved_run(&server, dir.path(), "run.json", 12, 4).await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = format!("{}/sim/otlp", server.base_url());
    let mut otlp: serde_json::Value =
        serde_json::from_slice(&reqwest::get(url).await.unwrap().bytes().await.unwrap()).unwrap();
    server.shutdown().await;
    let even: Vec<String> = (records.iter())
        .filter(|r| !r.warmup && r.id % 2 == 0)
        .map(|r| r.request_id.clone().unwrap())
        .collect();
    assert_eq!(even.len(), 6);
    let spans = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array_mut()
        .unwrap();
    spans.retain(|s| {
        let text = s.to_string();
        // The simulator names a span as vLLM does: `cmpl-<id>-0`, `chatcmpl-<id>`.
        (even.iter()).any(|id| {
            text.contains(&format!("\"cmpl-{id}-0\""))
                || text.contains(&format!("\"chatcmpl-{id}\""))
        })
    });
    assert_eq!(spans.len(), 6);
    let trace = dir.path().join("trace.json");
    std::fs::write(&trace, otlp.to_string()).unwrap();

    let j = join_files(&result, &trace).unwrap();
    assert_eq!(
        (j.from_spans, j.from_answers, j.matched),
        (6, 6, 6),
        "{j:?}"
    );
    assert_eq!((j.unmatched_requests, j.implausible_answers), (6, 0));
    assert_eq!(j.joined.len(), 12);
    for r in &j.joined {
        let want = if r.id % 2 == 0 {
            Source::Span
        } else {
            Source::Answer
        };
        assert_eq!(r.source, want, "{r:?}");
        assert_eq!(r.queue_ms, Some(0.0), "{r:?}");
        assert!((r.prefill_ms.unwrap() - TTFT_MS).abs() < 1e-9, "{r:?}");
        assert!((r.server_ttft_ms - TTFT_MS).abs() < 1e-9, "{r:?}");
        assert!((r.network_ms - (r.ttft_ms - TTFT_MS)).abs() < 1e-9, "{r:?}");
    }
    let text = common::stdout_of(&["join", common::path_str(&result), common::path_str(&trace)]);
    assert!(text.contains("Split by the span"), "{text}");
    let line = (text.lines())
        .find(|l| l.starts_with("Split by the answer's own account"))
        .unwrap();
    assert!(line.trim_end().ends_with(" 6"), "{line}");
    let csv = common::stdout_of(&[
        "join",
        common::path_str(&result),
        common::path_str(&trace),
        "--format",
        "csv",
    ]);
    assert_eq!(csv.lines().filter(|l| l.ends_with(",answer")).count(), 6);
    assert_eq!(csv.lines().filter(|l| l.ends_with(",span")).count(), 6);
}
