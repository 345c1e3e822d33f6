//! Hooks into the server against `servebench sim` on 127.0.0.1: `--reset-prefix-cache`
//! empties the simulator's prefix cache before each sweep step (a sweep re-sending the same
//! seeded prompts finds the previous step's prompts cached without it, none with it);
//! `--profile` starts the profiler after the warm-ups and stops it after the last measured
//! request; a failing hook stops a sweep in one line with the earlier steps saved, unless
//! `--hook-errors ignore`; bad `--hook` texts are refused in one line before anything runs.

use std::path::Path;

use crate::common;

use common::SimProcess;

/// The args of a small run against `url`, writing into `dir` under `name`.
fn args<'a>(url: &'a str, dir: &'a Path, name: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--base-url",
        url,
        "--tokenizer",
        "words",
        "--num-prompts",
        "4",
        "--input-len",
        "64",
        "--output-len",
        "4",
        "--seed",
        "7",
        "-q",
        "--result-dir",
        common::path_str(dir),
        "--result-filename",
        name,
    ]
}

/// Each step's result of the one sweep document in `dir`, in order.
fn steps(dir: &Path) -> Vec<serde_json::Value> {
    let doc = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".sweep.json"))
        .expect("the sweep's document");
    let doc = common::json(&doc);
    let steps = doc["steps"].as_array().unwrap();
    (steps.iter())
        .map(|s| common::json(&dir.join(s["result"].as_str().unwrap())))
        .collect()
}

/// The cached prompt tokens the server reported over a result's records.
fn cached(result: &serde_json::Value) -> u64 {
    let path = Path::new(result["records_file"].as_str().unwrap());
    let records = common::read_records(path);
    assert_eq!(records.len(), 4, "{}", path.display());
    records
        .iter()
        .map(|r| r.cached_prompt_tokens.unwrap_or(0))
        .sum()
}

#[test]
fn a_sweep_finds_the_last_step_s_prompts_cached_unless_the_cache_is_reset() {
    let sim = SimProcess::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let sweep = |reset: bool| {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(&sim.url, dir.path(), "s.json");
        a.extend(["--max-concurrency", "1,2", "--no-preflight"]);
        if reset {
            a.push("--reset-prefix-cache");
        }
        common::run_ok(&a);
        let saved = steps(dir.path());
        assert_eq!(saved.len(), 2);
        let hooks: Vec<usize> = saved
            .iter()
            .map(|s| s["hooks"].as_array().map_or(0, Vec::len))
            .collect();
        (cached(&saved[0]), cached(&saved[1]), hooks, saved)
    };
    // Without a reset, the second step's prompts (the same seed) are all cached: 64 words
    // each, four blocks of 16.
    let (_, second, hooks, _) = sweep(false);
    assert_eq!(second, 4 * 64);
    assert_eq!(hooks, [0, 0]);
    // With it, neither step finds anything cached, and each step made its one call.
    let (first, second, hooks, steps) = sweep(true);
    assert_eq!((first, second), (0, 0));
    assert_eq!(hooks, [1, 1]);
    let call = &steps[1]["hooks"][0];
    assert_eq!(call["event"], "before-step");
    assert_eq!(call["method"], "POST");
    assert_eq!(call["path"], "/reset_prefix_cache");
    assert_eq!(call["status"], 200);
    assert!(call["at_s"].as_f64().unwrap() <= 0.0, "{call}");
    let control = common::json_get(&sim.url, "/sim/control");
    assert_eq!(control["cache_resets"], 2, "{control}");
}

#[test]
fn the_profiler_runs_over_the_measured_requests_only() {
    let sim = SimProcess::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(&sim.url, dir.path(), "p.json");
    a.extend(["--num-warmups", "3", "--profile"]);
    common::run_ok(&a);
    // The server saw the pre-flight request and the 3 warm-ups before the start, and every
    // measured request before the stop.
    let control = common::json_get(&sim.url, "/sim/control");
    assert_eq!(control["profile_starts"], 1, "{control}");
    assert_eq!(control["requests_at_profile_start"], 4, "{control}");
    assert_eq!(control["requests_at_profile_stop"], 8, "{control}");
    // On the run's clock: started before the first measured send, stopped after the last end.
    let result = common::json(&dir.path().join("p.json"));
    let calls = result["hooks"].as_array().unwrap();
    let at = |i: usize| calls[i]["at_s"].as_f64().unwrap() * 1e9;
    assert_eq!(calls[0]["path"], "/start_profile");
    assert_eq!(calls[1]["path"], "/stop_profile");
    let path = Path::new(result["records_file"].as_str().unwrap());
    let records = common::read_records(path);
    let measured: Vec<_> = records.iter().filter(|r| !r.warmup).collect();
    assert_eq!(measured.len(), 4);
    for r in measured {
        assert!(
            at(0) <= r.sent_ns as f64 && r.end_ns as f64 <= at(1),
            "{calls:?}"
        );
    }
    let report = common::stdout_of(&["report", common::path_str(&dir.path().join("p.json"))]);
    assert!(report.contains("Hook measure-start:"), "{report}");
}

#[test]
fn a_failing_hook_stops_the_sweep_in_one_line_and_keeps_the_steps_before() {
    let sim = SimProcess::start(&["--ttft-ms", "2", "--itl-ms", "1", "--control-status", "404"]);
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(&sim.url, dir.path(), "f.json");
    // Step 1 runs; its after-step call fails; step 2 never starts.
    a.extend([
        "--max-concurrency",
        "1,2",
        "--hook",
        "after-step=POST:/flush_cache",
    ]);
    let out = common::output(&a);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("/flush_cache") && err.contains("404"), "{err}");
    let saved = steps(dir.path());
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0]["hooks"][0]["status"], 404);
    // --reset-prefix-cache refused by the server: the run stops before it sends anything.
    let mut a = args(&sim.url, dir.path(), "r.json");
    a.push("--reset-prefix-cache");
    let out = common::output(&a);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--reset-prefix-cache") && err.contains("404"),
        "{err}"
    );
    assert!(!dir.path().join("r.json").exists());
    // Ignored, the same failures are recorded and the sweep goes on.
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(&sim.url, dir.path(), "i.json");
    a.extend([
        "--max-concurrency",
        "1,2",
        "--reset-prefix-cache",
        "--hook-errors",
        "ignore",
    ]);
    common::run_ok(&a);
    let saved = steps(dir.path());
    assert_eq!(saved.len(), 2);
    assert_eq!(saved[1]["hooks"][0]["status"], 404);
}

#[test]
fn bad_hooks_are_refused_in_one_line() {
    let cases = [
        ("before-step=POST:/a\nb", "visible ASCII"),
        ("sometime=POST:/a", "unknown event"),
        ("before-step=PATCH:/a", "unknown method"),
        ("before-step=POST:a", "must start with /"),
    ];
    for (spec, says) in cases {
        let err = common::run_fails(&["run", "--num-prompts", "1", "--hook", spec]);
        assert!(err.contains(says), "{spec:?}: {err}");
        let first = err.lines().next().unwrap();
        assert!(
            first.contains("--hook") && first.contains(says),
            "{spec:?}: {err}"
        );
    }
    // A backend whose server has no reset endpoint: told to name one.
    let err = common::run_fails(&["run", "--backend", "tgi", "--reset-prefix-cache"]);
    assert!(err.contains("--hook before-step=POST:"), "{err}");
}

/// The after-run calls of the last saved result in `dir` (a sweep's steps, in order).
fn after_run_calls(dir: &Path) -> Vec<serde_json::Value> {
    let saved = steps(dir);
    let last = saved.last().expect("a saved step");
    (last["hooks"].as_array().cloned().unwrap_or_default())
        .into_iter()
        .filter(|c| c["event"] == "after-run")
        .collect()
}

/// `after-run` is called however a sweep ends: stopped by SIGINT or SIGTERM in its first
/// step's load (the stopped step saved, incomplete, with the call in it), and when a later
/// hook failed (step 1's after-step call 404s: the sweep stops in one line, and the
/// after-run call is still made, recorded with its own status).
#[test]
fn after_run_is_called_however_the_sweep_ends() {
    use std::process::Stdio;
    use std::time::Duration;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let sim = SimProcess::start(&["--ttft-ms", "100", "--itl-ms", "1"]);
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(&sim.url, dir.path(), "s.json");
        a[6] = "40"; // --num-prompts 40, one at a time: seconds of load.
        a.extend([
            "--max-concurrency",
            "1,2",
            "--no-preflight",
            "--hook",
            "after-run=POST:/reset_prefix_cache",
        ]);
        let child = common::servebench()
            .args(&a)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let first_record = || {
            (std::fs::read_dir(dir.path()).unwrap())
                .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
                .any(|t| t.contains("\"sent_ns\""))
        };
        common::wait_for("the first record", Duration::from_secs(60), first_record);
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = common::finish_within(child, Duration::from_secs(60), "stopped sweep");
        let err = String::from_utf8_lossy(&out.stderr);
        let saved = steps(dir.path());
        assert_eq!(saved.len(), 1, "{signal}: {err}");
        assert_eq!(saved[0]["complete"], false, "{signal}: {err}");
        let calls = after_run_calls(dir.path());
        assert_eq!(calls.len(), 1, "{signal}: {err}");
        assert_eq!(calls[0]["status"], 200);
        let control = common::json_get(&sim.url, "/sim/control");
        assert_eq!(control["cache_resets"], 1, "{signal}: {control}");
    }
    // A later step's failed hook.
    let sim = SimProcess::start(&["--ttft-ms", "2", "--itl-ms", "1", "--control-status", "404"]);
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(&sim.url, dir.path(), "f.json");
    a.extend([
        "--max-concurrency",
        "1,2",
        "--hook",
        "after-step=POST:/flush_cache",
        "--hook",
        "after-run=POST:/stop_profile",
    ]);
    let out = common::output(&a);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("/flush_cache"),
        "the first failure is named: {err}"
    );
    let calls = after_run_calls(dir.path());
    assert_eq!(calls.len(), 1, "{err}");
    assert_eq!(
        (calls[0]["path"].as_str(), calls[0]["status"].as_u64()),
        (Some("/stop_profile"), Some(404))
    );
}
