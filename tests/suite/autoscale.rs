//! Autoscaler benchmarks against the simulator's own autoscaler (`sim --slots 2 --autoscale
//! ...`): a burst shape sent by `run --load-shape`, the replica count read from the
//! simulator's Prometheus query API (`--replicas-metric`), checked against the simulator's log
//! of every change (`/sim/replicas`); the recovery after the burst against the records'
//! truth; replica-hours against the series; and every bad input refused in one line.

use std::path::Path;

use serde_json::Value;
use servebench::results::stats::RequestMetrics;

use crate::common::{self, json, json_get, output, read_records, SimProcess};

/// The simulator: 2 slots per replica, 1 to 4 replicas, a replica per 2 requests in flight,
/// a change 1 s after its decision; each answer 100 ms to its first token and 9 × 10 ms more.
fn autoscaling_sim() -> SimProcess {
    SimProcess::start(&[
        "--slots",
        "2",
        "--autoscale",
        "1,4,2,1",
        "--ttft-ms",
        "100",
        "--itl-ms",
        "10",
    ])
}

/// One line, naming `flag`, exit 2, and no result written into `dir`.
fn refused(dir: &Path, args: &[&str], flag: &str, why: &str) {
    let out = output(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    let line = err.trim();
    assert!(!line.contains('\n'), "{args:?}: not one line: {err}");
    assert!(line.contains(flag) && line.contains(why), "{args:?}: {err}");
    let written = std::fs::read_dir(dir).map_or(0, |d| d.count());
    assert_eq!(written, 0, "{args:?}: a refused run wrote files");
}

#[test]
fn bad_load_shapes_and_replica_sources_are_refused_in_one_line() {
    let sim = autoscaling_sim();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    let base = [
        "run",
        "--base-url",
        &sim.url,
        "--result-dir",
        out_s,
        "--quiet",
        "--tokenizer",
        "words",
        "--output-len",
        "2",
    ];
    let file = |name: &str, text: &str| {
        let p = tmp.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let (neg, back, empty) = (
        file("neg.csv", "time_s,rate\n0,1\n5,-2\n"),
        file(
            "back.jsonl",
            "{\"time_s\":0,\"rate\":1}\n{\"time_s\":5,\"rate\":2}\n{\"time_s\":3,\"rate\":2}\n",
        ),
        file("empty.csv", ""),
    );
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["--load-shape", &neg], "--load-shape", "negative"),
        (
            vec!["--load-shape", &back],
            "--load-shape",
            "time goes backwards",
        ),
        (
            vec!["--load-shape", &empty],
            "--load-shape",
            "no (time, rate) point",
        ),
        (
            vec!["--load-shape", "sine:0,1,2", "--duration", "5"],
            "--load-shape",
            "period",
        ),
        (
            vec!["--load-shape", "sine:10,5,2", "--duration", "5"],
            "--load-shape",
            "MIN 5 is above MAX 2",
        ),
        (
            vec!["--load-shape", "burst:10,2,5,1", "--duration", "5"],
            "--load-shape",
            "BASE 5 is above PEAK 1",
        ),
        (
            vec!["--load-shape", "sine:10,1,2"],
            "--load-shape",
            "give --duration",
        ),
        (
            vec![
                "--load-shape",
                "sine:10,1,2",
                "--duration",
                "5",
                "--request-rate",
                "3",
            ],
            "--load-shape",
            "leave --request-rate out",
        ),
        (
            vec!["--load-shape", "sine:10,1,2", "--stages", "1:2"],
            "--load-shape",
            "leave --stages out",
        ),
        (
            vec![
                "--load-shape",
                "sine:10,1,2",
                "--duration",
                "5",
                "--attainment-target",
                "2",
            ],
            "--attainment-target",
            "(0, 1]",
        ),
        (
            vec![
                "--load-shape",
                "burst:4,1,1,2",
                "--duration",
                "2",
                "--replicas-metric",
                &sim.url,
                "no_such_series",
            ],
            "--replicas-metric",
            "no series",
        ),
    ];
    for (more, flag, why) in cases {
        let args: Vec<&str> = base.iter().copied().chain(more).collect();
        refused(&out, &args, flag, why);
    }
    // The simulator's own autoscaler: it scales exact mode's slots.
    let err =
        String::from_utf8_lossy(&output(&["sim", "--autoscale", "1,4,2,1"]).stderr).into_owned();
    assert!(err.contains("autoscale") && err.contains("slots"), "{err}");
    let err =
        String::from_utf8_lossy(&output(&["sim", "--slots", "2", "--autoscale", "3,2,2,1"]).stderr)
            .into_owned();
    assert!(err.contains("MIN 3 and MAX 2"), "{err}");
}

/// Consecutive distinct values of a series (gaps skipped), with the time each was first seen.
fn changes(points: impl Iterator<Item = (f64, Option<f64>)>) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (t, v) in points {
        if let Some(v) = v {
            if out.last().is_none_or(|l| l.1 != v) {
                out.push((t, v));
            }
        }
    }
    out
}

#[test]
fn a_burst_against_the_autoscaling_simulator_is_measured_against_its_own_log() {
    let _serial = common::serial();
    let sim = autoscaling_sim();
    let dir = tempfile::tempdir().unwrap();
    let (poll, window, burst) = (0.2, 0.5, 6.0);
    let args = [
        "run",
        "--base-url",
        &sim.url,
        "--result-dir",
        dir.path().to_str().unwrap(),
        "--result-filename",
        "r.json",
        "--quiet",
        "--tokenizer",
        "words",
        "--input-len",
        "8",
        "--output-len",
        "10",
        "--load-shape",
        "burst:6,2,2,24",
        "--duration",
        "11",
        "--seed",
        "3",
        "--replicas-metric",
        &sim.url,
        "servebench_sim_replicas",
        "--replicas-interval",
        "0.2",
        "--time-slice",
        "0.5",
        "--goodput",
        "ttft:300",
        "--cost-per-replica-hour",
        "2",
        "--replica-capacity",
        "10",
    ];
    let out = output(&args);
    assert!(out.status.success(), "{out:?}");
    let r = json(&dir.path().join("r.json"));
    let a = &r["autoscale"];
    let samples = a["replicas"]["samples"].as_array().unwrap();

    // The client's series against the simulator's log: the same values, in the same order,
    // each change seen within one poll of the log's spacing (a loaded machine may delay a
    // poll: a second allowed).
    let log = json_get(&sim.url, "/sim/replicas");
    let sim_changes = changes(
        log["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["at_s"].as_f64().unwrap(), c["replicas"].as_f64())),
    );
    let seen = changes(
        samples
            .iter()
            .map(|s| (s["at_s"].as_f64().unwrap(), s["replicas"].as_f64())),
    );
    assert!(
        seen.len() >= 2,
        "no scale-up seen: {seen:?} (log {sim_changes:?})"
    );
    assert_eq!(
        seen.iter().map(|c| c.1).collect::<Vec<_>>(),
        sim_changes[..seen.len()]
            .iter()
            .map(|c| c.1)
            .collect::<Vec<_>>(),
        "client {seen:?} vs simulator {sim_changes:?}"
    );
    for (i, (c, t)) in seen.iter().zip(&sim_changes).enumerate().skip(1) {
        let (client, truth) = (c.0 - seen[1].0, t.0 - sim_changes[1].0);
        assert!(
            (client - truth).abs() <= poll + 1.0,
            "change {i}: {client} s vs {truth} s after the first scale-up"
        );
    }

    // Replica-hours: the step function of the series over the run, exactly.
    let span = r["duration"].as_f64().unwrap();
    let mut area = 0.0;
    for (i, s) in samples.iter().enumerate() {
        let end = samples
            .get(i + 1)
            .map_or(span, |n| n["at_s"].as_f64().unwrap())
            .min(span);
        if let Some(v) = s["replicas"].as_f64() {
            area += v * (end - s["at_s"].as_f64().unwrap()).max(0.0);
        }
    }
    let hours = a["replica_hours"].as_f64().unwrap();
    assert!(
        (hours - area / 3600.0).abs() < 1e-12,
        "{hours} vs {}",
        area / 3600.0
    );
    assert!((a["cost"].as_f64().unwrap() - 2.0 * hours).abs() < 1e-12);

    // The recovery after the burst at 6 s against the records' truth: the first and last
    // request after the burst's start that missed its SLO (TTFT over 300 ms).
    let records = read_records(&dir.path().join("r.records.jsonl"));
    let t0 = records.iter().map(|r| r.scheduled_ns).min().unwrap();
    let bad: Vec<f64> = records
        .iter()
        .filter(|r| RequestMetrics::of(r).is_none_or(|m| m.ttft_ns > 300_000_000))
        .map(|r| (r.end_ns.saturating_sub(t0)) as f64 / 1e9)
        .filter(|&t| t >= burst)
        .collect();
    let (first_bad, last_bad) = (
        bad.iter().copied().fold(f64::MAX, f64::min),
        bad.iter().copied().fold(0.0, f64::max),
    );
    assert!(
        !bad.is_empty(),
        "the burst missed no SLO: no recovery to time"
    );
    let rec = &a["recoveries"][0];
    assert_eq!(rec["burst_start_s"].as_f64(), Some(burst), "{a}");
    assert_eq!(rec["dipped"], Value::Bool(true), "{a}");
    let rec_s = rec["recovery_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("not recovered: {a}"));
    assert!(
        rec_s >= first_bad - burst - window && rec_s <= last_bad - burst + window,
        "recovery {rec_s} s is not within one window of the misses, {} to {} s after the burst",
        first_bad - burst,
        last_bad - burst
    );
    // Each window's offered load is its requests sent; the report prints the block.
    let report = String::from_utf8_lossy(
        &output(&["report", dir.path().join("r.json").to_str().unwrap()]).stdout,
    )
    .into_owned();
    assert!(
        report.contains("Autoscaler") && report.contains("Replica-hours:"),
        "{report}"
    );
}

/// `--replica-capacity PLAN.csv`: a plan made here by `servebench plan` from a sweep against
/// the autoscaling simulator gives the capacity (its sustained step's request throughput);
/// a sine shape's run against it has each window's need and the over-provisioning recomputed
/// exactly from its saved windows, and its dips of attainment are those of the windows. A
/// file that is not a plan's CSV is refused in one line naming it.
#[test]
fn over_provisioning_takes_the_capacity_from_a_saved_plan() {
    let _serial = common::serial();
    let sim = autoscaling_sim();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let server = ["--base-url", &sim.url, "--tokenizer", "words", "--quiet"];
    let mut sweep = vec!["run", "--max-concurrency", "1,2", "--num-prompts", "8"];
    sweep.extend(server);
    sweep.extend([
        "--input-len",
        "8",
        "--output-len",
        "4",
        "--cost-per-hour",
        "2",
    ]);
    sweep.extend(["--goodput", "ttft:2000", "--result-dir", d]);
    sweep.extend(["--result-filename", "s.json"]);
    let out = output(&sweep);
    assert!(out.status.success(), "{out:?}");
    let sweep_doc = dir.path().join("s.sweep.json");
    let plan = output(&[
        "plan",
        sweep_doc.to_str().unwrap(),
        "--goodput",
        "ttft:2000",
        "--format",
        "csv",
    ]);
    assert!(plan.status.success(), "{plan:?}");
    let plan_path = dir.path().join("plan.csv");
    std::fs::write(&plan_path, &plan.stdout).unwrap();
    // The plan's own sustained row, read here.
    let mut rows = csv::Reader::from_path(&plan_path).unwrap();
    let head = rows.headers().unwrap().clone();
    let at = |name: &str| head.iter().position(|h| h == name).unwrap();
    let sustained_rate: f64 = (rows.records().map(Result::unwrap))
        .find(|r| &r[at("sustained")] == "true")
        .map(|r| r[at("request_throughput")].parse().unwrap())
        .expect("the plan sustains a load");

    let replicas = dir.path().join("replicas.csv");
    std::fs::write(&replicas, "time_s,replicas\n0,3\n").unwrap();
    let mut run = vec!["run", "--input-len", "8", "--output-len", "10"];
    run.extend(server);
    run.extend([
        "--load-shape",
        "sine:4,2,30",
        "--duration",
        "4",
        "--seed",
        "5",
    ]);
    run.extend(["--time-slice", "0.5", "--goodput", "ttft:300"]);
    run.extend(["--replicas-file", replicas.to_str().unwrap()]);
    run.extend(["--replica-capacity", plan_path.to_str().unwrap()]);
    run.extend(["--result-dir", d, "--result-filename", "r.json"]);
    let out = output(&run);
    assert!(out.status.success(), "{out:?}");
    let r = json(&dir.path().join("r.json"));
    let a = &r["autoscale"];
    assert_eq!(
        r["config"]["autoscale"]["replica_capacity"].as_f64(),
        Some(sustained_rate),
        "{}",
        r["config"]["autoscale"]
    );
    let windows = a["windows"].as_array().unwrap();
    let mut excess = 0.0;
    for w in windows {
        let f = |k: &str| w[k].as_f64();
        let need = (f("offered_rps").unwrap() / sustained_rate).ceil();
        assert_eq!(f("needed_replicas"), Some(need), "{w}");
        let width = f("end_s").unwrap() - f("start_s").unwrap();
        excess += (f("replicas").unwrap() - need).max(0.0) * width;
    }
    let over = a["over_provisioned_replica_hours"].as_f64().unwrap();
    assert!((over - excess / 3600.0).abs() < 1e-12, "{over} vs {excess}");
    // The dips, from the saved windows by their definition.
    let target = a["attainment_target"].as_f64().unwrap();
    let (mut dips, mut open) = (Vec::new(), None::<f64>);
    for w in windows {
        let Some(att) = w["attainment"].as_f64() else {
            continue;
        };
        let start = w["start_s"].as_f64().unwrap();
        match (open, att < target) {
            (None, true) => open = Some(start),
            (Some(s), false) => {
                dips.push(serde_json::json!({"start_s": s, "recovery_s": start - s}));
                open = None;
            }
            _ => {}
        }
    }
    if let Some(s) = open {
        dips.push(serde_json::json!({ "start_s": s }));
    }
    // A sine peaking at 30/s against one replica of two slots (about 10/s) misses its SLOs.
    assert!(!dips.is_empty(), "{a}");
    assert_eq!(
        a["dips"].as_array().cloned().unwrap_or_default(),
        dips,
        "{a}"
    );

    // The sweep's own document is no plan: one line naming the flag and the file.
    let mut bad = run.clone();
    let at = bad
        .iter()
        .position(|a| *a == plan_path.to_str().unwrap())
        .unwrap();
    bad[at] = sweep_doc.to_str().unwrap();
    let out = output(&bad);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--replica-capacity") && err.contains("s.sweep.json"),
        "{err}"
    );
}
