//! `servebench compare` gives B/A with its 95% interval and a verdict, and
//! `--fail-if-worse` gates on it. Two simulators on 127.0.0.1 (port 0, in this test's runtime,
//! stopped with it), runs of a bounded size by the binary against each.

use std::path::Path;
use std::time::Duration;

use servebench::sim::{self, SimConfig};

use crate::common;

use common::output as servebench;

/// The arguments of one run of 120 requests, 20 at a time, against `url`, saved as
/// `dir/name`.
fn run_args(url: &str, dir: &Path, name: &str) -> Vec<String> {
    let args = [
        "run",
        "--base-url",
        url,
        "--tokenizer",
        "words",
        "--num-prompts",
        "120",
        "--max-concurrency",
        "20",
        "--output-len",
        "16",
        "--quiet",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--result-dir",
        dir.to_str().unwrap(),
        "--result-filename",
        name,
    ];
    args.map(str::to_string).to_vec()
}

/// One run (as [`run_args`]).
fn run(url: &str, dir: &Path, name: &str) {
    let args = run_args(url, dir, name);
    let out = servebench(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{out:?}");
}

/// Two runs of one configuration at the same time against `url`: whatever load the machine
/// is under falls on both alike (run one after the other, a busy spell in one made it 1.3%
/// slower, a real difference between the runs that compare rightly found).
fn run_together(url: &str, dir: &Path, names: [&str; 2]) {
    let children = names.map(|name| {
        common::servebench()
            .args(run_args(url, dir, name))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    });
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
    }
}

/// The B/A cell of `metric` in compare's text output.
fn ratio_cell<'a>(text: &'a str, metric: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(&format!("{metric} ")))
        .unwrap_or_else(|| panic!("no {metric} row in:\n{text}"))
}

#[test]
fn same_config_is_no_difference_and_a_slower_decode_is_worse_and_gated() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let start = |itl_ms| {
        rt.block_on(sim::spawn(
            SimConfig {
                itl: Duration::from_millis(itl_ms),
                ..SimConfig::default()
            },
            ([127, 0, 0, 1], 0).into(),
        ))
        .unwrap()
    };
    let (fast, slow) = (start(10), start(11));
    let dir = tempfile::tempdir().unwrap();
    let file = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let latencies = ["ttft", "tpot", "itl", "e2el"].map(|m| format!("mean_{m}_ms"));

    // Two runs of one configuration: no significant difference. Each run's interval holds its
    // own noise, not a change of load between the runs (a busy machine delayed one run's
    // chunks: mean TTFT 50.95 against 50.15 ms, "better"), so the two run at the same time,
    // and the pair is run again, up to 3 times; a comparison that finds differences where
    // there are none fails every time.
    let mut texts = Vec::new();
    let a = loop {
        let (a, b) = (
            format!("a{}.json", texts.len()),
            format!("b{}.json", texts.len()),
        );
        run_together(&fast.base_url(), dir.path(), [&a, &b]);
        let same = servebench(&["compare", &file(&a), &file(&b), "--fail-if-worse", "tpot:5"]);
        let text = String::from_utf8_lossy(&same.stdout).into_owned();
        let none = latencies
            .iter()
            .all(|key| ratio_cell(&text, key).ends_with("no significant difference"));
        if none {
            assert_eq!(same.status.code(), Some(0), "{same:?}");
            break file(&a);
        }
        texts.push(text);
        assert!(texts.len() < 3, "{}", texts.join("\n"));
    };
    run(&slow.base_url(), dir.path(), "c.json");

    // The result JSON carries each interval beside its key.
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&a).unwrap()).unwrap();
    for key in &latencies {
        let [lo, hi] = [0, 1].map(|i| doc[format!("ci95_{key}")][i].as_f64().unwrap());
        let mean = doc[key].as_f64().unwrap();
        assert!(lo <= mean && mean <= hi, "{key}: {lo} {mean} {hi}");
    }

    let slower = servebench(&["compare", &a, &file("c.json"), "--fail-if-worse", "tpot:5"]);
    let text = String::from_utf8_lossy(&slower.stdout);
    for key in ["mean_tpot_ms", "mean_itl_ms"] {
        assert!(ratio_cell(&text, key).ends_with("worse"), "{text}");
    }
    assert_eq!(slower.status.code(), Some(1), "{slower:?}");
    let stderr = String::from_utf8_lossy(&slower.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("mean_tpot_ms") && stderr.contains("more than 5% worse"),
        "{stderr}"
    );

    // A 15% gate is not crossed by a 10% slower decode.
    let loose = servebench(&["compare", &a, &file("c.json"), "--fail-if-worse", "tpot:15"]);
    assert_eq!(loose.status.code(), Some(0), "{loose:?}");
    // A gate that cannot be judged is an error, never a pass; bad gates are one line.
    let p99 = servebench(&[
        "compare",
        &a,
        &file("c.json"),
        "--fail-if-worse",
        "p99_itl_ms:5",
    ]);
    assert_eq!(p99.status.code(), Some(2), "{p99:?}");
    assert!(String::from_utf8_lossy(&p99.stderr).contains("no 95% interval"));
    let bad = servebench(&["compare", &a, &file("c.json"), "--fail-if-worse", "tpot"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("METRIC:PCT"));
    rt.block_on(async {
        fast.shutdown().await;
        slow.shutdown().await;
    });
}
