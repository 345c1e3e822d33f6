//! Agentic jobs against the exact simulator, whose schedule is known: each call of a generated
//! job waits for its level before (the slowest call of it), is sent the gap after it ended,
//! and carries its replies, so a level's end and a call's prompt count have a truth
//! (docs/simulator.md, the `exact` mode): level L ends L × (TTFT + (output − 1) × ITL) +
//! (L − 1) × gap after the job's first call was sent, plus the network and send time of the
//! calls on its path; a call of level k ≥ 2 holds input + F × output prompt tokens. A failed
//! call fails exactly its job's calls downstream of it, and every planned call is accounted
//! for (tests/suite/accounting.rs draws every ending).
//!
//! The tests run one at a time, and never beside the other timed tests (`common::serial`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use servebench::config::workload::AgenticShape;
use servebench::config::{BackendKind, Dataset, RunConfig, WorkloadSpec};
use servebench::drive::load::{drive, Sink};
use servebench::measure::client::{Client, RequestSpec};
use servebench::measure::clock::Clock;
use servebench::measure::job::CallPlace;
use servebench::measure::record::RequestRecord;
use servebench::results::document::BenchResult;
use servebench::sim::{FaultConfig, SimConfig};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::common;

const TTFT_MS: f64 = 30.0;
const ITL_MS: f64 = 4.0;
const INPUT: u64 = 12;
const OUTPUT: u64 = 5;

/// The exact simulator, usage in every stream, failing `error_rate` of its requests.
async fn sim(error_rate: f64) -> servebench::sim::SimServer {
    common::spawn_sim(SimConfig {
        ttft: Duration::from_millis(TTFT_MS as u64),
        itl: Duration::from_millis(ITL_MS as u64),
        usage: true,
        seed: 7,
        faults: FaultConfig {
            error_rate,
            ..FaultConfig::default()
        },
        ..SimConfig::default()
    })
    .await
}

/// `n` generated jobs of `shape` on the completions API, one job at a time, counted in words.
fn config(url: String, n: u64, shape: AgenticShape) -> RunConfig {
    let mut cfg = common::run_config(url, BackendKind::Openai, n, 1, INPUT, OUTPUT);
    cfg.workload = WorkloadSpec {
        dataset: Dataset::Agentic {
            input_len: INPUT,
            output_len: Some(OUTPUT),
            shape,
        },
        tokenizer: None,
    };
    cfg
}

async fn run(cfg: RunConfig) -> (BenchResult, Vec<RequestRecord>) {
    let dir = tempfile::tempdir().unwrap();
    common::execute(cfg, dir.path(), "result.json", false).await
}

/// The records of each job, by job, each job's by call number.
fn by_job(records: &[RequestRecord]) -> BTreeMap<u64, BTreeMap<u32, &RequestRecord>> {
    let mut jobs: BTreeMap<u64, BTreeMap<u32, &RequestRecord>> = BTreeMap::new();
    for r in records {
        let job = r.job.expect("a job's call carries its job");
        let call = r.call.as_ref().expect("and its place").call;
        jobs.entry(job).or_default().insert(call, r);
    }
    jobs
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Each level's truth against what was measured, for `shape`: per level, the mean over jobs of
/// (the level's last end − the job's first send), its truth, and the mean time the calls on
/// the job's path spent beyond the server's schedule (network, send). Asserts the driver's
/// rule exactly on every call: sent at or after its schedule, and scheduled the gap after the
/// last of its upstream calls ended (server time), never before the slowest.
async fn levels(shape: AgenticShape, n: u64) -> Vec<(f64, f64, f64)> {
    let server = sim(0.0).await;
    let (result, records) = run(config(server.base_url(), n, shape)).await;
    server.shutdown().await;
    let calls = u64::from(shape.fanout * shape.depth);
    assert_eq!(result.summary.completed, n * calls, "{shape:?}");
    assert_eq!((result.unsent, result.planned), (0, Some(n * calls)));
    let exact = TTFT_MS + (OUTPUT - 1) as f64 * ITL_MS;
    let gap_ns = (shape.gap_ms * 1e6) as u64;
    let f = shape.fanout as usize;
    let mut out = vec![(0.0, 0.0, 0.0); shape.depth as usize];
    for calls in by_job(&records).values() {
        assert_eq!(calls.len() as u64, u64::from(shape.fanout * shape.depth));
        let start = calls.values().map(|r| r.sent_ns).min().unwrap();
        for (level, o) in out.iter_mut().enumerate() {
            let of_level: Vec<&RequestRecord> =
                (0..f).map(|j| calls[&((level * f + j) as u32)]).collect();
            for r in &of_level {
                assert!(r.sent_ns >= r.scheduled_ns, "sent before its time");
                let place = r.call.as_ref().unwrap();
                if level > 0 {
                    let slowest = (place.after.iter()).map(|a| calls[a].end_ns).max().unwrap();
                    assert_eq!(r.scheduled_ns, slowest + gap_ns, "{place:?}");
                }
            }
            let last = of_level.iter().max_by_key(|r| r.end_ns).unwrap();
            // The path's call: its time beyond the schedule (from when it was due).
            let due = if level == 0 { start } else { last.scheduled_ns };
            let beyond = ms(last.end_ns - due) - exact;
            let l = (level + 1) as f64;
            o.0 += ms(last.end_ns - start) / n as f64;
            o.1 = l * exact + (l - 1.0) * shape.gap_ms;
            o.2 += beyond / n as f64;
        }
    }
    // Running sums: a level's allowance is every level's on its path.
    let mut sum = 0.0;
    for o in out.iter_mut() {
        sum += o.2;
        o.2 = sum;
    }
    out
}

/// The chain (F = 1, D = 3), the fan-out (F = 3, D = 1) and F = 2, D = 3: per level, the mean
/// over jobs of (the level's last end − the job's first send) is its truth plus the measured
/// network and send time of the calls on its path, within 1 ms (the rest is exact arithmetic
/// of the driver's schedule, asserted on every call); the measured excess over the truth is
/// printed (a few hundred µs on loopback).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_level_of_a_generated_job_ends_on_the_simulators_truth() {
    let _serial = common::serial_async().await;
    for (fanout, depth) in [(1, 3), (3, 1), (2, 3)] {
        let shape = AgenticShape {
            fanout,
            depth,
            gap_ms: 15.0,
        };
        for (level, (measured, truth, allowance)) in levels(shape, 6).await.iter().enumerate() {
            eprintln!(
                "F={fanout} D={depth} level {}: measured {measured:.3} ms, truth {truth:.3} ms, excess {:.3} ms (network and send {allowance:.3} ms)",
                level + 1,
                measured - truth
            );
            assert!(*measured >= truth - 0.05, "a level ended before its truth");
            assert!(
                (measured - truth - allowance).abs() <= 1.0,
                "F={fanout} D={depth} level {}: measured {measured:.3}, truth {truth:.3} + {allowance:.3}",
                level + 1
            );
        }
    }
}

/// On the completions API in words, a call of level k ≥ 2 holds exactly its own input and
/// the F replies of the level before by the server's count, as built.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spliced_call_holds_its_input_and_every_upstream_reply_by_the_servers_count() {
    let _serial = common::serial_async().await;
    let server = sim(0.0).await;
    let shape = AgenticShape {
        fanout: 2,
        depth: 3,
        gap_ms: 0.0,
    };
    let (result, records) = run(config(server.base_url(), 3, shape)).await;
    server.shutdown().await;
    assert_eq!(result.summary.completed, 18);
    assert_eq!(result.summary.input_len_disagreements, 0);
    for r in &records {
        let level = r.call.as_ref().unwrap().call / 2;
        let want = if level == 0 {
            INPUT
        } else {
            INPUT + 2 * OUTPUT
        };
        assert_eq!(r.prompt_tokens, Some(want), "level {level}");
        assert_eq!(r.input_len_requested, Some(want), "built, level {level}");
        assert!(r.job.is_some_and(|j| j < 3));
    }
}

/// Fan-in: a call after a short and a long call is scheduled when the long one ended, plus
/// its gap, and carries both replies (the short one's first, as its place says).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fan_in_waits_for_the_slowest_upstream_call() {
    let _serial = common::serial_async().await;
    let server = sim(0.0).await;
    let mut cfg = config(server.base_url(), 1, AgenticShape::default());
    cfg.load.max_concurrency = None;
    let client = Client::new(&cfg, &Default::default(), None, None).unwrap();
    let place = |call: u32, after: Vec<u32>, gap_ms: f64| CallPlace {
        call,
        of: 3,
        splice: after.clone(),
        after,
        gap_ms,
    };
    let spec = |output_len: u64, p: CallPlace| RequestSpec {
        prompt: "one two three".into(),
        input_len: Some(3),
        output_len,
        call: Some(p),
        ..RequestSpec::default()
    };
    let pool = vec![
        spec(2, place(0, vec![], 0.0)),
        spec(20, place(1, vec![], 0.0)),
        spec(2, place(2, vec![0, 1], 10.0)),
    ];
    let (tx, mut rx) = mpsc::unbounded_channel();
    let sink = Sink {
        records: tx,
        live: Arc::default(),
        time_scale: 1.0,
        abort: CancellationToken::new(),
        throttle: None,
    };
    let clock = Clock::start();
    let stop = CancellationToken::new();
    let driven = drive(client, pool, &cfg.load, clock, clock.now_ns(), stop, sink).await;
    server.shutdown().await;
    let mut records = BTreeMap::new();
    while let Ok(r) = rx.try_recv() {
        assert!(r.is_ok(), "{:?}", r.outcome);
        records.insert(r.call.as_ref().unwrap().call, r);
    }
    assert_eq!((driven.sent, driven.planned), (3, Some(3)));
    assert_eq!(driven.jobs_planned, Some(1));
    let (short, long, fan_in) = (&records[&0], &records[&1], &records[&2]);
    assert!(
        long.end_ns > short.end_ns + 50_000_000,
        "20 tokens take longer"
    );
    assert_eq!(fan_in.scheduled_ns, long.end_ns + 10_000_000);
    assert!(fan_in.sent_ns >= fan_in.scheduled_ns);
    // 3 words of its own, 2 and 20 of the replies.
    assert_eq!(fan_in.prompt_tokens, Some(25));
    assert_eq!(fan_in.input_len_requested, Some(25));
}

/// `--error-rate` on the simulator: the jobs whose calls failed lose exactly the calls
/// downstream of the failures (unsent, `upstream_failed`), their other calls still run, every
/// other job completes, and planned = ok + failed + unsent for calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_call_fails_exactly_its_job() {
    let _serial = common::serial_async().await;
    let server = sim(0.15).await;
    let shape = AgenticShape {
        fanout: 2,
        depth: 3,
        gap_ms: 0.0,
    };
    let n = 12;
    let (result, records) = run(config(server.base_url(), n, shape)).await;
    server.shutdown().await;
    let jobs = by_job(&records);
    let mut downstream_of_failures = 0u64;
    let mut failed_jobs = 0;
    for job in 0..n {
        let calls = jobs.get(&job).cloned().unwrap_or_default();
        // A call is doomed when a call of the level before failed or was doomed (each level
        // waits for the whole level before it).
        let mut doomed_level = false;
        let mut failed = false;
        for level in 0..3u32 {
            for j in 0..2 {
                let call = level * 2 + j;
                match (doomed_level, calls.get(&call)) {
                    (true, None) => downstream_of_failures += 1,
                    (true, Some(_)) => panic!("job {job}: call {call} sent after a failure"),
                    (false, None) => panic!("job {job}: call {call} never sent"),
                    (false, Some(r)) => failed |= !r.is_ok(),
                }
            }
            doomed_level |= failed;
        }
        failed_jobs += u64::from(failed);
    }
    let (ok, bad) = (result.summary.completed, result.summary.failed);
    eprintln!(
        "{failed_jobs} of {n} jobs failed: {bad} calls failed, {downstream_of_failures} unsent"
    );
    assert!(
        failed_jobs > 0 && failed_jobs < n,
        "the draw fails some jobs, not all"
    );
    assert_eq!(result.unsent_by.upstream_failed, downstream_of_failures);
    assert_eq!(result.unsent, downstream_of_failures);
    assert_eq!(ok + bad + result.unsent, n * 6);
    assert_eq!(result.planned, Some(n * 6));
    assert!(!result.complete);
}
