//! The Pareto front of output tokens/s per user against per GPU in `plot`, `compare`, `plan`
//! and the HTML report, over small sweeps against `servebench sim`.
//!
//! The known truth: configuration A is a simulator streaming a token every 5 ms on one GPU
//! (`--gpus 1`), B one streaming every 40 ms on four (`--gpus 4`). Per user A is ~200
//! tokens/s and B ~25; per GPU A's throughput at a concurrency is ~8× B's whole server's, so
//! ~32× B's per GPU: every B step is beaten on both axes by every A step, whatever the noise
//! of a loaded machine, and the front holds A's steps only. A's label is hostile (markup and
//! a terminal escape) and must reach every output escaped.

use crate::common;

use std::path::Path;

use common::{json, path_str, run_fails, stdout_of};

use common::SimProcess as Sim;

/// A's label: markup and an escape sequence.
const HOSTILE: &str = "fast <b>&\u{1b}[31m";

/// A sweep of concurrency 1 and 2 against `url`, saved as `dir/NAME.sweep.json`.
fn sweep(dir: &Path, url: &str, name: &str, extra: &[&str]) -> String {
    let file = format!("{name}.json");
    let mut args = vec!["run", "--base-url", url, "--tokenizer", "words"];
    args.extend(["--max-concurrency", "1,2", "--num-prompts", "4"]);
    args.extend(["--input-len", "8", "--output-len", "16", "--ignore-eos"]);
    args.extend(["--goodput", "ttft:100000", "--cost-per-hour", "1"]);
    args.extend(["--no-tui", "--quiet", "--summary-only"]);
    args.extend(["--result-dir", path_str(dir), "--result-filename", &file]);
    args.extend(extra);
    stdout_of(&args);
    path_str(&dir.join(format!("{name}.sweep.json"))).to_string()
}

#[test]
fn plot_compare_plan_and_the_page_name_the_front() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fast = Sim::start(&["--itl-ms", "5", "--ttft-ms", "20", "--time-scale", "2"]);
    let slow = Sim::start(&["--itl-ms", "40", "--ttft-ms", "20", "--time-scale", "2"]);
    let a = sweep(d, &fast.url, "a", &["--gpus", "1", "--label", HOSTILE]);
    let b = sweep(d, &slow.url, "b", &["--gpus", "4", "--label", "slow"]);

    // The count is kept in each step's result.
    let doc = json(Path::new(&b));
    let step = doc["steps"][0]["result"].as_str().unwrap();
    assert_eq!(json(&d.join(step))["config"]["gpus"], 4);

    // plot: one line per configuration and the front, labelled, escaped.
    let charts = d.join("charts");
    let c = path_str(&charts);
    stdout_of(&["plot", &a, &b, "-o", c, "--format", "svg"]);
    let svg = std::fs::read_to_string(charts.join("pareto_front.svg")).unwrap();
    for want in [
        "Pareto front",
        "output tokens/s per GPU",
        "output tokens/s per user",
        "slow",
        "fast &lt;b&gt;&amp;",
    ] {
        assert!(svg.contains(want), "{want}: {svg}");
    }
    assert!(!svg.contains("<b>") && !svg.contains('\u{1b}'), "{svg}");

    // compare: the front's steps are A's, never B's.
    let text = stdout_of(&["compare", &a, &b]);
    let title = "Pareto front of output tokens/s per user vs output tokens/s per GPU";
    let at = text.find(title).unwrap_or_else(|| panic!("{text}"));
    let front: Vec<&str> = text[at..].lines().skip(1).collect();
    assert!(!front.is_empty(), "{text}");
    for line in &front {
        assert!(line.starts_with("  A = fast <b>&"), "{line}");
        assert!(line.contains("max_concurrency="), "{line}");
    }
    assert!(!text.contains('\u{1b}'), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&stdout_of(&["compare", &a, &b, "--format", "json"])).unwrap();
    let f = &v["pareto_front"];
    assert_eq!(
        (f["basis"].as_str(), f["points"].as_u64()),
        (Some("per_gpu"), Some(4))
    );
    let on = f["front"].as_array().unwrap();
    assert!(
        !on.is_empty() && on.iter().all(|s| s["input"] == "A"),
        "{f}"
    );
    for s in on {
        let per_user = s["output_tokens_per_s_per_user"].as_f64().unwrap();
        // 1000 / mean TPOT: a token every 5 ms is at most 200 tokens/s; a loaded machine's
        // delays only lower it, never to the slow server's 25.
        assert!((40.0..=210.0).contains(&per_user), "{per_user}");
    }

    // plan: the front's steps named with their configuration, within the SLOs.
    let plan = stdout_of(&["plan", &a, &b, "--goodput", "ttft:100000"]);
    let at = plan.find(title).unwrap_or_else(|| panic!("{plan}"));
    let front: Vec<&str> = plan[at..].lines().skip(1).collect();
    assert!(!front.is_empty(), "{plan}");
    for line in &front {
        assert!(line.starts_with("  fast <b>&"), "{line}");
        assert!(line.ends_with("within the SLOs"), "{line}");
    }
    let csv = stdout_of(&[
        "plan",
        &a,
        &b,
        "--goodput",
        "ttft:100000",
        "--format",
        "csv",
    ]);
    let on_front = csv.lines().filter(|l| l.contains(",per_gpu,true,")).count();
    assert_eq!(on_front, front.len(), "{csv}");
    let page = stdout_of(&[
        "plan",
        &a,
        &b,
        "--goodput",
        "ttft:100000",
        "--format",
        "html",
    ]);
    assert!(page.contains("<h2>Pareto front</h2>") && page.contains("fast &lt;b&gt;&amp;"));

    // The HTML report of a sweep holds the chart and names the front's steps.
    let page = stdout_of(&["report", &a, "--format", "html"]);
    assert!(
        page.contains("<h2 id=\"pareto\">Pareto front</h2>"),
        "{page}"
    );
    assert!(page.contains("id=\"pareto_front\"><svg"), "{page}");
    assert!(page.contains("<td>max_concurrency=") && !page.contains('\u{1b}'));
}

#[test]
fn without_gpus_the_front_is_per_server_and_a_zero_count_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sim = Sim::start(&["--itl-ms", "5", "--ttft-ms", "20", "--time-scale", "2"]);
    let a = sweep(d, &sim.url, "a", &[]);
    let charts = d.join("charts");
    stdout_of(&["plot", &a, "-o", path_str(&charts), "--format", "svg"]);
    let svg = std::fs::read_to_string(charts.join("pareto_front.svg")).unwrap();
    assert!(
        svg.contains("output tokens/s per server (GPU count unknown)"),
        "{svg}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&stdout_of(&["compare", &a, &a, "--format", "json"])).unwrap();
    assert_eq!(v["pareto_front"]["basis"], "per_server");

    let mut args = vec!["run", "--base-url", &sim.url, "--tokenizer", "words"];
    args.extend(["--gpus", "0", "--num-prompts", "1", "--no-tui"]);
    let err = run_fails(&args);
    assert!(err.contains("--gpus") && err.lines().count() <= 3, "{err}");
}

#[test]
fn import_keeps_a_stated_gpu_count_and_plots_the_front_per_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let seed = fixtures.join("seed001_tgi.txt");
    let out = dir.path().join("tgi.imported.json");
    let o = path_str(&out);
    stdout_of(&["import", path_str(&seed), "-o", o, "--gpus", "8"]);
    let doc = json(&out);
    let steps = doc["series"][0]["steps"].as_array().unwrap();
    assert!(
        !steps.is_empty() && steps.iter().all(|s| s["gpus"] == 8),
        "{doc}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&stdout_of(&["compare", o, o, "--format", "json"])).unwrap();
    let f = &v["pareto_front"];
    assert_eq!(f["basis"], "per_gpu", "{f}");
    // Each step on the front: its output throughput ÷ 8 and 1000 ÷ its mean TPOT, as imported.
    let all: Vec<&serde_json::Value> = (doc["series"].as_array().unwrap().iter())
        .flat_map(|s| s["steps"].as_array().unwrap())
        .collect();
    let front = f["front"].as_array().unwrap();
    assert!(!front.is_empty(), "{f}");
    for on in front {
        let per_gpu = on["output_tokens_per_s_per_gpu"].as_f64().unwrap();
        let per_user = on["output_tokens_per_s_per_user"].as_f64().unwrap();
        let matches = all.iter().any(|st| {
            let n = st["load"]["num_prompts"].as_u64().unwrap_or(0);
            let m = &st["metrics"];
            let tput = m["output_throughput"].as_f64().unwrap_or(f64::NAN);
            let tpot = m["mean_tpot_ms"].as_f64().unwrap_or(f64::NAN);
            on["step"] == format!("num_prompts={n}")
                && (per_gpu - tput / 8.0).abs() < 1e-9
                && (per_user - 1000.0 / tpot).abs() < 1e-9
        });
        assert!(matches, "{on}");
    }
    let err = run_fails(&["import", path_str(&seed), "-o", o, "--gpus", "0"]);
    assert!(err.contains("--gpus"), "{err}");
}
