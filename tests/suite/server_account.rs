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
