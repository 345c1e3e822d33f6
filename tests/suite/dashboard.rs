//! The live dashboard, in a real terminal: the binary runs in tmux (a private
//! server, killed at the end) against the built-in exact simulator. The dashboard redraws at
//! least once a second; `q` stops the run as Ctrl-C does and keeps what was measured; the same
//! run piped to a file prints today's lines and saves the same figures.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;

use common::tmux::Tmux;
use common::{json, servebench_path};
use serde_json::Value;

/// The dashboard's elapsed time (its title's "· 3.2 s"), if it is on screen.
fn elapsed(screen: &str) -> Option<f64> {
    let title = screen
        .lines()
        .find(|l| l.contains("servebench · num_prompts="))?;
    let s = title.rsplit('·').next()?.trim_start();
    s.split(" s").next()?.trim().parse().ok()
}

#[test]
fn the_dashboard_updates_and_a_piped_run_prints_lines() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let bin = servebench_path();
    let args = "run --sim-preset exact --num-prompts 30,20 --request-rate 10 --output-len 8";
    let tmux = Tmux::new("dash", 150);
    tmux.start(&format!(
        "{} {args} --result-dir {d} --result-filename tty.json",
        bin.display()
    ));
    // At 10 requests a second, the first step lasts 3 s: sample its title every 0.25 s.
    let mut seen: Vec<(Instant, f64)> = Vec::new();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) && !tmux.exited() {
        if let Some(e) = elapsed(&tmux.screen()) {
            if seen.last().is_none_or(|&(_, last)| last != e) {
                seen.push((Instant::now(), e));
            }
        }
        // The pace of the samples (a screen is read, not waited on).
        std::thread::sleep(Duration::from_millis(250));
    }
    tmux.wait_exit(Duration::from_secs(30));
    assert!(
        seen.len() >= 4,
        "the dashboard was drawn and redrawn: {seen:?}"
    );
    // A new figure within a second of the last one (plus the sampling period), as a median:
    // on a busy machine one sample (a `tmux` process started) or one redraw may come late.
    let mut gaps: Vec<Duration> = seen.windows(2).map(|w| w[1].0 - w[0].0).collect();
    gaps.sort();
    assert!(
        gaps[gaps.len() / 2] < Duration::from_millis(1300),
        "{seen:?}"
    );
    let screen = tmux.tmux(&["capture-pane", "-p", "-S", "-300", "-t", "t"]);
    assert!(screen.contains("Serving Benchmark Result") && screen.contains(" Steps "));
    assert!(
        !screen.contains("q or Ctrl-C"),
        "the dashboard is gone at the end:\n{screen}"
    );

    // The same run, piped: today's progress lines and reports, no dashboard.
    let piped = Command::new(&bin)
        .args(args.split(' '))
        .args(["--result-dir", d, "--result-filename", "pipe.json"])
        .output()
        .unwrap();
    assert!(piped.status.success());
    let (out, err) = (
        String::from_utf8_lossy(&piped.stdout),
        String::from_utf8_lossy(&piped.stderr),
    );
    assert!(out.contains("Serving Benchmark Result") && !out.contains("q or Ctrl-C"));
    assert!(
        !err.contains('\u{1b}'),
        "no terminal control in the piped output: {err:?}"
    );
    for step in ["n30", "n20"] {
        let (a, b) = (
            json(&dir.path().join(format!("tty-{step}.json"))),
            json(&dir.path().join(format!("pipe-{step}.json"))),
        );
        for key in [
            "completed",
            "failed",
            "total_input_tokens",
            "total_output_tokens",
        ] {
            assert_eq!(a[key], b[key], "{step} {key}");
        }
        assert_eq!(a["config"]["load"], b["config"]["load"]);
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&a["summary"]), keys(&b["summary"]));
        // The median: a busy machine delaying a few first chunks moves a mean of 20 or 30 more.
        let ttft = |v: &Value| v["median_ttft_ms"].as_f64().unwrap();
        assert!(
            (ttft(&a) - ttft(&b)).abs() < 2.0,
            "{step}: same schedule, same TTFT: {} and {} ms",
            ttft(&a),
            ttft(&b)
        );
    }
}

#[test]
fn q_stops_the_run_and_keeps_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let tmux = Tmux::new("q", 150);
    tmux.start(&format!(
        "{} run --sim-preset exact --num-prompts 400 --request-rate 20 --output-len 8 --result-dir {d} --result-filename q.json",
        servebench_path().display()
    ));
    // A single run's dashboard title says "run".
    common::wait_for("the run's dashboard", Duration::from_secs(20), || {
        tmux.screen().contains("servebench · run ·")
    });
    // A first request has ended (its record is written as it ends): `q` comes mid-run.
    let records = dir.path().join("q.records.jsonl");
    common::wait_for("a first record", Duration::from_secs(20), || {
        std::fs::read_to_string(&records).is_ok_and(|t| t.lines().count() > 0)
    });
    tmux.tmux(&["send-keys", "-t", "t", "q"]);
    tmux.wait_exit(Duration::from_secs(20));
    let r = json(&dir.path().join("q.json"));
    assert_eq!(r["complete"], false);
    let (done, unsent) = (
        r["completed"].as_u64().unwrap(),
        r["unsent"].as_u64().unwrap(),
    );
    assert!(
        done > 0 && unsent > 0 && done + unsent <= 400,
        "{done} done, {unsent} unsent"
    );
    let records = std::fs::read_to_string(dir.path().join("q.records.jsonl")).unwrap();
    assert_eq!(
        records.lines().count() as u64,
        done,
        "every sent request has its record"
    );
}
