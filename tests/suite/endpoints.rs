//! How requests reach the server, against simulators on 127.0.0.1:
//!
//! - The prefill gate (`--max-prefill-concurrency`): with K = 1 no two requests are between
//!   sent and first token at once (from the records' own times), and the wait shows in the
//!   client-queue part of TTFT; without the gate the same run overlaps. A server that fails
//!   every request never leaks the gate (every request ends).
//! - Several endpoints (`--base-url` more than once): the spread by `--balance`, a session
//!   kept on one endpoint by `--affinity session`, `--failover` stopping a dead endpoint,
//!   per-endpoint figures adding up to the run's, with 1 and 2 client threads, and every
//!   planned request accounted for.
//! - Bad input refused in one line.

use crate::common;

use std::path::Path;
use std::time::Duration;

use servebench::config::routing::{Affinity, Balance};
use servebench::config::threads::ClientThreads;
use servebench::config::{BackendKind, RequestRate, RunConfig};
use servebench::drive::run::{execute, RunOptions};
use servebench::measure::client::Secrets;
use servebench::measure::record::{FailureKind, RequestRecord};
use servebench::results::document::BenchResult;
use servebench::sim::{SimConfig, SimServer};
use tokio_util::sync::CancellationToken;

const TTFT_MS: u64 = 30;

async fn sim() -> SimServer {
    common::spawn_sim(SimConfig {
        ttft: Duration::from_millis(TTFT_MS),
        itl: Duration::from_millis(2),
        usage: true,
        seed: 7,
        ..SimConfig::default()
    })
    .await
}

/// `n` requests of 8 tokens asking for 4, all due at once, at most `conc` in flight.
fn config(urls: &[String], n: u64, conc: u64) -> RunConfig {
    let mut cfg = common::run_config(urls[0].clone(), BackendKind::Openai, n, conc, 8, 4);
    cfg.load.request_rate = RequestRate::Infinite;
    cfg.routing.more_base_urls = urls[1..].to_vec();
    cfg
}

/// Runs `cfg` with `threads` client threads, within 60 s (a leaked gate would hang it).
async fn run(cfg: RunConfig, dir: &Path, threads: u16) -> (BenchResult, Vec<RequestRecord>) {
    let mut opts = RunOptions::new(dir.join("r.json"), false);
    opts.client_threads = ClientThreads::Count(threads);
    opts.overwrite = true;
    let secrets = Secrets::default();
    let ran = execute(cfg, &secrets, &opts, CancellationToken::new());
    let result = tokio::time::timeout(Duration::from_secs(60), ran)
        .await
        .expect("the run did not hang")
        .expect("the run completes");
    (result, common::read_records(&opts.records_path))
}

fn alone(test: impl std::future::Future<Output = ()>) {
    let _guard = common::serial();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(test);
}

/// planned = ok + failed + unsent, and complete.
fn accounted(r: &BenchResult) {
    let s = &r.summary;
    assert_eq!(r.planned, Some(s.completed + s.failed + r.unsent));
}

/// Pairs of records whose sent..first-token spans overlap.
fn overlaps(records: &[RequestRecord]) -> usize {
    let mut spans: Vec<(u64, u64)> = (records.iter())
        .filter(|r| !r.warmup)
        .map(|r| (r.sent_ns, r.first_chunk_ns().unwrap_or(r.end_ns)))
        .collect();
    spans.sort();
    spans.windows(2).filter(|w| w[1].0 < w[0].1).count()
}

#[test]
fn prefill_gate_of_one_lets_no_two_requests_overlap_before_first_token() {
    alone(async {
        let server = sim().await;
        let dir = tempfile::tempdir().unwrap();
        let n = 6;
        let mut cfg = config(&[server.base_url()], n, n);
        let (open, open_records) = run(cfg.clone(), dir.path(), 1).await;
        assert!(overlaps(&open_records) > 0, "without the gate they overlap");
        cfg.routing.max_prefill_concurrency = Some(1);
        let (gated, records) = run(cfg, dir.path(), 1).await;
        server.shutdown().await;
        assert_eq!(gated.summary.completed, n);
        accounted(&gated);
        assert_eq!(overlaps(&records), 0);
        // Request i waits for the i before it, each at least TTFT: the client queue's mean is
        // at least (n − 1)/2 TTFTs; without the gate all go at once.
        let queue = |r: &BenchResult| {
            r.summary
                .ttft_breakdown
                .client_queue_ms
                .as_ref()
                .unwrap()
                .mean
        };
        let least = (n - 1) as f64 / 2.0 * TTFT_MS as f64;
        assert!(queue(&gated) >= least, "{} < {least}", queue(&gated));
        assert!(queue(&gated) > queue(&open) + least / 2.0);
        // TTFT from scheduled counts the wait.
        let from_sched = gated.summary.ttft_from_scheduled_ms.as_ref().unwrap().mean;
        assert!(from_sched >= least + TTFT_MS as f64);
        let report = common::stdout_of(&["report", common::path_str(&dir.path().join("r.json"))]);
        assert!(report.contains("Prefill gate:") && report.contains("moves it into client queue"));
    });
}

#[test]
fn prefill_gate_is_let_go_when_every_request_fails() {
    alone(async {
        let mut c = SimConfig::default();
        c.faults.error_rate = 1.0;
        let server = common::spawn_sim(c).await;
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(&[server.base_url()], 8, 8);
        cfg.routing.max_prefill_concurrency = Some(1);
        let (r, records) = run(cfg, dir.path(), 1).await;
        server.shutdown().await;
        assert_eq!((r.summary.failed, records.len()), (8, 8));
        accounted(&r);
    });
}

/// Each endpoint's count of the records.
fn counts(records: &[RequestRecord], n: usize) -> Vec<u64> {
    let mut c = vec![0; n];
    for r in records.iter().filter(|r| !r.warmup) {
        c[r.endpoint.expect("every record names its endpoint") as usize] += 1;
    }
    c
}

/// The endpoints' figures add up to the run's.
fn add_up(r: &BenchResult) {
    let e = &r.per_endpoint;
    let sum = |f: &dyn Fn(&servebench::results::stats::endpoints::EndpointFigures) -> f64| {
        e.iter().map(f).sum::<f64>()
    };
    let s = &r.summary;
    assert_eq!(sum(&|e| e.figures.completed as f64), s.completed as f64);
    assert_eq!(sum(&|e| e.figures.failed as f64), s.failed as f64);
    let out = sum(&|e| e.figures.output_throughput);
    assert!((out - s.output_throughput).abs() <= 1e-9 * s.output_throughput.max(1.0));
}

#[test]
fn requests_spread_over_endpoints_by_balance() {
    alone(async {
        let servers = [sim().await, sim().await, sim().await];
        let urls: Vec<String> = servers.iter().map(SimServer::base_url).collect();
        let dir = tempfile::tempdir().unwrap();
        // Round-robin: each in turn, with one and with two client threads (one router).
        for threads in [1, 2] {
            let (r, records) = run(config(&urls, 9, 3), dir.path(), threads).await;
            assert_eq!(counts(&records, 3), [3, 3, 3], "{threads} thread(s)");
            assert_eq!(r.per_endpoint.len(), 3);
            assert_eq!(r.per_endpoint[2].url, urls[2]);
            add_up(&r);
            accounted(&r);
        }
        // Least in flight, one at a time: the first endpoint is always among the least busy.
        let mut cfg = config(&urls, 6, 1);
        cfg.routing.balance = Balance::LeastInFlight;
        let (_, records) = run(cfg.clone(), dir.path(), 1).await;
        assert_eq!(counts(&records, 3), [6, 0, 0]);
        // ... and with all six at once, two each.
        cfg.load.max_concurrency = Some(6);
        let (_, records) = run(cfg, dir.path(), 1).await;
        assert_eq!(counts(&records, 3), [2, 2, 2]);
        // Random: from the seed, the same each time, another with another seed.
        let mut cfg = config(&urls, 30, 1);
        cfg.routing.balance = Balance::Random;
        let order = |records: Vec<RequestRecord>| {
            let mut v: Vec<(u64, u32)> = records
                .iter()
                .map(|r| (r.id, r.endpoint.unwrap()))
                .collect();
            v.sort();
            v
        };
        let (r, a) = run(cfg.clone(), dir.path(), 1).await;
        add_up(&r);
        let a = order(a);
        let b = order(run(cfg.clone(), dir.path(), 1).await.1);
        cfg.load.seed += 1;
        let c = order(run(cfg, dir.path(), 1).await.1);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!((0..3).all(|i| a.iter().any(|&(_, e)| e == i)));
        // Every sim got what the records say it got.
        let got: Vec<u64> = servers.iter().map(|s| s.stats().requests).collect();
        assert!(got.iter().all(|&g| g > 0));
        for s in servers {
            s.shutdown().await;
        }
    });
}

#[test]
fn affinity_keeps_each_conversation_on_one_endpoint() {
    alone(async {
        let servers = [sim().await, sim().await];
        let urls: Vec<String> = servers.iter().map(SimServer::base_url).collect();
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(&urls, 4, 4);
        cfg.load.shape.turns = Some(3);
        let endpoints_per_conversation = |records: &[RequestRecord]| {
            let mut by: std::collections::BTreeMap<u64, std::collections::BTreeSet<u32>> =
                Default::default();
            for r in records {
                by.entry(r.conversation.unwrap())
                    .or_default()
                    .insert(r.endpoint.unwrap());
            }
            by.values().map(|s| s.len()).max().unwrap_or(0)
        };
        // Without affinity, whether a conversation's turns land on one endpoint depends on
        // how the conversations interleave (timing), so that side is the router's unit test
        // (`a_session_stays_and_its_header_is_echoed`); here: with it, never spread.
        cfg.routing.affinity = Some(Affinity::Session);
        for threads in [1, 2] {
            let (r, records) = run(cfg.clone(), dir.path(), threads).await;
            assert_eq!(records.len(), 12);
            accounted(&r);
            assert_eq!(endpoints_per_conversation(&records), 1);
            add_up(&r);
        }
        for s in servers {
            s.shutdown().await;
        }
    });
}

#[test]
fn a_routers_session_header_is_sent_back_to_the_endpoint_that_gave_it() {
    alone(async {
        let with_header = || {
            common::spawn_sim(SimConfig {
                ttft: Duration::from_millis(5),
                session_header: Some("x-session".into()),
                ..SimConfig::default()
            })
        };
        let servers = [with_header().await, with_header().await];
        let urls: Vec<String> = servers.iter().map(SimServer::base_url).collect();
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(&urls, 4, 4);
        cfg.load.shape.turns = Some(3);
        cfg.routing.affinity = Some(Affinity::Session);
        let echoed = |s: &[SimServer; 2]| s.iter().map(|s| s.stats().sessions_echoed).sum::<u64>();
        let (r, _) = run(cfg.clone(), dir.path(), 1).await;
        accounted(&r);
        assert_eq!(echoed(&servers), 0, "not asked: nothing sent back");
        cfg.routing.session_header = Some("x-session".into());
        let (r, records) = run(cfg, dir.path(), 2).await;
        assert_eq!(records.len(), 12);
        accounted(&r);
        // Each conversation's two later turns send its token back, each to the server that
        // minted it.
        assert_eq!(echoed(&servers), 8);
        assert!(servers.iter().all(|s| s.stats().sessions_unknown == 0));
        for s in servers {
            s.shutdown().await;
        }
    });
}

#[test]
fn failover_stops_sending_to_a_dead_endpoint() {
    alone(async {
        let (live, dead) = (sim().await, sim().await);
        let urls = [live.base_url(), dead.base_url()];
        dead.shutdown().await;
        let dir = tempfile::tempdir().unwrap();
        // Without failover: every other request fails to connect, recorded with its cause.
        let cfg = config(&urls, 10, 1);
        let (r, records) = run(cfg.clone(), dir.path(), 1).await;
        assert_eq!(counts(&records, 2), [5, 5]);
        let refused = records
            .iter()
            .filter(|r| r.outcome.failure_kind() == Some(FailureKind::Connect));
        assert!(refused.map(|r| r.endpoint).all(|e| e == Some(1)));
        assert_eq!((r.summary.completed, r.summary.failed), (5, 5));
        assert_eq!(r.per_endpoint[1].stopped_at_s, None);
        accounted(&r);
        // With --failover 2: after its second connection failure it gets nothing more.
        let mut cfg = cfg;
        cfg.routing.failover = Some(2);
        let (r, records) = run(cfg, dir.path(), 1).await;
        assert_eq!(counts(&records, 2), [8, 2]);
        assert_eq!((r.summary.completed, r.summary.failed), (8, 2));
        assert!(r.per_endpoint[1].stopped_at_s.is_some());
        assert_eq!(r.per_endpoint[0].stopped_at_s, None);
        add_up(&r);
        accounted(&r);
        live.shutdown().await;
    });
}

#[test]
fn bad_endpoint_flags_are_refused_in_one_line() {
    let cases: [(&[&str], &str); 5] = [
        (
            &[
                "--base-url",
                "http://127.0.0.1:9",
                "--base-url",
                "http://127.0.0.1:9/",
            ],
            "given twice",
        ),
        (
            &["--base-url", "http://127.0.0.1:9", "--balance", "sideways"],
            "sideways",
        ),
        (
            &["--base-url", "http://127.0.0.1:9", "--affinity", "session"],
            "--affinity session",
        ),
        (
            &[
                "--base-url",
                "http://127.0.0.1:9",
                "--max-prefill-concurrency",
                "0",
            ],
            "--max-prefill-concurrency",
        ),
        (
            &["--base-urls-file", "/nonexistent/urls.txt"],
            "--base-urls-file",
        ),
    ];
    for (args, says) in cases {
        let mut all = vec!["run", "--tokenizer", "words", "--num-prompts", "1"];
        all.extend_from_slice(args);
        let err = common::run_fails(&all);
        assert!(err.contains(says), "{args:?}: {err}");
        if says != "sideways" {
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        }
    }
}

#[test]
fn a_urls_file_adds_endpoints_and_a_duplicate_in_it_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("urls.txt");
    std::fs::write(
        &file,
        "# replicas\nhttp://127.0.0.1:9\n\nhttp://127.0.0.1:9/\n",
    )
    .unwrap();
    let err = common::run_fails(&[
        "run",
        "--tokenizer",
        "words",
        "--base-urls-file",
        common::path_str(&file),
    ]);
    assert!(
        err.contains("given twice") && err.contains("URLs 1 and 2"),
        "{err}"
    );
}

/// Each endpoint's `sent` in a saved result.
fn sent_by_endpoint(result: &serde_json::Value) -> Vec<u64> {
    let list = result["per_endpoint"].as_array().expect("per_endpoint");
    list.iter().map(|e| e["sent"].as_u64().unwrap()).collect()
}

#[test]
fn shards_over_two_endpoints_merge_into_exact_per_endpoint_figures() {
    let sims = [
        common::SimProcess::start(&["--ttft-ms", "5", "--itl-ms", "1"]),
        common::SimProcess::start(&["--ttft-ms", "5", "--itl-ms", "1"]),
    ];
    let dir = tempfile::tempdir().unwrap();
    let start = (time::OffsetDateTime::now_utc() + time::Duration::seconds(4))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let d = common::path_str(dir.path()).to_string();
    let children: Vec<_> = (0..2)
        .map(|i| {
            let name = format!("shard{i}.json");
            let shard = format!("{i}/2");
            let args = [
                "run",
                "--base-url",
                &sims[0].url,
                "--base-url",
                &sims[1].url,
                "--tokenizer",
                "words",
                "--num-prompts",
                "20",
                "--max-concurrency",
                "4",
                "--input-len",
                "16",
                "--output-len",
                "4",
                "--quiet",
                "--result-dir",
                &d,
                "--result-filename",
                &name,
                "--shard",
                &shard,
                "--start-at",
                &start,
            ];
            let mut cmd = common::servebench();
            cmd.args(args).stdout(std::process::Stdio::null());
            cmd.stderr(std::process::Stdio::piped()).spawn().unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let shards: Vec<_> = (0..2)
        .map(|i| dir.path().join(format!("shard{i}.json")))
        .collect();
    let merged = dir.path().join("merged.json");
    let out = common::servebench()
        .arg("merge")
        .args(&shards)
        .args(["--quiet", "--output"])
        .arg(&merged)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = common::json(&merged);
    let parts: Vec<Vec<u64>> = shards
        .iter()
        .map(|s| sent_by_endpoint(&common::json(s)))
        .collect();
    let merged_sent = sent_by_endpoint(&m);
    assert_eq!(
        merged_sent,
        [parts[0][0] + parts[1][0], parts[0][1] + parts[1][1]]
    );
    assert_eq!(merged_sent.iter().sum::<u64>(), 20);
    // Each shard sends its own in turn: 5 and 5 over the two endpoints.
    assert!(parts.iter().all(|p| p == &[5, 5]), "{parts:?}");
    let records = common::read_records(&merged.with_extension("records.jsonl"));
    assert!(records.iter().all(|r| r.endpoint.is_some()));
}

/// A Ctrl-C while requests wait at the prefill gate (K = 1, a first token 3 s away, eight
/// requests due at once): the one in flight finishes within the grace period, and those
/// still waiting at the gate are never sent: counted unsent (`stopped`), not failed, and the
/// simulator got exactly the requests the result says were sent. The run ends well within
/// its grace period, saved incomplete, with the "stopped" exit code 3.
#[test]
fn ctrl_c_while_requests_wait_at_the_prefill_gate_leaves_them_unsent() {
    let sim = common::SimProcess::start(&["--ttft-ms", "3000", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let child = common::servebench()
        .args(["run", "--base-url", &sim.url, "--tokenizer", "words"])
        .args(["--num-prompts", "8", "--request-rate", "inf"])
        .args(["--input-len", "8", "--output-len", "2", "--no-preflight"])
        .args(["--num-warmups", "0", "--max-prefill-concurrency", "1"])
        .args(["--quiet", "--result-filename", "r.json", "--result-dir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let requests = || common::json_get(&sim.url, "/sim/stats")["requests"].as_u64();
    common::wait_for("a request at the server", Duration::from_secs(60), || {
        requests() >= Some(1)
    });
    // SAFETY: a signal to our own child, which has not been reaped.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = common::finish_within(child, Duration::from_secs(30), "gated run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let r = common::json(&dir.path().join("r.json"));
    let n = |k: &str| r[k].as_u64().unwrap();
    let sent = requests().unwrap();
    // Only what was in flight at the stop (one, two on a machine slow to signal) was sent.
    assert!((1..=2).contains(&sent), "{sent} sent: {r}");
    assert_eq!((n("completed"), n("failed")), (sent, 0), "{r}");
    assert_eq!(n("unsent"), 8 - sent, "{r}");
    assert_eq!(r["unsent_by"]["stopped"].as_u64(), Some(8 - sent), "{r}");
    assert_eq!(r["planned"].as_u64(), Some(8));
    assert_eq!(r["complete"], false);
    let records = common::read_records(&dir.path().join("r.records.jsonl"));
    assert_eq!(records.len() as u64, sent);
}

/// A time window that ends while requests wait at the prefill gate closes it: they are never
/// sent, counted unsent as `window_ended` (due inside the window, still waiting when it
/// ended), while the one holding the gate ends its answer in the grace period.
#[test]
fn a_window_that_ends_while_requests_wait_at_the_prefill_gate_leaves_them_unsent() {
    let sim = common::SimProcess::start(&["--ttft-ms", "3000", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let out = common::servebench()
        .args(["run", "--base-url", &sim.url, "--tokenizer", "words"])
        .args(["--duration", "1", "--request-rate", "20"])
        .args(["--input-len", "8", "--output-len", "2", "--no-preflight"])
        .args(["--num-warmups", "0", "--max-prefill-concurrency", "1"])
        .args(["--quiet", "--result-filename", "r.json", "--result-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r = common::json(&dir.path().join("r.json"));
    let n = |k: &str| r[k].as_u64().unwrap();
    // The gate holds one request until its first token, 3 s in: only it was sent.
    assert_eq!(sim_count(&sim, "requests"), 1, "{r}");
    assert_eq!((n("completed"), n("failed")), (1, 0), "{r}");
    let planned = n("planned");
    assert!(planned > 1, "{r}");
    assert_eq!(n("unsent"), planned - 1, "{r}");
    assert_eq!(
        r["unsent_by"]["window_ended"].as_u64(),
        Some(planned - 1),
        "{r}"
    );
    // Something planned was left unsent: not complete, by its definition.
    assert_eq!(r["complete"], false, "{r}");
    let records = common::read_records(&dir.path().join("r.records.jsonl"));
    assert_eq!(records.len(), 1);
}

/// The simulator child's own count of `key` (`/sim/stats`).
fn sim_count(sim: &common::SimProcess, key: &str) -> u64 {
    common::json_get(&sim.url, "/sim/stats")[key]
        .as_u64()
        .unwrap()
}

/// One run over two simulator processes, round-robin, one request at a time at 20/s; the
/// second is killed once each answered three. Returns its result and records, and the
/// survivor's own counts of what it was sent and answered.
fn run_while_one_dies(failover: bool) -> (BenchResult, Vec<RequestRecord>, u64, u64) {
    let args = ["--ttft-ms", "5", "--itl-ms", "1"];
    let (live, mut dying) = (
        common::SimProcess::start(&args),
        common::SimProcess::start(&args),
    );
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = common::servebench();
    cmd.args(["run", "--base-url", &live.url, "--base-url", &dying.url])
        .args(["--tokenizer", "words", "--num-prompts", "60"])
        .args(["--request-rate", "20", "--max-concurrency", "1"])
        .args(["--input-len", "8", "--output-len", "2", "--no-preflight"])
        .args(["--quiet", "--result-filename", "r.json", "--result-dir"])
        .arg(dir.path());
    if failover {
        cmd.args(["--failover", "2"]);
    }
    let child = (cmd.stdout(std::process::Stdio::null()))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_for("three answers from each", Duration::from_secs(60), || {
        sim_count(&live, "ok") >= 3 && sim_count(&dying, "ok") >= 3
    });
    dying.child.kill().unwrap();
    dying.child.wait().unwrap();
    let out = common::finish_within(child, Duration::from_secs(120), "a run losing an endpoint");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    let r = BenchResult::load(&dir.path().join("r.json")).unwrap();
    let records = common::read_records(&dir.path().join("r.records.jsonl"));
    let survivor = (sim_count(&live, "requests"), sim_count(&live, "ok"));
    (r, records, survivor.0, survivor.1)
}

/// An endpoint killed mid-run, after both answered: without `--failover` its share keeps
/// going to it and fails, each failure recorded on it with its cause; with `--failover 2`
/// two connection failures in a row stop it and the rest go to the survivor. Either way
/// every planned request is accounted for, the per-endpoint figures add up to the run's and
/// match the records, and the survivor answered exactly what its figures say.
#[test]
fn an_endpoint_that_dies_mid_run_fails_its_share_or_is_failed_over() {
    let _guard = common::serial();
    for failover in [false, true] {
        let (r, records, got, answered) = run_while_one_dies(failover);
        let e = &r.per_endpoint;
        let case = format!("failover {failover}: {:?}", r.summary.failures_by_kind);
        accounted(&r);
        assert_eq!(r.planned, Some(60), "{case}");
        assert_eq!(r.unsent, 0, "{case}");
        add_up(&r);
        assert_eq!(counts(&records, 2), [e[0].figures.sent, e[1].figures.sent]);
        // The survivor: everything sent to it answered, as it counts too.
        assert_eq!((e[0].figures.sent, e[0].figures.failed), (got, 0), "{case}");
        assert_eq!(e[0].figures.completed, answered, "{case}");
        // The dead one: it answered before it died, then every failure is its, with a cause.
        assert!(e[1].figures.completed >= 3, "{case}");
        assert!(e[1].figures.failed > 0, "{case}");
        let failed: Vec<&RequestRecord> = records.iter().filter(|r| !r.is_ok()).collect();
        for f in &failed {
            let (kind, why) = common::failure(f);
            assert_eq!(f.endpoint, Some(1), "{case}: {kind:?} {why}");
            assert!(
                matches!(kind, FailureKind::Connect | FailureKind::StreamBroken),
                "{case}: {kind:?} {why}"
            );
            assert!(!why.is_empty(), "{case}");
        }
        let connects = (failed.iter())
            .filter(|f| f.outcome.failure_kind() == Some(FailureKind::Connect))
            .count();
        if failover {
            // One at a time: after whatever was in flight at the kill, two refusals in a row
            // stop it; every request after that went to the survivor.
            assert_eq!(connects, 2, "{case}");
            assert!(failed.len() <= 3, "{case}");
            let stopped_s = e[1].stopped_at_s.expect("the dead endpoint was stopped");
            // Nothing sent to it after it was stopped (the records' clock, ns).
            let last_sent_ns = (records.iter())
                .filter(|r| r.endpoint == Some(1))
                .map(|r| r.sent_ns)
                .max()
                .unwrap();
            assert!(last_sent_ns as f64 <= stopped_s * 1e9 + 1.0, "{case}");
            assert!(e[0].figures.sent >= 60 - e[1].figures.sent, "{case}");
        } else {
            // Its share, every other request, went to it: what it did not answer failed.
            assert_eq!(e[1].figures.sent, 30, "{case}");
            assert_eq!(e[1].stopped_at_s, None, "{case}");
            assert_eq!(r.summary.failed, e[1].figures.failed, "{case}");
        }
        assert_eq!(r.summary.completed + r.summary.failed, 60, "{case}");
    }
}
