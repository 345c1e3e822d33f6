//! A join kept in the run's result (`servebench join RESULT TRACE --save`): the
//! exact simulator's own spans (`GET /sim/otlp`), joined with the run and saved, put the
//! simulator's known truth into the result: no queue and a prefill of exactly its `ttft` for
//! every request; `report`, its CSV and HTML show them. A join that fails saves nothing.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{path_str, run_config, stdout_of};
use servebench::config::BackendKind;
use servebench::results::document::BenchResult;
use servebench::sim::SimConfig;

const TTFT_MS: f64 = 40.0;

/// The simulator's spans, as the file a collector would have written.
async fn save_spans(base_url: &str, path: &Path) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let body = reqwest::get(format!("{base_url}/sim/otlp"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    std::fs::write(path, &body).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_join_puts_the_simulators_queue_and_prefill_in_the_report() {
    let server = common::spawn_sim(SimConfig {
        ttft: Duration::from_millis(TTFT_MS as u64),
        usage: true,
        ..SimConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = run_config(server.base_url(), BackendKind::Openai, 12, 4, 64, 8);
    common::execute(cfg, dir.path(), "run.json", false).await;
    let trace = dir.path().join("trace.json");
    save_spans(&server.base_url(), &trace).await;
    server.shutdown().await;
    let result = dir.path().join("run.json");

    // A trace that matches nothing is refused, and the result is left as it was.
    let before = std::fs::read(&result).unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"resourceSpans": []}"#).unwrap();
    let args = ["join", path_str(&result), path_str(&other), "--save"];
    common::run_fails(&args);
    assert_eq!(std::fs::read(&result).unwrap(), before, "nothing saved");

    stdout_of(&["join", path_str(&result), path_str(&trace), "--save"]);
    let saved = BenchResult::load(&result).unwrap();
    let j = saved.join.as_ref().expect("the join's figures");
    assert_eq!((j.matched, j.requests, j.unmatched_requests), (12, 12, 0));
    assert_eq!((j.duplicate_ids, j.implausible), (0, 0));
    let part = |name: &str| j.parts.iter().find(|p| p.name == name).unwrap().clone();
    let (queue, prefill) = (part("queue"), part("prefill"));
    assert_eq!((queue.count, queue.mean_ms, queue.p99_ms), (12, 0.0, 0.0));
    assert_eq!(prefill.count, 12);
    for v in [prefill.mean_ms, prefill.median_ms, prefill.p99_ms] {
        assert!((v - TTFT_MS).abs() < 1e-9, "{prefill:?}");
    }
    // The rest of the result is as it was.
    let mut was: BenchResult = serde_json::from_slice(&before).unwrap();
    was.join = saved.join.clone();
    assert_eq!(was, saved);

    let report = stdout_of(&["report", path_str(&result)]);
    assert!(report.contains("Server's account (join)"), "{report}");
    let line = |label: &str| {
        (report.lines())
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("{label}: {report}"))
            .to_string()
    };
    assert!(line("queue mean / median / p99 (ms):").contains("0.000 / 0.000 / 0.000"));
    assert!(line("prefill mean / median / p99 (ms):").contains("40.000 / 40.000 / 40.000"));
    assert!(line("Joined / requests / spans:").contains("12 / 12 / 12"));
    let row = common::report_csv_row(&result);
    let cell = |name: &str| row.get(name).unwrap_or_else(|| panic!("{name}")).clone();
    assert_eq!(cell("join.matched"), "12");
    // Each part under its name, whatever its place in the list.
    let mean: f64 = cell("join.parts.prefill.mean_ms").parse().unwrap();
    assert!((mean - TTFT_MS).abs() < 1e-9, "{mean}");
    assert_eq!(cell("join.parts.queue.count"), "12");
    assert!(!row.keys().any(|c| c.ends_with(".name")), "{row:?}");
    let html = stdout_of(&["report", path_str(&result), "--format", "html"]);
    assert!(html.contains("account (join)") && html.contains("40.000 / 40.000 / 40.000"));
}
