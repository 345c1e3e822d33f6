//! The steady state: against the built-in simulator in exact mode, whose
//! answers take exactly its TTFT plus (N − 1) ITLs, a run with a known transient (a first stage
//! at a fifth of the second's rate) has its steady window found where the load settled, within
//! one MSER batch; the figures over the window equal the simulator's truth; a run that never
//! settles or is too short says so; `--steady-state off` leaves it out; a bad value is refused.

use crate::common;

use common::{json, path_str, run_fails, run_ok};
use serde_json::Value;

/// Runs the simulator in exact mode with `args` into `dir`, as `name.json`; the result.
fn run(dir: &std::path::Path, name: &str, args: &[&str]) -> (Value, String) {
    let file = format!("{name}.json");
    let mut all = vec![
        "run",
        "--sim-preset",
        "exact",
        "--result-dir",
        path_str(dir),
        "--result-filename",
        &file,
        "--output-len",
        "20",
    ];
    all.extend_from_slice(args);
    let (out, _) = run_ok(&all);
    (json(&dir.join(&file)), out)
}

/// One MSER batch in seconds: 5 bins, each a hundredth of the span from the first send to
/// the last, between 10 ms and 1 s (`results::stats::steady`).
fn batch_s(span_s: f64) -> f64 {
    5.0 * (span_s / 100.0).clamp(0.01, 1.0)
}

#[test]
fn the_steady_window_starts_where_the_load_settled() {
    // 10 requests/s for 1 s, then 50/s for 4 s, at nearly even spacing (gamma arrivals with a
    // shape of 1000). The load is steady once the first second-stage request has been
    // answered: in flight and throughput reach their level at 1 s + one E2EL. The simulator's
    // TTFT and TPOT have no transient at all; the window starts where the last series settled.
    let dir = tempfile::tempdir().unwrap();
    let mut misses = Vec::new();
    // A busy machine can make one run's sends ragged, or stall the client for two batches
    // of requests, which the latency series then show (on a 2-core machine with both cores
    // kept busy, 2 runs of 6 had their window moved so): the settling points are checked on
    // the best of up to 8 runs, and everything else in every steady run.
    for attempt in 0..8 {
        let (r, text) = run(
            dir.path(),
            &format!("s{attempt}"),
            &[
                "--stages",
                "10:1,50:4",
                "--burstiness",
                "1000",
                "--num-prompts",
                "300",
            ],
        );
        let st = &r["steady_state"];
        let settled = |name: &str| {
            st["settled"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["series"] == name)
                .unwrap_or_else(|| panic!("no {name}: {st}"))["at_s"]
                .as_f64()
        };
        let records = common::read_records(&dir.path().join(format!("s{attempt}.records.jsonl")));
        let first = records.iter().map(|r| r.sent_ns).min().unwrap();
        let last = records.iter().map(|r| r.sent_ns).max().unwrap();
        let span = (last - first) as f64 / 1e9;
        let truth = 1.0 + r["median_e2el_ms"].as_f64().unwrap() / 1e3;
        let load = [settled("output_throughput"), settled("in_flight")];
        if !load
            .iter()
            .all(|at| at.is_some_and(|at| (at - truth).abs() <= batch_s(span)))
        {
            misses.push(format!("load settled at {load:?}, truly at {truth:.3} s"));
            continue;
        }
        if st["verdict"] != "steady" {
            misses.push(format!("{st}"));
            continue;
        }
        // The window starts where the last series settled and ends at the last send.
        let start = st["start_s"].as_f64().unwrap();
        let latest = ["output_throughput", "in_flight", "ttft_ms", "tpot_ms"]
            .map(|s| settled(s).unwrap())
            .into_iter()
            .fold(0.0, f64::max);
        assert!((start - latest).abs() < 1e-9, "{st}");
        assert!((st["end_s"].as_f64().unwrap() - span).abs() < 1e-6, "{st}");
        // Every figure over the window is the simulator's: TTFT exactly its 50 ms (within the
        // client's 1 ms), and the second stage's 50 requests/s of 20 tokens.
        let ttft = st["ttft_ms"]["mean"].as_f64().unwrap();
        assert!(
            (ttft - r["median_ttft_ms"].as_f64().unwrap()).abs() < 1.0,
            "{st}"
        );
        let thr = st["output_throughput"]["mean"].as_f64().unwrap();
        assert!(
            (thr / 1000.0 - 1.0).abs() < 0.1,
            "window throughput {thr}: {st}"
        );
        let [lo, hi] = [0, 1].map(|i| st["output_throughput"]["ci95"][i].as_f64().unwrap());
        assert!(lo <= thr && thr <= hi, "{st}");
        // Its requests are those sent inside it.
        let inside = records
            .iter()
            .filter(|r| r.is_ok() && (r.sent_ns - first) as f64 / 1e9 >= start - 1e-9)
            .count();
        assert_eq!(st["requests"].as_u64(), Some(inside as u64), "{st}");
        assert!(text.contains("Steady state (MSER-5)"), "{text}");
        // Never before the load settled; on a quiet machine, where it settled.
        assert!(start >= truth - batch_s(span), "{st}");
        if start - truth <= batch_s(span) {
            return;
        }
        misses.push(format!(
            "window from {start:.3} s, load settled at {truth:.3} s"
        ));
    }
    panic!("no steady window within one batch of where the load settled in 8 runs: {misses:?}");
}

#[test]
fn a_run_that_never_settles_or_is_too_short_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // The default simulated engine serves about 35 requests/s of these: at 100/s its queue,
    // and with it TTFT and the requests in flight, grows for the whole run.
    let file = "over.json";
    let (out, _) = run_ok(&[
        "run",
        "--result-dir",
        path_str(dir.path()),
        "--result-filename",
        file,
        "--num-prompts",
        "300",
        "--request-rate",
        "100",
        "--output-len",
        "20",
    ]);
    let st = &json(&dir.path().join(file))["steady_state"];
    assert_eq!(st["verdict"], "still_ramping", "{st}");
    assert!(st.get("start_s").is_none(), "{st}");
    assert!(out.contains("not reached: still ramping ("), "{out}");
    // A handful of requests: fewer than 8 batches of 5 in the per-request series.
    let (r, out) = run(
        dir.path(),
        "few",
        &["--num-prompts", "10", "--request-rate", "20"],
    );
    assert_eq!(r["steady_state"]["verdict"], "too_short");
    assert!(out.contains("not reached: too short to tell"), "{out}");
}

#[test]
fn steady_state_off_leaves_it_out_and_a_bad_value_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (r, out) = run(
        dir.path(),
        "off",
        &["--num-prompts", "10", "--steady-state", "off"],
    );
    assert!(r.get("steady_state").is_none(), "{r}");
    assert!(!out.contains("Steady state"), "{out}");
    let err = run_fails(&["run", "--steady-state", "sometimes"]);
    assert!(
        err.contains("--steady-state") && err.contains("sometimes"),
        "{err}"
    );
    // The window's figures are columns of the result's CSV.
    let (r, _) = run(
        dir.path(),
        "on",
        &[
            "--num-prompts",
            "200",
            "--request-rate",
            "50",
            "--burstiness",
            "1000",
        ],
    );
    let csv = common::stdout_of(&[
        "report",
        path_str(&dir.path().join("on.json")),
        "--format",
        "csv",
    ]);
    let head = csv.lines().next().unwrap();
    // A window's figures where it found one (a busy machine may leave it unsettled).
    let mut cols = vec!["steady_state.verdict", "steady_state.settled.0.series"];
    if r["steady_state"]["verdict"] == "steady" {
        cols.extend(["steady_state.start_s", "steady_state.ttft_ms.mean"]);
    }
    for col in cols {
        assert!(head.split(',').any(|c| c == col), "{col}: {head}");
    }
}
