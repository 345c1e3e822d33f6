//! Thread per core (`--client-threads T`) and sends on time.
//!
//! - The lanes measure what one thread measures: against the exact simulator, TTFT and E2EL
//!   medians within 2 ms of its schedule with 1 and 3 threads, every request once, and the
//!   run driven by that many threads (their names seen in `/proc` while it runs).
//! - Every planned request is accounted for with 1, 2 and 3 threads and each ending (its own
//!   end, a time window, Ctrl-C, `--max-errors`, a conversation's failed turn), with the
//!   binary as a user runs it against `servebench sim --time-scale 10`.
//! - Requests leave on time: at 1,000 requests/s a quarter or more of the sends leave within
//!   0.1 ms of their scheduled time (tokio's 1 ms timer wheel left about one in ten that close).
//! - Nothing tokenizer-shaped runs on the thread that reads streams: with every answer's count
//!   made 2 ms slower, 256 streams' TTFT and ITL medians stay those of a run in words.

use crate::common;

use common::SimProcess;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use servebench::config::threads::ClientThreads;
use servebench::config::{BackendKind, RequestRate};
use servebench::drive::run::{execute, RunOptions};
use servebench::measure::client::Secrets;
use servebench::measure::record::RequestRecord;
use servebench::results::document::BenchResult;
use servebench::sim::{SimConfig, SimServer};
use tokio_util::sync::CancellationToken;

/// Runs `test` on a one-thread runtime, as `servebench run`'s, and never beside another timed
/// test (`common::serial`): it measures real time against the simulator.
fn alone(test: impl std::future::Future<Output = ()>) {
    let _guard = common::serial();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(test);
}

const TTFT_MS: u64 = 50;
const ITL_MS: u64 = 10;

async fn threads_sim() -> SimServer {
    let cfg = SimConfig {
        ttft: Duration::from_millis(TTFT_MS),
        itl: Duration::from_millis(ITL_MS),
        seed: 42,
        ..SimConfig::default()
    };
    // On a runtime of its own, as the built-in simulator of `servebench run`.
    common::spawn_sim(cfg).await
}

/// The names of this process's threads.
fn thread_names() -> BTreeSet<String> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return BTreeSet::new();
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect()
}

/// One run of `n` requests (at most `conc` at once, at `rate`/s) of 20 tokens on `threads`
/// client threads against the exact simulator; its result, records and the lane threads
/// seen while it ran.
async fn run_on(
    threads: u16,
    n: u64,
    conc: Option<u64>,
    rate: f64,
    out_len: u64,
) -> (BenchResult, Vec<RequestRecord>, BTreeSet<String>) {
    let server = threads_sim().await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::run_config(server.base_url(), BackendKind::Openai, n, 1, 16, out_len);
    cfg.load.max_concurrency = conc;
    cfg.load.request_rate = RequestRate::PerSecond(rate);
    let mut opts = RunOptions::new(dir.path().join("r.json"), false);
    opts.client_threads = ClientThreads::Count(threads);
    let done = CancellationToken::new();
    let watcher = {
        let done = done.clone();
        tokio::spawn(async move {
            let mut seen = BTreeSet::new();
            while !done.is_cancelled() {
                seen.extend(
                    thread_names()
                        .into_iter()
                        .filter(|n| n.starts_with("sb-lane-")),
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            seen
        })
    };
    let result = execute(cfg, &Secrets::default(), &opts, CancellationToken::new())
        .await
        .expect("the run completes");
    done.cancel();
    let seen = watcher.await.unwrap();
    server.shutdown().await;
    let records = common::read_records(&opts.records_path);
    (result, records, seen)
}

/// With 1 and 3 threads: every request sent once and measured; the run says how many threads
/// drove it, and the threads were there; TTFT and E2EL medians within 2 ms of the simulator's
/// schedule (a run disturbed by the machine is repeated, up to 3 times: a client that is off
/// fails every one).
#[test]
fn threads_measure_the_truth_as_one_thread_does() {
    alone(the_truth_on_1_and_3_threads());
}

async fn the_truth_on_1_and_3_threads() {
    let (n, out_len) = (96u64, 20u64);
    let e2el = (TTFT_MS + (out_len - 1) * ITL_MS) as f64;
    for threads in [1u16, 3] {
        let mut attempts = Vec::new();
        for _ in 0..3 {
            let (result, records, seen) = run_on(threads, n, Some(24), 240.0, out_len).await;
            let ids: BTreeSet<u64> = records.iter().filter(|r| !r.warmup).map(|r| r.id).collect();
            assert_eq!(
                ids,
                (0..n).collect(),
                "{threads} threads: every request once"
            );
            assert_eq!(result.summary.completed, n, "{threads} threads");
            let v = result.validity.as_ref().expect("validity");
            assert_eq!(v.client_threads, Some(u64::from(threads)));
            let lanes: BTreeSet<String> = (1..threads).map(|i| format!("sb-lane-{i}")).collect();
            assert_eq!(seen, lanes, "the lane threads seen while {threads} ran");
            let s = &result.summary;
            let got = (
                s.ttft_ms.as_ref().unwrap().median,
                s.e2el_ms.as_ref().unwrap().median,
            );
            let ok = (got.0 - TTFT_MS as f64).abs() <= 2.0 && (got.1 - e2el).abs() <= 2.0;
            attempts.push(got);
            if ok {
                break;
            }
        }
        let last = attempts.last().unwrap();
        assert!(
            (last.0 - TTFT_MS as f64).abs() <= 2.0 && (last.1 - e2el).abs() <= 2.0,
            "{threads} threads: (TTFT, E2EL) medians per attempt {attempts:?}, truth ({TTFT_MS}, {e2el})"
        );
    }
}

/// At 1,000 requests/s (open loop, 400 requests of 2 tokens) at least a quarter of the sends
/// leave within 0.1 ms of their scheduled time, on the best of 3 runs, and none early. On
/// tokio's timer a send waits for the next millisecond tick, so its lateness is spread over
/// that millisecond: about one in ten comes within 0.1 ms. A count, not a percentile of the
/// lag: a loaded machine preempts the client for milliseconds at a time (measured here with
/// a load average of 8 on 2 cores: p90 up to 5 ms, the median up to 0.7 ms), yet a third or
/// more of the sends still left within 0.1 ms in every run; unloaded, 85%.
#[test]
fn requests_leave_within_a_tenth_of_a_millisecond() {
    alone(punctual_sends());
}

async fn punctual_sends() {
    let mut shares = Vec::new();
    for _ in 0..3 {
        let (result, records, _) = run_on(1, 400, None, 1000.0, 2).await;
        assert_eq!(result.summary.completed, 400);
        assert!(
            records.iter().all(|r| r.began_ns() >= r.scheduled_ns),
            "never early"
        );
        let punctual = (records.iter().filter(|r| !r.warmup))
            .filter(|r| r.began_ns() - r.scheduled_ns <= 100_000)
            .count();
        shares.push(punctual as f64 / 400.0);
        if punctual * 4 >= 400 {
            return;
        }
    }
    panic!("share of sends within 0.1 ms of their schedule, per run: {shares:?}");
}

/// A `servebench sim --time-scale 10` child, failing `error_rate` of its requests.
fn start_sim(error_rate: f64) -> SimProcess {
    let rate = error_rate.to_string();
    SimProcess::start(&["--time-scale", "10", "--seed", "7", "--error-rate", &rate])
}

/// planned = ok + failed + unsent (and = `planned` where the test knows it), the unsent by
/// why add up, one records line per measured request, no id twice; the threads it ran on.
fn check(dir: &Path, expected: Option<u64>, case: &str) -> u64 {
    let r = common::json(&dir.join("r.json"));
    let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{case}: no {k}"));
    let (ok, failed, unsent) = (n("completed"), n("failed"), n("unsent"));
    let by: u64 = ["stopped", "earlier_turn_failed", "window_ended"]
        .iter()
        .map(|k| r["unsent_by"][k].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(by, unsent, "{case}: unsent_by");
    let planned = r["planned"].as_u64();
    if let Some(e) = expected {
        assert_eq!(planned, Some(e), "{case}: planned");
    }
    if let Some(p) = planned {
        assert_eq!(ok + failed + unsent, p, "{case}: {r:#}");
    }
    let records: Vec<RequestRecord> = common::read_records(&dir.join("r.records.jsonl"))
        .into_iter()
        .filter(|r| !r.warmup)
        .collect();
    assert_eq!(records.len() as u64, ok + failed, "{case}: records");
    let ids: BTreeSet<u64> = records.iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), records.len(), "{case}: an id twice");
    r["validity"]["client_threads"].as_u64().unwrap_or(0)
}

/// Every ending with 1, 2 and 3 threads: the run's own end, a time window with a cap, Ctrl-C,
/// `--max-errors` against a failing simulator, conversations whose failed turns end them.
#[test]
fn every_planned_request_is_accounted_for_on_every_thread_count() {
    let _guard = common::serial();
    let (good, failing) = (start_sim(0.0), start_sim(0.25));
    type Case = (&'static str, &'static [&'static str], Option<u64>, bool);
    let cases: [Case; 5] = [
        (
            "count",
            &[
                "--num-prompts",
                "60",
                "--request-rate",
                "40",
                "--max-concurrency",
                "6",
            ],
            Some(60),
            false,
        ),
        (
            "window",
            &[
                "--duration",
                "4",
                "--request-rate",
                "30",
                "--max-concurrency",
                "5",
            ],
            None,
            false,
        ),
        (
            "ctrl-c",
            &["--num-prompts", "800", "--request-rate", "20"],
            Some(800),
            false,
        ),
        (
            "max-errors",
            &[
                "--num-prompts",
                "200",
                "--request-rate",
                "40",
                "--max-errors",
                "4",
            ],
            Some(200),
            true,
        ),
        (
            "turns",
            &[
                "--num-prompts",
                "12",
                "--request-rate",
                "20",
                "--turns",
                "3",
                "--think-time",
                "0.5",
            ],
            Some(36),
            true,
        ),
    ];
    for threads in ["1", "2", "3"] {
        for (name, args, expected, fail) in cases {
            let case = format!("{name} on {threads} threads");
            let dir = tempfile::tempdir().unwrap();
            let url = if fail { &failing.url } else { &good.url };
            let child = common::servebench()
                .args(["run", "--base-url", url, "--tokenizer", "words", "--quiet"])
                .args(["--input-len", "16", "--output-len", "2", "--grace", "2"])
                .args(["--client-threads", threads, "--result-filename", "r.json"])
                .arg("--result-dir")
                .arg(dir.path())
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            if name == "ctrl-c" {
                // When the signal lands does not matter (the property holds whenever it does):
                // 800 requests at 200/s real take 4 s, so it lands while they are sent.
                std::thread::sleep(Duration::from_millis(1500));
                // SAFETY: a signal to our own child, which has not been reaped.
                unsafe {
                    libc::kill(child.id() as i32, libc::SIGINT);
                }
            }
            let out = common::finish_within(child, Duration::from_secs(90), &case);
            let used = check(dir.path(), expected, &case);
            assert_eq!(used.to_string(), threads, "{case}: {out:?}");
        }
    }
}

/// The medians of TTFT and ITL (ms) of 512 requests, 256 at a time, against `url`, counted
/// with `tokenizer`; `delay_ms`: each answer's count made that much slower.
fn ttft_itl_medians(url: &str, tokenizer: &str, delay_ms: u32, dir: &Path) -> (f64, f64) {
    let name = format!("{tokenizer}-{delay_ms}.json");
    let out = common::servebench()
        .env("SERVEBENCH_TEST_COUNT_DELAY_MS", delay_ms.to_string())
        .args(["run", "--base-url", url, "--tokenizer", tokenizer])
        .args([
            "--num-prompts",
            "512",
            "--max-concurrency",
            "256",
            "--num-warmups",
            "0",
        ])
        .args(["--input-len", "32", "--output-len", "20", "--no-preflight"])
        .args([
            "--result-filename",
            &name,
            "--result-dir",
            common::path_str(dir),
            "-q",
        ])
        .arg("--overwrite")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = common::json(&dir.join(&name));
    assert_eq!(r["completed"], 512, "{r}");
    let median = |key: &str| r[key].as_f64().unwrap_or_else(|| panic!("no {key}: {r}"));
    (median("median_ttft_ms"), median("median_itl_ms"))
}

/// Counting answers with a tokenizer that spends 2 ms a call does not move TTFT or ITL: the
/// counts run on threads of their own. On the thread that reads the streams, 256 answers
/// ending together held it for half a second: the chunks behind them were read together, under
/// one kernel stamp, so the ITL median fell to 0 and the TTFT median rose by 7-45 ms, in every
/// run. On a quiet machine the medians stay within 0.5 ms of a run in words
/// (docs/performance.md, "Tokenizers off the reading thread"); a loaded one moves the words
/// run's own median TTFT by several ms, so the test takes the closest of three alternated pairs
/// and asks what no noise hides: TTFT within 5 ms, ITL at least 60 % of the words run's.
#[test]
fn a_slow_tokenizer_does_not_move_ttft_or_itl() {
    let _guard = common::serial();
    let sim = SimProcess::start(&["--ttft-ms", "20", "--itl-ms", "5"]);
    let dir = tempfile::tempdir().unwrap();
    let mut pairs = Vec::new();
    for _ in 0..3 {
        let words = ttft_itl_medians(&sim.url, "words", 0, dir.path());
        let slow = ttft_itl_medians(&sim.url, "cl100k_base", 2, dir.path());
        pairs.push((words, slow));
    }
    let apart = |(w, s): &((f64, f64), (f64, f64))| (s.0 - w.0).abs() + (s.1 - w.1).abs();
    let (words, slow) = pairs
        .iter()
        .min_by(|a, b| apart(a).total_cmp(&apart(b)))
        .unwrap();
    assert!(
        (slow.0 - words.0).abs() <= 5.0 && slow.1 >= 0.6 * words.1,
        "the slow tokenizer moved the medians (TTFT, ITL ms), words then slow: {pairs:?}"
    );
}
