//! Other tools' formats both ways: llm-d's Benchmark Report written by `report --format llm-d`
//! and `run --save-llm-d` (validated against the schema file llm-d publishes) and read back by
//! `import`; and the result files AIPerf, GuideLLM and inference-perf wrote against `servebench
//! sim` (`tests/data/<tool>-<version>/`), imported and checked against the files' own numbers.

use std::path::Path;

use serde_json::Value;

use crate::common::{self, path_str as s, stdout_of};

const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/llm-d/br_v0_2_json_schema.json"
);

/// `common::run_fails`, whose refusal is one line naming `file`.
fn refused(args: &[&str], file: &str) -> String {
    let stderr = common::run_fails(args);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(file), "names {file}: {stderr}");
    stderr
}

// ------------------------------------------------------------- a small JSON Schema check

/// The ways `value` breaks the JSON Schema `schema` (the keywords llm-d's schema uses:
/// `$ref`, `anyOf`, `oneOf`, `type`, `enum`, `const`, `required`, `properties`,
/// `additionalProperties`, `items`, `minimum`), each with its JSON pointer; empty: valid.
fn violations(root: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let target = root
            .pointer(r.trim_start_matches('#'))
            .expect("ref resolves");
        return violations(root, target, value, at);
    }
    for (key, need) in [("anyOf", 1..usize::MAX), ("oneOf", 1..2)] {
        if let Some(alts) = schema.get(key).and_then(Value::as_array) {
            let ok = alts
                .iter()
                .filter(|a| violations(root, a, value, at).is_empty())
                .count();
            if !need.contains(&ok) {
                out.push(format!("{at}: {ok} of {key} match"));
            }
        }
    }
    if let Some(t) = schema.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            _ => true,
        };
        if !ok {
            out.push(format!("{at}: not {t}: {value}"));
            return out;
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        if !e.contains(value) {
            out.push(format!("{at}: {value} not in {e:?}"));
        }
    }
    if let Some(c) = schema.get("const") {
        if c != value {
            out.push(format!("{at}: {value} is not {c}"));
        }
    }
    if let (Some(min), Some(v)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) {
        if v < min {
            out.push(format!("{at}: {v} < {min}"));
        }
    }
    if let Value::Object(o) = value {
        let props = schema.get("properties").and_then(Value::as_object);
        for r in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !o.contains_key(r.as_str().unwrap()) {
                out.push(format!("{at}: required {r} missing"));
            }
        }
        for (k, v) in o {
            match props.and_then(|p| p.get(k)) {
                Some(sub) => out.extend(violations(root, sub, v, &format!("{at}/{k}"))),
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    out.push(format!("{at}: {k} is not allowed"))
                }
                None => {}
            }
        }
    }
    if let (Value::Array(a), Some(items)) = (value, schema.get("items")) {
        for (i, v) in a.iter().enumerate() {
            out.extend(violations(root, items, v, &format!("{at}/{i}")));
        }
    }
    out
}

/// Every report in `doc` (one, or an array of them) is valid against llm-d's v0.2 schema.
fn assert_valid(doc: &Value) {
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(SCHEMA).unwrap()).unwrap();
    let reports = match doc {
        Value::Array(a) => a.clone(),
        v => vec![v.clone()],
    };
    assert!(!reports.is_empty());
    for r in &reports {
        let v = violations(&schema, &schema, r, "");
        assert!(v.is_empty(), "{v:#?}\n{r:#}");
        assert_eq!(r["version"], "0.2");
    }
}

#[test]
fn the_schema_check_finds_what_breaks_the_schema() {
    let good = serde_json::json!({
        "version": "0.2",
        "run": {"uid": "x"},
        "results": {"request_performance": {"aggregate": {
            "requests": {"total": 3, "failures": 0},
            "latency": {"time_to_first_token": {"units": "ms", "mean": 1.5, "p99": 2}}
        }}}
    });
    assert_valid(&good);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(SCHEMA).unwrap()).unwrap();
    let bad = |ptr: &str, v: Value| {
        let mut doc = good.clone();
        *doc.pointer_mut(ptr).unwrap() = v;
        violations(&schema, &schema, &doc, "")
    };
    assert!(
        !bad("/run", serde_json::json!({})).is_empty(),
        "uid is required"
    );
    let units = "/results/request_performance/aggregate/latency/time_to_first_token/units";
    assert!(
        !bad(units, "minutes".into()).is_empty(),
        "units are an enum"
    );
    let total = "/results/request_performance/aggregate/requests/total";
    assert!(!bad(total, (-1).into()).is_empty(), "total >= 0");
    assert!(!bad(total, 1.5.into()).is_empty(), "total is an integer");
    let agg = "/results/request_performance/aggregate";
    assert!(
        !bad(agg, serde_json::json!({"latency": {"ttft": {}}})).is_empty(),
        "no field outside the schema"
    );
}

// ------------------------------------------------------------- llm-d: servebench → llm-d → import

const WORKLOAD: &[&str] = &[
    "--sim-preset",
    "exact",
    "--time-scale",
    "4",
    "--tokenizer",
    "words",
    "--input-len",
    "32",
    "--output-len",
    "8",
    "--metric-percentiles",
    "50,90,99",
    "--percentile-metrics",
    "ttft,tpot,itl,e2el",
    "--quiet",
];

/// Every row of a `compare --format json` of two inputs: (figure, A, B).
fn compared_rows(a: &Path, b: &Path) -> Vec<(String, Option<f64>, Option<f64>)> {
    let out = stdout_of(&["compare", s(a), s(b), "--format", "json"]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let mut rows = Vec::new();
    for g in doc["groups"].as_array().unwrap() {
        for st in g["steps"].as_array().unwrap() {
            for r in st["rows"].as_array().unwrap() {
                let v = r["values"].as_array().unwrap();
                rows.push((
                    format!("{} {}", st["step"], r["metric"]),
                    v[0].as_f64(),
                    v[1].as_f64(),
                ));
            }
        }
    }
    rows
}

/// The figures both inputs have are equal (to float printing), and the headline ones are there.
fn assert_same_figures(a: &Path, b: &Path, steps: usize) {
    let rows = compared_rows(a, b);
    let both: Vec<_> = rows
        .iter()
        .filter_map(|(m, x, y)| Some((m, (*x)?, (*y)?)))
        .collect();
    for (m, x, y) in &both {
        assert!((x - y).abs() <= 1e-9 * x.abs().max(1.0), "{m}: {x} vs {y}");
    }
    for key in [
        "output_throughput",
        "request_throughput",
        "completed",
        "failed",
        "mean_ttft_ms",
        "p99_ttft_ms",
        "median_tpot_ms",
        "p90_itl_ms",
        "std_e2el_ms",
    ] {
        let n = both
            .iter()
            .filter(|(m, ..)| m.ends_with(&format!(" \"{key}\"")))
            .count();
        assert_eq!(n, steps, "{key} compared in each step: {rows:#?}");
    }
}

#[test]
fn a_sim_run_written_as_llm_d_validates_and_imports_to_the_same_figures() {
    let dir = tempfile::tempdir().unwrap();
    let d = s(dir.path());
    let mut args = vec!["run", "--num-prompts", "16", "--max-concurrency", "4"];
    args.extend(WORKLOAD);
    args.extend([
        "--result-dir",
        d,
        "--result-filename",
        "a.json",
        "--save-llm-d",
    ]);
    stdout_of(&args);
    let saved = dir.path().join("a.llm-d.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_valid(&doc);
    let std = &doc["scenario"]["load"]["standardized"];
    assert_eq!(std["tool"], "servebench");
    assert_eq!(std["concurrency"], 4);
    assert_eq!(
        doc["results"]["request_performance"]["aggregate"]["requests"]["total"],
        16
    );
    // `report --format llm-d` of the saved result writes the same report.
    let a = dir.path().join("a.json");
    let printed = stdout_of(&["report", s(&a), "--format", "llm-d"]);
    assert_eq!(serde_json::from_str::<Value>(&printed).unwrap(), doc);
    let b = dir.path().join("b.imported.json");
    stdout_of(&["import", s(&saved), "-o", s(&b)]);
    assert_same_figures(&a, &b, 1);
}

#[test]
fn a_sweep_written_as_llm_d_is_a_report_per_step_and_imports_as_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let d = s(dir.path());
    let mut args = vec!["run", "--num-prompts", "12", "--max-concurrency", "1,3"];
    args.extend(WORKLOAD);
    args.extend(["--result-dir", d, "--result-filename", "s.json"]);
    stdout_of(&args);
    let sweep = dir.path().join("s.sweep.json");
    let printed = stdout_of(&["report", s(&sweep), "--format", "llm-d"]);
    let doc: Value = serde_json::from_str(&printed).unwrap();
    assert_valid(&doc);
    let reports = doc.as_array().unwrap();
    assert_eq!(reports.len(), 2);
    let stages: Vec<_> = reports
        .iter()
        .map(|r| r["scenario"]["load"]["standardized"]["stage"].clone())
        .collect();
    assert_eq!(stages, [0, 1]);
    assert_eq!(reports[0]["run"]["eid"], reports[1]["run"]["eid"]);
    let file = dir.path().join("s.llm-d.json");
    std::fs::write(&file, &printed).unwrap();
    let b = dir.path().join("s.imported.json");
    stdout_of(&["import", s(&file), "-o", s(&b)]);
    assert_same_figures(&sweep, &b, 2);
}

#[test]
fn an_llm_d_report_of_another_version_or_without_figures_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let report = |version: &str| {
        serde_json::json!({
            "version": version,
            "run": {"uid": "u"},
            "scenario": {"load": {
                "metadata": {},
                "standardized": {"tool": "guidellm", "tool_version": "0.8.1", "source": "random",
                                 "input_seq_len": {"distribution": "fixed", "value": 128},
                                 "rate_qps": 2.5},
                "native": {"args": {"model": "m"}}}},
            "results": {"request_performance": {"aggregate": {
                "requests": {"total": 10, "failures": 1},
                "latency": {
                    "time_to_first_token": {"units": "s", "mean": 0.25, "p50": 0.2, "p99": 0.5},
                    "time_per_output_token": {"units": "s/token", "mean": 0.01}},
                "throughput": {"output_token_rate": {"units": "tokens/s", "mean": 120.0}}}}}
        })
    };
    let write = |name: &str, v: &Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    // 0.2.1 only adds optional fields: read; seconds become milliseconds; another tool's TPOT
    // is kept under its own name.
    let ok = write("v021.json", &report("0.2.1"));
    let out = dir.path().join("v021.imported.json");
    stdout_of(&["import", s(&ok), "-o", s(&out)]);
    let doc = common::json(&out);
    let m = &doc["series"][0]["steps"][0]["metrics"];
    assert_eq!(m["mean_ttft_ms"], 250.0);
    assert_eq!(m["median_ttft_ms"], 200.0);
    assert_eq!(m["p99_ttft_ms"], 500.0);
    assert_eq!(m["completed"], 9.0);
    assert_eq!(m["failed"], 1.0);
    assert_eq!(m["output_throughput"], 120.0);
    assert!(m.get("mean_tpot_ms").is_none(), "{m}");
    assert_eq!(m["llm_d_mean_time_per_output_token_ms"], 10.0);
    let load = &doc["series"][0]["steps"][0]["load"];
    assert_eq!(load["request_rate"], "2.5");
    for (name, doc, why) in [
        (
            "v01.json",
            report("0.1"),
            "version \"0.1\" is not supported",
        ),
        (
            "v03.json",
            report("0.3"),
            "version \"0.3\" is not supported",
        ),
        (
            "nofig.json",
            serde_json::json!({"version": "0.2", "run": {"uid": "u"}, "results": {}}),
            "no figures",
        ),
        (
            "units.json",
            {
                let mut r = report("0.2");
                r["results"]["request_performance"]["aggregate"]["latency"]
                    ["time_to_first_token"]["units"] = "tokens/s".into();
                r
            },
            "time_to_first_token in units",
        ),
    ] {
        let p = write(name, &doc);
        let err = refused(
            &["import", s(&p), "-o", s(&dir.path().join("x.json"))],
            name,
        );
        assert!(err.contains(why), "{err}");
    }
}

#[test]
fn save_llm_d_is_refused_for_a_search_and_over_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("there.json");
    std::fs::write(&existing, "{}").unwrap();
    let mut args = vec!["run", "--num-prompts", "4", "--save-llm-d", s(&existing)];
    args.extend(WORKLOAD);
    args.extend(["--result-dir", s(dir.path())]);
    refused(&args, "there.json");
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "{}");
    let err = common::run_fails(&[
        "search",
        "--by",
        "concurrency",
        "--start",
        "1",
        "--max",
        "2",
        "--goodput",
        "ttft:500",
        "--save-llm-d",
    ]);
    assert!(err.contains("--save-llm-d"), "{err}");
}

// ------------------------------------------------------------- AIPerf, inference-perf, llm-d by others

fn data(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Imports `file` into `dir` and returns the imported document's first step.
fn import_step(dir: &Path, file: &Path) -> Value {
    let out = dir.join("x.imported.json");
    stdout_of(&["import", s(file), "-o", s(&out)]);
    common::json(&out)["series"][0]["steps"][0].clone()
}

fn close(what: &str, got: &Value, want: f64) {
    let g = got.as_f64().unwrap_or_else(|| panic!("{what}: {got}"));
    assert!(
        (g - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: {g} vs {want}"
    );
}

#[test]
fn aiperf_export_imports_with_its_records_as_per_request_data() {
    let dir = tempfile::tempdir().unwrap();
    let file = data("aiperf-0.13.0/profile_export_aiperf.json");
    let src = read_json(&file);
    let step = import_step(dir.path(), &file);
    let m = &step["metrics"];
    close(
        "completed",
        &m["completed"],
        src["request_count"]["avg"].as_f64().unwrap(),
    );
    close(
        "failed",
        &m["failed"],
        src["error_request_count"]["avg"].as_f64().unwrap(),
    );
    for (ours, theirs) in [
        ("output_throughput", "output_token_throughput"),
        ("request_throughput", "request_throughput"),
        ("total_token_throughput", "total_token_throughput"),
        ("duration", "benchmark_duration"),
    ] {
        close(ours, &m[ours], src[theirs]["avg"].as_f64().unwrap());
    }
    // From the records: the mean of the same requests is AIPerf's mean.
    for (ours, theirs) in [
        ("mean_ttft_ms", "time_to_first_token"),
        ("mean_e2el_ms", "request_latency"),
        ("mean_tpot_ms", "inter_token_latency"),
        ("mean_itl_ms", "inter_chunk_latency"),
    ] {
        let want = src[theirs]["avg"].as_f64().unwrap();
        let g = m[ours].as_f64().unwrap();
        assert!((g - want).abs() <= 1e-6 * want, "{ours}: {g} vs {want}");
    }
    let n = src["request_count"]["avg"].as_f64().unwrap() as usize;
    assert_eq!(step["samples"]["ttft_ms"].as_array().unwrap().len(), n);
    let ci = step["intervals"]["mean_ttft_ms"].as_array().unwrap();
    let mean = m["mean_ttft_ms"].as_f64().unwrap();
    assert!(
        ci[0].as_f64().unwrap() < mean && mean < ci[1].as_f64().unwrap(),
        "{ci:?}"
    );
    assert_eq!(step["load"]["max_concurrency"], 4);
    assert_eq!(step["workload"]["model"], "sim-model");

    // The summary alone (no records beside it): AIPerf's own percentiles, no intervals.
    let alone = dir.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    let copy = alone.join("profile_export_aiperf.json");
    std::fs::copy(&file, &copy).unwrap();
    let step = import_step(&alone, &copy);
    close(
        "p99_ttft_ms",
        &step["metrics"]["p99_ttft_ms"],
        src["time_to_first_token"]["p99"].as_f64().unwrap(),
    );
    assert!(step.get("intervals").is_none(), "{step}");

    // The records alone.
    let step = import_step(dir.path(), &data("aiperf-0.13.0/profile_export.jsonl"));
    close("completed", &step["metrics"]["completed"], n as f64);
    assert!(step["metrics"].get("output_throughput").is_none());
}

#[test]
fn an_aiperf_export_without_its_counts_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut src = read_json(&data("aiperf-0.13.0/profile_export_aiperf.json"));
    src.as_object_mut().unwrap().remove("request_count");
    let p = dir.path().join("cut_aiperf.json");
    std::fs::write(&p, src.to_string()).unwrap();
    let err = refused(
        &["import", s(&p), "-o", s(&dir.path().join("o.json"))],
        "cut_aiperf.json",
    );
    assert!(err.contains("without request_count"), "{err}");
    // A records file with a line that is not a record.
    let text = std::fs::read_to_string(data("aiperf-0.13.0/profile_export.jsonl")).unwrap();
    let p = dir.path().join("cut.jsonl");
    std::fs::write(
        &p,
        format!("{}\n{{\"metadata\"", text.lines().next().unwrap()),
    )
    .unwrap();
    let err = refused(
        &["import", s(&p), "-o", s(&dir.path().join("o.json"))],
        "cut.jsonl",
    );
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn inference_perf_reports_import_and_agree_with_its_llm_d_report() {
    let dir = tempfile::tempdir().unwrap();
    let file = data("inference-perf-0.7.0/stage_1_lifecycle_metrics.json");
    let src = read_json(&file);
    let step = import_step(dir.path(), &file);
    let m = &step["metrics"];
    close(
        "completed",
        &m["completed"],
        src["successes"]["count"].as_f64().unwrap(),
    );
    close(
        "failed",
        &m["failed"],
        src["failures"]["count"].as_f64().unwrap(),
    );
    let lat = &src["successes"]["latency"];
    close(
        "mean_ttft_ms",
        &m["mean_ttft_ms"],
        lat["time_to_first_token"]["mean"].as_f64().unwrap() * 1e3,
    );
    close(
        "p99.9_e2el_ms",
        &m["p99.9_e2el_ms"],
        lat["request_latency"]["p99.9"].as_f64().unwrap() * 1e3,
    );
    close(
        "median_itl_ms",
        &m["median_itl_ms"],
        lat["inter_token_latency"]["median"].as_f64().unwrap() * 1e3,
    );
    let tput = &src["successes"]["throughput"];
    close(
        "output_throughput",
        &m["output_throughput"],
        tput["output_tokens_per_sec"].as_f64().unwrap(),
    );
    let rate = src["load_summary"]["requested_rate"].as_f64().unwrap();
    assert_eq!(step["load"]["request_rate"], format!("{rate}"));
    // The llm-d report inference-perf wrote of the same stage (version 0.2.1, seconds) says
    // the same TTFT, E2EL and throughput.
    let llm_d = import_step(
        dir.path(),
        &data("inference-perf-0.7.0/llm-d-report.stage_1.json"),
    );
    for key in [
        "mean_ttft_ms",
        "p99_ttft_ms",
        "mean_e2el_ms",
        "output_throughput",
        "completed",
        "failed",
    ] {
        close(key, &llm_d["metrics"][key], m[key].as_f64().unwrap());
    }
    // Written back as llm-d: valid, and with no load generator claimed (inference-perf's
    // version is not known to servebench).
    let again = stdout_of(&[
        "report",
        s(&dir.path().join("x.imported.json")),
        "--format",
        "llm-d",
    ]);
    let again: Value = serde_json::from_str(&again).unwrap();
    assert_valid(&again);
    assert!(again.get("scenario").is_none(), "{again:#}");
    // `compare` reads both imports side by side.
    let a = dir.path().join("a.imported.json");
    let b = dir.path().join("b.imported.json");
    stdout_of(&["import", s(&file), "-o", s(&a)]);
    stdout_of(&[
        "import",
        s(&data("aiperf-0.13.0/profile_export_aiperf.json")),
        "-o",
        s(&b),
    ]);
    let rows = compared_rows(&a, &b);
    assert!(
        rows.iter()
            .any(|(m, x, y)| m.ends_with("\"mean_ttft_ms\"") && x.is_some() && y.is_some()),
        "{rows:#?}"
    );
    // Without its counts: refused, naming the file.
    let mut cut = src.clone();
    cut["successes"].as_object_mut().unwrap().remove("count");
    let p = dir.path().join("cut_lifecycle.json");
    std::fs::write(&p, cut.to_string()).unwrap();
    let err = refused(
        &["import", s(&p), "-o", s(&dir.path().join("o.json"))],
        "cut_lifecycle.json",
    );
    assert!(err.contains("without /successes/count"), "{err}");
}

// ------------------------------------------------------------- GuideLLM's benchmarks.json

const GUIDELLM: &str = "guidellm-0.8.1/benchmarks.json";

/// The mean of `field` over a GuideLLM benchmark's successful requests' records, × `f`.
fn records_mean(b: &Value, field: &str, f: f64) -> f64 {
    let v: Vec<f64> = b["requests"]["successful"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r[field].as_f64())
        .collect();
    v.iter().sum::<f64>() / v.len() as f64 * f
}

#[test]
fn guidellm_benchmarks_import_as_a_step_each_with_their_records() {
    let dir = tempfile::tempdir().unwrap();
    let file = data(GUIDELLM);
    let src = read_json(&file);
    let out = dir.path().join("g.imported.json");
    stdout_of(&["import", s(&file), "-o", s(&out)]);
    let doc = common::json(&out);
    let series = &doc["series"][0];
    assert_eq!(series["parameter"], "max_concurrency", "{series:#}");
    let benchmarks = src["benchmarks"].as_array().unwrap();
    let steps = series["steps"].as_array().unwrap();
    assert_eq!(steps.len(), benchmarks.len());
    for (b, step) in benchmarks.iter().zip(steps) {
        let m = &step["metrics"];
        let gm = &b["metrics"];
        let totals = &gm["request_totals"];
        close(
            "completed",
            &m["completed"],
            totals["successful"].as_f64().unwrap(),
        );
        close("failed", &m["failed"], totals["errored"].as_f64().unwrap());
        assert_eq!(
            step["load"]["max_concurrency"],
            b["config"]["strategy"]["streams"]
        );
        assert_eq!(step["load"]["num_prompts"], totals["total"]);
        close("duration", &m["duration"], b["duration"].as_f64().unwrap());
        for (ours, theirs) in [
            ("request_throughput", "requests_per_second"),
            ("output_throughput", "output_tokens_per_second"),
            ("total_token_throughput", "tokens_per_second"),
        ] {
            close(
                ours,
                &m[ours],
                gm[theirs]["successful"]["mean"].as_f64().unwrap(),
            );
        }
        close(
            "total_output_tokens",
            &m["total_output_tokens"],
            gm["output_token_count"]["successful"]["total_sum"]
                .as_f64()
                .unwrap(),
        );
        // GuideLLM's own definitions under its names.
        close(
            "guidellm_mean_time_per_output_token_ms",
            &m["guidellm_mean_time_per_output_token_ms"],
            gm["time_per_output_token_ms"]["successful"]["mean"]
                .as_f64()
                .unwrap(),
        );
        close(
            "guidellm_p99_inter_token_latency_ms",
            &m["guidellm_p99_inter_token_latency_ms"],
            gm["inter_token_latency_ms"]["successful"]["percentiles"]["p99"]
                .as_f64()
                .unwrap(),
        );
        // From every successful request's record: the same means GuideLLM's summary has.
        for (ours, field, f, summary) in [
            (
                "mean_ttft_ms",
                "time_to_first_token_ms",
                1.0,
                "time_to_first_token_ms",
            ),
            ("mean_e2el_ms", "request_latency", 1e3, "request_latency"),
            ("mean_tpot_ms", "inter_token_latency_ms", 1.0, ""),
        ] {
            let want = records_mean(b, field, f);
            let g = m[ours].as_f64().unwrap();
            assert!((g - want).abs() <= 1e-9 * want, "{ours}: {g} vs {want}");
            if !summary.is_empty() {
                let theirs = gm[summary]["successful"]["mean"].as_f64().unwrap() * f;
                assert!(
                    (g - theirs).abs() <= 1e-6 * theirs,
                    "{ours}: {g} vs {theirs}"
                );
            }
        }
        let n = totals["successful"].as_u64().unwrap() as usize;
        assert_eq!(step["samples"]["ttft_ms"].as_array().unwrap().len(), n);
        assert_eq!(step["samples"]["e2el_ms"].as_array().unwrap().len(), n);
        let ci = step["intervals"]["mean_ttft_ms"].as_array().unwrap();
        let mean = m["mean_ttft_ms"].as_f64().unwrap();
        assert!(
            ci[0].as_f64().unwrap() < mean && mean < ci[1].as_f64().unwrap(),
            "{ci:?}"
        );
        // Not stated by GuideLLM in servebench's definition: absent, never zero.
        assert!(m.get("mean_itl_ms").is_none(), "{m:#}");
        assert_eq!(step["workload"]["model"], "sim-model");
        assert_eq!(step["workload"]["input_len"], 32);
        assert_eq!(step["workload"]["output_len"], 16);
        // The simulator's truth (TTFT 30 ms, a token every 5 ms): GuideLLM's TTFT is never
        // early and its TPOT is the simulator's interval, within its client's overhead.
        let ttft = m["median_ttft_ms"].as_f64().unwrap();
        assert!((30.0..45.0).contains(&ttft), "median TTFT {ttft}");
        let tpot = m["mean_tpot_ms"].as_f64().unwrap();
        assert!((tpot - 5.0).abs() < 0.5, "mean TPOT {tpot}");
    }
}

#[test]
fn a_guidellm_import_compares_with_a_servebench_run_of_the_same_sim() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("g.imported.json");
    stdout_of(&["import", s(&data(GUIDELLM)), "-o", s(&g)]);
    let sim =
        common::SimProcess::start(&["--ttft-ms", "30", "--itl-ms", "5", "--model", "sim-model"]);
    stdout_of(&[
        "run",
        "--base-url",
        &sim.url,
        "--model",
        "sim-model",
        "--num-prompts",
        "12",
        "--max-concurrency",
        "1,4",
        "--input-len",
        "32",
        "--output-len",
        "16",
        "--tokenizer",
        "words",
        "--quiet",
        "--result-dir",
        s(dir.path()),
        "--result-filename",
        "sb.json",
    ]);
    // The same sweep (1 and 4 streams): each step is compared with GuideLLM's of its load.
    let rows = compared_rows(&dir.path().join("sb.sweep.json"), &g);
    for key in [
        "mean_ttft_ms",
        "p99_ttft_ms",
        "median_tpot_ms",
        "mean_e2el_ms",
        "output_throughput",
    ] {
        let both: Vec<_> = rows
            .iter()
            .filter(|(m, x, y)| m.ends_with(&format!("\"{key}\"")) && x.is_some() && y.is_some())
            .collect();
        assert_eq!(both.len(), 2, "{key} compared at both loads: {rows:#?}");
        // Both measured the same simulator (TTFT 30 ms): neither is early, both near it.
        if key == "mean_ttft_ms" {
            for (_, a, b) in both {
                for v in [a, b] {
                    assert!((30.0..200.0).contains(&v.unwrap()), "{key}: {v:?}");
                }
            }
        }
    }
}

#[test]
fn guidellm_reports_of_another_version_cut_or_without_metrics_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = read_json(&data(GUIDELLM));
    let o = s(&dir.path().join("o.json")).to_string();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let mut v3 = src.clone();
    v3["metadata"]["version"] = 3.into();
    let p = write("v3.json", &v3.to_string());
    let err = refused(&["import", s(&p), "-o", &o], "v3.json");
    assert!(err.contains("schema version 3"), "{err}");
    // Cut short as a killed writer leaves it (the file as GuideLLM wrote it, its first half).
    let text = std::fs::read_to_string(data(GUIDELLM)).unwrap();
    let p = write("cut.json", &text[..text.len() / 2]);
    let err = refused(&["import", s(&p), "-o", &o], "cut.json");
    assert!(err.contains("not whole JSON"), "{err}");
    let mut bare = src.clone();
    bare["benchmarks"][1]
        .as_object_mut()
        .unwrap()
        .remove("metrics");
    let p = write("bare.json", &bare.to_string());
    let err = refused(&["import", s(&p), "-o", &o], "bare.json");
    assert!(err.contains("benchmark 1 without metrics"), "{err}");
    let mut none = src.clone();
    none["benchmarks"] = Value::Array(Vec::new());
    let p = write("none.json", &none.to_string());
    let err = refused(&["import", s(&p), "-o", &o], "none.json");
    assert!(err.contains("without benchmarks"), "{err}");
    assert!(!dir.path().join("o.json").exists());
}
