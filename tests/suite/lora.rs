//! Multi-LoRA traffic (`--lora-modules NAME[:WEIGHT],...`), over real HTTP on
//! 127.0.0.1 against the built-in simulator serving adapters with a known load time: each
//! request goes to an adapter drawn by weight and its record keeps it; the swap penalty equals
//! the simulator's truth (a request to an adapter that is not resident has TTFT = base TTFT +
//! load time, within 1 ms); each adapter's figures are its requests' figures; an adapter the
//! server does not know is a named failure; the report and CSV show each adapter; `compare`
//! shows each adapter's figures side by side, and a sweep's `plot` a line per adapter, their
//! names escaped.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{execute, run_config, run_fails, stdout_of};
use servebench::config::lora::LoraModule;
use servebench::config::{BackendKind, RunConfig};
use servebench::measure::record::{FailureKind, Outcome, RequestRecord};
use servebench::sim::{LoraConfig, SimConfig, SimServer};

/// The figures `compare` and a sweep's CSV show for each adapter.
const ADAPTER_KEYS: [&str; 7] = [
    "mean_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "output_throughput",
    "request_goodput",
    "completed",
    "failed",
];

const TTFT_MS: f64 = 30.0;
const LOAD_MS: f64 = 40.0;

/// The exact simulator serving `adapters`, `max_resident` of them at once.
async fn lora_sim(adapters: &[&str], max_resident: usize) -> SimServer {
    let cfg = SimConfig {
        ttft: Duration::from_millis(TTFT_MS as u64),
        itl: Duration::from_millis(2),
        seed: 3,
        lora: Some(LoraConfig {
            adapters: adapters.iter().map(|a| a.to_string()).collect(),
            max_resident,
            load_time: Duration::from_millis(LOAD_MS as u64),
        }),
        ..SimConfig::default()
    };
    common::spawn_sim(cfg).await
}

/// `n` requests, one at a time, to adapters `names` of equal weight.
fn config(base_url: String, names: &[&str], n: u64) -> RunConfig {
    let mut cfg = run_config(base_url, BackendKind::Openai, n, 1, 8, 4);
    cfg.lora_modules = (names.iter())
        .map(|name| LoraModule {
            name: name.to_string(),
            weight: 1.0,
        })
        .collect();
    cfg
}

fn ttft_ms(r: &RequestRecord) -> f64 {
    (r.chunk_ns[0] - r.sent_ns) as f64 / 1e6
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// 3 adapters, 1 resident, a 40 ms load, requests one at a time: a request to
/// the adapter of the request before it finds it resident (TTFT = 30 ms), any other loads it
/// (TTFT = 30 + 40 ms), and the server reports the load as its queueing. The loads counted by
/// the client equal the simulator's; every record
/// names its adapter; each adapter's figures are its own requests'. Counts exactly in every
/// run, never early in every run; the medians within 1 ms on the best of 3 runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_resident_adapter_costs_its_load_time_exactly() {
    let names = ["a", "b", "c"];
    let n = 30u64;
    let mut attempts = Vec::new();
    for _ in 0..3 {
        let server = lora_sim(&names, 1).await;
        let dir = tempfile::tempdir().unwrap();
        let (result, records) = execute(
            config(server.base_url(), &names, n),
            dir.path(),
            "r.json",
            false,
        )
        .await;
        let loads = server.stats().lora_loads;
        server.shutdown().await;

        let mut measured: Vec<_> = records.into_iter().filter(|r| !r.warmup).collect();
        measured.sort_by_key(|r| r.sent_ns);
        assert_eq!(measured.len() as u64, n);
        assert_eq!(
            result.summary.completed, n,
            "{:?}",
            result.summary.failures_by_kind
        );
        // Which requests swapped: their adapter is not the one before them (the first loads).
        let mut before: Option<&str> = None;
        let (mut swapped, mut resident) = (Vec::new(), Vec::new());
        for r in &measured {
            let adapter = r
                .adapter
                .as_deref()
                .expect("every record names its adapter");
            assert!(names.contains(&adapter), "{adapter}");
            let ms = ttft_ms(r);
            // The server says where the time went: the load is its queueing (vLLM's
            // `queue_time_ms`), before a prefill of the configured TTFT.
            let metrics = r
                .server_request_metrics
                .as_ref()
                .expect("the server's metrics");
            let queued = metrics["queue_time_ms"].as_f64().unwrap_or(-1.0);
            let load = if before == Some(adapter) {
                0.0
            } else {
                LOAD_MS
            };
            assert!(
                (queued - load).abs() < 1e-6,
                "{adapter}: queued {queued} ms"
            );
            if before == Some(adapter) {
                assert!(ms >= TTFT_MS - 0.05, "resident: {ms} ms, before the truth");
                resident.push(ms);
            } else {
                assert!(
                    ms >= TTFT_MS + LOAD_MS - 0.05,
                    "loaded: {ms} ms, before the truth"
                );
                swapped.push(ms);
            }
            before = Some(adapter);
        }
        assert_eq!(swapped.len() as u64, loads, "the simulator's loads");
        assert!(
            !resident.is_empty() && swapped.len() > 1,
            "{swapped:?} {resident:?}"
        );

        // Each adapter's figures are its requests': the mix sent and the mean TTFT.
        let mut by: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for r in &measured {
            by.entry(r.adapter.as_deref().unwrap_or_default())
                .or_default()
                .push(ttft_ms(r));
        }
        assert_eq!(
            result
                .per_adapter
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            by.keys().copied().collect::<Vec<_>>()
        );
        let mut sent = 0;
        for (name, ttfts) in &by {
            let a = &result.per_adapter[*name];
            assert_eq!(
                (a.sent, a.completed, a.failed),
                (ttfts.len() as u64, ttfts.len() as u64, 0)
            );
            assert!((a.share - ttfts.len() as f64 / n as f64).abs() < 1e-12);
            let mean = ttfts.iter().sum::<f64>() / ttfts.len() as f64;
            let got = a.ttft_ms.as_ref().unwrap().mean;
            assert!((got - mean).abs() < 1e-6, "{name}: {got} against {mean}");
            sent += a.sent;
        }
        assert_eq!(sent, n);
        let total: f64 = result
            .per_adapter
            .values()
            .map(|a| a.request_throughput)
            .sum();
        assert!((total - result.summary.request_throughput).abs() < 1e-9);

        let (s, r) = (median(swapped), median(resident));
        if (s - (TTFT_MS + LOAD_MS)).abs() <= 1.0 && (r - TTFT_MS).abs() <= 1.0 {
            return;
        }
        attempts.push((s, r));
    }
    panic!("median TTFT off the truth ({TTFT_MS} + {LOAD_MS} ms swapped, {TTFT_MS} ms resident) in every attempt: {attempts:?}");
}

/// A request to an adapter the server does not serve fails as `http_status` 404 with the
/// server's words naming it; the others succeed, and the run goes on and saves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_adapter_is_a_named_failure() {
    let server = lora_sim(&["a", "b"], 2).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(server.base_url(), &["a", "b", "nope"], 24);
    let (result, records) = execute(cfg, dir.path(), "r.json", false).await;
    server.shutdown().await;
    let unknown = records
        .iter()
        .filter(|r| r.adapter.as_deref() == Some("nope"))
        .count() as u64;
    assert!(unknown > 0, "the draw sent none to the unknown adapter");
    let s = &result.summary;
    assert_eq!((s.completed, s.failed), (24 - unknown, unknown));
    for r in &records {
        match (&r.outcome, r.adapter.as_deref()) {
            (Outcome::Failed { kind, message }, Some("nope")) => {
                assert_eq!(*kind, FailureKind::HttpStatus);
                assert_eq!(r.http_status, Some(404));
                assert!(
                    message.contains("The model `nope` does not exist"),
                    "{message}"
                );
            }
            (Outcome::Ok, Some("a" | "b")) => {}
            other => panic!("{other:?}"),
        }
    }
    let nope = &result.per_adapter["nope"];
    assert_eq!((nope.sent, nope.failed), (unknown, unknown));
    assert_eq!(nope.failures_by_kind.get("http_status"), Some(&unknown));
}

/// `run --lora-modules` against the built-in simulator (vLLM's bare names, and weights): the
/// report has a block per adapter with the mix sent, the CSV a column per adapter's figure;
/// a bad weight is a line naming the flag and the weight, exit 2.
#[test]
fn the_report_and_csv_show_each_adapter() {
    let dir = tempfile::tempdir().unwrap();
    let d = common::path_str(dir.path());
    let common_args = [
        "run",
        "--sim-preset",
        "exact",
        "--num-prompts",
        "20",
        "--max-concurrency",
        "4",
        "--output-len",
        "4",
        "--no-tui",
        "--result-dir",
        d,
    ];
    let mut args = common_args.to_vec();
    args.extend([
        "--result-filename",
        "w.json",
        "--lora-modules",
        "sql:3,chat:1",
    ]);
    let report = stdout_of(&args);
    assert!(report.contains("LoRA adapters (2)"), "{report}");
    for label in [
        "Adapter chat:",
        "Adapter sql:",
        "  Mean TTFT (ms):",
        "  Mean TPOT (ms):",
    ] {
        assert!(
            report.lines().any(|l| l.starts_with(label)),
            "{label}:\n{report}"
        );
    }
    let csv = stdout_of(&["report", &format!("{d}/w.json"), "--format", "csv"]);
    let head = csv.lines().next().unwrap_or_default();
    for column in ["per_adapter.sql.ttft_ms.mean", "per_adapter.chat.sent"] {
        assert!(head.contains(column), "{column}: {head}");
    }
    let mut bare = common_args.to_vec();
    bare.extend(["--result-filename", "b.json", "--lora-modules", "x", "y"]);
    let report = stdout_of(&bare);
    assert!(report.contains("LoRA adapters (2)"), "{report}");
    let mut bad = common_args.to_vec();
    bad.extend(["--result-filename", "bad.json", "--lora-modules", "a:0"]);
    let err = run_fails(&bad);
    // clap's one line, then its hint to try --help.
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains("--lora-modules") && first.contains("weight 0"),
        "{err}"
    );
}

/// A multi-LoRA run against the built-in exact simulator, saved as `dir/file`: 20 requests,
/// at most 4 at once, to `lora`'s adapters, a TTFT SLO (so each adapter has a goodput);
/// `num_prompts` may be a sweep's list. Its result document.
fn lora_run(dir: &std::path::Path, file: &str, num_prompts: &str, lora: &str) {
    stdout_of(&[
        "run",
        "--sim-preset",
        "exact",
        "--num-prompts",
        num_prompts,
        "--max-concurrency",
        "4",
        "--output-len",
        "4",
        "--goodput",
        "ttft:1000",
        "--no-tui",
        "--result-dir",
        common::path_str(dir),
        "--result-filename",
        file,
        "--lora-modules",
        lora,
    ]);
}

/// The figure `compare` shows per adapter, read from a result document's `per_adapter`
/// entry: `null` where the run has no such figure.
fn adapter_figure(a: &serde_json::Value, key: &str) -> serde_json::Value {
    let p99 = |d: &serde_json::Value| {
        (d["percentiles"].as_array().into_iter().flatten())
            .find(|p| p[0] == 99.0)
            .map_or(serde_json::Value::Null, |p| p[1].clone())
    };
    match key {
        "mean_ttft_ms" => a["ttft_ms"]["mean"].clone(),
        "p99_ttft_ms" => p99(&a["ttft_ms"]),
        "mean_tpot_ms" => a["tpot_ms"]["mean"].clone(),
        "output_throughput" => a["output_throughput"].clone(),
        "request_goodput" => a["request_goodput"].clone(),
        "completed" => a["completed"].clone(),
        "failed" => a["failed"].clone(),
        other => panic!("{other}"),
    }
}

/// `compare` of two runs with `--lora-modules a,b` and one with `a` only, all
/// against the exact simulator: the JSON has a block per adapter whose values are, input by
/// input, that result's `per_adapter` figures (mean and p99 TTFT, mean TPOT, output
/// throughput, goodput, completed and failed), `null` and not present where the input lacks
/// the adapter; the text shows each adapter under its line, `absent` where lacking; the CSV
/// has a row per document's adapter with its figures.
#[test]
fn compare_shows_each_adapter_s_figures_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    lora_run(d, "a.json", "20", "a,b");
    lora_run(d, "b.json", "20", "a,b");
    lora_run(d, "c.json", "20", "a");
    let files: Vec<String> = (["a.json", "b.json", "c.json"].iter())
        .map(|f| common::path_str(&d.join(f)).to_string())
        .collect();
    let results: Vec<serde_json::Value> = files.iter().map(|f| common::json(f.as_ref())).collect();
    let mut args = vec!["compare"];
    args.extend(files.iter().map(String::as_str));
    let mut json_args = args.clone();
    json_args.extend(["--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout_of(&json_args)).unwrap();
    let adapters = v["groups"][0]["steps"][0]["adapters"]
        .as_array()
        .expect("the step's adapters");
    let names: Vec<&str> = adapters
        .iter()
        .filter_map(|a| a["adapter"].as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    for block in adapters {
        let name = block["adapter"].as_str().unwrap_or_default();
        let present: Vec<bool> = results
            .iter()
            .map(|r| r["per_adapter"].get(name).is_some())
            .collect();
        assert_eq!(block["present"], serde_json::json!(present), "{name}");
        let rows = block["rows"].as_array().expect("rows");
        let keys: Vec<&str> = rows.iter().filter_map(|r| r["metric"].as_str()).collect();
        for key in ADAPTER_KEYS {
            let row = (rows.iter())
                .find(|r| r["metric"] == key)
                .unwrap_or_else(|| panic!("{name}: no {key} in {keys:?}"));
            let want: Vec<Option<f64>> = (results.iter())
                .map(|r| match r["per_adapter"].get(name) {
                    Some(a) => adapter_figure(a, key).as_f64(),
                    None => None,
                })
                .collect();
            assert!(want[0].is_some(), "{name} {key}: {want:?}");
            let got: Vec<Option<f64>> = (row["values"].as_array().into_iter().flatten())
                .map(serde_json::Value::as_f64)
                .collect();
            assert_eq!(got, want, "{name} {key}");
        }
    }
    let text = stdout_of(&args);
    assert!(text.contains("\n  LoRA adapter a\n"), "{text}");
    let b = text
        .split("\n  LoRA adapter b (absent in C)\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    let ttft = b
        .lines()
        .find(|l| l.trim_start().starts_with("mean_ttft_ms"));
    assert!(ttft.is_some_and(|l| l.contains(" absent ")), "{b}");

    let mut csv_args = args.clone();
    csv_args.extend(["--format", "csv"]);
    let csv = stdout_of(&csv_args);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let head = reader.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).expect(name);
    let (doc, adapter, ttft) = (col("document"), col("adapter"), col("mean_ttft_ms"));
    let mut seen = Vec::new();
    for row in reader.records().map(Result::unwrap) {
        let i = files
            .iter()
            .position(|f| f == &row[doc])
            .expect("a document");
        let name = &row[adapter];
        let want = match name {
            "" => results[i]["mean_ttft_ms"].as_f64(),
            name => results[i]["per_adapter"][name]["ttft_ms"]["mean"].as_f64(),
        };
        assert_eq!(row[ttft].parse::<f64>().ok(), want, "{csv}");
        seen.push((i, name.to_string()));
    }
    let want: Vec<(usize, String)> = [(0, ""), (0, "a"), (0, "b"), (1, ""), (1, "a")]
        .into_iter()
        .chain([(1, "b"), (2, ""), (2, "a")])
        .map(|(i, n)| (i, n.to_string()))
        .collect();
    assert_eq!(seen, want);
}

/// Adapter names in a result document are outside text: names carrying a
/// terminal escape, a spreadsheet formula and markup are escaped in `compare`'s text (the
/// escape visible), CSV (a leading `'`) and Markdown (`&lt;`), and kept exactly in its JSON.
#[test]
fn hostile_adapter_names_are_escaped_in_compare() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    lora_run(d, "a.json", "20", "a,b");
    let mut hostile = common::json(&d.join("a.json"));
    let per = hostile["per_adapter"].as_object_mut().unwrap();
    let (a, b) = (per.remove("a").unwrap(), per.remove("b").unwrap());
    let names = [
        "\u{1b}[2Jred",
        "=cmd|' /C calc'!A0",
        "<script>alert(1)</script>",
    ];
    per.insert(names[0].into(), a.clone());
    per.insert(names[1].into(), b);
    per.insert(names[2].into(), a);
    std::fs::write(d.join("h.json"), hostile.to_string()).unwrap();
    let (a, h) = (d.join("a.json"), d.join("h.json"));
    let args = ["compare", common::path_str(&a), common::path_str(&h)];
    let with = |format: &str| {
        let mut v = args.to_vec();
        v.extend(["--format", format]);
        stdout_of(&v)
    };
    let text = stdout_of(&args);
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(
        text.contains("\n  LoRA adapter \\x1b[2Jred (absent in A)\n"),
        "{text}"
    );
    let csv = with("csv");
    let cells: Vec<String> = (csv::Reader::from_reader(csv.as_bytes()).records())
        .flat_map(|r| r.unwrap().iter().map(str::to_string).collect::<Vec<_>>())
        .collect();
    assert!(cells.iter().any(|c| c == "'=cmd|' /C calc'!A0"), "{csv}");
    assert!(!cells.iter().any(|c| c.starts_with('=')), "{csv}");
    let md = with("markdown");
    assert!(!md.contains("<script>") && !md.contains('\u{1b}'), "{md}");
    assert!(
        md.contains("##### LoRA adapter &lt;script&gt;alert(1)&lt;/script&gt; (absent in A)"),
        "{md}"
    );
    let json: serde_json::Value = serde_json::from_str(&with("json")).unwrap();
    let shown: Vec<&str> = (json["groups"][0]["steps"][0]["adapters"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|a| a["adapter"].as_str())
        .collect();
    let mut want = names.to_vec();
    want.extend(["a", "b"]);
    want.sort();
    assert_eq!(shown, want);
}

/// A sweep with `--lora-modules sql,chat` plots a chart per figure with a line
/// per adapter (`mean_ttft_ms_by_adapter-num_prompts` ...), each naming both adapters; an
/// adapter named with markup and a terminal escape is escaped in the SVG and in the sweep's
/// HTML page, which has the charts too.
#[test]
fn a_sweep_plots_a_line_per_adapter() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    lora_run(d, "s.json", "8,16", "sql,chat");
    let names = common::sweep_chart_names(d);
    for chart in [
        "mean_ttft_ms_by_adapter-num_prompts.svg",
        "p99_ttft_ms_by_adapter-num_prompts.svg",
        "mean_tpot_ms_by_adapter-num_prompts.svg",
        "output_throughput_by_adapter-num_prompts.svg",
        "request_goodput_by_adapter-num_prompts.svg",
    ] {
        assert!(names.iter().any(|n| n == chart), "{chart}: {names:?}");
        let svg = std::fs::read_to_string(d.join("charts").join(chart)).unwrap();
        for adapter in ["sql", "chat"] {
            assert!(
                svg.contains(&format!(">\n{adapter}\n</text>")),
                "{chart}: {adapter}"
            );
        }
    }
    // The chat adapter renamed in each step's result: outside text.
    let sweep = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".sweep.json"))
        .unwrap();
    let doc = common::json(&sweep);
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for step in steps {
        let file = d.join(step["result"].as_str().unwrap());
        let mut r = common::json(&file);
        let per = r["per_adapter"].as_object_mut().unwrap();
        let chat = per.remove("chat").unwrap();
        per.insert("<script>x</script>\u{1b}]0;t\u{7}".into(), chat);
        std::fs::write(&file, r.to_string()).unwrap();
    }
    std::fs::remove_dir_all(d.join("charts")).unwrap();
    common::sweep_chart_names(d);
    let svg =
        std::fs::read_to_string(d.join("charts/mean_ttft_ms_by_adapter-num_prompts.svg")).unwrap();
    let escaped = "&lt;script&gt;x&lt;/script&gt;\\x1b]0;t\\x07";
    assert!(svg.contains(escaped), "{svg}");
    assert!(!svg.contains("<script") && !svg.contains('\u{1b}'), "{svg}");
    let html = stdout_of(&["report", common::path_str(&sweep), "--format", "html"]);
    assert!(html.contains("id=\"mean_ttft_ms_by_adapter-num_prompts\"><svg"));
    assert!(html.contains(escaped));
    assert!(!html.contains("<script") && !html.contains('\u{1b}'));
}

/// `report SWEEP --format csv` of a sweep with `--lora-modules a,b` against the
/// exact simulator has compare's long form: an `adapter` column, each step's own row (the
/// adapter empty) and a row per adapter after it, whose figures are that step result's
/// `per_adapter` values; an adapter named with a spreadsheet formula and a terminal escape
/// is a cell starting with `'`, its escape made visible, in the sweep's CSV and in the
/// column names of a run's one-row CSV.
#[test]
fn a_sweep_s_csv_has_a_row_per_adapter_per_step() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    lora_run(d, "s.json", "8,16", "a,b");
    let sweep = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".sweep.json"))
        .unwrap();
    let csv_of = |file: &std::path::Path| {
        let text = stdout_of(&["report", common::path_str(file), "--format", "csv"]);
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let head: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        let rows: Vec<BTreeMap<String, String>> = (reader.records())
            .map(|r| {
                head.iter()
                    .cloned()
                    .zip(r.unwrap().iter().map(String::from))
                    .collect()
            })
            .collect();
        (head, rows)
    };
    let (head, rows) = csv_of(&sweep);
    assert_eq!(head[3], "adapter", "{head:?}");
    let doc = common::json(&sweep);
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(rows.len(), steps.len() * 3, "{rows:?}");
    let keys = ADAPTER_KEYS;
    for (i, step) in steps.iter().enumerate() {
        let result = common::json(&d.join(step["result"].as_str().unwrap()));
        let load = result["num_prompts"].as_u64().unwrap().to_string();
        let mine = &rows[i * 3..i * 3 + 3];
        let adapters: Vec<&str> = mine.iter().map(|r| r["adapter"].as_str()).collect();
        assert_eq!(adapters, ["", "a", "b"], "step {i}");
        assert!(
            mine.iter().all(|r| r["value"] == load),
            "step {i}: {mine:?}"
        );
        for row in &mine[1..] {
            let per = &result["per_adapter"][row["adapter"].as_str()];
            for key in keys {
                let want = adapter_figure(per, key).as_f64().expect(key);
                let got: f64 = row[key]
                    .parse()
                    .unwrap_or_else(|_| panic!("{key}: {row:?}"));
                assert_eq!(got, want, "step {i} adapter {} {key}", row["adapter"]);
            }
        }
        assert_eq!(
            mine[0]["completed"],
            result["completed"].to_string(),
            "step {i}"
        );
    }
    // Adapter b renamed in each step's result: outside text.
    let hostile = "=cmd|' /C calc'!A0\u{1b}[2J";
    for step in steps {
        let file = d.join(step["result"].as_str().unwrap());
        let mut r = common::json(&file);
        let per = r["per_adapter"].as_object_mut().unwrap();
        let b = per.remove("b").unwrap();
        per.insert(hostile.into(), b);
        std::fs::write(&file, r.to_string()).unwrap();
    }
    let (_, rows) = csv_of(&sweep);
    let shown = "'=cmd|' /C calc'!A0\\x1b[2J";
    assert_eq!(rows.iter().filter(|r| r["adapter"] == shown).count(), 2);
    assert!(!rows
        .iter()
        .flat_map(|r| r.values())
        .any(|c| c.starts_with('=') || c.contains('\u{1b}')));
    let step = d.join(steps[0]["result"].as_str().unwrap());
    let (head, _) = csv_of(&step);
    let escaped = "per_adapter.=cmd|' /C calc'!A0\\x1b[2J.completed";
    assert!(head.iter().any(|h| h == escaped), "{head:?}");
    assert!(!head.iter().any(|h| h.contains('\u{1b}')), "{head:?}");
}
