//! What users read and wire up, with the binary against the built-in exact
//! simulator at `--time-scale 10`: labels and metadata through the report, the JSON, compare
//! and plot; cost and energy per token against a DCGM-style endpoint served here; the step
//! table that ends a sweep; CSV and Markdown.

use std::io::{Read, Write};

use crate::common;

use common::{json, output as servebench, stdout};

/// A DCGM exporter's answer: two GPUs drawing 150 W and 200 W, 40% and 60% busy. Serves
/// until the test process ends; returns its /metrics URL.
fn dcgm_exporter() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    let body = "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n\
        # TYPE DCGM_FI_DEV_POWER_USAGE gauge\n\
        DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100\"} 150.000000\n\
        DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\",modelName=\"NVIDIA H100\"} 200.000000\n\
        # TYPE DCGM_FI_DEV_GPU_UTIL gauge\n\
        DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 40\n\
        DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\"} 60\n";
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(body.as_bytes());
        }
    });
    url
}

#[test]
fn labels_cost_energy_and_the_step_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let dcgm = dcgm_exporter();
    let out = servebench(&[
        "run",
        "--sim-preset",
        "exact",
        "--time-scale",
        "10",
        "--num-prompts",
        "4,8",
        "--input-len",
        "16",
        "--output-len",
        "8",
        "--result-dir",
        d,
        "--result-filename",
        "s.json",
        "--label",
        "tgi-2.3",
        "--metadata",
        "gpu=H100",
        "--cost-per-hour",
        "36",
        "--scrape-metrics",
        "--scrape-metrics",
        &dcgm,
        "--scrape-interval",
        "0.02",
        "--summary-only",
    ]);
    let text = stdout(&out);
    // --summary-only: the step table, not each step's report.
    assert!(!text.contains("Serving Benchmark Result"), "{text}");
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(rows.len(), 3, "{text}");
    let head: Vec<&str> = rows[0].split("  ").filter(|c| !c.is_empty()).collect();
    let col = |name: &str| head.iter().position(|h| h.trim() == name).unwrap();
    for (row, (n, file)) in rows[1..].iter().zip([(4, "s-n4.json"), (8, "s-n8.json")]) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        let r = json(&dir.path().join(file));
        assert_eq!(cells[0], n.to_string());
        assert_eq!(cells[col("ok")], r["completed"].to_string());
        let tput = format!("{:.2}", r["output_throughput"].as_f64().unwrap());
        assert_eq!(cells[col("out tok/s")], tput);
        let ttft = format!("{:.2}", r["mean_ttft_ms"].as_f64().unwrap());
        assert_eq!(cells[col("mean TTFT")], ttft);
        // The step's own verdict: a busy machine makes a run client-bound or its simulator
        // late, which the table must then say; the simulator's usage is always plausible.
        let verdict = r["validity"]["verdict"].as_str().unwrap().replace('_', "-");
        assert_eq!(cells[col("validity")], verdict);
        assert_ne!(verdict, "usage-implausible", "{}", r["validity"]);
        // Labels and metadata: in the config and as vLLM's top-level keys.
        assert_eq!(
            (r["label"].as_str(), r["gpu"].as_str()),
            (Some("tgi-2.3"), Some("H100"))
        );
        assert_eq!(r["config"]["metadata"]["gpu"], "H100");
        // $ per 1M output tokens = price × duration ÷ output tokens × 1e6.
        let (dur, out_tokens) = (
            r["duration"].as_f64().unwrap(),
            r["total_output_tokens"].as_f64().unwrap(),
        );
        let usd = r["cost"]["usd_per_1m_output_tokens"].as_f64().unwrap();
        let want = 36.0 * dur / 3600.0 / out_tokens * 1e6;
        assert!((usd / want - 1.0).abs() < 1e-9, "{usd} vs {want}");
        let cell = format!("{usd:.4}");
        assert_eq!(cells[col("$/1M out")], cell);
        // Joules per output token = served power × window ÷ output tokens, within 1%.
        let j = r["energy"]["joules_per_output_token"].as_f64().unwrap();
        let want = 350.0 * dur / out_tokens;
        assert!((j / want - 1.0).abs() < 0.01, "{j} vs {want}");
        assert_eq!(r["energy"]["gpu_util_mean_pct"], 50.0);
    }
    assert!(
        text.contains("servebench plot") && text.contains("s.sweep.json"),
        "{text}"
    );

    let step = dir.path().join("s-n8.json");
    let report = stdout(&servebench(&["report", step.to_str().unwrap()]));
    for want in [
        "Label:",
        "tgi-2.3",
        "Metadata:",
        "gpu=H100",
        "$ per 1M output tokens:",
        "Joules per output token:",
    ] {
        assert!(report.contains(want), "{want}: {report}");
    }
    let sweep = dir.path().join("s.sweep.json");
    let sweep = sweep.to_str().unwrap();
    let compare = stdout(&servebench(&["compare", sweep, step.to_str().unwrap()]));
    assert!(compare.contains("A = tgi-2.3 [gpu=H100]"), "{compare}");
    assert!(compare.contains("usd_per_1m_output_tokens"), "{compare}");
    let plots = dir.path().join("plots");
    stdout(&servebench(&[
        "plot",
        sweep,
        "-o",
        plots.to_str().unwrap(),
        "--format",
        "svg",
    ]));
    let svg = std::fs::read_to_string(plots.join("ttft-num_prompts.svg")).unwrap();
    assert!(
        svg.contains("tgi-2.3 [gpu=H100]"),
        "the legend names the run"
    );

    // CSV: a result is one row with every summary key; a sweep a row per step; records a
    // row per request.
    let csv_of = |file: &str| {
        let text = stdout(&servebench(&["report", file, "--format", "csv"]));
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let head: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
        let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        (head, rows)
    };
    let (head, rows) = csv_of(step.to_str().unwrap());
    assert_eq!(rows.len(), 1);
    let summary = json(&step)["summary"].as_object().unwrap().clone();
    for key in summary.keys() {
        let key = format!("summary.{key}");
        assert!(
            head.iter()
                .any(|h| *h == key || h.starts_with(&format!("{key}."))),
            "{key}"
        );
    }
    let at = |name: &str| head.iter().position(|h| h == name).unwrap();
    assert_eq!(&rows[0][at("summary.completed")], "8");
    assert_eq!(&rows[0][at("label")], "tgi-2.3");
    let (head, rows) = csv_of(sweep);
    assert_eq!(rows.len(), 2);
    assert!(head.iter().any(|h| h == "output_throughput"));
    let records = dir.path().join("s-n8.records.jsonl");
    let (head, rows) = csv_of(records.to_str().unwrap());
    assert_eq!(rows.len(), 8);
    let gaps = &rows[0][head.iter().position(|h| h == "itl_gaps_ms").unwrap()];
    assert_eq!(gaps.split(' ').count(), 7, "{gaps}");

    // Markdown: the report's blocks and the sweep's table, as pipe tables.
    let md = stdout(&servebench(&[
        "report",
        step.to_str().unwrap(),
        "--format",
        "markdown",
    ]));
    assert!(md.contains("| Label | tgi-2.3 |"), "{md}");
    let md = stdout(&servebench(&["report", sweep, "--format", "markdown"]));
    assert_eq!(
        md.lines()
            .filter(|l| l.starts_with("| 4 ") || l.starts_with("| 8 "))
            .count(),
        2,
        "{md}"
    );
}
