//! `servebench plan`: capacity per dollar over saved sweeps and searches.
//!
//! The known truth: `servebench sim --preset llamacpp-llama-8b-rtx4090` has 4 slots
//! (`max_num_seqs` 4), so at a concurrency of 4 no request waits (TTFT about 15 ms), and above
//! it requests wait for a whole answer (48 decode steps of about 8 ms: about 400 ms) before
//! their first token: with a TTFT SLO of 350 ms the highest sustained concurrency is exactly 4.
//! The SLO lies nearer the waits than the unqueued TTFT, and this simulator runs in real time:
//! a loaded machine's late reads can only add to a TTFT, and 335 ms of room keeps an unqueued
//! request good on a busy 2-core machine (200 ms at a time scale of 2 was not: with both cores
//! kept busy by other processes, a sixth of the requests at 2 in flight read later than that).
//! The exact simulator has no slot
//! limit, so it sustains every step. The prices are checked against the saved results'
//! figures by hand, and bad inputs (different SLOs, models, datasets, no cost, an empty sweep)
//! are refused in one line naming the file.

use crate::common;

use std::path::Path;

use common::{output, path_str, run_fails, stdout_of};
use servebench::results::document::BenchResult;

/// A `servebench sim` process, killed when dropped.
use common::SimProcess as Sim;

/// The workload every configuration runs: 24 prompts of 32 words asking for exactly 48.
const WORKLOAD: &[&str] = &[
    "--num-prompts",
    "24",
    "--input-len",
    "32",
    "--output-len",
    "48",
    "--ignore-eos",
    "--goodput",
    "ttft:350",
    "--no-tui",
    "--summary-only",
    "--quiet",
];

fn csv_rows(text: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    (r.records())
        .map(|row| {
            let row = row.unwrap();
            head.iter()
                .cloned()
                .zip(row.iter().map(String::from))
                .collect()
        })
        .collect()
}

fn num(row: &std::collections::HashMap<String, String>, key: &str) -> f64 {
    row[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key}: {:?}", row[key]))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn plan_recovers_the_slot_count_and_prices_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = path_str(dir.path());
    // A and B: the 4-slot engine (a sweep, then a search); C: the exact schedule, no slots.
    let sim = Sim::start(&["--preset", "llamacpp-llama-8b-rtx4090"]);
    let server = ["--base-url", &sim.url, "--tokenizer", "words"];
    let mut a = vec!["run", "--max-concurrency", "1,2,4,8"];
    a.extend(server);
    a.extend(WORKLOAD);
    a.extend(["--cost-per-hour", "2", "--label", "slots-sweep"]);
    a.extend(["--result-dir", d, "--result-filename", "a.json"]);
    stdout_of(&a);
    let mut b = vec![
        "search",
        "--by",
        "concurrency",
        "--start",
        "1",
        "--max",
        "8",
    ];
    b.extend(server);
    b.extend(WORKLOAD);
    b.extend(["--cost-per-hour", "1.5", "--label", "slots-search"]);
    b.extend(["--result-dir", d, "--result-filename", "b.json"]);
    // The search's own exit code says whether a load passed; the plan reads its document.
    let out = output(&b);
    assert!(
        out.status.code() == Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut c = vec!["run", "--sim-preset", "exact", "--time-scale", "2"];
    c.extend(["--tokenizer", "words"]);
    c.extend(["--max-concurrency", "1,2,4,8"]);
    c.extend(WORKLOAD);
    c.extend(["--cost-per-hour", "6", "--label", "exact"]);
    c.extend(["--result-dir", d, "--result-filename", "c.json"]);
    stdout_of(&c);

    let files = ["a.sweep.json", "b.search.json", "c.sweep.json"];
    let paths: Vec<String> = files
        .iter()
        .map(|f| path_str(&dir.path().join(f)).to_string())
        .collect();
    let mut args = vec![
        "plan",
        "--goodput",
        "ttft:350",
        "--demand-request-rate",
        "50",
    ];
    args.extend(paths.iter().map(String::as_str));
    let mut csv_args = args.clone();
    csv_args.extend(["--format", "csv"]);
    let rows = csv_rows(&stdout_of(&csv_args));
    let of = |name: &str| -> Vec<_> {
        rows.iter()
            .filter(|r| r["configuration"] == name)
            .cloned()
            .collect()
    };
    // The sweep over the 4-slot engine: 4 sustained, 8 the first failing step.
    let (sa, sb, sc) = (of("slots-sweep"), of("slots-search"), of("exact"));
    assert_eq!(sa.len(), 4, "{rows:?}");
    assert_eq!(
        (
            num(&sa[0], "sustained_load"),
            num(&sa[0], "first_failing_load")
        ),
        (4.0, 8.0),
        "{sa:?}"
    );
    // The search bisects to the same slot count: [4, 5).
    assert_eq!(
        (
            num(&sb[0], "sustained_load"),
            num(&sb[0], "first_failing_load")
        ),
        (4.0, 5.0),
        "{sb:?}"
    );
    // The exact schedule sustains every step: no failing load.
    assert_eq!(num(&sc[0], "sustained_load"), 8.0, "{sc:?}");
    assert_eq!(sc[0]["first_failing_load"], "");

    // Each price from the sustained step's saved figures, by hand.
    let mut cheapest = (f64::INFINITY, String::new());
    for (rows, file, usd) in [(&sa, "a-c4.json", 2.0), (&sc, "c-c8.json", 6.0)] {
        let row = rows.iter().find(|r| r["sustained"] == "true").unwrap();
        let r = BenchResult::load(&dir.path().join(file)).unwrap();
        let s = &r.summary;
        let share = s.ttft_ms.as_ref().unwrap().mean / s.e2el_ms.as_ref().unwrap().mean;
        let input_tps = s.total_token_throughput - s.output_throughput;
        assert!(close(num(row, "input_share"), share), "{row:?}");
        let per_1m_in = usd * share / (input_tps * 3600.0) * 1e6;
        let per_1m_out = usd * (1.0 - share) / (s.output_throughput * 3600.0) * 1e6;
        assert!(
            close(num(row, "usd_per_1m_input_tokens"), per_1m_in),
            "{row:?}"
        );
        assert!(
            close(num(row, "usd_per_1m_output_tokens"), per_1m_out),
            "{row:?}"
        );
        let replicas = (50.0 / s.request_throughput).ceil();
        assert_eq!(num(row, "replicas"), replicas, "{row:?}");
        assert!(close(num(row, "replicas_usd_per_hour"), replicas * usd));
        // Good fraction's interval holds the measured fraction.
        let g = num(row, "good_fraction");
        assert!(
            num(row, "good_fraction_ci95_low") <= g && g <= num(row, "good_fraction_ci95_high")
        );
        if replicas * usd < cheapest.0 {
            cheapest = (replicas * usd, row["configuration"].clone());
        }
    }
    let b_row = sb.iter().find(|r| r["sustained"] == "true").unwrap();
    let b_cost = num(b_row, "replicas_usd_per_hour");
    if b_cost < cheapest.0 {
        cheapest = (b_cost, "slots-search".into());
    }
    let marked: Vec<&String> = (rows.iter())
        .filter(|r| r["cheapest"] == "true")
        .map(|r| &r["configuration"])
        .collect();
    assert!(marked.iter().all(|n| **n == cheapest.1), "{marked:?}");

    // The text names the cheapest; the chart and the page draw the frontier.
    let chart = dir.path().join("plan.svg");
    let mut text_args = args.clone();
    text_args.extend(["--chart", path_str(&chart)]);
    let text = stdout_of(&text_args);
    assert!(
        text.contains(&format!("Cheapest for 50 req/s: {} ×", cheapest.1)),
        "{text}"
    );
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("SLO frontier"),
        "{svg}"
    );
    let mut html_args = args.clone();
    html_args.extend(["--format", "html"]);
    let page = stdout_of(&html_args);
    assert!(page.contains("<table") && page.contains("<svg") && page.contains("slots-search"));
    // The page opens with the answer: the cheapest configuration before any table.
    let answer = format!(
        "<p class=\"cheapest\"><strong>Cheapest for 50 req/s: {} ×",
        cheapest.1
    );
    let at = page.find(&answer).unwrap_or_else(|| panic!("{page}"));
    assert!(at < page.find("<table").unwrap(), "{page}");
}

/// A small sweep against the built-in exact simulator, saved as `dir/NAME.sweep.json`.
fn small_sweep(dir: &Path, name: &str, extra: &[&str]) -> String {
    let file = format!("{name}.json");
    let mut args = vec!["run", "--sim-preset", "exact", "--time-scale", "10"];
    args.extend(["--max-concurrency", "1,2", "--num-prompts", "4"]);
    args.extend([
        "--input-len",
        "8",
        "--output-len",
        "4",
        "--no-tui",
        "--quiet",
    ]);
    args.extend(["--summary-only", "--result-dir", path_str(dir)]);
    args.extend(["--result-filename", &file]);
    args.extend(extra);
    stdout_of(&args);
    path_str(&dir.join(format!("{name}.sweep.json"))).to_string()
}

/// Rewrites one saved JSON file through `edit`.
fn edit(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v = common::json(path);
    edit(&mut v);
    std::fs::write(path, serde_json::to_string(&v).unwrap()).unwrap();
}

/// `plan` reads each saved file once, bounded as every saved document (1 GiB): a
/// sweep document or a step result over the limit is one line naming it, exit 2, before it is
/// read (the files here are sparse: nothing of them is written or read).
#[test]
fn plan_refuses_an_oversized_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let cost = ["--goodput", "ttft:500", "--cost-per-hour", "3"];
    let good = small_sweep(p, "good", &cost);
    let oversize = |path: &Path| {
        let f = std::fs::File::create(path).unwrap();
        f.set_len((1 << 30) + 1).unwrap();
    };
    let big = p.join("big.sweep.json");
    oversize(&big);
    let step = small_sweep(p, "step", &cost);
    oversize(&p.join("step-c2.json"));
    for (file, named) in [(path_str(&big), "big.sweep.json"), (&step, "step-c2.json")] {
        let e = run_fails(&["plan", &good, file, "--goodput", "ttft:500"]);
        assert!(
            e.contains(named) && e.contains("larger than 1024 MiB"),
            "{named}: {e}"
        );
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    }
    // Every reader of a saved document or another tool's file is bounded the same way.
    let out = path_str(p);
    let big = path_str(&big);
    for args in [
        vec!["report", big],
        vec!["compare", &good, big],
        vec!["plot", big, "--out-dir", out],
    ] {
        let e = run_fails(&args);
        assert!(e.contains("larger than 1024 MiB"), "{args:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    }
}

#[test]
fn plan_refuses_incompatible_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let cost = ["--goodput", "ttft:500", "--cost-per-hour", "3"];
    let good = small_sweep(p, "good", &cost);
    let plan = |files: &[&str]| {
        let mut args = vec!["plan"];
        args.extend(files);
        args.extend(["--goodput", "ttft:500"]);
        run_fails(&args)
    };
    // One line each, naming the file and what was wrong.
    let one_line = |e: &str| assert_eq!(e.trim_end().lines().count(), 1, "{e}");

    // Measured under other SLOs, it is re-judged from its records: without them, one line
    // naming the missing file.
    let other_slo = small_sweep(p, "slo", &["--goodput", "tpot:50", "--cost-per-hour", "3"]);
    std::fs::remove_file(p.join("slo-c1.records.jsonl")).unwrap();
    let e = plan(&[&good, &other_slo]);
    assert!(
        e.contains("slo-c1.json") && e.contains("slo-c1.records.jsonl") && e.contains("missing"),
        "{e}"
    );
    one_line(&e);

    let no_cost = small_sweep(p, "nocost", &["--goodput", "ttft:500"]);
    let e = plan(&[&good, &no_cost]);
    assert!(
        e.contains("nocost-c1.json") && e.contains("--cost-per-hour"),
        "{e}"
    );
    one_line(&e);

    let other_data = small_sweep(p, "data", &cost);
    edit(&p.join("data-c1.json"), |v| {
        v["config"]["workload"]["input_len"] = 9.into();
    });
    let e = plan(&[&good, &other_data]);
    assert!(e.contains("data-c1.json") && e.contains("dataset"), "{e}");
    one_line(&e);

    let other_model = small_sweep(p, "model", &cost);
    edit(&p.join("model-c1.json"), |v| {
        v["config"]["model"] = "another-model".into();
    });
    let e = plan(&[&good, &other_model]);
    assert!(
        e.contains("model-c1.json") && e.contains("another-model"),
        "{e}"
    );
    one_line(&e);

    let empty = small_sweep(p, "empty", &cost);
    edit(Path::new(&empty), |v| v["steps"] = serde_json::json!([]));
    let e = plan(&[&good, &empty]);
    assert!(
        e.contains("empty.sweep.json") && e.contains("empty sweep"),
        "{e}"
    );
    one_line(&e);

    // A result is neither a sweep nor a search.
    let e = plan(&[path_str(&p.join("good-c1.json"))]);
    assert!(e.contains("neither a sweep"), "{e}");
    one_line(&e);

    // Bad flags: a target that is no fraction, two demands.
    let e = run_fails(&["plan", &good, "--goodput", "ttft:500", "--target", "1.5"]);
    assert!(e.contains("--target"), "{e}");
    let e = run_fails(&[
        "plan",
        &good,
        "--goodput",
        "ttft:500",
        "--demand-request-rate",
        "1",
        "--demand-output-throughput",
        "1",
    ]);
    assert!(e.contains("--demand-request-rate"), "{e}");
    // The good sweep alone plans.
    let text = stdout_of(&["plan", &good, "--goodput", "ttft:500"]);
    assert!(text.contains("Capacity plan"), "{text}");
}

/// A SIGINT during a search's second probe (at 4 req/s, its 8 requests over 2 s): the probe
/// stopped part-way is neither a pass nor a fail, the search says where it stopped and that
/// its answer is the highest *completed* passing probe, exits 3 (a stopped run), and `plan`
/// names the stopped probe and leaves it out. (It printed "first failing: none up to --max"
/// from a probe stopped part-way, exited 0, and `plan` priced it without a word.)
#[cfg(unix)]
#[test]
fn a_stopped_search_says_where_it_stopped_and_plan_leaves_the_stopped_probe_out() {
    use std::process::Stdio;
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut args = vec!["search", "--sim-preset", "exact", "--tokenizer", "words"];
    args.extend(["--by", "rate", "--start", "2", "--max", "16"]);
    args.extend([
        "--num-prompts",
        "8",
        "--input-len",
        "8",
        "--output-len",
        "4",
    ]);
    args.extend(["--goodput", "ttft:2000", "--cost-per-hour", "2", "--no-tui"]);
    args.extend(["--result-dir", path_str(d), "--result-filename", "s.json"]);
    let child = common::servebench()
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The second probe's measured load has begun once its records file exists.
    let second = d.join("s-probe1.records.jsonl");
    common::wait_for("the second probe", Duration::from_secs(60), || {
        second.exists()
    });
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: a signal to our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = common::finish_within(child, Duration::from_secs(60), "the stopped search");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("search stopped at 4 req/s")
            && stdout.contains("highest completed load meeting the SLOs")
            && stdout.contains(": 2 req/s")
            && !stdout.contains("none up to --max"),
        "{stdout}"
    );
    let doc = common::json(&d.join("s.search.json"));
    assert_eq!(doc["complete"], false, "{doc}");
    assert_eq!(doc["stopped_at"], 4.0, "{doc}");
    assert_eq!(
        (&doc["answer"], &doc["first_failing"]),
        (&2.0.into(), &serde_json::Value::Null)
    );
    let probes = doc["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 2, "{doc}");
    assert_eq!(probes[1]["passed"], false);
    assert!(probes[1]["stopped"].is_string(), "{doc}");
    // What it measured is saved: the stopped probe's result, marked incomplete.
    assert_eq!(common::json(&d.join("s-probe1.json"))["complete"], false);

    let search = d.join("s.search.json");
    let out = output(&[
        "plan",
        "--goodput",
        "ttft:2000",
        "--format",
        "csv",
        path_str(&search),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("s-probe1.json: left out") && stderr.contains("stopped at 4"),
        "{stderr}"
    );
    let rows = csv_rows(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        rows.len(),
        1,
        "only the completed probe is priced: {rows:?}"
    );
    assert_eq!(num(&rows[0], "sustained_load"), 2.0, "{rows:?}");
}

/// A sweep measured under `--goodput ttft:500 e2el:E` is planned; then its steps are made
/// "measured under none" (their SLOs and good counts removed, the records kept) and planned
/// again: re-judged from the records, every step's good count equals the measured one, and
/// the plan says which steps were re-judged (text, CSV, stderr). `report --goodput` on one
/// step gives the measured good requests, labelled; a records file gives one line.
#[test]
fn plan_rejudges_a_sweep_measured_under_other_slos() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    // The exact schedule (in its own time): E2EL 30 + 3 × ITL; a bound between the two
    // concurrencies' E2EL is not needed, any split the records decide is compared exactly.
    let slos = ["--goodput", "ttft:500", "e2el:60"];
    let mut extra = slos.to_vec();
    extra.extend(["--cost-per-hour", "3"]);
    let sweep = small_sweep(p, "m", &extra);
    let plan_csv = || {
        let mut args = vec!["plan", &sweep, "--format", "csv"];
        args.extend(slos);
        let out = output(&args);
        assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (csv_rows(&String::from_utf8_lossy(&out.stdout)), err)
    };
    let (measured, err) = plan_csv();
    assert!(!err.contains("re-judged"), "{err}");
    assert!(measured.iter().all(|r| r["rejudged_steps"] == "0"));
    let report_of = |file: &str| {
        let mut args = vec!["report", file];
        args.extend(slos);
        stdout_of(&args)
    };
    let step = p.join("m-c1.json");
    let good_line = |text: &str| {
        (text.lines())
            .find(|l| l.starts_with("Good requests:"))
            .unwrap_or_else(|| panic!("{text}"))
            .to_string()
    };
    let measured_good = good_line(&report_of(path_str(&step)));
    for c in ["m-c1.json", "m-c2.json"] {
        edit(&p.join(c), |v| {
            v["config"]["goodput"] = serde_json::json!([]);
            v["summary"]["good_requests"] = serde_json::Value::Null;
            v["summary"]["request_goodput"] = serde_json::Value::Null;
            v["request_goodput"] = serde_json::Value::Null;
        });
    }
    let (rejudged, err) = plan_csv();
    assert_eq!(rejudged.len(), measured.len());
    for (a, b) in measured.iter().zip(&rejudged) {
        for key in [
            "load",
            "good",
            "total",
            "good_fraction",
            "within_slos",
            "sustained_load",
        ] {
            assert_eq!(a[key], b[key], "{key}: {a:?} {b:?}");
        }
        assert_eq!(b["rejudged_steps"], "2");
    }
    assert!(
        err.contains("m-c1.json") && err.contains("re-judged under ttft:500 e2el:60"),
        "{err}"
    );
    let mut args = vec!["plan", &sweep];
    args.extend(slos);
    let text = String::from_utf8_lossy(&output(&args).stdout).into_owned();
    assert!(
        text.contains("goodput re-judged from the records of 2 of 2 steps"),
        "{text}"
    );
    // `report --goodput`: the same good requests as measured, labelled in text and CSV.
    let text = report_of(path_str(&step));
    assert_eq!(good_line(&text), measured_good);
    assert!(
        text.contains("Request goodput, re-judged (req/s):"),
        "{text}"
    );
    assert!(text.contains("(measured under none)"), "{text}");
    let mut args = vec!["report", path_str(&step), "--format", "csv"];
    args.extend(slos);
    let row = &csv_rows(&stdout_of(&args))[0];
    assert!(
        row["rejudged.records_file"].ends_with("m-c1.records.jsonl"),
        "{row:?}"
    );
    // A sweep through `report`: each step's note says it.
    let text = report_of(&sweep);
    assert!(
        text.contains("goodput re-judged under ttft:500 e2el:60"),
        "{text}"
    );
    // A records file has no SLOs to re-judge: one line.
    let records = p.join("m-c1.records.jsonl");
    let mut args = vec!["report", path_str(&records)];
    args.extend(slos);
    let e = run_fails(&args);
    assert!(e.contains("--goodput") && e.contains("records file"), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
}
