//! Files are sacred, with the binary as a user runs it against the built-in
//! simulator: nothing is written before a run is known to start, nothing is overwritten
//! without `--overwrite`, a full disk stops the run and keeps what was measured, and a signal
//! in any phase stops it without a hang.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;

use common::servebench;

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn error_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("error:"))
        .map(str::to_string)
        .collect()
}

const QUICK: &[&str] = &[
    "run",
    "--sim-preset",
    "exact",
    "--output-len",
    "4",
    "--quiet",
];

/// `QUICK` with `n` requests, saved as `name` in `dir`, and more flags.
fn quick(dir: &Path, name: &str, n: &str, more: &[&str]) -> Output {
    servebench()
        .args(QUICK)
        .args([
            "--result-dir",
            dir.to_str().unwrap(),
            "--result-filename",
            name,
        ])
        .args(["--num-prompts", n])
        .args(more)
        .output()
        .unwrap()
}

#[test]
fn an_existing_result_is_never_overwritten_without_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = quick(d, "r.json", "5", &[]);
    assert!(first.status.success(), "{first:?}");
    let result = std::fs::read(dir.path().join("r.json")).unwrap();
    let records = std::fs::read(dir.path().join("r.records.jsonl")).unwrap();

    // Same name again: refused before anything is touched, naming the file.
    let again = quick(d, "r.json", "2", &[]);
    assert_eq!(again.status.code(), Some(2));
    let errors = error_lines(&again);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("r.json exists") && errors[0].contains("--overwrite"),
        "{errors:?}"
    );
    assert_eq!(std::fs::read(dir.path().join("r.json")).unwrap(), result);
    assert_eq!(
        std::fs::read(dir.path().join("r.records.jsonl")).unwrap(),
        records
    );

    // A sweep whose step files exist is refused too, before its first step.
    assert!(quick(d, "r-n1.json", "1", &[]).status.success());
    let refused = quick(d, "r", "2,1", &[]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(error_lines(&refused)[0].contains("r-n1.json exists"));
    assert!(!dir.path().join("r.sweep.json").exists());

    // --overwrite replaces them.
    let replaced = quick(d, "r.json", "2", &["--overwrite"]);
    assert!(replaced.status.success(), "{replaced:?}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(v["completed"], 2);
}

/// A session's plan checks every file the session will write once, before its first
/// run: a later repetition's too (`--repeat 2` ran and saved the first repetition, then
/// stopped on the second's file), and it validates every step of a sweep (a step whose load
/// broke a rule failed after the steps before it had run).
#[test]
fn every_file_and_step_of_a_session_is_checked_before_its_first_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("r.rep2.records.jsonl"), "").unwrap();
    let refused = quick(d, "r.json", "2", &["--repeat", "2"]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let errors = error_lines(&refused);
    assert!(
        errors[0].contains("r.rep2.records.jsonl exists"),
        "{errors:?}"
    );
    assert_eq!(files_in(d), ["r.rep2.records.jsonl"]);
    // The second step asks for more prompt tokens than a run builds.
    let refused = quick(d, "s", "2,100000000", &[]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let errors = error_lines(&refused);
    assert!(errors[0].contains("invalid --num-prompts"), "{errors:?}");
    assert_eq!(files_in(d), ["r.rep2.records.jsonl"]);
}

#[test]
fn a_start_time_already_past_writes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = quick(
        dir.path(),
        "r.json",
        "5",
        &["--start-at", "2020-01-01T00:00:00Z"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(error_lines(&out)[0].contains("--start-at"), "{out:?}");
    assert_eq!(files_in(dir.path()), Vec::<String>::new());
}

/// A run of 3,000 requests whose files may grow to at most 96 KiB (`RLIMIT_FSIZE`, as
/// `ulimit -f` sets it); with `ignore_sigxfsz`, the child ignores SIGXFSZ itself (as a full
/// disk gives ENOSPC without a signal), else it starts with SIGXFSZ at its default (a kill).
/// Asserts what servebench promises either way: exit 2, one error line, the result saved
/// incomplete, and a records file of whole records only.
#[cfg(target_os = "linux")]
fn run_past_a_file_size_limit(ignore_sigxfsz: bool) {
    use std::os::unix::process::CommandExt;
    const LIMIT: u64 = 96 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = servebench();
    cmd.args([
        "run",
        "--sim-preset",
        "exact",
        "--num-prompts",
        "3000",
        "--max-concurrency",
        "16",
        "--output-len",
        "3",
        "--quiet",
        "--result-filename",
        "full.json",
        "--result-dir",
        dir.path().to_str().unwrap(),
    ]);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let disposition = if ignore_sigxfsz {
                libc::SIG_IGN
            } else {
                libc::SIG_DFL
            };
            libc::signal(libc::SIGXFSZ, disposition);
            let lim = libc::rlimit {
                rlim_cur: LIMIT,
                rlim_max: LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{out:?} {:?}",
        files_in(dir.path())
    );
    let errors = error_lines(&out);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("cannot write") && errors[0].contains("marked incomplete"),
        "{errors:?}"
    );
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("full.json")).unwrap()).unwrap();
    assert_eq!(result["complete"], false);
    assert!(result["error"].as_str().unwrap().contains("cannot write"));
    // It stopped sending: most of the 3,000 requests were never sent.
    assert!(
        result["unsent"].as_u64().unwrap() > 1000,
        "{}",
        result["unsent"]
    );
    // Every record written before the limit is there, each a whole line: the part of a record
    // that did not fit was cut away.
    let records = std::fs::read_to_string(dir.path().join("full.records.jsonl")).unwrap();
    assert!(records.ends_with('\n'), "a torn last record");
    let lines: Vec<&str> = records.lines().collect();
    assert!(lines.len() > 10, "{} lines", lines.len());
    for (i, line) in lines.iter().enumerate() {
        let r: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("line {} is not a whole record: {e}", i + 1));
        assert!(r["id"].is_u64(), "line {}", i + 1);
    }
    // Each measured request has its line or is counted as a record lost (those measured after
    // the failed write, and those it had buffered): `completed` counted them with no record,
    // silently.
    let n = |k: &str| result[k].as_u64().unwrap_or(0);
    let measured = n("completed") + n("failed");
    assert_eq!(
        lines.len() as u64 + n("records_lost"),
        measured,
        "{} lines, records_lost {}, {measured} measured",
        lines.len(),
        result["records_lost"]
    );
    assert_eq!(n("planned"), measured + n("unsent"));
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_stops_the_run_and_saves_what_was_measured() {
    run_past_a_file_size_limit(true);
}

/// `ulimit -f` as a user sets it (SIGXFSZ at its default, which kills) is a
/// write error like a full disk, not a kill with a torn record and no result.
#[cfg(target_os = "linux")]
#[test]
fn a_file_size_limit_is_a_write_error_not_a_kill() {
    run_past_a_file_size_limit(false);
}

/// The phases a signal can arrive in, and the request that shows the run has reached it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// `--tokenizer server`: counting the prompts with the server's `/tokenize`.
    Tokenize,
    PreFlight,
    WarmUps,
    /// `--start-at`: the clock-offset probe (`GET /` for its `Date` header).
    ClockProbe,
    Measured,
}

const ONE_EVENT: &[u8] = b"data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n";

/// A server on 127.0.0.1 that answers until the run reaches `phase`, and never after (so the
/// run waits there); the receiver hears when that request arrived. Each connection has a
/// thread; they end with the test process.
#[cfg(unix)]
fn server_stuck_in(phase: Phase) -> (String, std::sync::mpsc::Receiver<()>) {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (reached, heard) = std::sync::mpsc::channel();
    let posts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let (reached, posts) = (reached.clone(), posts.clone());
            std::thread::spawn(move || {
                let mut conn = conn;
                let request = common::http::read_request(&mut conn).unwrap_or_default();
                let line = request.split_inclusive('\n').next().unwrap_or_default();
                let completions = line.starts_with("POST /v1/completions");
                let n = if completions {
                    posts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1
                } else {
                    0
                };
                let here = match phase {
                    Phase::Tokenize => line.starts_with("POST /tokenize"),
                    Phase::PreFlight => n == 1,
                    Phase::WarmUps => n == 2,
                    // The pre-flight request and the first measured one are answered.
                    Phase::Measured => n == 3,
                    Phase::ClockProbe => line.starts_with("GET / "),
                };
                if here {
                    let _ = reached.send(());
                    if phase == Phase::Measured {
                        // The stream starts and stalls: the request is in flight.
                        let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: {\"choices\":[{\"text\":\"a\"}]}\n\n");
                    }
                    // Never answers: holds the connection until the client hangs up.
                    let _ = std::io::copy(&mut conn, &mut std::io::sink());
                } else if completions {
                    let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", ONE_EVENT.len());
                    let _ = conn.write_all(head.as_bytes());
                    let _ = conn.write_all(ONE_EVENT);
                } else {
                    let _ = conn.write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                }
            });
        }
    });
    (url, heard)
}

/// Ctrl-C or SIGTERM in every phase stops servebench promptly, with no hang, and exits with
/// the code of a stopped run, 3 (it exited 0 once a request had succeeded, the same as a
/// whole run: a preempted shard read as succeeded): before the measured load with one line
/// and no file at all; during it with the result saved as incomplete and every record kept.
#[cfg(unix)]
#[test]
fn a_signal_in_any_phase_stops_the_run_and_keeps_what_was_measured() {
    for phase in [
        Phase::Tokenize,
        Phase::PreFlight,
        Phase::WarmUps,
        Phase::ClockProbe,
        Phase::Measured,
    ] {
        for signal in [libc::SIGINT, libc::SIGTERM] {
            let (url, heard) = server_stuck_in(phase);
            let dir = tempfile::tempdir().unwrap();
            let mut cmd = servebench();
            cmd.args(["run", "--base-url", &url, "--num-prompts", "4"])
                .args(["--max-concurrency", "1", "--grace", "0.2", "--quiet"])
                .args(["--result-dir", dir.path().to_str().unwrap()])
                .args(["--result-filename", "r.json"]);
            match phase {
                Phase::Tokenize => cmd.args(["--tokenizer", "server"]),
                Phase::WarmUps => cmd.args(["--tokenizer", "words", "--num-warmups", "2"]),
                Phase::ClockProbe => {
                    cmd.args(["--tokenizer", "words", "--start-at", "2099-01-01T00:00:00Z"])
                }
                _ => cmd.args(["--tokenizer", "words"]),
            };
            let child = cmd
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let case = format!("{phase:?}, signal {signal}");
            heard
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("{case}: the run never reached its phase"));
            // A margin for the child, which cannot say when it waits in the phase: its
            // request is out, so it is there or on its way (the verdict counts outcomes).
            std::thread::sleep(Duration::from_millis(100));
            unsafe { libc::kill(child.id() as i32, signal) };
            let out = child.wait_with_output().unwrap();
            let errors = error_lines(&out);
            if phase == Phase::Measured {
                let v: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).expect(&case))
                        .unwrap();
                assert_eq!(v["complete"], false, "{case}");
                let records = std::fs::read_to_string(dir.path().join("r.records.jsonl")).unwrap();
                // The first request finished, the second was in flight (cancelled at the end
                // of the grace), no third was sent.
                assert_eq!(records.lines().count(), 2, "{case}: {records}");
                assert_eq!(out.status.code(), Some(3), "{case}: {out:?}");
                assert_eq!(errors, Vec::<String>::new(), "{case}");
            } else {
                assert_eq!(out.status.code(), Some(3), "{case}: {out:?}");
                let stderr = String::from_utf8_lossy(&out.stderr);
                let said: Vec<&str> = (stderr.lines())
                    .filter(|l| l.contains("stopped before the measured load"))
                    .collect();
                assert_eq!(said.len(), 1, "{case}: {stderr}");
                assert_eq!(errors, Vec::<String>::new(), "{case}");
                assert_eq!(files_in(dir.path()), Vec::<String>::new(), "{case}");
            }
        }
    }
}

/// A second Ctrl-C ends the grace period at once: the requests in flight are cancelled and
/// recorded, and the result is still saved.
#[cfg(unix)]
#[test]
fn a_second_signal_cancels_the_requests_in_flight_and_still_saves() {
    let dir = tempfile::tempdir().unwrap();
    // Each request streams for about 10 s (1,000 chunks 10 ms apart); the grace is a minute.
    let mut child = servebench()
        .args(["run", "--sim-preset", "exact", "--num-prompts", "8"])
        .args(["--output-len", "1000", "--grace", "60", "--quiet"])
        .args(["--result-dir", dir.path().to_str().unwrap()])
        .args(["--result-filename", "r.json"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let records = dir.path().join("r.records.jsonl");
    common::wait_for("the measured load", Duration::from_secs(60), || {
        records.exists()
    });
    // The child's 8 sends go out once its load starts; nothing tells the test when they
    // have, so it gives them half a second (each stream lasts 10 s).
    std::thread::sleep(Duration::from_millis(500));
    // Its stderr, line by line: the second signal goes once the first was heard (a busy
    // machine may run the child too late to tell two quick signals apart).
    let (lines_tx, lines) = std::sync::mpsc::channel();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let started = Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains("stopping")) {
        let line = lines.recv_timeout(Duration::from_secs(30));
        seen.push(line.expect("the first signal was heard"));
    }
    // The child listens for the next signal after it printed that line; nothing says when.
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    reader.join().unwrap();
    seen.extend(lines.try_iter());
    // Well before the streams' own end (10 s) or the grace (60 s).
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let stderr = seen.join("\n");
    assert!(stderr.contains("aborting"), "{status:?}: {stderr}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(v["complete"], false);
    assert_eq!(
        v["summary"]["failures_by_kind"]["cancelled"], 8,
        "{}",
        v["summary"]
    );
    let lines = std::fs::read_to_string(&records).unwrap();
    assert_eq!(lines.lines().count(), 8);
}

/// `--repeat 3` saves three results, each as it finishes, and the spread of each
/// figure across them next to the runs' own 95% intervals; the spread file is never
/// overwritten without `--overwrite`, and a sweep cannot be repeated.
#[test]
fn repeated_runs_save_each_run_and_their_spread() {
    let dir = tempfile::tempdir().unwrap();
    let out = quick(dir.path(), "r.json", "40", &["--repeat", "3"]);
    assert!(out.status.success(), "{out:?}");
    let files = files_in(dir.path());
    for i in 1..=3 {
        assert!(files.contains(&format!("r.rep{i}.json")), "{files:?}");
        assert!(
            files.contains(&format!("r.rep{i}.records.jsonl")),
            "{files:?}"
        );
    }
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.repeat.json")).unwrap()).unwrap();
    assert_eq!(doc["runs"].as_array().unwrap().len(), 3);
    let ttft = &doc["metrics"]["mean_ttft_ms"];
    let values: Vec<f64> = ttft["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(values.len(), 3);
    let mean = values.iter().sum::<f64>() / 3.0;
    assert!((ttft["mean"].as_f64().unwrap() - mean).abs() < 1e-9);
    let stdev = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    assert!((ttft["stdev"].as_f64().unwrap() - stdev).abs() < 1e-9);
    assert!(ttft["within_run_ci95_half_width"].as_f64().unwrap() > 0.0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Across 3 repeated runs"), "{stdout}");

    let again = quick(dir.path(), "r.json", "40", &["--repeat", "3"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        error_lines(&again)[0].contains("r.repeat.json"),
        "{again:?}"
    );
    let sweep = quick(dir.path(), "s.json", "1,2", &["--repeat", "2"]);
    assert_eq!(sweep.status.code(), Some(2));
    assert!(error_lines(&sweep)[0].contains("--repeat"), "{sweep:?}");
}
