//! `import`, `compare`, `plot` and `report` as a user runs them: the seeds' TGI-vs-vLLM study
//! (seeds 001 and 002), hand-built servebench results and a sweep document, and one-line
//! errors with exit code 2 for bad input.

use servebench::config::{Metric, RunConfig};
use servebench::measure::record::{RequestRecord, TokenSource};
use servebench::results::document::BenchResult;
use servebench::results::stats::{summarize, SummaryOptions};
use std::path::{Path, PathBuf};

use crate::common;

use common::{path_str as s, stdout_of as run_ok};

/// `common::run_fails`, whose refusal is one line starting `error: `.
fn run_fails(args: &[&str]) -> String {
    let stderr = common::run_fails(args);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    stderr
}

const MS: u64 = 1_000_000;

/// A successful record: scheduled at `sched` ms, sent at `sent` ms, chunks at the given ms.
fn rec(id: u64, sched: u64, sent: u64, chunks: &[u64]) -> RequestRecord {
    RequestRecord {
        id,
        scheduled_ns: sched * MS,
        sent_ns: sent * MS,
        chunk_ns: chunks.iter().map(|c| c * MS).collect(),
        end_ns: chunks.last().unwrap() * MS + MS,
        http_status: Some(200),
        output_tokens: Some(chunks.len() as u64),
        output_tokens_source: Some(TokenSource::ServerUsage),
        prompt_tokens: Some(32),
        prompt_tokens_source: Some(TokenSource::ServerUsage),
        ..RequestRecord::default()
    }
}

/// Saves a result (and its records file) built from `records`, like `servebench run` does.
fn save_result(dir: &Path, name: &str, num_prompts: u64, records: &[RequestRecord]) -> PathBuf {
    let mut cfg = RunConfig {
        model: "m".into(),
        metric_percentiles: vec![50.0, 99.0],
        percentile_metrics: Metric::ALL.to_vec(),
        ..RunConfig::default()
    };
    cfg.load.num_prompts = num_prompts;
    cfg.workload = servebench::config::WorkloadSpec::random(32, 4);
    let summary = summarize(
        records,
        &SummaryOptions {
            percentiles: cfg.metric_percentiles.clone(),
            ..SummaryOptions::default()
        },
    );
    let path = dir.join(format!("{name}.json"));
    let records_path = path.with_extension("records.jsonl");
    let lines: Vec<String> = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    std::fs::write(&records_path, lines.join("\n") + "\n").unwrap();
    let r = BenchResult::new(
        cfg,
        summary,
        records,
        "2026-11-23T01:00:00Z".into(),
        "20261123-010000".into(),
        0,
        Some(records_path),
    );
    r.save(&path).unwrap();
    path
}

/// Two runs of the same workload: B has twice the TTFT and the same decode speed.
/// By hand: A ends at 136 ms (8 tokens: 58.82 tok/s), B at 241 ms (33.20 tok/s); TTFT 100
/// vs 200 ms; TPOT (130 − 100) / 3 = 10 ms on both; E2EL 130 vs 230 ms.
fn pair(dir: &Path) -> (PathBuf, PathBuf) {
    let a = save_result(
        dir,
        "a",
        2,
        &[
            rec(0, 0, 0, &[100, 110, 120, 130]),
            rec(1, 0, 5, &[105, 115, 125, 135]),
        ],
    );
    let b = save_result(
        dir,
        "b",
        2,
        &[
            rec(0, 0, 0, &[200, 210, 220, 230]),
            rec(1, 0, 10, &[210, 220, 230, 240]),
        ],
    );
    (a, b)
}

#[test]
fn compare_hand_built_pair_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = pair(dir.path());
    let out = run_ok(&[
        "compare",
        s(&a),
        s(&b),
        "--metrics",
        "completed,output_throughput,mean_ttft_ms,p99_ttft_ms,mean_tpot_ms,mean_e2el_ms,total_output_tokens",
    ]);
    let expected = "\
A = openai m (a) [a]
B = openai m (b) [b]

num_prompts = 2
  metric                    A         B                                               B/A
  completed                 2         2                                              1.00
  output_throughput     58.82 *   33.20                                              0.56
  mean_ttft_ms         100.00 *  200.00                        2.000 [2.000, 2.000] worse
  p99_ttft_ms          100.00 *  200.00                                              2.00
  mean_tpot_ms          10.00     10.00    1.000 [1.000, 1.000] no significant difference
  mean_e2el_ms         130.00 *  230.00                        1.769 [1.769, 1.769] worse
  total_output_tokens       8         8                                              1.00

Pareto front of output tokens/s per user vs output tokens/s per server (GPU count unknown) (1 of 2 steps on it):
  A = openai m (a), num_prompts=2: 100.0 tokens/s per user, 58.8 output tokens/s per server (GPU count unknown)
";
    assert_eq!(out, expected, "\n{out}");
    let md = run_ok(&[
        "compare",
        "--markdown",
        s(&a),
        s(&b),
        "--metrics",
        "mean_ttft_ms",
    ]);
    assert!(
        md.contains("| mean_ttft_ms | **100.00** | 200.00 | 2.000 [2.000, 2.000] worse |"),
        "{md}"
    );
}

#[test]
fn tgi_vs_vllm_from_the_seeds_step_by_step() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_ok(&[
        "import",
        "tests/fixtures/seed001_tgi.txt",
        "tests/fixtures/seed002_vllm.txt",
        "-o",
        s(dir.path()),
    ]);
    assert!(out.contains("1 series, 13 steps"), "{out}");
    assert!(out.contains("3 series, 23 steps"), "{out}");
    let tgi = dir.path().join("seed001_tgi.imported.json");
    let vllm = dir.path().join("seed002_vllm.imported.json");
    let table = run_ok(&["compare", s(&tgi), s(&vllm)]);
    assert!(
        table.contains("A = tgi meta-llama/Llama-3.1-405B-Instruct"),
        "{table}"
    );
    assert!(table.contains("B = vllm (seed002_vllm)"), "{table}");
    // Same workload (80-token prompts measured on both sides): no warning.
    assert!(!table.contains("warning"), "{table}");
    let at512 = table
        .split("\nnum_prompts = 512\n")
        .nth(1)
        .and_then(|t| t.split("\n\n").next())
        .expect("a 512-prompt step");
    let row = at512
        .lines()
        .find(|l| l.trim_start().starts_with("output_throughput"))
        .unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        ["output_throughput", "767.92", "*", "402.21", "0.52"]
    );
    // Every step of the doubling sweep is there, 4096 on TGI's side only.
    for n in [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096] {
        assert!(table.contains(&format!("\nnum_prompts = {n}\n")), "{n}");
    }
    // The seeds compare directly too, without importing first.
    let direct = run_ok(&[
        "compare",
        "tests/fixtures/seed001_tgi.txt",
        "tests/fixtures/seed002_vllm.txt",
        "--markdown",
        "--metrics",
        "output_throughput",
    ]);
    assert!(
        direct.contains("| output_throughput | **767.92** | 402.21 | 0.52 |"),
        "{direct}"
    );
}

#[test]
fn different_workloads_are_shown_with_a_warning() {
    let out = run_ok(&[
        "compare",
        "tests/fixtures/seed002_vllm.txt",
        "tests/fixtures/seed001_tgi.txt",
        "--metrics",
        "output_throughput",
    ]);
    assert!(
        out.contains(
            "warning: A and B are not comparable: different workload (input length 10000 vs 80 tokens)"
        ),
        "{out}"
    );
    assert!(out.contains("no series varying input_len"), "{out}");
}

#[test]
fn import_writes_a_document_report_reads() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("llmperf.json");
    let summary = run_ok(&[
        "import",
        "tests/fixtures/seed000_llmperf.txt",
        "-o",
        s(&out),
    ]);
    assert!(summary.contains("exceeds E2E"), "{summary}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(doc["kind"], "imported");
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["llmperf_requests"][0]["output_tokens"], 150);
    let report = run_ok(&["report", s(&out)]);
    assert!(report.contains("llmperf per request"), "{report}");
    assert!(report.contains("22.01"), "{report}");
}

#[test]
fn sweep_document_steps_load_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (n, ttft) in [(1u64, 100u64), (2, 150), (4, 300)] {
        let records: Vec<RequestRecord> = (0..n)
            .map(|i| rec(i, 0, 0, &[ttft, ttft + 10, ttft + 20]))
            .collect();
        save_result(d, &format!("sw-num_prompts{n}"), n, &records);
    }
    // Step 4 never ran (stopped sweep): absent from steps.
    let sweep = serde_json::json!({
        "schema_version": 1, "kind": "sweep", "servebench_version": "0.1.0",
        "started_at": "2026-11-23T01:00:00Z", "parameter": "num_prompts",
        "values": [1, 2, 4, 8],
        "steps": [
            {"value": 1, "result": "sw-num_prompts1.json", "complete": true},
            {"value": 2, "result": "sw-num_prompts2.json", "complete": true},
            {"value": 4, "result": "sw-num_prompts4.json", "complete": true}
        ],
        "complete": false
    });
    let path = d.join("sw.sweep.json");
    std::fs::write(&path, sweep.to_string()).unwrap();
    let report = run_ok(&["report", s(&path)]);
    assert!(
        report.contains("sweep incomplete: 3 of 4 steps ran"),
        "{report}"
    );
    let table = run_ok(&["compare", s(&path), s(&path), "--metrics", "mean_ttft_ms"]);
    assert!(table.contains("\nnum_prompts = 4\n"), "{table}");
    assert!(table.contains("300.00"), "{table}");
    // The HTML page of the sweep: load charts, CDFs from the records, the last step's timeline
    // (its 4 requests).
    let page = d.join("sw.html");
    run_ok(&["report", s(&path), "--html", s(&page)]);
    let html = std::fs::read_to_string(&page).unwrap();
    for id in ["ttft-num_prompts", "cdf_ttft"] {
        assert!(html.contains(&format!("id=\"{id}\"><svg")), "{id}");
    }
    assert!(html.contains("<figure class=\"tl\" data-rows=\"4\" data-requests=\"4\">"));
    assert_eq!(html.matches("<g class=\"rq\">").count(), 4);
    assert!(
        html.contains("sw-num_prompts4.records.jsonl"),
        "the timeline's file"
    );
}

/// A result's page draws its timeline from the records file beside it, marks gaps over
/// `--timeline-itl-ms`, and says the timeline needs the records file once it is gone; a
/// threshold that is no duration is refused in one line.
#[test]
fn the_html_page_of_a_result_without_records_says_the_timeline_needs_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Two requests; the second has a 300 ms gap between its chunks.
    let records = [
        rec(0, 0, 0, &[100, 110, 120]),
        rec(1, 10, 10, &[100, 400, 410]),
    ];
    let path = save_result(d, "tl", 2, &records);
    let page = d.join("tl.html");
    run_ok(&[
        "report",
        s(&path),
        "--html",
        s(&page),
        "--timeline-itl-ms",
        "250",
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<g class=\"rq\">").count(), 2);
    assert!(html.contains("all 2 measured requests"), "{html}");
    assert!(
        html.contains("longer than 250 ms are black (1 in the rows drawn)"),
        "{html}"
    );
    assert_eq!(
        html.matches("<rect class=\"s\"").count(),
        1,
        "one slow gap drawn"
    );
    // The answer comes first, labelled; the full table last, labelled, keys as tooltips.
    assert!(html.find("id=\"answer\"").unwrap() < html.find("id=\"timeline\"").unwrap());
    assert!(
        html.contains("<td title=\"mean_ttft_ms\">Mean TTFT (ms)</td>"),
        "{html}"
    );
    let page2 = d.join("tl2.html");
    run_ok(&[
        "report",
        s(&path),
        "--html",
        s(&page2),
        "--timeline-itl-ms",
        "500",
    ]);
    let html = std::fs::read_to_string(&page2).unwrap();
    assert!(html.contains("longer than 500 ms are black (0 in the rows drawn)"));

    std::fs::remove_file(d.join("tl.records.jsonl")).unwrap();
    run_ok(&["report", s(&path), "--html", s(&page)]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("The request timeline needs the run's records file"),
        "{html}"
    );
    assert!(!html.contains("<g class=\"rq\">"));
    // clap's refusal: its first line names the flag and the value, then a `--help` hint.
    for bad in ["0", "inf", "5ms", "1e300"] {
        let e = common::run_fails(&[
            "report",
            s(&path),
            "--html",
            s(&page),
            "--timeline-itl-ms",
            bad,
        ]);
        let first = e.lines().next().unwrap();
        assert!(
            first.contains("--timeline-itl-ms") && first.contains(bad),
            "{e}"
        );
    }
}

/// The TTFT breakdown is drawn per step of a sweep, each part's mean stacked, in
/// `plot` and in the HTML report; parts no server reported are left out, not drawn as zero.
#[test]
fn ttft_breakdown_is_a_stacked_bar_per_step() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Step n: scheduled at 0, written at n ms (client queue n), TTFT 100 ms of which the
    // server says 30·n queue and 96 own TTFT (prefill 96 − 30·n, transfer 4).
    for n in [1u64, 2] {
        let records: Vec<RequestRecord> = (0..n)
            .map(|i| {
                let mut r = rec(i, 0, n, &[n + 100, n + 110]);
                r.server_request_metrics = Some(serde_json::json!({
                    "time_to_first_token_ms": 96.0, "queue_time_ms": 30.0 * n as f64
                }));
                r
            })
            .collect();
        save_result(d, &format!("bd-num_prompts{n}"), n, &records);
    }
    let sweep = serde_json::json!({
        "schema_version": 1, "kind": "sweep", "servebench_version": "0.1.0",
        "started_at": "2026-11-23T01:00:00Z", "parameter": "num_prompts", "values": [1, 2],
        "steps": [
            {"value": 1, "result": "bd-num_prompts1.json", "complete": true},
            {"value": 2, "result": "bd-num_prompts2.json", "complete": true}
        ],
        "complete": true
    });
    let path = d.join("bd.sweep.json");
    std::fs::write(&path, sweep.to_string()).unwrap();
    let view = servebench::views::open::load(&path).unwrap();
    let stacks = servebench::render::plot::chart::breakdowns(std::slice::from_ref(&view));
    assert_eq!(stacks.len(), 1);
    let parts = |n: usize| stacks[0].bars[n].1.clone();
    // client queue, connection setup (never said), server queue, prefill, transfer, and the
    // rest of TTFT (100 − 30·n − (96 − 30·n) − 4 = 0: the server accounted for all of it).
    assert_eq!(stacks[0].bars[0].0, "1");
    let bar = |client, queue, prefill| {
        vec![
            Some(client),
            None,
            Some(queue),
            Some(prefill),
            Some(4.0),
            Some(0.0),
        ]
    };
    assert_eq!(parts(0), bar(1.0, 30.0, 66.0));
    assert_eq!(parts(1), bar(2.0, 60.0, 36.0));
    let out = d.join("charts");
    run_ok(&["plot", s(&path), "-o", s(&out), "--format", "svg"]);
    let svg = std::fs::read_to_string(out.join("ttft_breakdown-bd.svg")).unwrap();
    // Four known non-zero parts per bar, two bars, plus six legend keys.
    assert!(svg.matches("<rect").count() >= 8 + 6, "{svg}");
    assert!(svg.contains("first-token transfer"), "{svg}");
    let page = d.join("bd.html");
    run_ok(&["report", s(&path), "--html", s(&page)]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("id=\"ttft_breakdown-bd\"><svg"));
    assert!(html.contains("mean_ttft_part_prefill_ms"));
}

#[test]
fn bad_inputs_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "no results here\n").unwrap();
    let empty_block = dir.path().join("empty.txt");
    std::fs::write(
        &empty_block,
        "============ Serving Benchmark Result ============\n==================================================\n",
    )
    .unwrap();
    let e = run_fails(&["import", "/nonexistent/x.txt"]);
    assert!(e.contains("/nonexistent/x.txt"), "{e}");
    let e = run_fails(&["import", s(&junk)]);
    assert!(e.contains("not a format servebench reads"), "{e}");
    let e = run_fails(&["import", s(&empty_block)]);
    assert!(e.contains("no \"Serving Benchmark Result\" block"), "{e}");
    let e = run_fails(&["compare", "tests/fixtures/seed003_report.txt", s(&junk)]);
    assert!(e.contains("junk.txt"), "{e}");
    let e = run_fails(&["plot", "/nonexistent/x.json", "-o", s(dir.path())]);
    assert!(e.contains("/nonexistent/x.json"), "{e}");
    let e = run_fails(&["report", s(&junk), "--html", s(&dir.path().join("r.html"))]);
    assert!(e.contains("junk.txt"), "{e}");
}

#[test]
fn plot_draws_sweeps_cdfs_and_a_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = pair(dir.path());
    let out = dir.path().join("charts");
    let listed = run_ok(&[
        "plot",
        "tests/fixtures/seed001_tgi.txt",
        "tests/fixtures/seed002_vllm.txt",
        s(&a),
        "-o",
        s(&out),
        "--format",
        "svg",
    ]);
    for name in [
        "output_throughput-num_prompts.svg",
        "ttft-num_prompts.svg",
        "tpot-num_prompts.svg",
        "itl-num_prompts.svg",
        "ttft_vs_throughput-num_prompts.svg",
        "ttft-input_len.svg",
        "cdf_ttft.svg",
        "cdf_e2el.svg",
        "timeline-a_records.svg",
    ] {
        let path = out.join(name);
        assert!(listed.contains(s(&path)), "{name} not listed: {listed}");
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{name}");
        assert!(
            svg.contains("<polyline") || svg.contains("<rect"),
            "{name} has no data"
        );
    }
    // The seeds span 1..4096 prompts: a log axis, labelled as such.
    let tput = std::fs::read_to_string(out.join("output_throughput-num_prompts.svg")).unwrap();
    assert!(tput.contains("num_prompts [log]"), "log x axis");
    assert!(
        tput.contains("tgi meta-llama/Llama-3.1-405B-Instruct"),
        "legend"
    );
    // A timeline has one bar per request segment: queued, TTFT, decode for 2 requests.
    let tl = std::fs::read_to_string(out.join("timeline-a_records.svg")).unwrap();
    assert!(tl.matches("<rect").count() >= 6, "{tl}");
}

#[test]
fn plot_png_when_a_font_exists() {
    if servebench::render::plot::font::font_path().is_none() {
        eprintln!("no system font: PNG text cannot be drawn here; skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("charts");
    run_ok(&[
        "plot",
        "tests/fixtures/seed001_tgi.txt",
        "-o",
        s(&out),
        "--format",
        "png",
    ]);
    let png = std::fs::read(out.join("ttft-num_prompts.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    assert!(png.len() > 20_000, "a real picture, {} bytes", png.len());
    assert!(!out.join("ttft-num_prompts.svg").exists());
}

/// Every document kind prints in the formats it has, through one interface;
/// any other pair is refused in one line that names the formats the document has, and a
/// records file or a comparison is never read as something else.
#[test]
fn each_document_prints_in_its_formats_and_other_pairs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = pair(dir.path());
    let records = a.with_extension("records.jsonl");
    let imported = dir.path().join("tgi.imported.json");
    run_ok(&[
        "import",
        "tests/fixtures/seed001_tgi.txt",
        "-o",
        s(&imported),
    ]);
    let all = ["text", "markdown", "csv", "json", "html", "llm-d"];
    let cases: [(&[&str], &[&str], &str); 5] = [
        (
            &["report", s(&a)],
            &["text", "markdown", "csv", "html", "llm-d"],
            "a result",
        ),
        (
            &["report", s(&imported)],
            &["text", "markdown", "csv", "html", "llm-d"],
            "a sweep or an import",
        ),
        (
            &["report", "tests/fixtures/seed002_vllm.txt"],
            &["text", "markdown", "csv", "html", "llm-d"],
            "a sweep or an import",
        ),
        (&["report", s(&records)], &["csv"], "a records file"),
        (
            &["compare", s(&a), s(&b)],
            &["text", "markdown", "csv", "json"],
            "a comparison",
        ),
    ];
    for (args, formats, kind) in cases {
        for format in all {
            let mut argv = args.to_vec();
            argv.extend(["--format", format]);
            if formats.contains(&format) {
                let out = run_ok(&argv);
                assert!(!out.trim().is_empty(), "{argv:?} printed nothing");
            } else {
                let e = run_fails(&argv);
                let expected = format!(
                    "error: --format {format}: {kind} prints as {}",
                    match formats {
                        [one] => one.to_string(),
                        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
                        [] => unreachable!(),
                    }
                );
                assert_eq!(e.trim_end(), expected, "{argv:?}");
            }
        }
    }
    // The page `--format html` prints is the one `--html` writes.
    let page = dir.path().join("a.html");
    run_ok(&["report", s(&a), "--html", s(&page)]);
    let printed = run_ok(&["report", s(&a), "--format", "html"]);
    assert_eq!(printed, std::fs::read_to_string(&page).unwrap());
    assert!(printed.starts_with("<!DOCTYPE html>"), "{printed}");
    // `--html` with another format, and a records file's page, are refused in one line.
    let e = run_fails(&["report", s(&a), "--html", s(&page), "--format", "csv"]);
    assert!(
        e.contains("--html writes HTML and --format asks for csv"),
        "{e}"
    );
    let e = run_fails(&["report", s(&records), "--html", s(&page)]);
    assert!(e.contains("a records file prints as csv"), "{e}");
}

/// `compare --format json` is the comparison for programs: each row's
/// figure with its unit and better direction, the values, the better input, and B/A with
/// its interval and verdict.
#[test]
fn compare_json_carries_units_directions_and_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = pair(dir.path());
    let out = run_ok(&[
        "compare",
        s(&a),
        s(&b),
        "--format",
        "json",
        "--metrics",
        "output_throughput,mean_ttft_ms,total_output_tokens",
    ]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let group = &doc["groups"][0];
    assert_eq!(group["inputs"][1], "B = openai m (b) [b]");
    assert_eq!(group["steps"][0]["step"], "num_prompts = 2");
    let rows = group["steps"][0]["rows"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["metric"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["output_throughput", "mean_ttft_ms", "total_output_tokens"]
    );
    let (tput, ttft, tokens) = (&rows[0], &rows[1], &rows[2]);
    assert_eq!(tput["unit"], "tokens/s");
    assert_eq!(tput["better"], "higher");
    assert_eq!(tput["best"], "A");
    // By hand (see `pair`): TTFT 100 vs 200 ms, every request alike, so the interval is 2..2.
    assert_eq!(ttft["unit"], "ms");
    assert_eq!(ttft["better"], "lower");
    assert_eq!(ttft["values"], serde_json::json!([100.0, 200.0]));
    assert_eq!(ttft["best"], "A");
    assert_eq!(ttft["vs_a"][0], serde_json::Value::Null);
    assert_eq!(ttft["vs_a"][1]["ratio"], 2.0);
    assert_eq!(ttft["vs_a"][1]["verdict"], "worse");
    let [lo, hi] = [0, 1].map(|i| ttft["vs_a"][1]["ci95"][i].as_f64().unwrap());
    assert!(
        (lo - 2.0).abs() < 1e-9 && (hi - 2.0).abs() < 1e-9,
        "{lo} {hi}"
    );
    // Token totals have no better direction: no best, no verdict to gate on.
    assert_eq!(tokens["better"], serde_json::Value::Null);
    assert_eq!(tokens["best"], serde_json::Value::Null);
    assert_eq!(tokens["vs_a"][1]["verdict"], "not_judged");
}

/// A figure's better direction is its typed key's, not a guess from its
/// spelling: vLLM's peak output throughput (no "throughput" in its name) is better higher,
/// and a figure servebench does not know is shown but never judged.
#[test]
fn a_figure_s_direction_comes_from_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let vllm = |name: &str, peak: f64, unknown: f64| {
        let doc = serde_json::json!({
            "backend": "vllm", "model_id": "m", "num_prompts": 10, "completed": 10,
            "output_throughput": 100.0, "max_output_tokens_per_s": peak,
            "mean_ttft_ms": 50.0, "mean_newfangled_ms": unknown,
        });
        let path = dir.path().join(name);
        std::fs::write(&path, doc.to_string()).unwrap();
        path
    };
    let (a, b) = (vllm("a.json", 250.0, 7.0), vllm("b.json", 280.0, 8.0));
    let out = run_ok(&["compare", s(&a), s(&b)]);
    let row = |name: &str| {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} row in:\n{out}"));
        line.split_whitespace().collect::<Vec<_>>()
    };
    assert_eq!(
        row("max_output_tokens_per_s"),
        ["max_output_tokens_per_s", "250.00", "280.00", "*", "1.12"]
    );
    assert_eq!(
        row("mean_newfangled_ms"),
        ["mean_newfangled_ms", "7.00", "8.00", "1.14"]
    );
    // A gate on it cannot be judged: an error, never a pass.
    let e = run_fails(&[
        "compare",
        s(&a),
        s(&b),
        "--fail-if-worse",
        "mean_newfangled_ms:5",
    ]);
    assert!(e.contains("this metric has no better direction"), "{e}");
}
