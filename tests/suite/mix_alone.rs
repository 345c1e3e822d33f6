//! A class alone (`--mix-alone`): after a mix's run, each class is run alone at
//! its share of the load, and the mixed result gets each class's latency alone and its
//! interference (mixed ÷ alone). Against `servebench sim` in exact mode with one slot served
//! by priority, the truth is known:
//!
//! Two classes alternate, 80 ms apart (12.5 requests a second, a gamma of shape 1000: 80 ms ±
//! 2.5 ms): "high" (priority 0, 30 tokens: it holds the slot 50 + 29 × 10 = 340 ms) and "low"
//! (priority 10, 2 tokens: 60 ms). Mixed, the highs arrive at 0, 160, 320, 480 ms and each
//! waits for the one before (the slot frees at 340, 680, 1020 ms with a high waiting each
//! time, which priority serves first): TTFTs 50, 230, 410, 590 ms, mean 320. The lows wait for
//! every high: they start at 1360, 1420, 1480, 1540 ms, TTFTs 1330, 1230, 1130, 1030, mean
//! 1180. Alone, at half the rate (6.25 a second: 160 ms apart), the highs queue exactly as
//! mixed (the same TTFTs: interference 1), and each low finds the slot free (TTFT 50 ms:
//! interference 23.6).

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{path_str, servebench, stdout_of, SimProcess};
use servebench::results::document::BenchResult;

/// The exact simulator with one slot, its queue served by priority.
fn sim() -> SimProcess {
    SimProcess::start(&[
        "--preset",
        "exact",
        "--slots",
        "1",
        "--scheduling-policy",
        "priority",
    ])
}

const MIX: &str = r#"{"classes": [
    {"name": "high", "weight": 1, "priority": 0, "output_len": 30},
    {"name": "low", "weight": 1, "priority": 10, "output_len": 2}]}"#;

/// `servebench run --mix-alone` against `sim` with `n` requests at `rate` a second, saving
/// `dir/alone.json`.
fn args<'a>(
    sim: &'a SimProcess,
    mix: &'a str,
    (n, rate): (&'a str, &'a str),
    dir: &'a str,
) -> Vec<&'a str> {
    vec![
        "run",
        "--base-url",
        &sim.url,
        "--tokenizer",
        "words",
        "--mix",
        mix,
        "--mix-alone",
        "--num-prompts",
        n,
        "--request-rate",
        rate,
        "--burstiness",
        "1000",
        "--input-len",
        "8",
        "--ignore-eos",
        "--no-preflight",
        "--no-tui",
        "--result-dir",
        dir,
        "--result-filename",
        "alone.json",
    ]
}

#[test]
fn a_class_alone_stands_beside_the_class_mixed() {
    let sim = sim();
    let dir = tempfile::tempdir().unwrap();
    let mix = dir.path().join("mix.json");
    std::fs::write(&mix, MIX).unwrap();
    let d = path_str(dir.path());
    let text = stdout_of(&args(&sim, path_str(&mix), ("8", "12.5"), d));

    // Each run alone: its own result, its class's 4 requests, all accounted for.
    for (k, name) in [(0, "high"), (1, "low")] {
        let r = BenchResult::load(&dir.path().join(format!("alone.alone{k}.json"))).unwrap();
        assert!(r.complete, "{name} alone");
        assert_eq!(r.planned, Some(4), "{name} alone");
        assert_eq!((r.summary.completed, r.summary.failed), (4, 0), "{name}");
        let c = &r.mix.as_ref().unwrap().classes;
        assert_eq!((c[k].completed, c[1 - k].completed), (4, 0), "{name}");
    }
    let mixed = BenchResult::load(&dir.path().join("alone.json")).unwrap();
    assert_eq!(mixed.summary.completed, 8);
    let m = mixed.mix.as_ref().unwrap();
    let (high, low) = (&m.classes[0], &m.classes[1]);
    for (c, k) in [(high, 0), (low, 1)] {
        let a = c.alone.as_ref().unwrap();
        assert_eq!(
            a.result.to_str(),
            Some(format!("alone.alone{k}.json").as_str())
        );
        assert!(a.complete);
        assert_eq!(
            (a.planned, a.completed, a.failed, a.unsent),
            (Some(4), 4, 0, 0)
        );
    }
    let mean = |c: &servebench::results::stats::mix::ClassFigures| {
        let alone = c.alone.as_ref().unwrap().latency.mean_ttft_ms.unwrap();
        (c.mean_ttft_ms.unwrap(), alone)
    };
    // High: 320 ms mean mixed and alone (never early; a busy machine sends late, which shortens
    // a queued TTFT, or serves late, which lengthens it, by tens of ms in either run).
    let (h_mixed, h_alone) = mean(high);
    assert!((270.0..420.0).contains(&h_mixed), "{h_mixed}");
    assert!((270.0..420.0).contains(&h_alone), "{h_alone}");
    let hi = high.interference.as_ref().unwrap();
    let ratio = hi.mean_ttft.unwrap();
    assert!((0.8..1.25).contains(&ratio), "high: {ratio}");
    assert!((ratio - h_mixed / h_alone).abs() < 1e-9);
    // Low: 1180 ms mixed against 50 ms alone (23.6): at least ten times longer mixed.
    let (l_mixed, l_alone) = mean(low);
    assert!(
        l_mixed >= 1000.0 && (49.9..300.0).contains(&l_alone),
        "{l_mixed} {l_alone}"
    );
    let li = low.interference.as_ref().unwrap();
    assert!(li.mean_ttft.unwrap() >= 10.0, "{li:?}");
    assert!(
        li.p50_ttft.unwrap() >= 10.0 && li.mean_e2el.unwrap() > 5.0,
        "{li:?}"
    );

    // The report printed after the runs alone, `report`, the CSV and the HTML page show it.
    assert!(
        text.contains("TTFT interference (mean / P50 / P99):"),
        "{text}"
    );
    let file = dir.path().join("alone.json");
    let report = stdout_of(&["report", path_str(&file)]);
    assert!(
        report.contains("Mean / P50 / P99 TTFT alone (ms):"),
        "{report}"
    );
    assert!(report.contains("alone.alone1.json"), "{report}");
    let row = common::report_csv_row(&file);
    let cell = |name: &str| {
        row.get(name)
            .unwrap_or_else(|| panic!("{name}"))
            .parse::<f64>()
            .unwrap()
    };
    let interference = cell("mix.classes.1.interference.mean_ttft");
    assert!(
        (interference - li.mean_ttft.unwrap()).abs() < 1e-9,
        "{interference}"
    );
    assert!((cell("mix.classes.0.alone.mean_ttft_ms") - h_alone).abs() < 1e-9);
    let html = stdout_of(&["report", path_str(&file), "--format", "html"]);
    assert!(html.contains("TTFT interference"), "{html}");
}

/// A Ctrl-C during a run alone: that run saves what it measured, marked incomplete with every
/// planned request accounted for; the mixed result, saved before, gets it as such; no later
/// class runs alone.
#[test]
fn a_stop_during_a_run_alone_keeps_what_was_measured() {
    let sim = sim();
    let dir = tempfile::tempdir().unwrap();
    let mix = dir.path().join("mix.json");
    std::fs::write(&mix, MIX).unwrap();
    let d = path_str(dir.path());
    // 16 requests, 160 ms apart: the high class alone is 8 requests 320 ms apart (the last
    // sent at 2.24 s), each holding the slot 340 ms; the stop comes after the first ends.
    let child = servebench()
        .args(args(&sim, path_str(&mix), ("16", "6.25"), d))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let records = dir.path().join("alone.alone0.records.jsonl");
    let first_record =
        || std::fs::read_to_string(&records).is_ok_and(|t| t.lines().next().is_some());
    common::wait_for(
        "the run alone's first record",
        Duration::from_secs(60),
        first_record,
    );
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = common::finish_within(child, Duration::from_secs(60), "stopped run alone");
    let stderr = String::from_utf8_lossy(&out.stderr);

    let alone = BenchResult::load(&dir.path().join("alone.alone0.json")).unwrap();
    assert!(!alone.complete, "{stderr}");
    let s = &alone.summary;
    assert_eq!(alone.planned, Some(8));
    assert_eq!(s.completed + s.failed + alone.unsent, 8, "{stderr}");
    assert!(alone.unsent > 0 && s.completed >= 1, "{stderr}");
    let mixed = BenchResult::load(&dir.path().join("alone.json")).unwrap();
    assert!(mixed.complete);
    assert_eq!(mixed.summary.completed, 16);
    let m = mixed.mix.unwrap();
    let a = m.classes[0]
        .alone
        .as_ref()
        .expect("the stopped run alone's figures");
    assert!(!a.complete);
    assert_eq!((a.completed, a.unsent), (s.completed, alone.unsent));
    assert!(m.classes[1].alone.is_none());
    assert!(!dir.path().join("alone.alone1.json").exists());
}

/// `--mix-alone` where it has no meaning is refused before anything runs, in one line naming
/// it: without `--mix`; with `--repeat`, a sweep, `--start-at` (the plan's rule); with
/// `--duration` or `--shard` (the config's).
#[test]
fn mix_alone_is_refused_where_it_has_no_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let mix = dir.path().join("mix.json");
    std::fs::write(&mix, MIX).unwrap();
    let out = dir.path().join("out");
    let refused = |more: &[&str], with_mix: bool, says: &str| {
        let mut args = vec!["run", "--mix-alone", "--num-prompts", "4"];
        args.extend(["--result-dir", path_str(&out)]);
        if with_mix {
            args.extend(["--mix", path_str(&mix)]);
        }
        args.extend(more);
        let err = common::run_fails(&args);
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(
            err.contains("--mix-alone") && err.contains(says),
            "{more:?}: {err}"
        );
    };
    refused(&[], false, "give --mix");
    refused(&["--repeat", "2"], true, "single run");
    refused(&["--request-rate", "1,2"], true, "single run");
    refused(&["--start-at", "2099-01-01T00:00:00Z"], true, "--start-at");
    refused(
        &["--duration", "5", "--request-rate", "2"],
        true,
        "--duration",
    );
    refused(&["--shard", "0/2"], true, "--shard");
    assert!(!out.exists(), "nothing was written");
}

/// The runs alone's files are checked with the session's, before anything runs: one that
/// exists refuses the run (without `--overwrite`), naming it, and nothing is written.
#[test]
fn a_run_alone_s_file_is_checked_before_the_mixed_run() {
    let dir = tempfile::tempdir().unwrap();
    let mix = dir.path().join("mix.json");
    std::fs::write(&mix, MIX).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("x.alone1.json"), "{}").unwrap();
    let err = common::run_fails(&[
        "run",
        "--mix",
        path_str(&mix),
        "--mix-alone",
        "--num-prompts",
        "4",
        "--sim-preset",
        "exact",
        "--result-dir",
        path_str(&out),
        "--result-filename",
        "x.json",
    ]);
    assert!(err.contains("x.alone1.json"), "{err}");
    assert!(!out.join("x.json").exists() && !out.join("x.records.jsonl").exists());
}

/// `--reset-prefix-cache` empties the server's cache before each run alone too (each is a
/// step of the session): the mixed run and the two runs alone make one call each (3 resets),
/// each run alone's result has its before-step call, and no run alone finds the mixed run's
/// prompts (the same seed) cached.
#[test]
fn the_prefix_cache_is_reset_before_each_run_alone() {
    let sim = SimProcess::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let mix = dir.path().join("mix.json");
    std::fs::write(&mix, MIX).unwrap();
    let d = path_str(dir.path());
    let mut a = args(&sim, path_str(&mix), ("8", "50"), d);
    // 64 words: four of the simulator's 16-token blocks, which a later prompt can find cached.
    let len = a.iter().position(|x| *x == "--input-len").unwrap() + 1;
    a[len] = "64";
    a.push("--reset-prefix-cache");
    common::run_ok(&a);
    let control = common::json_get(&sim.url, "/sim/control");
    assert_eq!(control["cache_resets"], 3, "{control}");
    for k in 0..2 {
        let alone = BenchResult::load(&dir.path().join(format!("alone.alone{k}.json"))).unwrap();
        assert_eq!(alone.hooks.len(), 1, "{:?}", alone.hooks);
        assert_eq!(alone.hooks[0].path, "/reset_prefix_cache");
        let records =
            common::read_records(&dir.path().join(format!("alone.alone{k}.records.jsonl")));
        let cached: u64 = records
            .iter()
            .map(|r| r.cached_prompt_tokens.unwrap_or(0))
            .sum();
        assert_eq!(cached, 0, "class {k}");
    }
}
