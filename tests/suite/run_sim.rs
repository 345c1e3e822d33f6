//! End-to-end runs over real HTTP on 127.0.0.1 against the built-in simulator, whose schedule is
//! exactly known: the figures servebench reports are compared with the truth, the invariants of
//! docs/metrics.md are checked on every line of the records file, and faults are counted exactly.
//!
//! The tests run one at a time, and never beside the other timed tests (`common::serial`), so
//! they do not disturb each other's clocks: they measure real time, and those that only count
//! run 200 requests as fast as they go, which would disturb the others' medians (held to the
//! schedule within a few ms). A paused clock cannot stand in: the client stamps each chunk
//! with the kernel's receive time, on the real clock (tried: on a paused clock, runs beside
//! others on a busy machine record chunks before their sends).

use std::time::Duration;

use servebench::config::BackendKind;
use servebench::drive::run::{execute, RunOptions};
use servebench::measure::client::Secrets;
use servebench::measure::record::{FailureKind, RequestRecord, TokenSource};
use servebench::results::document::BenchResult;
use servebench::results::stats::{itl_gaps_ns, RequestMetrics};
use servebench::sim::{self, FaultConfig, SimConfig, SimServer};
use tokio_util::sync::CancellationToken;

use crate::common;

const TTFT_MS: f64 = 50.0;
const ITL_MS: f64 = 10.0;

async fn start_sim(tokens_per_chunk: u32, usage: bool, faults: FaultConfig) -> SimServer {
    let cfg = SimConfig {
        ttft: Duration::from_millis(TTFT_MS as u64),
        itl: Duration::from_millis(ITL_MS as u64),
        tokens_per_chunk,
        usage,
        seed: 42,
        faults,
        ..SimConfig::default()
    };
    sim::spawn(cfg, ([127, 0, 0, 1], 0).into())
        .await
        .expect("sim starts")
}

/// The simulator with an engine preset, usage in every stream.
async fn start_preset(preset: sim::Preset) -> SimServer {
    let cfg = SimConfig {
        usage: true,
        ..SimConfig::from_preset(preset)
    };
    sim::spawn(cfg, ([127, 0, 0, 1], 0).into())
        .await
        .expect("sim starts")
}

/// The invariants of docs/metrics.md, on every successful record.
fn assert_invariants(records: &[RequestRecord]) {
    for r in records.iter().filter(|r| r.is_ok()) {
        let m = RequestMetrics::of(r).expect("ok record has metrics");
        assert_eq!(
            m.ttft_ns + itl_gaps_ns(r).sum::<u64>(),
            m.e2el_ns,
            "TTFT + ΣITL = E2EL"
        );
        let n = m.output_tokens;
        if let Some(tpot) = m.tpot_ms {
            let rebuilt = tpot * (n - 1) as f64 + m.ttft_ns as f64 / 1e6;
            assert!(
                (rebuilt - m.e2el_ns as f64 / 1e6).abs() < 1e-6,
                "TPOT × (N−1) + TTFT = E2EL"
            );
        }
        assert!((m.output_throughput * m.e2el_ns as f64 / 1e9 - n as f64).abs() < 1e-6);
        assert!(r.sent_ns >= r.scheduled_ns && r.end_ns >= *r.chunk_ns.last().unwrap());
        assert_eq!(r.time_disorder(), None, "one clock per stream");
        // The simulator's counts and timings are plausible, and it ends every stream
        // with its API's terminator.
        assert!(r.implausible_usage.is_empty(), "{:?}", r.implausible_usage);
        assert_eq!(r.done_marker, Some(true));
    }
}

fn assert_close(what: &str, got: f64, truth: f64, tol: f64) {
    assert!(
        (got - truth).abs() <= tol,
        "{what}: reported {got:.3} ms, truth {truth:.3} ms"
    );
}

/// One measurement against the simulator: the strict checks (counts, sources, invariants)
/// are asserted inside; the timing errors are returned as (name, reported, truth).
async fn measure(
    k: u32,
    usage: bool,
    conc: u64,
    n: u64,
    out_len: u64,
) -> Vec<(&'static str, f64, f64)> {
    let server = start_sim(k, usage, FaultConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::run_config(server.base_url(), BackendKind::Openai, n, conc, 16, out_len);
    // Arrivals spread at a rate that keeps `conc` streams in flight (each lasts ~110 ms),
    // rather than bursts of `conc` connections at one instant.
    cfg.load.request_rate = servebench::config::RequestRate::PerSecond(conc as f64 * 10.0);
    let (result, records) = common::execute(cfg, dir.path(), "result.json", true).await;
    server.shutdown().await;

    assert_eq!(records.len() as u64, n);
    assert_eq!(result.summary.completed, n, "k={k} conc={conc}");
    // The run judged itself, and saw the simulator's counters over exactly this run.
    let validity = result.validity.as_ref().expect("validity is reported");
    let sim = validity
        .server_stats
        .as_ref()
        .expect("simulator stats are read");
    assert_eq!(
        sim["requests"], n,
        "exactly the measured requests, not the pre-flight"
    );
    assert!(validity
        .event_loop_lag_ms
        .as_ref()
        .is_some_and(|d| d.count > 0));
    assert_invariants(&records);
    let chunks = out_len.div_ceil(k as u64) as f64;
    let s = &result.summary;
    let source = if usage {
        TokenSource::ServerUsage
    } else {
        TokenSource::ChunkCount
    };
    assert!(records
        .iter()
        .all(|r| r.output_tokens_source == Some(source)));
    let mut timings = vec![
        ("TTFT", s.ttft_ms.as_ref().unwrap().median, TTFT_MS),
        (
            "E2EL",
            s.e2el_ms.as_ref().unwrap().median,
            TTFT_MS + (chunks - 1.0) * ITL_MS,
        ),
        ("ITL", s.itl_ms.as_ref().unwrap().median, ITL_MS),
    ];
    if usage {
        // N is the server's count: TPOT spreads the decode time over N − 1 tokens.
        assert_eq!(s.total_output_tokens, n * out_len);
        let tpot = (chunks - 1.0) * ITL_MS / (out_len - 1) as f64;
        timings.push(("TPOT", s.tpot_ms.as_ref().unwrap().median, tpot));
    } else {
        // Without usage the fallback counts chunks, and the report says so.
        assert_eq!(s.output_token_sources.get("chunk_count"), Some(&n));
        assert_eq!(s.total_output_tokens, n * chunks as u64);
    }
    timings
}

/// Clean runs of long streams (16 requests of 200 chunks, 8 at once): every stream's times
/// come from one clock, so none steps back inside a record (they did, by 1-34 µs, in 7 of 8
/// such records, when each read's kernel stamp was converted on its own), and so no record is
/// failed for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_time_steps_back_inside_any_record() {
    let _guard = common::serial_async().await;
    let server = start_sim(1, true, FaultConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::run_config(server.base_url(), BackendKind::Openai, 16, 8, 16, 200);
    let (result, records) = common::execute(cfg, dir.path(), "result.json", true).await;
    server.shutdown().await;
    assert_eq!(
        result.summary.completed, 16,
        "{:?}",
        result.summary.failures_by_kind
    );
    for r in &records {
        assert_eq!(r.chunk_ns.len(), 200);
        let back = r.chunk_ns.windows(2).position(|w| w[1] < w[0]);
        assert_eq!(back, None, "request {}: {:?}", r.id, r.time_disorder());
        assert!(r.sent_ns <= r.chunk_ns[0], "request {}", r.id);
    }
}

/// Medians within 2 ms of the simulator's exact schedule, at concurrency 1 and 64, with
/// one- and multi-token chunks, with usage and without. The machine is shared, so a
/// measurement disturbed by other processes is repeated (up to 3 times); a client that is
/// systematically off fails every attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reported_medians_match_the_known_schedule() {
    let _guard = common::serial_async().await;
    for (k, usage, conc, n) in [(1, true, 1, 8), (3, true, 64, 128), (2, false, 64, 128)] {
        let mut attempts = Vec::new();
        for _ in 0..3 {
            let timings = measure(k, usage, conc, n, 20).await;
            let ok = timings
                .iter()
                .all(|(_, got, truth)| (got - truth).abs() <= 2.0);
            attempts.push(timings);
            if ok {
                break;
            }
        }
        let last = attempts.last().unwrap();
        assert!(
            last.iter().all(|(_, got, truth)| (got - truth).abs() <= 2.0),
            "k={k} usage={usage} concurrency={conc}: reported vs truth (ms) in each attempt: {attempts:?}"
        );
    }
}

/// Every API is parsed into the same figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_backend_reports_the_same_truth() {
    let _guard = common::serial_async().await;
    let server = start_sim(1, true, FaultConfig::default()).await;
    for backend in [
        BackendKind::Openai,
        BackendKind::OpenaiChat,
        BackendKind::Tgi,
        BackendKind::Llamacpp,
        BackendKind::AnthropicMessages,
        BackendKind::OpenaiResponses,
    ] {
        // The counts are checked in every attempt; the TTFT, a timing against the exact
        // schedule, on the best of up to 3 (a busy machine can delay the simulator's first
        // chunks of all 4 streams at once).
        let mut ttfts = Vec::new();
        for _ in 0..3 {
            let ttft = same_truth(server.base_url(), backend).await;
            ttfts.push(ttft);
            if (ttft - TTFT_MS).abs() <= 10.0 {
                break;
            }
        }
        // Catches a parser that times a non-output event (the chat role chunk arrives at 0 ms);
        // the 2 ms accuracy itself is `reported_medians_match_the_known_schedule`'s job.
        assert!(
            ttfts.iter().any(|t| (t - TTFT_MS).abs() <= 10.0),
            "{backend:?}: median TTFT (ms) in each attempt {ttfts:?}, truth {TTFT_MS}"
        );
    }
    server.shutdown().await;
}

/// One run of 4 requests on `backend`, its counts checked; its median TTFT (ms).
async fn same_truth(base_url: String, backend: BackendKind) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let (result, records) = common::execute(
        common::run_config(base_url, backend, 4, 4, 16, 12),
        dir.path(),
        "result.json",
        true,
    )
    .await;
    assert_eq!(
        result.summary.completed, 4,
        "{backend:?}: {:?}",
        result.summary.failures_by_kind
    );
    assert_eq!(result.summary.total_output_tokens, 48, "{backend:?}");
    assert_invariants(&records);
    for r in &records {
        assert_eq!(
            r.chunk_ns.len(),
            12,
            "{backend:?}: the chat role chunk is not a token"
        );
        assert_eq!(
            r.output_tokens_source,
            Some(TokenSource::ServerUsage),
            "{backend:?}"
        );
    }
    result.summary.ttft_ms.as_ref().unwrap().median
}

/// 30% HTTP 500 plus cut-off and malformed streams: the run completes, the counts by kind are
/// exactly the simulator's, and every request has a record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_are_counted_exactly_and_no_record_is_lost() {
    let _guard = common::serial_async().await;
    let faults = FaultConfig {
        error_rate: 0.3,
        disconnect_rate: 0.1,
        malformed_rate: 0.1,
        rate_limit_rate: 0.05,
        ..FaultConfig::default()
    };
    let server = start_sim(1, true, faults).await;
    let dir = tempfile::tempdir().unwrap();
    let n = 200;
    let mut cfg = common::run_config(server.base_url(), BackendKind::Openai, n, 32, 16, 10);
    cfg.load.num_warmups = 0;
    // No pre-flight: the simulator's fault schedule counts every request.
    let opts = RunOptions::new(dir.path().join("r.json"), false);
    let result = execute(cfg, &Secrets::default(), &opts, CancellationToken::new())
        .await
        .unwrap();
    let records = common::read_records(&opts.records_path);
    let stats = server.stats();
    server.shutdown().await;

    assert_eq!(records.len() as u64, n);
    assert_eq!(stats.requests, n);
    let s = &result.summary;
    let kind = |k: FailureKind| s.failures_by_kind.get(k.as_str()).copied().unwrap_or(0);
    assert_eq!(
        kind(FailureKind::HttpStatus),
        stats.http_500 + stats.http_429
    );
    assert_eq!(kind(FailureKind::StreamBroken), stats.disconnected);
    assert_eq!(kind(FailureKind::MalformedStream), stats.malformed);
    assert_eq!(s.completed, stats.ok);
    assert_eq!(s.completed + s.failed, n);
    assert!(
        stats.http_500 > 40,
        "about 30% of 200 should fail: {}",
        stats.http_500
    );
    let statuses: Vec<u16> = records
        .iter()
        .filter_map(|r| r.http_status)
        .filter(|s| *s >= 400)
        .collect();
    assert_eq!(statuses.len() as u64, stats.http_500 + stats.http_429);
    assert_invariants(&records);
    // Failed requests stay out of the latency statistics.
    assert_eq!(s.ttft_ms.as_ref().unwrap().count, s.completed);
}

/// A stalled stream ends as a timeout, with its record, and the run still finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_streams_time_out_with_a_record() {
    let _guard = common::serial_async().await;
    let faults = FaultConfig {
        stall_rate: 0.5,
        ..FaultConfig::default()
    };
    let server = start_sim(1, true, faults).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::run_config(server.base_url(), BackendKind::Openai, 10, 10, 16, 10);
    cfg.load.timeout_s = 1.0;
    let opts = RunOptions::new(dir.path().join("r.json"), false);
    let result = execute(cfg, &Secrets::default(), &opts, CancellationToken::new())
        .await
        .unwrap();
    let stalled = server.stats().stalled;
    server.shutdown().await;
    assert!(stalled > 0);
    assert_eq!(
        result.summary.failures_by_kind.get("timeout"),
        Some(&stalled)
    );
    assert_eq!(common::read_records(&opts.records_path).len(), 10);
}

/// Stopping a run (Ctrl-C) keeps every finished record, cancels the rest after the grace
/// period with a record each, and saves a result marked incomplete. The stop comes once the
/// simulator has answered 8 requests in full (two rounds of 4, 0.34 s each), not after a
/// fixed time: a busy machine may take longer than any fixed time to start the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_run_keeps_what_was_measured() {
    let _guard = common::serial_async().await;
    let server = start_sim(1, true, FaultConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::run_config(server.base_url(), BackendKind::Openai, 1000, 4, 16, 30);
    cfg.load.grace_s = 0.0;
    let opts = RunOptions::new(dir.path().join("r.json"), false);
    let stop = CancellationToken::new();
    let trigger = stop.clone();
    let stopper = async {
        while server.stats().ok < 8 {
            // Polls the simulator's count (its own tasks; nothing signals it).
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        trigger.cancel();
    };
    let secrets = Secrets::default();
    let (result, ()) = tokio::join!(execute(cfg, &secrets, &opts, stop), stopper);
    let result = result.unwrap();
    server.shutdown().await;
    let records = common::read_records(&opts.records_path);
    assert!(!result.complete);
    assert!(result.unsent > 0);
    assert_eq!(records.len() as u64 + result.unsent, 1000);
    assert!(result.summary.completed > 0);
    let saved = BenchResult::load(&opts.result_path).unwrap();
    assert_eq!(saved, result);
}

/// Reasoning text counts as output (TTFT is the first reasoning chunk) and the time to the
/// first answer chunk is reported separately. Its timing against the exact schedule (the
/// answer 4 ITLs after the reasoning) is checked on the best of up to 3 runs: a busy machine
/// can delay the simulator's chunks of all 4 streams at once (44.3 ms was seen for 40 ms); a
/// client that times either event wrongly is off in every run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_tokens_are_output_and_reported_separately() {
    let _guard = common::serial_async().await;
    let server = start_sim(1, true, FaultConfig::default()).await;
    // The chat API's `reasoning_content`, Anthropic's `thinking_delta`, the Responses API's
    // `response.reasoning_text.delta`.
    for backend in [
        BackendKind::OpenaiChat,
        BackendKind::AnthropicMessages,
        BackendKind::OpenaiResponses,
    ] {
        reasoning_is_output_and_reported_separately(server.base_url(), backend).await;
    }
    server.shutdown().await;
}

async fn reasoning_is_output_and_reported_separately(base_url: String, backend: BackendKind) {
    let mut gaps = Vec::new();
    for _ in 0..3 {
        let gap = reasoning_then_answer(base_url.clone(), backend).await;
        gaps.push(gap);
        if (gap - 4.0 * ITL_MS).abs() <= 2.0 {
            return;
        }
    }
    panic!(
        "{backend:?}: first answer − first reasoning (median ms) in each attempt {gaps:?}, truth {}",
        4.0 * ITL_MS
    );
}

/// One run with 4 reasoning tokens, its counts checked; the median time from the first
/// reasoning chunk to the first answer chunk (ms).
async fn reasoning_then_answer(base_url: String, backend: BackendKind) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::run_config(base_url, backend, 4, 4, 16, 10);
    cfg.extra_body = Some(serde_json::json!({"sim_reasoning_tokens": 4}));
    let (result, records) = common::execute(cfg, dir.path(), "result.json", true).await;
    let s = &result.summary;
    assert_eq!(s.completed, 4);
    assert_eq!(s.total_output_tokens, 40);
    assert_invariants(&records);
    let reasoning = s
        .time_to_first_reasoning_ms
        .as_ref()
        .expect("reasoning reported")
        .median;
    let answer = s
        .time_to_first_answer_ms
        .as_ref()
        .expect("answer reported")
        .median;
    assert_close("TTFT", s.ttft_ms.as_ref().unwrap().median, reasoning, 0.0);
    answer - reasoning
}

/// TTFT counts from the request's first byte written, after a new connection's
/// setup, so a request on a new connection and one on a reused connection have the same TTFT
/// against the exact simulator (whose schedule starts at the kernel's arrival stamp of each
/// request). 128 streams open at one instant, then reuse their connections. The medians are
/// compared (a setup counted in TTFT moves every new connection's; a preempted request moves
/// a mean, not a median), on the best of up to 5 runs. On a busy machine the simulator itself
/// can fall behind its schedule (128 streams at one instant on a starved core): a run whose
/// simulator says it was late (its late intakes and chunks) is judged within that lateness,
/// and only when no run had a punctual simulator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_and_reused_connections_give_the_same_ttft() {
    let _guard = common::serial_async().await;
    let mut attempts = Vec::new();
    for _ in 0..5 {
        let server = start_sim(1, true, FaultConfig::default()).await;
        let dir = tempfile::tempdir().unwrap();
        let cfg = common::run_config(server.base_url(), BackendKind::Openai, 256, 128, 16, 4);
        let (result, records) = common::execute(cfg, dir.path(), "result.json", true).await;
        let st = server.stats();
        server.shutdown().await;
        // What the simulator admits: its largest delay taking a request in or writing a chunk.
        let late_ms = (st.max_intake_us.max(st.max_lateness_us)) as f64 / 1e3;
        let punctual = st.late_intakes == 0 && st.late_chunks == 0;
        assert_invariants(&records);
        let s = &result.summary;
        assert_eq!(s.completed, 256);
        assert_eq!(s.new_connections + s.reused_connections, 256);
        let (new, reused): (Vec<_>, Vec<_>) = records
            .iter()
            .partition(|r| r.connection_reused == Some(false));
        assert_eq!(new.len() as u64, s.new_connections);
        assert!(new.len() >= 64 && reused.len() >= 64, "{}", new.len());
        assert_eq!(
            s.connection_setup_ms.as_ref().unwrap().count,
            s.new_connections
        );
        for r in &new {
            let (a, b) = (r.connect_start_ns.unwrap(), r.connect_end_ns.unwrap());
            assert!(r.scheduled_ns <= a && a <= b && b <= r.sent_ns, "{r:?}");
        }
        assert!(reused.iter().all(|r| r.connect_start_ns.is_none()));
        let median_ttft = |rs: &[&RequestRecord]| {
            let mut v: Vec<f64> = (rs.iter())
                .map(|r| RequestMetrics::of(r).unwrap().ttft_ns as f64 / 1e6)
                .collect();
            v.sort_by(f64::total_cmp);
            (v[(v.len() - 1) / 2] + v[v.len() / 2]) / 2.0
        };
        let (a, b) = (median_ttft(&new), median_ttft(&reused));
        attempts.push((a, b, punctual, late_ms));
        if (a - TTFT_MS).abs() <= 1.0 && (b - TTFT_MS).abs() <= 1.0 {
            return;
        }
    }
    // No run was within 1 ms: acceptable only where the simulator was late in every run, and
    // then no median is further off than the simulator's own worst lateness (plus the 1 ms).
    let explained = attempts.iter().all(|&(a, b, punctual, late)| {
        !punctual && (a - TTFT_MS).abs().max((b - TTFT_MS).abs()) <= late + 1.0
    });
    assert!(
        explained,
        "median TTFT (ms) on new and reused connections, truth {TTFT_MS}, with (punctual simulator, its worst lateness ms): {attempts:?}"
    );
}

/// Warm-ups run as many at a time as the concurrency cap, above 1,024 too, so that many
/// connections are open when measuring starts: with 1,100 warm-ups under a cap of 1,100 and a
/// first token after 2 s, each warm-up opens a connection of its own. (None ends before the
/// last is sent: their sends spread over about 150 ms with both cores busy. With a first token
/// sooner than the spread, later warm-ups would take the connections of the first.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_ups_open_as_many_connections_as_the_cap() {
    let _guard = common::serial_async().await;
    // Two sockets per stream in this process (the client's and the simulator's end).
    let _ = servebench::measure::fds::raise();
    let cfg = SimConfig {
        ttft: Duration::from_secs(2),
        itl: Duration::from_millis(ITL_MS as u64),
        ..SimConfig::default()
    };
    let server = sim::spawn(cfg, ([127, 0, 0, 1], 0).into()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = 1_100;
    let mut cfg = common::run_config(server.base_url(), BackendKind::Openai, n, n, 8, 2);
    cfg.load.num_warmups = n;
    let (result, records) = common::execute(cfg, dir.path(), "result.json", false).await;
    server.shutdown().await;
    assert_invariants(&records);
    assert_eq!(result.summary.completed, n);
    let warm: Vec<_> = records.iter().filter(|r| r.warmup).collect();
    assert_eq!(warm.len() as u64, n);
    let opened = warm.iter().filter(|r| r.connection_reused == Some(false));
    assert_eq!(opened.count() as u64, n);
}

/// A cap past what a semaphore holds (`--max-concurrency 18446744073709551615`) runs its
/// warm-ups and its requests, as many as there are, without a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_ups_under_the_largest_cap_run() {
    let _guard = common::serial_async().await;
    let server = start_sim(1, true, FaultConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::run_config(server.base_url(), BackendKind::Openai, 4, u64::MAX, 8, 2);
    cfg.load.num_warmups = 4;
    let (result, records) = common::execute(cfg, dir.path(), "result.json", false).await;
    server.shutdown().await;
    assert_invariants(&records);
    assert_eq!(result.summary.completed, 4);
    assert_eq!(records.iter().filter(|r| r.warmup).count(), 4);
}

/// Against an external `servebench sim --time-scale 10`, the run reads the scale
/// from `/sim/info` and reports in the simulator's time, as with the built-in simulator. The
/// figures are checked within 30%: a scale not applied, or applied twice, is off tenfold,
/// while a busy machine's few ms of real delay are ten times as many simulated ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_simulator_s_time_scale_is_read_from_its_info() {
    let _guard = common::serial_async().await;
    let server = sim::spawn(
        SimConfig {
            ttft: Duration::from_millis(500),
            itl: Duration::from_millis(100),
            time_scale: 10.0,
            ..SimConfig::default()
        },
        ([127, 0, 0, 1], 0).into(),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::run_config(server.base_url(), BackendKind::Openai, 8, 8, 16, 5);
    assert!(!cfg.simulated);
    let (result, _) = common::execute(cfg, dir.path(), "result.json", true).await;
    server.shutdown().await;
    assert_eq!(result.config.time_scale, 10.0);
    let s = &result.summary;
    assert_close("TTFT", s.ttft_ms.as_ref().unwrap().median, 500.0, 150.0);
    assert_close("TPOT", s.tpot_ms.as_ref().unwrap().median, 100.0, 30.0);
    // Its timings are in its own time: judged against the client's span × 10.
    assert_eq!(s.implausible_usage, 0, "{:?}", s.implausible_usage_by_field);
}

/// Against the exact simulator, which reports its own per-request truth as vLLM's
/// `metrics` object (TTFT 50 ms, no queueing), the breakdown shows server queue 0 and prefill
/// 50 ms for every request, and a first-token transfer well under a millisecond or two. The
/// transfer is the simulator's lateness plus the wire: its median is checked (a busy machine
/// delays some chunks by several ms: mean 2.8 ms, max 8.3 ms were seen with both cores busy),
/// on the best of up to 3 runs; a breakdown that misplaces a part is off in every run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttft_breakdown_from_the_simulators_truth() {
    let _guard = common::serial_async().await;
    let mut transfers = Vec::new();
    for _ in 0..3 {
        let transfer = breakdown_of_one_run().await;
        let close = transfer.median.abs() < 2.0;
        transfers.push(transfer);
        if close {
            return;
        }
    }
    panic!("first-token transfer (ms) in each attempt: {transfers:?}");
}

/// One run of 40 requests against the exact simulator, its exact parts checked; the
/// distribution of its first-token transfers.
async fn breakdown_of_one_run() -> servebench::results::stats::Distribution {
    let server = start_sim(1, true, FaultConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::run_config(server.base_url(), BackendKind::Openai, 40, 8, 16, 4);
    let (result, records) = common::execute(cfg, dir.path(), "result.json", true).await;
    server.shutdown().await;
    assert!(records.iter().all(|r| r.server_request_metrics.is_some()));
    let b = &result.summary.ttft_breakdown;
    let queue = b.server_queue_ms.as_ref().unwrap();
    assert_eq!((queue.count, queue.max), (40, 0.0));
    let prefill = b.prefill_ms.as_ref().unwrap();
    assert_eq!(
        (prefill.count, prefill.min, prefill.max),
        (40, TTFT_MS, TTFT_MS)
    );
    let text = servebench::render::report::text(&result);
    assert!(
        text.contains("prefill mean / p99 (ms):                 50.00 / 50.00"),
        "{text}"
    );
    let transfer = b.first_token_transfer_ms.clone().unwrap();
    assert_eq!(transfer.count, 40);
    transfer
}

/// An engine preset reports each request's queueing and its own TTFT (vLLM's
/// `metrics` shape). With 12 requests at once and room for 4 in the batch (the llama.cpp
/// preset), later requests queue in the engine; the server's account covers nearly all of
/// TTFT (the first-token transfer over 127.0.0.1 is small: its median, as a busy machine may
/// delay a few tokens by several ms) and never exceeds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_preset_reports_its_queue_and_prefill() {
    let _guard = common::serial_async().await;
    let server = start_preset(sim::Preset::LlamacppLlama8bRtx4090).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::run_config(server.base_url(), BackendKind::Openai, 12, 12, 16, 8);
    cfg.ignore_eos = true;
    let (result, records) = common::execute(cfg, dir.path(), "result.json", true).await;
    server.shutdown().await;
    assert_eq!(result.summary.completed, 12);
    let mut queued = 0;
    for r in &records {
        let m = RequestMetrics::of(r).unwrap();
        let server = servebench::results::stats::ServerTimings::of(r);
        let (Some(own), Some(queue)) = (server.server_ttft_ms, server.queue_ms) else {
            panic!("request {} has no server metrics: {r:?}", r.id);
        };
        let ttft = m.ttft_ns as f64 / 1e6;
        assert!(own <= ttft + 0.5, "server TTFT {own} > client TTFT {ttft}");
        // Queued past one engine step (7 ms): waited for a batch slot.
        if queue > 20.0 {
            queued += 1;
        }
    }
    assert!(queued >= 8, "{queued} of 12 queued");
    let b = &result.summary.ttft_breakdown;
    assert!(b.server_queue_ms.as_ref().unwrap().max > 20.0);
    let transfer = b.first_token_transfer_ms.as_ref().unwrap();
    assert!(transfer.median < 5.0, "{transfer:?}");
}

/// The simulator's prefix cache. A trace of the same 2,048-word prompt twice, then
/// a fresh one, one at a time against an engine preset: the second is all cached (reported as
/// `cached_tokens`, the designed reuse too), so the engine prefills nothing and its TTFT falls
/// well below the uncached ones'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_preset_prefills_only_the_uncached_prompt() {
    let _guard = common::serial_async().await;
    let server = start_preset(sim::Preset::VllmLlama8bRtx4090).await;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let lines = [
        r#"{"timestamp": 0, "input_length": 2048, "output_length": 2, "hash_ids": [1, 2, 3, 4]}"#,
        r#"{"timestamp": 600, "input_length": 2048, "output_length": 2, "hash_ids": [1, 2, 3, 4]}"#,
        r#"{"timestamp": 1200, "input_length": 2048, "output_length": 2, "hash_ids": [5, 6, 7, 8]}"#,
    ];
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let mut cfg = common::run_config(server.base_url(), BackendKind::Openai, 3, 1, 16, 2);
    cfg.ignore_eos = true;
    cfg.workload.dataset = servebench::config::Dataset::Trace {
        path: trace,
        output_len: Some(2),
        block_size: 512,
        speedup: 1.0,
    };
    let (result, mut records) = common::execute(cfg, dir.path(), "result.json", true).await;
    server.shutdown().await;
    records.sort_by_key(|r| r.id);
    let cached: Vec<Option<u64>> = records.iter().map(|r| r.cached_prompt_tokens).collect();
    assert_eq!(cached, [Some(0), Some(2048), Some(0)]);
    let ttft: Vec<f64> = records
        .iter()
        .map(|r| RequestMetrics::of(r).unwrap().ttft_ns as f64 / 1e6)
        .collect();
    // About 17 ms against 180 ms: half leaves room for tens of ms of a busy machine.
    assert!(
        ttft[1] * 2.0 < ttft[0] && ttft[1] * 2.0 < ttft[2],
        "{ttft:?}"
    );
    let c = result.summary.prefix_cache.unwrap();
    assert_eq!(c.designed_hit_rate, Some(1.0 / 3.0));
    assert_eq!(c.measured_hit_rate, Some(1.0 / 3.0));
}

/// Time to second token and output tokens/s per user against the exact simulator. Exact:
/// with 3 tokens per chunk and llama.cpp's per-chunk counts, the second token comes with the
/// first, so every TTST is 0; each per-user rate is 1000 / TPOT of its record. Timed: one
/// token per chunk, the second token is the second chunk, one ITL after the first: its median
/// within 1 ms of `ITL_MS` (best of up to 3 runs, as the other timed tests; a single gap can be
/// a little short when the first chunk's read came late).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttst_is_the_simulated_itl_exactly() {
    let _guard = common::serial_async().await;
    let server = start_sim(3, true, FaultConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::run_config(server.base_url(), BackendKind::Llamacpp, 6, 3, 16, 12);
    let (result, records) = common::execute(cfg, dir.path(), "result.json", true).await;
    server.shutdown().await;
    assert_eq!(result.summary.completed, 6);
    assert!(records
        .iter()
        .all(|r| r.chunk_tokens.as_deref() == Some(&[3, 3, 3, 3][..])));
    let ttst = result.summary.ttst_ms.as_ref().expect("TTST");
    assert_eq!((ttst.count, ttst.min, ttst.max), (6, 0.0, 0.0));
    let rates: Vec<f64> = (records.iter())
        .map(|r| 1000.0 / RequestMetrics::of(r).unwrap().tpot_ms.unwrap())
        .collect();
    let per_user = result.summary.output_tps_per_user.as_ref().expect("rate");
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    assert_eq!(per_user.count, 6);
    assert!((per_user.mean - mean).abs() < 1e-9 * mean, "{per_user:?}");
    // Every view gets them by their keys.
    assert_eq!(result.vllm["mean_ttst_ms"], serde_json::json!(0.0));
    assert!(result.vllm["p99_output_tps_per_user"].is_number());
    let text = servebench::render::report::text(&result);
    assert!(text.contains("Mean TTST (ms):"), "{text}");
    assert!(
        text.contains("Mean Output tok/s/user (tokens/s):"),
        "{text}"
    );
    let csv = servebench::render::csv::result(&result);
    assert!(
        csv.lines().next().unwrap().contains("mean_ttst_ms"),
        "{csv}"
    );

    let mut misses = Vec::new();
    for _ in 0..3 {
        let server = start_sim(1, true, FaultConfig::default()).await;
        let dir = tempfile::tempdir().unwrap();
        let cfg = common::run_config(server.base_url(), BackendKind::Openai, 8, 4, 16, 8);
        let (result, _) = common::execute(cfg, dir.path(), "result.json", true).await;
        server.shutdown().await;
        let ttst = result.summary.ttst_ms.clone().expect("TTST");
        assert_eq!(ttst.count, 8);
        let rate = result.summary.output_tps_per_user.clone().expect("rate");
        let off = [
            (ttst.median - ITL_MS).abs(),
            (1000.0 / rate.median - ITL_MS).abs(),
        ];
        if off.iter().all(|d| *d < 1.0) {
            return;
        }
        misses.push(off);
    }
    panic!("no run within 1 ms of the schedule: {misses:?}");
}
