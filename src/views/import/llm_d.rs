//! llm-d's Benchmark Report (llm-d-benchmark's common schema, version `0.2`, and `0.2.1`, its
//! additive superset) read into a [`View`]: one step per report (a file holds one report, or a
//! JSON array of them: a sweep, as `report --format llm-d` writes it). Any tool may have written
//! it (llm-d's converters from vLLM, GuideLLM, AIPerf and inference-perf, or servebench).
//!
//! Also the schema's vocabulary both directions share ([`LATENCIES`], [`PERCENTILES`],
//! [`THROUGHPUTS`], [`VERSION`]): `render::llm_d` writes with it. The mapping, field by field,
//! and what is left out is `docs/metrics.md` ("llm-d Benchmark Report"). Reads no file itself
//! and knows no other format. To map one more field, add it here and to the writer together.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::config::figure::{FigureKey, RunFigure};
use crate::config::metric::{MetricKey, Stat};
use crate::config::{Metric, RequestRate};
use crate::views::error::ViewError;
use crate::views::import::common::{label_of, varying_parameter};
use crate::views::model::{Load, Origin, Series, Step, View, Workload};

/// The version servebench writes.
pub const VERSION: &str = "0.2";
/// The versions servebench reads: `0.2.1` only adds optional multimodal fields to `0.2`.
pub const READ_VERSIONS: [&str; 2] = ["0.2", "0.2.1"];
/// The `scenario.load.standardized.tool` servebench writes.
pub const TOOL: &str = "servebench";
/// The most reports one file may hold (the steps of a sweep).
pub const MAX_REPORTS: usize = 10_000;

/// `results.request_performance.aggregate.latency`'s fields and servebench's metric for each:
/// the field, the metric, the unit it is written in, and the other unit it may come in (with
/// its factor to the first).
pub const LATENCIES: [(&str, Metric, &str, &str); 4] = [
    ("time_to_first_token", Metric::Ttft, "ms", "s"),
    ("time_per_output_token", Metric::Tpot, "ms/token", "s/token"),
    ("inter_token_latency", Metric::Itl, "ms/token", "s/token"),
    ("request_latency", Metric::E2el, "ms", "s"),
];

/// A `Statistics` object's percentile fields.
pub const PERCENTILES: [(&str, f64); 11] = [
    ("p0p1", 0.1),
    ("p1", 1.0),
    ("p5", 5.0),
    ("p10", 10.0),
    ("p25", 25.0),
    ("p50", 50.0),
    ("p75", 75.0),
    ("p90", 90.0),
    ("p95", 95.0),
    ("p99", 99.0),
    ("p99p9", 99.9),
];

/// `aggregate.throughput`'s fields servebench has a figure for, with their unit.
pub const THROUGHPUTS: [(&str, RunFigure, &str); 3] = [
    ("output_token_rate", RunFigure::OutputThroughput, "tokens/s"),
    (
        "total_token_rate",
        RunFigure::TotalTokenThroughput,
        "tokens/s",
    ),
    ("request_rate", RunFigure::RequestThroughput, "queries/s"),
];

/// Tools whose TPOT and ITL are vLLM's (and servebench's): their `time_per_output_token` and
/// `inter_token_latency` are read as servebench's TPOT and ITL; any other tool's are kept
/// under `llm_d_` names (the schema says they "may differ depending on tool").
const SAME_TOKEN_TIMES: [&str; 2] = [TOOL, "vllm-benchmark"];

/// Whether `value` looks like an llm-d Benchmark Report (of any version).
pub fn is_report(o: &Map<String, Value>) -> bool {
    o.get("version").is_some_and(Value::is_string)
        && o.get("run").is_some_and(Value::is_object)
        && o.get("results").is_some()
}

/// Reads one report, or an array of them, into a view (one step each).
pub fn llm_d(path: &Path, reports: Vec<Map<String, Value>>) -> Result<View, ViewError> {
    if reports.len() > MAX_REPORTS {
        return Err(ViewError::parse(
            path,
            format!(
                "{} llm-d reports, more than the {MAX_REPORTS} one import reads",
                reports.len()
            ),
        ));
    }
    let mut steps = Vec::with_capacity(reports.len());
    let mut notes = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        let (step, mut n) = report_step(path, r).map_err(|why| {
            let which = if reports.len() > 1 {
                format!("report {} of {}: ", i + 1, reports.len())
            } else {
                String::new()
            };
            ViewError::parse(path, format!("{which}{why}"))
        })?;
        notes.append(&mut n);
        steps.push(step);
    }
    notes.sort();
    notes.dedup();
    let parameter = varying_parameter(&steps);
    let tool = reports
        .first()
        .and_then(|r| pointer_str(r, "/scenario/load/standardized/tool"));
    let w = steps
        .first()
        .map(|s| s.workload.clone())
        .unwrap_or_default();
    Ok(View {
        label: label_of(tool.as_deref(), w.model.as_deref(), path),
        origin: Origin::Imported,
        format: "llm-d".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: format!("{} sweep", parameter.as_str()),
            parameter,
            steps,
        }],
        notes,
        llmperf_requests: Vec::new(),
    })
}

fn pointer_str(o: &Map<String, Value>, ptr: &str) -> Option<String> {
    let v = Value::Object(o.clone());
    v.pointer(ptr).and_then(Value::as_str).map(str::to_string)
}

/// One report as a step, with notes on what it could not say; `Err`: why it is refused.
fn report_step(path: &Path, r: &Map<String, Value>) -> Result<(Step, Vec<String>), String> {
    let version = r.get("version").and_then(Value::as_str).unwrap_or("");
    if !READ_VERSIONS.contains(&version) {
        return Err(format!(
            "llm-d Benchmark Report version {:?} is not supported (this build reads {})",
            crate::views::import::common::clip(version),
            READ_VERSIONS.join(" and ")
        ));
    }
    let doc = Value::Object(r.clone());
    let agg = doc
        .pointer("/results/request_performance/aggregate")
        .and_then(Value::as_object)
        .ok_or("llm-d report without results.request_performance.aggregate: no figures")?;
    let std = doc.pointer("/scenario/load/standardized");
    let tool = std.and_then(|s| s.get("tool")).and_then(Value::as_str);
    let mut notes = Vec::new();
    let mut m = BTreeMap::new();
    latencies(agg, tool, &mut m, &mut notes)?;
    let tput = agg.get("throughput").and_then(Value::as_object);
    for (field, fig, unit) in THROUGHPUTS {
        let Some(s) = tput.and_then(|t| t.get(field)).filter(|v| !v.is_null()) else {
            continue;
        };
        match s.get("units").and_then(Value::as_str) {
            Some(u) if u == unit => {}
            u => {
                let u = crate::views::import::common::clip(u.unwrap_or("none"));
                return Err(format!("{field} in units {u:?}: expected {unit}"));
            }
        }
        m.insert(fig.into(), number(s, "mean", field)?);
    }
    let reqs = agg.get("requests").and_then(Value::as_object);
    let total = reqs.and_then(|q| q.get("total")).and_then(Value::as_u64);
    let failures = reqs.and_then(|q| q.get("failures")).and_then(Value::as_u64);
    match (total, failures) {
        (Some(t), Some(f)) if f <= t => {
            m.insert(RunFigure::Completed.into(), (t - f) as f64);
            m.insert(RunFigure::Failed.into(), f as f64);
        }
        (Some(t), Some(f)) => return Err(format!("{f} failures of {t} requests")),
        (Some(_), None) => {
            notes.push("no requests.failures: completed and failed requests not known".into())
        }
        (None, _) => notes.push("no requests.total: the number of requests is not known".into()),
    }
    let mean_of = |k: &str| {
        reqs.and_then(|q| q.get(k))
            .and_then(|s| s.get("mean"))
            .and_then(Value::as_f64)
    };
    let input_len = std
        .and_then(|s| s.pointer("/input_seq_len/value"))
        .and_then(Value::as_f64);
    let output_len = std
        .and_then(|s| s.pointer("/output_seq_len/value"))
        .and_then(Value::as_f64);
    let args = doc.pointer("/scenario/load/native/args");
    let arg = |k: &str| {
        args.and_then(|a| a.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let rate = std
        .and_then(|s| s.get("rate_qps"))
        .and_then(Value::as_f64)
        .filter(|r| *r > 0.0)
        .map(|r| {
            if r.is_finite() {
                RequestRate::PerSecond(r)
            } else {
                RequestRate::Infinite
            }
        });
    let concurrency = std
        .and_then(|s| s.get("concurrency"))
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite() && *c >= 1.0)
        .map(|c| c as u64);
    if let Some(d) = doc
        .pointer("/run/time/duration")
        .and_then(Value::as_str)
        .and_then(iso_seconds)
    {
        m.insert(RunFigure::Duration.into(), d);
    }
    let step = Step {
        load: Load {
            num_prompts: total,
            max_concurrency: concurrency,
            request_rate: rate,
            ..Load::default()
        },
        workload: Workload {
            model: arg("model"),
            backend: arg("backend"),
            dataset: arg("dataset"),
            input_len: input_len.filter(|v| v.fract() == 0.0).map(|v| v as u64),
            output_len: output_len.filter(|v| v.fract() == 0.0).map(|v| v as u64),
            mean_input_tokens: mean_of("input_length"),
        },
        metrics: m,
        ..Step::from_source(path)
    };
    Ok((step, notes))
}

/// `aggregate.latency`'s statistics into `m` (TPOT and ITL of another tool under `llm_d_`
/// names, with a note); `Err`: a latency in a unit that is not a time.
fn latencies(
    agg: &Map<String, Value>,
    tool: Option<&str>,
    m: &mut BTreeMap<FigureKey, f64>,
    notes: &mut Vec<String>,
) -> Result<(), String> {
    let same_token_times = tool.is_some_and(|t| SAME_TOKEN_TIMES.contains(&t));
    let lat = agg.get("latency").and_then(Value::as_object);
    for (field, metric, unit, other) in LATENCIES {
        let Some(s) = lat.and_then(|l| l.get(field)).filter(|v| !v.is_null()) else {
            continue;
        };
        let factor = match s.get("units").and_then(Value::as_str) {
            Some(u) if u == unit => 1.0,
            Some(u) if u == other => 1e3,
            u => {
                let u = crate::views::import::common::clip(u.unwrap_or("none"));
                return Err(format!(
                    "{field} in units {u:?}: expected {unit} or {other}"
                ));
            }
        };
        let token_time = matches!(metric, Metric::Tpot | Metric::Itl);
        if token_time && !same_token_times {
            put_stats_foreign(m, field, s, factor);
            notes.push(format!(
                "{field} written by {}: kept as llm_d_{field} (the schema lets its definition differ by tool)",
                tool.unwrap_or("an unnamed tool")
            ));
        } else {
            put_stats(m, metric, s, factor)?;
        }
    }
    Ok(())
}

/// A `Statistics` object's `key` as a finite number; `Err` names the field.
fn number(s: &Value, key: &str, field: &str) -> Result<f64, String> {
    s.get(key)
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("{field} without a numeric {key}"))
}

/// A latency's `Statistics` under servebench's keys for `metric` (`factor` to ms).
fn put_stats(
    m: &mut BTreeMap<FigureKey, f64>,
    metric: Metric,
    s: &Value,
    factor: f64,
) -> Result<(), String> {
    let key = |stat| FigureKey::from(MetricKey::new(stat, metric));
    m.insert(key(Stat::Mean), number(s, "mean", metric.key())? * factor);
    let get = |k: &str| s.get(k).and_then(Value::as_f64).filter(|v| v.is_finite());
    if let Some(v) = get("stddev") {
        m.insert(key(Stat::Std), v * factor);
    }
    for (field, p) in PERCENTILES {
        if let Some(v) = get(field) {
            m.insert(key(Stat::Percentile(p)), v * factor);
            if field == "p50" {
                m.insert(key(Stat::Median), v * factor);
            }
        }
    }
    Ok(())
}

/// A token-time `Statistics` of a tool whose definition may differ, under `llm_d_` names.
fn put_stats_foreign(m: &mut BTreeMap<FigureKey, f64>, field: &str, s: &Value, factor: f64) {
    let get = |k: &str| s.get(k).and_then(Value::as_f64).filter(|v| v.is_finite());
    for stat in ["mean", "p50", "p90", "p99"] {
        if let Some(v) = get(stat) {
            m.insert(
                FigureKey::Other(format!("llm_d_{stat}_{field}_ms")),
                v * factor,
            );
        }
    }
}

/// Seconds of an ISO 8601 duration as llm-d writes it (`PT49.97S`, `PT1H2M3S`).
pub fn iso_seconds(s: &str) -> Option<f64> {
    let rest = s.strip_prefix("PT")?;
    let mut total = 0.0;
    let mut num = String::new();
    for c in rest.chars() {
        match c {
            '0'..='9' | '.' => num.push(c),
            'H' | 'M' | 'S' => {
                let v: f64 = num.parse().ok()?;
                total += v * match c {
                    'H' => 3600.0,
                    'M' => 60.0,
                    _ => 1.0,
                };
                num.clear();
            }
            _ => return None,
        }
    }
    (num.is_empty() && total.is_finite()).then_some(total)
}
