//! The prefix-cache cliff: a sweep over the number of distinct prefixes at a
//! fixed load, against the simulator's LRU prefix cache of a known size.
//!
//! The known truth: `servebench sim --kv-capacity-tokens 4096` holds 256 blocks of 16 words.
//! Each prompt (cl100k_base, whose vocabulary words make the text: a token a word) is a
//! 512-word prefix (32 whole blocks) and an 8-word suffix (no whole block),
//! so the cache holds 8 prefixes. The prompts cycle through the P prefixes in order, one at a
//! time (`--max-concurrency 1`), 64 per step, and the cache carries over from step to step:
//!
//! - P = 2: the first two miss, 62 hit;
//! - P = 4: prefixes 0 and 1 are still held from the step before: 62 hit;
//! - P = 8: prefixes 0 to 3 still held: 60 hit, and the cache is exactly full;
//! - P = 16: the 8 held prefixes hit once, then each new prefix evicts the least recently
//!   used, and a cycle of 16 through room for 8 never finds its prefix again: 8 hit.
//!
//! Designed (an unbounded cache within the step): 64 − P prompts of 512 cached tokens. The
//! cliff is P = 16, the first step whose measured hit rate is below half the designed one.

use crate::common;

use std::process::Stdio;

use common::{path_str, servebench, stdout_of, SimProcess as Sim};
use servebench::results::document::BenchResult;

#[test]
fn the_prefix_cache_cliff_is_where_the_working_set_outgrows_the_cache() {
    let mut child = servebench()
        .args([
            "sim",
            "--port",
            "0",
            "--preset",
            "llamacpp-llama-8b-rtx4090",
        ])
        .args(["--kv-capacity-tokens", "4096", "--time-scale", "2"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let url = common::sim_url(&mut child);
    let sim = Sim { child, url };
    let dir = tempfile::tempdir().unwrap();
    let d = path_str(dir.path());
    let text = stdout_of(&[
        "run",
        "--base-url",
        &sim.url,
        // The prefix dataset needs a real tokenizer; its text is one word per token.
        "--tokenizer",
        "cl100k_base",
        "--dataset-name",
        "prefix",
        "--prefix-len",
        "512",
        "--input-len",
        "8",
        "--output-len",
        "4",
        "--ignore-eos",
        "--num-prefixes",
        "2,4,8,16",
        "--num-prompts",
        "64",
        "--max-concurrency",
        "1",
        "--no-preflight",
        "--no-tui",
        "--summary-only",
        "--result-dir",
        d,
        "--result-filename",
        "cliff.json",
    ]);
    let prompt_tokens = 64.0 * 520.0;
    for (p, hits) in [(2, 62.0), (4, 62.0), (8, 60.0), (16, 8.0)] {
        let r = BenchResult::load(&dir.path().join(format!("cliff-p{p}.json"))).unwrap();
        assert_eq!(r.summary.completed, 64, "P = {p}");
        assert_eq!(r.summary.total_input_tokens, 64 * 520, "P = {p}");
        let c = r.summary.prefix_cache.clone().unwrap();
        let designed = (64.0 - p as f64) * 512.0 / prompt_tokens;
        assert_eq!(c.designed_hit_rate, Some(designed), "P = {p}");
        assert_eq!(
            c.measured_hit_rate,
            Some(hits * 512.0 / prompt_tokens),
            "P = {p}"
        );
    }
    // The step table has both rates per step and names the cliff.
    let line = text
        .lines()
        .find(|l| l.starts_with("Prefix-cache cliff"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.starts_with("Prefix-cache cliff at num_prefixes 16: measured hit rate 12.3% against designed 73.8% (num_prefixes 8: measured 92.3%, designed 86.2%)"),
        "{line}"
    );
    assert!(
        text.contains("designed hit") && text.contains("measured hit"),
        "{text}"
    );
    // The TTFT collapses with the hits: at the cliff most prompts prefill 512 more tokens.
    let median = |p: u32| {
        let r = BenchResult::load(&dir.path().join(format!("cliff-p{p}.json"))).unwrap();
        r.summary.ttft_ms.unwrap().median
    };
    assert!(median(16) > 2.0 * median(8), "{} {}", median(16), median(8));

    // The saved sweep says the same in the report, the CSV and the HTML page.
    let sweep = dir.path().join("cliff.sweep.json");
    let report = stdout_of(&["report", path_str(&sweep)]);
    assert!(report.contains(line), "{report}");
    let csv = stdout_of(&["report", path_str(&sweep), "--format", "csv"]);
    let head = csv.lines().next().unwrap();
    assert!(
        head.contains("designed_prefix_hit_rate") && head.contains("measured_prefix_hit_rate"),
        "{head}"
    );
    let html = stdout_of(&["report", path_str(&sweep), "--format", "html"]);
    assert!(
        html.contains("Prefix-cache cliff at num_prefixes 16"),
        "{html}"
    );
}

/// `search --by prefixes`: against the same cache of 8 prefixes, the search
/// over the number of distinct prefixes at a fixed load finds 8, the largest count whose
/// measured hit rate stays at least half its designed one, and 9 fails: past 8, at most the 8
/// prefixes the cache held from the probe before hit once in a step of 64, against a designed
/// 64 − P hits (55 at 9), while up to 8 every prompt after its prefix's first hits. Each probe
/// keeps both rates, and the step table names the cliff at 9.
#[test]
fn search_by_prefixes_finds_the_cache_s_exact_cliff() {
    let mut child = servebench()
        .args([
            "sim",
            "--port",
            "0",
            "--preset",
            "llamacpp-llama-8b-rtx4090",
        ])
        .args(["--kv-capacity-tokens", "4096", "--time-scale", "4"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let url = common::sim_url(&mut child);
    let sim = Sim { child, url };
    let dir = tempfile::tempdir().unwrap();
    let d = path_str(dir.path());
    let text = stdout_of(&[
        "search",
        "--by",
        "prefixes",
        "--start",
        "2",
        "--max",
        "64",
        "--base-url",
        &sim.url,
        "--tokenizer",
        "cl100k_base",
        "--dataset-name",
        "prefix",
        "--prefix-len",
        "512",
        "--input-len",
        "8",
        "--output-len",
        "4",
        "--ignore-eos",
        "--num-prompts",
        "64",
        "--max-concurrency",
        "1",
        "--no-preflight",
        "--no-tui",
        "--result-dir",
        d,
        "--result-filename",
        "s.json",
    ]);
    let doc = common::json(&dir.path().join("s.search.json"));
    assert_eq!(doc["spec"]["by"], "prefixes", "{doc}");
    assert_eq!(doc["answer"], 8.0, "{doc}");
    assert_eq!(doc["first_failing"], 9.0, "{doc}");
    let probes = doc["probes"].as_array().unwrap();
    let values: Vec<f64> = probes
        .iter()
        .map(|p| p["value"].as_f64().unwrap())
        .collect();
    assert_eq!(values, [2.0, 4.0, 8.0, 16.0, 12.0, 10.0, 9.0], "{doc}");
    for p in probes {
        let v = p["value"].as_f64().unwrap();
        let designed = p["designed_hit_rate"].as_f64().unwrap();
        assert_eq!(designed, (64.0 - v) * 512.0 / (64.0 * 520.0), "{p}");
        let measured = p["measured_hit_rate"].as_f64().unwrap();
        assert_eq!(p["passed"], v <= 8.0, "{p}");
        if v > 8.0 {
            assert!(measured <= 8.0 * 512.0 / (64.0 * 520.0), "{p}");
        }
    }
    assert!(
        text.contains("Prefix-cache cliff at num_prefixes 9:"),
        "{text}"
    );
    assert!(
        text.contains("whose measured prefix hit rate stays at least half its designed one: 8 (first failing: 9)"),
        "{text}"
    );
}

/// `search --by prefixes` without the prefix dataset is refused in one line naming what to
/// give.
#[test]
fn search_by_prefixes_needs_the_prefix_dataset() {
    let err = common::run_fails(&["search", "--by", "prefixes", "--num-prompts", "4"]);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--by prefixes") && err.contains("--dataset-name prefix"),
        "{err}"
    );
}
