//! `run --adaptive` (the SLO controller inside one run) and `--stop-saturated` (the
//! saturation stop of sweeps), against the exact simulator with 2 slots: every request
//! takes 20 ms to its first token and 8 more tokens 20 ms apart (180 ms in a slot). At 2 in
//! flight no request waits (TTFT 20 ms); at 3 in a closed loop one request is always
//! queued, and of each two consecutive waits (δ and 180 ms − δ, δ the slots' offset) at
//! most one is under 90 ms, so at most half the requests meet `ttft:110`, whose 90 ms above
//! the unqueued TTFT leave room for a loaded machine's late reads. The highest
//! concurrency holding 80% good is exactly 2, for a search (cold runs) and a controller
//! (one warm run) alike. Throughput stops rising past 2 in flight while TTFT grows: a sweep
//! over 1, 2, 4, 8, 16 is saturated at 4.

use crate::common;

use std::time::Instant;

use common::{output, path_str, run_fails, stdout_of, SimProcess};
use servebench::results::document::BenchResult;
use servebench::results::search::SearchDoc;
use servebench::results::sweep::SweepDoc;

fn sim() -> SimProcess {
    SimProcess::start(&[
        "--preset",
        "exact",
        "--slots",
        "2",
        "--ttft-ms",
        "20",
        "--itl-ms",
        "20",
    ])
}

/// What every run sends: 8 words asking for exactly 9 tokens, judged by `ttft:110`.
const WORKLOAD: &[&str] = &[
    "--tokenizer",
    "words",
    "--input-len",
    "8",
    "--output-len",
    "9",
    "--ignore-eos",
    "--goodput",
    "ttft:110",
    "--no-tui",
    "--quiet",
];

/// The controller finds the search's boundary: its sustained concurrency lies inside the
/// search's bracket [answer, first failing), and every request it planned is accounted.
#[test]
fn the_controller_s_sustained_load_lies_in_the_search_s_bracket() {
    let dir = tempfile::tempdir().unwrap();
    let d = path_str(dir.path());
    let sim = sim();
    let mut a = vec!["run", "--base-url", &sim.url];
    a.extend(WORKLOAD);
    a.extend([
        "--adaptive",
        "--adaptive-on",
        "concurrency",
        "--adaptive-target",
        "0.8",
    ]);
    a.extend([
        "--adaptive-step",
        "4",
        "--hold",
        "4",
        "--adaptive-max",
        "16",
    ]);
    a.extend(["--result-dir", d, "--result-filename", "a.json"]);
    let t = Instant::now();
    stdout_of(&a);
    let controller_s = t.elapsed().as_secs_f64();
    let r = BenchResult::load(&dir.path().join("a.json")).unwrap();
    let ad = r.adaptive.as_ref().expect("the adaptive section");
    let mut b = vec![
        "search",
        "--by",
        "concurrency",
        "--start",
        "1",
        "--max",
        "16",
    ];
    b.extend([
        "--target",
        "0.8",
        "--base-url",
        &sim.url,
        "--num-prompts",
        "40",
    ]);
    b.extend(WORKLOAD);
    b.extend(["--result-dir", d, "--result-filename", "b.json"]);
    let t = Instant::now();
    let out = output(&b);
    let search_s = t.elapsed().as_secs_f64();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = std::fs::read_to_string(dir.path().join("b.search.json")).unwrap();
    let s: SearchDoc = serde_json::from_str(&text).unwrap();
    eprintln!(
        "controller {controller_s:.1} s (its own {:.1} s, {} windows decided early): {:?} in [{:?}, {:?}]; search {search_s:.1} s: [{:?}, {:?}]",
        ad.controller_s,
        ad.windows.iter().filter(|w| w.early).count(),
        ad.sustained,
        ad.last_pass,
        ad.first_fail,
        s.answer,
        s.first_failing
    );
    let (answer, fail) = (s.answer.unwrap(), s.first_failing.unwrap());
    let sustained = ad.sustained.expect("a confirmed load");
    assert!(
        answer <= sustained && sustained < fail,
        "{sustained} not in [{answer}, {fail})"
    );
    assert_eq!((answer, fail), (2.0, 3.0), "the known truth");
    assert!(ad.complete && r.complete, "{:?}", ad.notes);
    // Every window judged has its interval; the planned requests are all accounted.
    let judged = ad.windows.iter().filter(|w| w.verdict.is_some());
    assert!(judged.clone().all(|w| w.good_fraction_ci95.is_some()));
    let sent: u64 = ad.windows.iter().map(|w| w.sent).sum();
    let (sm, planned) = (&r.summary, r.planned.unwrap());
    assert_eq!(planned, sm.completed + sm.failed + r.unsent);
    // The windows hold every request but the arrival already due when the controller
    // ended (sent after its last window closed, in its `end` segment).
    let ended = sm.completed + sm.failed;
    assert!(sent <= ended && ended - sent <= 1, "{sent} of {ended}");
    let report = stdout_of(&["report", path_str(&dir.path().join("a.json"))]);
    assert!(
        report.contains("SLO controller") && report.contains("Sustained concurrency:"),
        "{report}"
    );
    controller_s_charts(dir.path(), ad);
}

/// `plot` draws the controller's two panels (a marker per judged window, the legend, the
/// axes with their units) and the HTML page holds them as figures.
fn controller_s_charts(dir: &std::path::Path, ad: &servebench::results::adaptive::AdaptiveFigures) {
    let file = dir.join("a.json");
    let a = path_str(&file);
    let plots = dir.join("plots");
    stdout_of(&["plot", a, "--out-dir", path_str(&plots)]);
    let load = std::fs::read_to_string(plots.join("adaptive-load.svg")).unwrap();
    let judged = ad.windows.iter().filter(|w| w.verdict.is_some()).count();
    assert!(judged >= 4, "{:?}", ad.windows);
    // A verdict marker (radius 5) per judged window.
    assert_eq!(load.matches("r=\"5\"").count(), judged, "{load}");
    for text in [
        "concurrency (requests in flight)",
        "pass",
        "fail",
        "sustained concurrency 2",
    ] {
        assert!(load.contains(text), "{text}");
    }
    let good = std::fs::read_to_string(plots.join("adaptive-goodput.svg")).unwrap();
    for text in [
        "good fraction (% of the window",
        "target 80.0%",
        "95% interval",
    ] {
        assert!(good.contains(text), "{text}");
    }
    let html = dir.join("a.html");
    stdout_of(&["report", a, "--html", path_str(&html)]);
    let page = std::fs::read_to_string(&html).unwrap();
    for id in ["adaptive-load", "adaptive-goodput"] {
        assert!(
            page.contains(&format!("<figure class=\"chart\" id=\"{id}\">")),
            "{id}"
        );
    }
    assert!(page.contains("Sustained concurrency: <strong>2.000</strong>"));
}

/// A concurrency sweep over 1..16 on 2 slots: with the stop on, it ends at 4 (the first
/// step whose throughput did not rise while its median TTFT grew) and saves 8 and 16 as
/// skipped; with it off (the default) every step runs.
#[test]
fn a_sweep_stops_at_the_saturated_step_and_off_runs_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let d = path_str(dir.path());
    let sim = sim();
    for (stop, name) in [("on", "on.json"), ("off", "off.json")] {
        let mut a = vec![
            "run",
            "--base-url",
            &sim.url,
            "--max-concurrency",
            "1,2,4,8,16",
        ];
        a.extend(WORKLOAD);
        a.extend([
            "--num-prompts",
            "12",
            "--summary-only",
            "--stop-saturated",
            stop,
        ]);
        a.extend(["--result-dir", d, "--result-filename", name]);
        stdout_of(&a);
    }
    let (on, _) = SweepDoc::load(&dir.path().join("on.sweep.json")).unwrap();
    let values: Vec<String> = on.steps.iter().map(|s| s.value.to_string()).collect();
    assert_eq!(values, ["1", "2", "4"]);
    let skipped: Vec<String> = on.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(skipped, ["8", "16"]);
    let stop = on.saturation.as_ref().unwrap();
    assert_eq!((stop.load, stop.previous_load), (4.0, 2.0));
    assert!(
        stop.evidence.contains("median TTFT grew"),
        "{}",
        stop.evidence
    );
    assert!(on.complete);
    let (off, _) = SweepDoc::load(&dir.path().join("off.sweep.json")).unwrap();
    assert_eq!(off.steps.len(), 5);
    assert!(off.saturation.is_none() && off.skipped.is_empty());
}

/// Bad input is refused in one line before anything runs.
#[test]
fn adaptive_bad_input_is_refused_in_one_line() {
    let cases: &[(&[&str], &str)] = &[
        (&["--adaptive"], "--goodput"),
        (
            &[
                "--adaptive",
                "--goodput",
                "ttft:80",
                "--adaptive-target",
                "1",
            ],
            "--adaptive-target",
        ),
        (
            &[
                "--adaptive",
                "--goodput",
                "ttft:80",
                "--adaptive-target",
                "0",
            ],
            "--adaptive-target",
        ),
        (
            &["--adaptive", "--goodput", "ttft:80", "--adaptive-step", "0"],
            "--adaptive-step",
        ),
        (
            &[
                "--adaptive",
                "--goodput",
                "ttft:80",
                "--adaptive-factor",
                "1",
            ],
            "--adaptive-factor",
        ),
        (&["--hold", "10"], "--hold"),
        (
            &["--adaptive", "--goodput", "ttft:80", "--request-rate", "4"],
            "--request-rate",
        ),
        (
            &["--adaptive", "--goodput", "ttft:80", "--duration", "10"],
            "--duration",
        ),
        (
            &[
                "--adaptive",
                "--goodput",
                "ttft:80",
                "--max-concurrency",
                "1,2",
            ],
            "sweep",
        ),
    ];
    for (extra, names) in cases {
        let mut a = vec!["run", "--sim-preset", "exact", "--no-tui", "--quiet"];
        a.extend(extra.iter());
        let err = run_fails(&a);
        assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
        assert!(err.contains(names), "{extra:?}: {err}");
    }
}

/// Ctrl-C during the controller's run: the result is saved incomplete with the windows so
/// far, the stop noted, and every planned request ok, failed or unsent; exit 3.
#[test]
fn a_signal_stops_the_controller_and_keeps_every_request_accounted() {
    let dir = tempfile::tempdir().unwrap();
    let d = path_str(dir.path());
    let sim = sim();
    let mut cmd = common::servebench();
    cmd.args(["run", "--base-url", &sim.url]).args(WORKLOAD);
    cmd.args([
        "--adaptive",
        "--adaptive-on",
        "rate",
        "--adaptive-start",
        "4",
    ]);
    cmd.args([
        "--adaptive-step",
        "2",
        "--result-dir",
        d,
        "--result-filename",
        "s.json",
    ]);
    let mut child = cmd.stdout(std::process::Stdio::null()).spawn().unwrap();
    let records = dir.path().join("s.records.jsonl");
    common::wait_for(
        "the measured load",
        std::time::Duration::from_secs(60),
        || records.exists(),
    );
    std::thread::sleep(std::time::Duration::from_millis(2500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3), "{status:?}");
    let r = BenchResult::load(&dir.path().join("s.json")).unwrap();
    let ad = r.adaptive.as_ref().expect("the adaptive section");
    assert!(!ad.complete && !r.complete);
    assert!(
        ad.notes.iter().any(|n| n.contains("stopped")),
        "{:?}",
        ad.notes
    );
    assert!(!ad.windows.is_empty());
    let sm = &r.summary;
    assert_eq!(r.planned, Some(sm.completed + sm.failed + r.unsent));
}
