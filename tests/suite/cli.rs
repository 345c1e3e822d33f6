//! The `servebench` binary as a user runs it: the README's main command against the built-in
//! simulator, the report layout against the seeds' reports, re-reporting a saved result, a
//! separate `servebench sim` process, and one-line errors with exit code 2 for bad input.

use std::process::{Command, Stdio};

use crate::common;

use common::{run_fails, run_ok, servebench};

/// The label of every report line ("Mean TTFT (ms):"), or the rule itself for section rules.
fn labels(report: &str) -> Vec<String> {
    report
        .lines()
        .map(|l| match l.find(':') {
            Some(i) if !l.starts_with('=') && !l.starts_with('-') => l[..=i].to_string(),
            _ => l.trim_end().to_string(),
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// The first "Serving Benchmark Result" block of a text.
fn vllm_block(text: &str) -> String {
    let start = text
        .find("============ Serving Benchmark Result")
        .expect("block starts");
    let rest = &text[start..];
    let end = rest[50..].find(&"=".repeat(50)).expect("block ends") + 50 + 50;
    rest[..end].to_string()
}

#[test]
fn main_command_prints_the_seed_layout_and_saves_a_result_that_re_reports_identically() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (stdout, _) = run_ok(&[
        "run",
        "--num-prompts",
        "50",
        "--result-dir",
        d,
        "--result-filename",
        "r.json",
    ]);
    // Seed 001's block, label for label.
    let seed = std::fs::read_to_string("tests/fixtures/seed001_first_block.txt").unwrap();
    assert_eq!(labels(&vllm_block(&stdout)), labels(&vllm_block(&seed)));
    assert!(stdout.contains("Successful requests:                     50        \n"));
    assert!(stdout.contains("Server:                                  simulated"));
    // The saved result re-renders to exactly the same report.
    let (again, _) = run_ok(&["report", &format!("{d}/r.json")]);
    assert_eq!(again, stdout);
    let records = std::fs::read_to_string(dir.path().join("r.records.jsonl")).unwrap();
    assert_eq!(records.lines().count(), 50);
}

#[test]
fn percentile_options_give_seed_003_layout_with_e2e_section() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, _) = run_ok(&[
        "run",
        "--num-prompts",
        "20",
        "--result-dir",
        dir.path().to_str().unwrap(),
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,75,90,95,99",
    ]);
    let seed = std::fs::read_to_string("tests/fixtures/seed003_report.txt").unwrap();
    assert_eq!(labels(&vllm_block(&stdout)), labels(&vllm_block(&seed)));
}

/// vLLM's saving flags as its users type them (`--save-result --save-detailed`) are accepted,
/// and the document has vLLM's keys and its per-request arrays.
#[test]
fn saved_json_has_vllm_keys() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    run_ok(&[
        "run",
        "--num-prompts",
        "10",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        d,
        "--result-filename",
        "r.json",
        "--goodput",
        "ttft:1000",
        "tpot:100",
    ]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    for key in [
        "schema_version",
        "config",
        "summary",
        "date",
        "backend",
        "model_id",
        "num_prompts",
        "request_rate",
        "burstiness",
        "max_concurrency",
        "duration",
        "completed",
        "total_input_tokens",
        "total_output_tokens",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "mean_ttft_ms",
        "median_ttft_ms",
        "std_ttft_ms",
        "p99_ttft_ms",
        "mean_tpot_ms",
        "p99_itl_ms",
        "mean_e2el_ms",
        "input_lens",
        "output_lens",
        "ttfts",
        "itls",
        "generated_texts",
        "errors",
    ] {
        assert!(v.get(key).is_some(), "missing key {key}");
    }
    assert_eq!(v["completed"], 10);
    assert_eq!(v["ttfts"].as_array().unwrap().len(), 10);
    assert!(v["request_goodput"].as_f64().unwrap() > 0.0);
}

#[test]
fn unreachable_server_is_one_line_and_exit_2() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let stderr = run_fails(&[
        "run",
        "--base-url",
        &format!("http://127.0.0.1:{port}"),
        "--tokenizer",
        "words",
        "--num-prompts",
        "3",
    ]);
    assert_eq!(
        stderr
            .trim()
            .lines()
            .filter(|l| l.starts_with("error:"))
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("pre-flight") && stderr.contains(&port.to_string()),
        "{stderr}"
    );
    assert!(!stderr.contains("Serving Benchmark Result"));
}

#[test]
fn wrong_endpoint_is_one_line_and_exit_2() {
    let stderr = run_fails(&["run", "--endpoint", "/v1/nope", "--num-prompts", "3"]);
    assert!(stderr.contains("404"), "{stderr}");
}

#[test]
fn bad_flags_name_what_is_wrong() {
    for (args, needle) in [
        (vec!["run", "--request-rate", "fast"], "fast"),
        (vec!["run", "--extra-body", "[1]"], "JSON object"),
        (vec!["run", "--goodput", "ttft"], "METRIC:MS"),
        (vec!["run", "--metric-percentiles", "101"], "101"),
        (vec!["run", "--backend", "foo"], "foo"),
        (vec!["run", "--num-prompts", "0"], "--num-prompts"),
        // Absurd waits are refused, not a panic converting them to a Duration.
        (vec!["run", "--timeout", "1e20"], "--timeout"),
        (vec!["run", "--grace", "1e20"], "--grace"),
        (vec!["run", "--timeout", "NaN"], "--timeout"),
        // Sizes that would exhaust memory building the workload are refused first.
        (
            vec!["run", "--num-prompts", "1000000000000"],
            "--num-prompts",
        ),
        (vec!["run", "--input-len", "100000000000"], "--input-len"),
        (
            vec!["run", "--output-len", "18446744073709551615"],
            "--output-len",
        ),
        (
            vec![
                "run",
                "--dataset-name",
                "prefix",
                "--prefix-len",
                "9999999",
                "--input-len",
                "2",
            ],
            "--prefix-len",
        ),
        (
            vec!["report", "/nonexistent/result.json"],
            "/nonexistent/result.json",
        ),
        (vec!["sim", "--error-rate", "2"], "error_rate"),
        (vec!["sim", "--time-scale", "0"], "time scale"),
        (vec!["sim", "--preset", "gpt-5"], "vllm-llama-405b"),
        (vec!["sim", "--queue-timeout-s", "5"], "engine preset"),
        (
            vec![
                "run",
                "--base-url",
                "http://127.0.0.1:9",
                "--time-scale",
                "2",
            ],
            "--time-scale",
        ),
        (
            vec![
                "run",
                "--base-url",
                "http://127.0.0.1:9",
                "--sim-preset",
                "exact",
            ],
            "--sim-preset",
        ),
        (
            vec!["run", "--base-url", "http://127.0.0.1:9"],
            "--tokenizer is required",
        ),
        (
            vec!["run", "--tokenizer", "no_such_encoding"],
            "no_such_encoding",
        ),
        (
            vec![
                "run",
                "--tokenizer",
                "cl100k_base",
                "--dataset-name",
                "book",
            ],
            "--dataset-path",
        ),
        (
            vec!["run", "--dataset-name", "book", "--dataset-path", "x.txt"],
            "--tokenizer",
        ),
        (
            vec![
                "run",
                "--tokenizer",
                "cl100k_base",
                "--dataset-name",
                "book",
                "--dataset-path",
                "/nonexistent/book.txt",
            ],
            "/nonexistent/book.txt",
        ),
        (
            vec!["run", "--tokenizer", "/nonexistent/tokenizer.json"],
            "/nonexistent/tokenizer.json",
        ),
    ] {
        let stderr = run_fails(&args);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

#[test]
fn separate_sim_process_serves_a_run_and_stops_on_sigterm() {
    let mut sim = servebench()
        .args(["sim", "--ttft-ms", "20", "--itl-ms", "5"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let url = common::sim_url(&mut sim);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let dir = tempfile::tempdir().unwrap();
    let (stdout, _) = run_ok(&[
        "run",
        "--base-url",
        &url,
        "--tokenizer",
        "words",
        "--num-prompts",
        "5",
        "--backend",
        "tgi",
        "--result-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(stdout.contains("Successful requests:                     5 "));
    assert!(stdout.contains(&url));
    sigterm(sim.id());
    let status = sim.wait().unwrap();
    assert!(status.success(), "sim exits cleanly on SIGTERM: {status:?}");
}

fn sigterm(pid: u32) {
    Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
}

#[test]
fn doubling_sweep_prints_a_block_per_step_and_saves_each_step() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (stdout, _) = run_ok(&[
        "run",
        "--num-prompts",
        "1,2,...,8",
        "--output-len",
        "8",
        "--result-dir",
        d,
        "--result-filename",
        "s",
    ]);
    assert_eq!(stdout.matches("Serving Benchmark Result").count(), 4);
    for (i, n) in [1, 2, 4, 8].iter().enumerate() {
        assert!(stdout.contains(&format!("num_prompts: {n}\n")), "step {i}");
        assert!(stdout.contains(&format!("Successful requests:                     {n} ")));
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.sweep.json")).unwrap())
            .unwrap();
    assert_eq!(doc["kind"], "sweep");
    assert_eq!(doc["complete"], true);
    assert_eq!(doc["steps"].as_array().unwrap().len(), 4);
    for step in doc["steps"].as_array().unwrap() {
        let file = dir.path().join(step["result"].as_str().unwrap());
        let r = servebench::results::document::BenchResult::load(&file).unwrap();
        assert_eq!(r.config.load.num_prompts, step["value"].as_u64().unwrap());
    }
}

#[test]
fn killing_a_sweep_keeps_every_finished_step() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    // Steps 1 and 2 take ~0.3 s each; step 4 onwards is where the kill lands.
    let mut child = servebench()
        .args([
            "run",
            "--num-prompts",
            "1,2,...,64",
            "--output-len",
            "25",
            "--max-concurrency",
            "1",
            "--result-dir",
            d,
            "--result-filename",
            "s",
            "-q",
        ])
        .spawn()
        .unwrap();
    let doc_path = dir.path().join("s.sweep.json");
    let steps = |p: &std::path::Path| -> usize {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .map_or(0, |v| v["steps"].as_array().map_or(0, Vec::len))
    };
    common::wait_for(
        "two finished steps",
        std::time::Duration::from_secs(60),
        || steps(&doc_path) >= 2,
    );
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    let (doc, results) = servebench::results::sweep::SweepDoc::load(&doc_path).unwrap();
    assert!(doc.steps.len() >= 2, "finished steps are on disk");
    assert!(!doc.complete);
    for r in &results {
        assert!(r.complete);
        assert_eq!(r.summary.completed, r.config.load.num_prompts);
    }
}

#[test]
fn sweeping_two_parameters_at_once_is_refused() {
    let stderr = run_fails(&["run", "--num-prompts", "1,2", "--max-concurrency", "1,2"]);
    assert!(stderr.contains("one parameter"), "{stderr}");
}

#[test]
fn search_saves_every_probe_and_prints_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (stdout, stderr) = run_ok(&[
        "search",
        "--goodput",
        "ttft:10000",
        "--by",
        "concurrency",
        "--max",
        "4",
        "--num-prompts",
        "8",
        "--output-len",
        "4",
        "--result-dir",
        d,
        "--result-filename",
        "s",
        "--cost-per-hour",
        "10",
    ]);
    assert!(
        stdout.contains("highest load meeting the SLOs for 90% of requests: 4 concurrent requests"),
        "{stdout}"
    );
    // It ends with the probes as a step table, by load, and the answer's cost.
    let loads: Vec<&str> = (stdout.lines().filter(|l| l.starts_with("  ")))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(loads, ["max_concurrency", "1", "2", "4"], "{stdout}");
    assert!(stdout.contains("per 1M output tokens there"), "{stdout}");
    assert_eq!(
        stderr.matches("-> pass").count(),
        3,
        "probes at 1, 2, 4: {stderr}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.search.json")).unwrap())
            .unwrap();
    assert_eq!(doc["answer"], 4.0);
    for p in doc["probes"].as_array().unwrap() {
        assert!(dir.path().join(p["result"].as_str().unwrap()).exists());
    }
    assert!(run_fails(&["search", "--num-prompts", "3"]).contains("--goodput"));
}

#[test]
fn scrape_flags_name_what_is_wrong() {
    for (args, needle) in [
        (
            vec!["run", "--scrape-interval", "0"],
            "'0' is not a positive",
        ),
        (vec!["run", "--scrape-interval=-1"], "--scrape-interval"),
        (vec!["run", "--scrape-interval", "nan"], "nan"),
        (vec!["run", "--scrape-metrics", "localhost:8000"], "http://"),
    ] {
        let stderr = run_fails(&args);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

/// A metrics endpoint that does not answer is a warning counted in the result,
/// never a failed run.
#[test]
fn scrape_failures_are_a_warning_not_a_failed_run() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let (stdout, stderr) = run_ok(&[
        "run",
        "--num-prompts",
        "5",
        "--scrape-metrics",
        &format!("http://127.0.0.1:{port}/metrics"),
        "--scrape-interval",
        "0.05",
        "--result-dir",
        dir.path().to_str().unwrap(),
        "--result-filename",
        "r.json",
    ]);
    assert!(
        stderr.contains("warning:") && stderr.contains("scrapes failed"),
        "{stderr}"
    );
    assert!(stdout.contains("Scrape failures (warning):"), "{stdout}");
    assert!(stdout.contains("Successful requests:                     5 "));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let m = &v["server_metrics"];
    assert!(m["failures"].as_u64().unwrap() >= 2, "{m}");
    assert_eq!(m["samples"].as_array().unwrap().len(), 0);
    assert_eq!(v["schema_version"], 1);
}

/// `servebench report X | head` is a quiet success, as for ripgrep: a reader that
/// goes away is no error (and no panic with exit code 101).
#[test]
fn a_closed_stdout_pipe_is_a_quiet_success() {
    let mut child = servebench()
        .args(["report", "tests/fixtures/seed002_vllm.txt"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the only read end before the report is written: the write gets EPIPE.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
}

/// A dataset flag that the chosen dataset has no setting for is refused with one
/// line naming it, exit 2, before anything runs (it was ignored in silence).
#[test]
fn a_dataset_flag_of_another_dataset_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = servebench()
        .args(["run", "--sim-preset", "exact", "--num-prompts", "2"])
        .args(["--prefix-len", "16", "--quiet", "--result-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--prefix-len") && stderr.contains("the random dataset"),
        "{stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// `servebench run` under a shell's `ulimit` (`sh -c 'ulimit ARGS; exec servebench run ...'`):
/// its result and its stderr.
fn run_under_ulimit(
    ulimit: &str,
    dir: &std::path::Path,
    name: &str,
) -> (serde_json::Value, String) {
    let script = format!("ulimit {ulimit} && exec \"$0\" \"$@\"");
    let out = Command::new("sh")
        .args(["-c", &script])
        .arg(common::servebench_path())
        .args([
            "run",
            "--num-prompts",
            "200",
            "--max-concurrency",
            "200",
            "--output-len",
            "8",
        ])
        .args([
            "--timeout",
            "3",
            "--quiet",
            "--result-filename",
            name,
            "--result-dir",
        ])
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        common::json(&dir.join(name)),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A soft open-file limit of 128 no longer caps a run at about 60 streams
/// (each is two sockets with the built-in simulator): servebench raises it to the hard limit
/// and all 200 streams are answered (before: connections failed and the run hung for its
/// timeouts). Under a hard limit of 128 it says, in one line, that 200 streams need more,
/// and every request past the limit is recorded as failed (`connect`, or `timeout` for one
/// whose connection the simulator could not accept), none lost.
#[cfg(target_os = "linux")]
#[test]
fn the_open_file_limit_is_raised_and_a_low_one_is_named() {
    let hard = Command::new("sh")
        .args(["-c", "ulimit -Hn"])
        .output()
        .unwrap();
    let hard: u64 = String::from_utf8_lossy(&hard.stdout)
        .trim()
        .parse()
        .unwrap_or(u64::MAX);
    if hard < 1024 {
        eprintln!("skipped: the hard open-file limit here is {hard}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (r, err) = run_under_ulimit("-Sn 128", dir.path(), "soft.json");
    assert_eq!(
        (r["completed"].as_u64(), r["failed"].as_u64()),
        (Some(200), Some(0)),
        "{err}"
    );
    assert!(!err.contains("open files"), "{err}");
    let (r, err) = run_under_ulimit("-n 128", dir.path(), "hard.json");
    assert!(
        err.contains(
            "200 concurrent streams need about 464 open files, but this process may open 128"
        ),
        "{err}"
    );
    let (ok, failed) = (
        r["completed"].as_u64().unwrap(),
        r["failed"].as_u64().unwrap(),
    );
    assert_eq!(ok + failed, 200);
    assert!(failed > 0, "{r}");
    let kinds = r["summary"]["failures_by_kind"].as_object().unwrap();
    assert!(
        kinds.keys().all(|k| k == "connect" || k == "timeout"),
        "{kinds:?}"
    );
}

/// `--client-threads 1000` on a machine of a few cores (it ran without a word) is refused in
/// one line naming the count and the cores, before anything runs; a count just above the
/// cores runs, with one warning line.
#[test]
fn client_threads_past_the_cores_are_warned_and_absurd_counts_refused() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores * 8 < 1000 {
        let err = run_fails(&["run", "--client-threads", "1000", "--num-prompts", "1"]);
        assert!(
            err.contains("--client-threads 1000") && err.contains(&format!("{cores} core")),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let more = (cores + 1).to_string();
    let out = servebench()
        .args([
            "run",
            "--sim-preset",
            "exact",
            "--num-prompts",
            "2",
            "--output-len",
            "2",
        ])
        .args(["--client-threads", &more, "-q", "--result-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("--client-threads"))
        .collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(warned[0].contains(&format!("{cores} core")), "{stderr}");
}
