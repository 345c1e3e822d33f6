//! `servebench history`: a series of saved results of one configuration, ordered by start
//! time, with a regression flag on the newest run that gates with an exit code. The series is
//! made from one real run against the built-in simulator (bounded in size), saved again with
//! later start times and its figures moved as the test plants them, so the noise and the
//! regression are the test's, not the machine's.

use std::path::Path;

use serde_json::Value;

use crate::common;

/// One real run, its result document.
fn real_run(dir: &Path) -> Value {
    let out = common::output(&[
        "run",
        "--num-prompts",
        "60",
        "--max-concurrency",
        "6",
        "--output-len",
        "8",
        "--input-len",
        "16",
        "--quiet",
        "--no-tui",
        "--label",
        "nightly",
        "--result-dir",
        dir.to_str().unwrap(),
        "--result-filename",
        "base.json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(dir.join("base.json")).unwrap();
    std::fs::remove_file(dir.join("base.json")).unwrap();
    std::fs::remove_file(dir.join("base.records.jsonl")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The document saved as run `day` of a series (started that many days after the first),
/// with mean TTFT (its value and interval) times `factor`, under `label`.
fn save(dir: &Path, base: &Value, day: u32, factor: f64, label: &str) {
    let mut doc = base.clone();
    doc["started_at"] = Value::from(format!("2026-10-{:02}T03:00:00Z", day + 1));
    doc["config"]["label"] = Value::from(label);
    if doc["config"].get("tags").is_some() {
        doc["config"]["tags"]["label"] = Value::from(label);
    }
    let scale = |v: &mut Value| *v = Value::from(v.as_f64().unwrap() * factor);
    scale(&mut doc["mean_ttft_ms"]);
    for bound in doc["ci95_mean_ttft_ms"].as_array_mut().unwrap() {
        scale(bound);
    }
    // Saved in a folder per night, as a nightly job does; the file names do not sort by time.
    let night = dir.join(format!("night-{}", 9 - day));
    std::fs::create_dir_all(&night).unwrap();
    let text = serde_json::to_string(&doc).unwrap();
    std::fs::write(night.join(format!("{label}.json")), text).unwrap();
}

fn history(args: &[&str]) -> std::process::Output {
    let mut all = vec!["history"];
    all.extend(args);
    common::output(&all)
}

#[test]
fn history_flags_a_planted_regression_and_not_noise() {
    let dir = tempfile::tempdir().unwrap();
    let base = real_run(dir.path());
    assert!(
        base["ci95_mean_ttft_ms"].is_array(),
        "a run saves mean TTFT's interval"
    );
    let regressed = dir.path().join("regressed");
    let noisy = dir.path().join("noisy");
    for (day, f) in [1.0, 1.01, 0.99, 1.0, 1.005].into_iter().enumerate() {
        save(&regressed, &base, day as u32, f, "nightly");
        save(&noisy, &base, day as u32, f, "nightly");
    }
    save(&regressed, &base, 5, 1.6, "nightly");
    save(&noisy, &base, 5, 1.004, "nightly");
    let gate = ["--fail-if-worse", "mean_ttft_ms:10"];

    let d = regressed.to_str().unwrap();
    let out = history(&[d, gate[0], gate[1]]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("6 runs"), "{text}");
    let ttft = text
        .lines()
        .find(|l| l.trim_start().starts_with("mean_ttft_ms:"))
        .unwrap();
    assert!(
        ttft.contains("REGRESSION") && ttft.contains("each of the 5"),
        "{text}"
    );
    // Oldest first: the dates in order, whatever the folders' names.
    let at = |day: &str| text.find(&format!("2026-10-{day}T")).unwrap();
    assert!(at("01") < at("02") && at("05") < at("06"), "{text}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("worse on mean_ttft_ms"), "{err}");
    // A gate wider than the regression passes; without a gate, the flag is printed, exit 0.
    assert_eq!(
        history(&[d, "--fail-if-worse", "mean_ttft_ms:80"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(history(&[d]).status.code(), Some(0));

    let d = noisy.to_str().unwrap();
    let out = history(&[d, gate[0], gate[1]]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("REGRESSION"), "{text}");
    assert!(
        text.contains("mean_ttft_ms: no regression against the 5"),
        "{text}"
    );

    // The other formats carry the same verdict.
    let d = regressed.to_str().unwrap();
    let csv = common::stdout(&history(&[
        d,
        "--format",
        "csv",
        "--metrics",
        "mean_ttft_ms",
    ]));
    assert_eq!(csv.lines().count(), 1 + 6, "{csv}");
    assert!(csv.lines().last().unwrap().contains("REGRESSION"), "{csv}");
    let json: Value =
        serde_json::from_str(&common::stdout(&history(&[d, "--format", "json"]))).unwrap();
    let group = &json["groups"][0];
    assert_eq!(group["runs"].as_array().unwrap().len(), 6);
    let trends: Vec<&str> = (group["judgements"].as_array().unwrap().iter())
        .filter(|j| j["figure"] == "mean_ttft_ms")
        .map(|j| j["trend"].as_str().unwrap())
        .collect();
    assert_eq!(trends, ["regression"]);
    let html = common::stdout(&history(&[d, "--format", "html"]));
    assert!(
        html.contains("<svg") && html.contains("REGRESSION"),
        "an HTML page with charts"
    );
    let md = common::stdout(&history(&[d, "--format", "markdown"]));
    assert!(md.contains("| # | started_at |"), "{md}");
}

#[test]
fn history_refuses_mixed_configurations_and_empty_folders_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let base = real_run(dir.path());
    let mixed = dir.path().join("mixed");
    for day in 0..3 {
        save(&mixed, &base, day, 1.0, "a");
        save(&mixed, &base, day, 1.0, "b");
    }
    let d = mixed.to_str().unwrap();
    let out = history(&[d]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("2 configurations") && err.contains("--key"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // --key label: a table each; --key label=b: one.
    let text = common::stdout(&history(&[d, "--key", "label"]));
    assert!(
        text.contains("history of label=a") && text.contains("history of label=b"),
        "{text}"
    );
    let text = common::stdout(&history(&[d, "--key", "label=b"]));
    assert!(
        !text.contains("label=a") && text.contains("3 runs"),
        "{text}"
    );
    let out = history(&[d, "--key", "label=c"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");

    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.json"), "{\"x\": 1}").unwrap();
    let out = history(&[empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no servebench result in") && err.contains("empty"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}
