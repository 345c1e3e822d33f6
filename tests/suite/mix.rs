//! A workload mix (`--mix`): classes of requests in one run, over real HTTP on
//! 127.0.0.1 against the built-in simulator. Its exact mode makes the truth known: the
//! classes' counts and tokens, so their shares and Jain's index, exactly; with `slots`, its
//! queue serves by vLLM's `priority` field and every request's TTFT is its exactly known wait
//! plus `ttft`. Also: the class's `priority` and tenant header are on the wire, and a bad mix
//! file is refused in one line naming the flag, the file and what was wrong.

use crate::common;

use std::io::Write;
use std::path::Path;

use common::http::read_request;
use common::{path_str, run_fails, run_ok};
use servebench::config::mix::Mix;
use servebench::config::{BackendKind, RequestRate, RunConfig};
use servebench::measure::record::RequestRecord;
use servebench::sim::SimConfig;

fn mix(text: &str) -> Mix {
    Mix::from_json(text, "mix.json").expect("a good mix")
}

/// `n` requests of the mix `m`, at most `conc` at once, of 8-word prompts.
fn config(base_url: String, m: Mix, n: u64, conc: u64) -> RunConfig {
    let mut cfg = common::run_config(base_url, BackendKind::Openai, n, conc, 8, 16);
    cfg.mix = Some(m);
    cfg
}

const TWO: &str = r#"{"classes": [
    {"name": "chat", "weight": 3, "priority": 0, "tenant": "team-a", "output_len": 20,
     "slo": {"ttft_ms": 5000}},
    {"name": "batch", "weight": 1, "priority": 5, "tenant": "team-b", "output_len": 10}
]}"#;

/// Against the exact simulator a mix's figures are its truth: 6 and 2 requests
/// (weights 3:1 of 8), 120 and 20 output tokens (20 and 10 each), token shares 6/7 and 1/7
/// against weight shares 3/4 and 1/4, normalised 8/7 and 4/7, so Jain's index is exactly
/// (12/7)² / (2·80/49) = 0.9; each record names its class; the report, CSV and HTML show it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mix_figures_against_the_exact_simulator_equal_its_truth() {
    let server = common::spawn_sim(SimConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(server.base_url(), mix(TWO), 8, 8);
    let (result, records) = common::execute(cfg, dir.path(), "mix.json", true).await;
    server.shutdown().await;

    let m = result.mix.as_ref().expect("the mix's figures");
    let (a, b) = (&m.classes[0], &m.classes[1]);
    assert_eq!((a.name.as_str(), b.name.as_str()), ("chat", "batch"));
    assert_eq!((a.completed, a.failed, a.total_output_tokens), (6, 0, 120));
    assert_eq!((b.completed, b.failed, b.total_output_tokens), (2, 0, 20));
    assert_eq!((a.weight_share, b.weight_share), (0.75, 0.25));
    assert!((a.output_token_share.unwrap() - 6.0 / 7.0).abs() < 1e-12);
    assert!((a.normalized_token_share.unwrap() - 8.0 / 7.0).abs() < 1e-12);
    assert!((b.normalized_token_share.unwrap() - 4.0 / 7.0).abs() < 1e-12);
    assert!((m.jain_fairness_index.unwrap() - 0.9).abs() < 1e-12);
    assert_eq!(m.unclassed, 0);
    // Every request of "chat" met its 5 s TTFT SLO; "batch" has none (nor the run).
    assert_eq!(a.slo_attainment, Some(1.0));
    assert_eq!((b.request_goodput, b.slo_attainment), (None, None));
    // The exact simulator's TTFT is 50 ms: never early.
    assert!(a.mean_ttft_ms.unwrap() >= 49.9 && b.mean_ttft_ms.unwrap() >= 49.9);
    let mut measured: Vec<&RequestRecord> = records.iter().filter(|r| !r.warmup).collect();
    measured.sort_by_key(|r| r.id);
    let classes: Vec<Option<u32>> = measured.iter().map(|r| r.class).collect();
    assert_eq!(
        classes,
        [0, 0, 1, 0, 0, 0, 1, 0].map(Some),
        "the mix's order, by id"
    );

    let file = dir.path().join("mix.json");
    let report = common::stdout_of(&["report", path_str(&file)]);
    assert!(report.contains("Workload mix") && report.contains("Jain's fairness index:"));
    assert!(report.contains("0.9000") && report.contains("chat (priority 0)"));
    let row = common::report_csv_row(&file);
    let cell = |name: &str| row.get(name).unwrap_or_else(|| panic!("{name}")).clone();
    let j: f64 = cell("mix.jain_fairness_index").parse().unwrap();
    assert!((j - 0.9).abs() < 1e-12, "{j}");
    assert_eq!(cell("mix.classes.1.name"), "batch");
    assert_eq!(cell("mix.classes.0.total_output_tokens"), "120");
    let html = common::stdout_of(&["report", path_str(&file), "--format", "html"]);
    assert!(html.contains("Workload mix") && html.contains("chat (priority 0)"));
}

/// Probes (`--probe-request-rate`) go out beside the load, outside its cap of
/// one, each class's in turn: against the exact simulator their TTFT is its 50 ms, they are
/// counted per class, and they stay out of the run's records and figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_are_sent_beside_the_load_and_kept_apart() {
    let server = common::spawn_sim(SimConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    // 6 requests one at a time, each 50 ms + 19 × 10 ms: 1.44 s of load, 10 probes a second.
    let m = mix(r#"{"classes": [
        {"name": "a", "weight": 1, "output_len": 20},
        {"name": "b", "weight": 1, "output_len": 20}]}"#);
    let mut cfg = config(server.base_url(), m, 6, 1);
    cfg.probe_request_rate = Some(10.0);
    let (result, records) = common::execute(cfg, dir.path(), "p.json", true).await;
    server.shutdown().await;
    assert_eq!(
        records.iter().filter(|r| !r.warmup).count(),
        6,
        "no probe in the records"
    );
    assert_eq!((result.summary.completed, result.summary.failed), (6, 0));
    let f = result.mix.expect("the figures");
    let (a, b) = (&f.classes[0], &f.classes[1]);
    let (pa, pb) = (a.probe_completed.unwrap(), b.probe_completed.unwrap());
    assert!(pa >= 3 && pa.abs_diff(pb) <= 1, "{pa} and {pb} probes");
    assert_eq!((a.probe_failed, b.probe_failed), (Some(0), Some(0)));
    assert_eq!(
        (a.completed, b.completed),
        (3, 3),
        "probes are not the class's requests"
    );
    for c in [a, b] {
        let ttft = c.probe_mean_ttft_ms.unwrap();
        assert!((49.9..1000.0).contains(&ttft), "{ttft}");
        assert!(c.ttft_over_probe.is_some());
    }
}

/// A probe still waiting at the prefill gate when the time window ends was never sent: it
/// leaves no record, neither a probe's nor a failure. The window's one request holds the gate
/// of one for the simulator's 1 s TTFT; the probes, 20 a second, all wait behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_caught_at_the_closed_prefill_gate_are_not_failures() {
    let server = common::spawn_sim(SimConfig {
        ttft: std::time::Duration::from_secs(1),
        ..SimConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let m = mix(r#"{"classes": [
        {"name": "a", "weight": 1, "output_len": 4},
        {"name": "b", "weight": 1, "output_len": 4}]}"#);
    let mut cfg = config(server.base_url(), m, 2, 1);
    cfg.load.request_rate = RequestRate::PerSecond(2.0);
    cfg.load.shape.duration_s = Some(0.5);
    cfg.routing.max_prefill_concurrency = Some(1);
    cfg.probe_request_rate = Some(20.0);
    let (result, _) = common::execute(cfg, dir.path(), "g.json", true).await;
    server.shutdown().await;
    let f = result.mix.expect("the figures");
    for c in &f.classes {
        assert_eq!(c.probe_failed.unwrap_or(0), 0, "class {}", c.name);
    }
    assert_eq!(result.summary.failed, 0);
}

/// Each class's `priority` goes in the body (vLLM's field) and its tenant in
/// the mix's header, per request, over the lean transport: a server that records what it
/// gets (and answers 500) sees them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priority_and_tenant_are_sent_with_each_request() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::thread::spawn(move || {
        let mut seen = Vec::new();
        // The side channels' GETs (/sim/info, /sim/stats) come too: only the 4 POSTs count.
        for _ in 0..32 {
            let Ok((mut s, _)) = listener.accept() else {
                break;
            };
            if let Some(text) = read_request(&mut s).filter(|t| t.starts_with("POST ")) {
                seen.push(text);
            }
            let _ = s.write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            if seen.len() == 4 {
                break;
            }
        }
        seen
    });
    let m = mix(r#"{"tenant_header": "x-team", "classes": [
        {"name": "a", "weight": 1, "priority": -3, "tenant": "team a"},
        {"name": "b", "weight": 1}]}"#);
    let dir = tempfile::tempdir().unwrap();
    let (result, records) =
        common::execute(config(url, m, 4, 1), dir.path(), "r.json", false).await;
    let seen = seen.join().unwrap();
    assert_eq!(seen.len(), 4, "{seen:?}");
    let of = |needle: &str| seen.iter().filter(|t| t.contains(needle)).count();
    assert_eq!(of("x-team: team a\r\n"), 2, "{seen:?}");
    assert_eq!(of("\"priority\":-3"), 2, "{seen:?}");
    assert_eq!(of("priority"), 2, "class b sends none: {seen:?}");
    for t in &seen {
        assert_eq!(t.contains("x-team:"), t.contains("\"priority\":-3"), "{t}");
    }
    // A failed request is recorded in its class, never dropped.
    let f = result.mix.expect("the figures");
    assert_eq!((f.classes[0].failed, f.classes[1].failed), (2, 2));
    assert!(records
        .iter()
        .all(|r: &RequestRecord| r.class.is_some() && !r.is_ok()));
}

/// The schedule exact mode's one slot keeps: arrivals (sent times, ms, in order) each with
/// its priority; a request starts at its arrival when the slot is free and none waits, else
/// when the slot frees (its holder's start + `service`), taken by the lowest priority value,
/// then the earliest arrival (first come first served: priority ignored). Its TTFT is start −
/// arrival + `ttft`.
fn expected_ttfts(arrivals: &[(f64, i64)], by_priority: bool, ttft: f64, service: f64) -> Vec<f64> {
    let n = arrivals.len();
    let mut ttfts = vec![0.0; n];
    let (mut free_at, mut next, mut waiting) = (f64::NEG_INFINITY, 0, Vec::new());
    for _ in 0..n {
        // When the slot is next taken: as it frees, or at the next arrival if none waits.
        let t = match waiting.is_empty() {
            true => free_at.max(arrivals[next].0),
            false => free_at,
        };
        while next < n && arrivals[next].0 <= t {
            waiting.push(next);
            next += 1;
        }
        let key = |i: usize| (if by_priority { arrivals[i].1 } else { 0 }, i);
        let (at, &i) = (waiting.iter().enumerate())
            .min_by_key(|(_, &i)| key(i))
            .expect("one waits");
        waiting.remove(at);
        ttfts[i] = t - arrivals[i].0 + ttft;
        free_at = t + service;
    }
    ttfts
}

/// One run of 8 requests, a high- (priority 0) and a low-priority class (10) alternating,
/// sent 40 ms apart against one slot that each request holds 340 ms (50 ms TTFT, 30 tokens
/// 10 ms apart): the server is saturated and its queue decides. The arrivals, TTFTs and
/// priorities, in send order.
async fn queued_run(by_priority: bool) -> Vec<(f64, i64, f64)> {
    let server = common::spawn_sim(SimConfig {
        slots: Some(1),
        priority_scheduling: by_priority,
        ..SimConfig::default()
    })
    .await;
    let m = mix(r#"{"classes": [
        {"name": "high", "weight": 1, "priority": 0, "output_len": 30},
        {"name": "low", "weight": 1, "priority": 10, "output_len": 30}]}"#);
    let mut cfg = config(server.base_url(), m, 8, 8);
    cfg.load.max_concurrency = None;
    cfg.load.request_rate = RequestRate::PerSecond(25.0);
    // Nearly constant gaps (a gamma of shape 1000: 40 ms ± 1.3 ms), so the send order is the
    // arrival order.
    cfg.load.burstiness = 1000.0;
    let dir = tempfile::tempdir().unwrap();
    let (_, records) = common::execute(cfg, dir.path(), "q.json", false).await;
    server.shutdown().await;
    let mut sent: Vec<(f64, i64, f64)> = (records.iter().filter(|r| !r.warmup))
        .map(|r| {
            assert!(r.is_ok(), "{:?}", r.outcome);
            let ttft = (r.chunk_ns[0] - r.sent_ns) as f64 / 1e6;
            (
                r.sent_ns as f64 / 1e6,
                [0, 10][r.class.unwrap() as usize],
                ttft,
            )
        })
        .collect();
    sent.sort_by(|x, y| x.0.total_cmp(&y.0));
    sent
}

/// With `priority_scheduling`, the simulator's queue serves the high class
/// first, and every request's TTFT is the schedule's exactly known value (its wait for the
/// slot plus 50 ms; never early, and within 50 ms late on a busy machine, where two places
/// in the queue differ by 300 ms); first come first served gives its own schedule. The high
/// class's mean TTFT falls and the low class's grows against first come first served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_serves_its_queue_by_priority() {
    let mean = |run: &[(f64, i64, f64)], p: i64| {
        let t: Vec<f64> = run.iter().filter(|r| r.1 == p).map(|r| r.2).collect();
        t.iter().sum::<f64>() / t.len() as f64
    };
    let mut means = Vec::new();
    for by_priority in [true, false] {
        let run = queued_run(by_priority).await;
        let arrivals: Vec<(f64, i64)> = run.iter().map(|r| (r.0, r.1)).collect();
        let expected = expected_ttfts(&arrivals, by_priority, 50.0, 340.0);
        for (r, want) in run.iter().zip(&expected) {
            assert!(
                r.2 >= want - 2.0 && r.2 <= want + 50.0,
                "by priority {by_priority}: TTFT {} ms, the schedule's {want} ms: {run:?}",
                r.2
            );
        }
        means.push((mean(&run, 0), mean(&run, 10)));
    }
    let ((high_p, low_p), (high_f, low_f)) = (means[0], means[1]);
    assert!(
        high_p + 200.0 < high_f && low_p > low_f + 200.0,
        "{means:?}"
    );
}

#[test]
fn the_queue_model_of_the_test_is_the_hand_computed_one() {
    // Three at 0, 10, 20 ms (priorities 5, 9, 1), one slot held 100 ms, TTFT 50 ms.
    let a = [(0.0, 5), (10.0, 9), (20.0, 1)];
    assert_eq!(
        expected_ttfts(&a, true, 50.0, 100.0),
        vec![50.0, 240.0, 130.0]
    );
    assert_eq!(
        expected_ttfts(&a, false, 50.0, 100.0),
        vec![50.0, 140.0, 230.0]
    );
    // An idle slot: each starts at its arrival.
    let b = [(0.0, 0), (500.0, 0)];
    assert_eq!(expected_ttfts(&b, true, 50.0, 100.0), vec![50.0, 50.0]);
}

/// Writes `text` as `dir/name` and runs the built-in simulator with it as `--mix`: the
/// refusal's stderr.
fn refused(dir: &Path, name: &str, text: &str, more: &[&str]) -> String {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out");
    let mut args = vec!["run", "--mix", path_str(&file), "--num-prompts", "4"];
    args.extend(["--result-dir", path_str(&out)]);
    args.extend(more);
    let err = run_fails(&args);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    err
}

/// A bad mix is refused before anything runs, in one line naming `--mix`, the
/// file (and the line of a syntax error), and what was wrong: empty, an unknown key, shares
/// that do not sum to 1, weights beside shares, a class with no requests, a missing file.
#[test]
fn a_bad_mix_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = refused(d, "empty.json", r#"{"classes": []}"#, &[]);
    assert!(
        e.contains("--mix") && e.contains("empty.json") && e.contains("no classes"),
        "{e}"
    );
    let e = refused(
        d,
        "key.json",
        "{\"classes\": [\n  {\"name\": \"a\", \"wait\": 1}]}",
        &[],
    );
    assert!(e.contains("key.json line 2") && e.contains("`wait`"), "{e}");
    let e = refused(
        d,
        "sum.json",
        r#"{"classes": [{"name": "a", "share": 0.6}, {"name": "b", "share": 0.6}]}"#,
        &[],
    );
    assert!(e.contains("sum to 1.2"), "{e}");
    let e = refused(
        d,
        "both.json",
        r#"{"classes": [{"name": "a", "share": 1}, {"name": "b", "weight": 1}]}"#,
        &[],
    );
    assert!(e.contains("'b'") && e.contains("not both kinds"), "{e}");
    let e = refused(
        d,
        "none.json",
        r#"{"classes": [{"name": "big", "weight": 1000}, {"name": "tiny", "weight": 1}]}"#,
        &[],
    );
    assert!(
        e.contains("'tiny'") && e.contains("none of the run's 4 requests"),
        "{e}"
    );
    let e = refused(d, "probe.json", TWO, &["--probe-request-rate", "1000"]);
    assert!(
        e.contains("--probe-request-rate") && e.contains("100"),
        "{e}"
    );
    let err = run_fails(&["run", "--probe-request-rate", "1", "--num-prompts", "4"]);
    assert!(
        err.contains("--probe-request-rate") && err.contains("--mix"),
        "{err}"
    );
    let e = refused(
        d,
        "name.json",
        r#"{"classes": [{"name": "a\u001b]0;x\u0007", "weight": 1}]}"#,
        &[],
    );
    assert!(
        e.contains("control character") && !e.contains('\u{1b}'),
        "{e}"
    );
    let missing = d.join("missing.json");
    let err = run_fails(&["run", "--mix", path_str(&missing), "--num-prompts", "4"]);
    assert!(
        err.contains("--mix") && err.contains("missing.json"),
        "{err}"
    );
    // A good one runs (the built-in simulator).
    let good = d.join("good.json");
    std::fs::write(&good, TWO).unwrap();
    let out = d.join("good");
    let (stdout, _) = run_ok(&[
        "run",
        "--mix",
        path_str(&good),
        "--num-prompts",
        "4",
        "--sim-preset",
        "exact",
        "--result-dir",
        path_str(&out),
        "--no-tui",
    ]);
    assert!(
        stdout.contains("Workload mix") && stdout.contains("batch (priority 5)"),
        "{stdout}"
    );
}
