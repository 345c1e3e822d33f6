//! GuideLLM's `benchmarks.json` (its report schema version 2, written by GuideLLM 0.8): every
//! benchmark of its run (one per strategy of its profile: a sweep's rates, a concurrent
//! profile's stream counts) is a step, its load read from the benchmark's strategy. The
//! summary's distributions of successful requests give the figures; when the file holds the
//! record of every successful request (GuideLLM keeps all of them unless `sample_size` is set),
//! TTFT, E2EL and TPOT are recomputed from the records under servebench's percentile method,
//! with their 95% intervals and per-request samples, so `compare` can judge them.
//!
//! Which GuideLLM figure is which servebench figure, and how their definitions differ (its
//! `time_per_output_token_ms` includes TTFT; its `inter_token_latency_ms` per request is
//! servebench's TPOT ending at the last token, and its summary of it is weighted by tokens):
//! `docs/metrics.md`, "GuideLLM". Figures of GuideLLM's own definition keep `guidellm_` names.
//! Reads no file (`views::import` hands it the parsed report) and knows no other format. To
//! map one more figure, add it to [`LATENCIES`], [`OWN`] or [`RUN`].

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::config::figure::{FigureKey, RunFigure};
use crate::config::metric::{MetricKey, Stat};
use crate::config::{Metric, RequestRate};
use crate::views::error::ViewError;
use crate::views::import::common::{clip, label_of, put_samples, varying_parameter};
use crate::views::model::{Load, Origin, Series, Step, View, Workload};

/// The report schema version this reads (GuideLLM 0.8's `metadata.version`).
pub const SCHEMA_VERSION: u64 = 2;
/// The most benchmarks one report may hold.
pub const MAX_BENCHMARKS: usize = 10_000;
/// The most per-request records one import reads, over all benchmarks.
pub const MAX_RECORDS: usize = 1_000_000;

/// GuideLLM's latency distributions with servebench's definition, each with its factor to ms.
const LATENCIES: [(&str, Metric, f64); 2] = [
    ("time_to_first_token_ms", Metric::Ttft, 1.0),
    ("request_latency", Metric::E2el, 1e3),
];

/// GuideLLM's distributions of its own definition, kept under `guidellm_` names (ms).
const OWN: [&str; 2] = ["time_per_output_token_ms", "inter_token_latency_ms"];

/// The statistics kept of a figure of GuideLLM's own definition.
const OWN_STATS: [(&str, &str); 4] = [
    ("mean", "mean"),
    ("median", "median"),
    ("p90", "p90"),
    ("p99", "p99"),
];

/// GuideLLM's run figures (the `successful` mean of each rate; they equal the successful
/// requests' total / the benchmark's duration) and servebench's.
const RUN: [(&str, RunFigure); 3] = [
    ("requests_per_second", RunFigure::RequestThroughput),
    ("output_tokens_per_second", RunFigure::OutputThroughput),
    ("tokens_per_second", RunFigure::TotalTokenThroughput),
];

/// GuideLLM's statistic names (in a distribution and its `percentiles`) and servebench's.
const STATS: [(&str, Stat); 14] = [
    ("mean", Stat::Mean),
    ("median", Stat::Median),
    ("std_dev", Stat::Std),
    ("p001", Stat::Percentile(0.1)),
    ("p01", Stat::Percentile(1.0)),
    ("p05", Stat::Percentile(5.0)),
    ("p10", Stat::Percentile(10.0)),
    ("p25", Stat::Percentile(25.0)),
    ("p50", Stat::Percentile(50.0)),
    ("p75", Stat::Percentile(75.0)),
    ("p90", Stat::Percentile(90.0)),
    ("p95", Stat::Percentile(95.0)),
    ("p99", Stat::Percentile(99.0)),
    ("p999", Stat::Percentile(99.9)),
];

/// Whether `o` is GuideLLM's report (any schema version: [`guidellm`] checks it).
pub fn is_report(o: &Map<String, Value>) -> bool {
    let first_type = at(o, "benchmarks", "/0/type_").and_then(Value::as_str);
    o.get("benchmarks").is_some()
        && (at(o, "metadata", "/guidellm_version").is_some()
            || first_type == Some("generative_benchmark"))
}

/// The report as a view: one series, a step per benchmark.
pub fn guidellm(path: &Path, o: &Map<String, Value>) -> Result<View, ViewError> {
    let tool = (at(o, "metadata", "/guidellm_version").and_then(Value::as_str)).unwrap_or("?");
    match at(o, "metadata", "/version").and_then(Value::as_u64) {
        Some(SCHEMA_VERSION) => {}
        v => {
            return Err(ViewError::parse(
                path,
                format!(
                    "GuideLLM report schema version {} (GuideLLM {:?}): servebench reads version {SCHEMA_VERSION} (GuideLLM 0.8)",
                    v.map_or("missing".into(), |v| v.to_string()),
                    clip(tool)
                ),
            ))
        }
    }
    let benchmarks = o
        .get("benchmarks")
        .and_then(Value::as_array)
        .filter(|b| !b.is_empty())
        .ok_or_else(|| ViewError::parse(path, "GuideLLM report without benchmarks"))?;
    if benchmarks.len() > MAX_BENCHMARKS {
        return Err(ViewError::parse(
            path,
            format!(
                "{} GuideLLM benchmarks, more than the {MAX_BENCHMARKS} one import reads",
                benchmarks.len()
            ),
        ));
    }
    let data = at(o, "config", "/spec/data/0");
    let mut records = 0;
    let mut steps = Vec::with_capacity(benchmarks.len());
    for (i, b) in benchmarks.iter().enumerate() {
        steps.push(step_of(path, i, b, data, &mut records)?);
    }
    let model = steps[0].workload.model.clone();
    let parameter = varying_parameter(&steps);
    let kind = (at(o, "config", "/spec/profile/kind").and_then(Value::as_str))
        .map_or("GuideLLM".into(), |k| format!("GuideLLM {}", clip(k)));
    Ok(View {
        label: label_of(Some("guidellm"), model.as_deref(), path),
        origin: Origin::Imported,
        format: "guidellm".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: format!("{kind}, {} sweep", parameter.as_str()),
            parameter,
            steps,
        }],
        notes: vec![format!(
            "GuideLLM {} report: its time_per_output_token includes TTFT and its inter_token_latency summary is weighted by tokens (both kept as guidellm_ figures); percentiles of the summary are GuideLLM's method",
            clip(tool)
        )],
        llmperf_requests: Vec::new(),
    })
}

/// One benchmark as a step; `records` counts the per-request records read so far.
fn step_of(
    path: &Path,
    i: usize,
    b: &Value,
    data: Option<&Value>,
    records: &mut usize,
) -> Result<Step, ViewError> {
    let missing = || {
        ViewError::parse(
            path,
            format!("GuideLLM benchmark {i} without metrics.request_totals or metrics.request_latency: nothing to compare"),
        )
    };
    let m = b
        .get("metrics")
        .and_then(Value::as_object)
        .ok_or_else(missing)?;
    let count = |k: &str| {
        m.get("request_totals")
            .and_then(|t| t.get(k))
            .and_then(Value::as_u64)
    };
    let (Some(ok), Some(errored), Some(lat)) = (
        count("successful"),
        count("errored"),
        m.get("request_latency").filter(|l| l.is_object()),
    ) else {
        return Err(missing());
    };
    let incomplete = count("incomplete").unwrap_or(0);
    let mut figures = BTreeMap::new();
    figures.insert(RunFigure::Completed.into(), ok as f64);
    figures.insert(RunFigure::Failed.into(), errored as f64);
    let ok_dist = |k: &str| m.get(k).and_then(|d| d.get("successful"));
    for (name, metric, factor) in LATENCIES {
        let dist = if name == "request_latency" {
            lat.get("successful")
        } else {
            ok_dist(name)
        };
        put_dist(
            dist,
            factor,
            |stat| MetricKey::new(stat, metric).into(),
            &mut figures,
        );
    }
    for name in OWN {
        let Some(d) = ok_dist(name) else { continue };
        let base = name.trim_end_matches("_ms");
        for (theirs, ours) in OWN_STATS {
            let v = d
                .get(theirs)
                .or_else(|| d.pointer(&format!("/percentiles/{theirs}")));
            if let Some(v) = plausible(v) {
                figures.insert(FigureKey::Other(format!("guidellm_{ours}_{base}_ms")), v);
            }
        }
    }
    for (name, fig) in RUN {
        if let Some(v) = plausible(ok_dist(name).and_then(|d| d.get("mean"))) {
            figures.insert(fig.into(), v);
        }
    }
    let total = |k: &str| plausible(ok_dist(k).and_then(|d| d.get("total_sum")));
    if let Some(v) = total("output_token_count") {
        figures.insert(RunFigure::TotalOutputTokens.into(), v);
    }
    if let Some(v) = total("prompt_token_count").filter(|v| *v > 0.0) {
        figures.insert(RunFigure::TotalInputTokens.into(), v);
    }
    if let Some(v) = plausible(b.get("duration")) {
        figures.insert(RunFigure::Duration.into(), v);
    }
    let mut step = Step {
        load: load_of(b.pointer("/config/strategy"), ok + errored + incomplete),
        workload: workload_of(b, data, ok_dist("prompt_token_count")),
        metrics: figures,
        ..Step::from_source(path)
    };
    if incomplete > 0 {
        step.notes.push(format!(
            "{incomplete} requests GuideLLM cancelled when the benchmark ended: neither completed nor failed"
        ));
    }
    let recs = b.pointer("/requests/successful").and_then(Value::as_array);
    match recs {
        Some(r) if r.len() as u64 == ok && ok > 0 => {
            *records += r.len();
            if *records > MAX_RECORDS {
                return Err(ViewError::parse(
                    path,
                    format!("more than {MAX_RECORDS} GuideLLM request records: the most one import reads"),
                ));
            }
            apply_records(r, &mut step);
        }
        _ => step.notes.push(format!(
            "GuideLLM kept {} of the {ok} successful requests' records: its summary's figures, no intervals",
            recs.map_or(0, Vec::len)
        )),
    }
    Ok(step)
}

/// `o[key]` at the JSON pointer `rest` (`""`: itself).
fn at<'a>(o: &'a Map<String, Value>, key: &str, rest: &str) -> Option<&'a Value> {
    o.get(key)?.pointer(rest)
}

/// A finite, non-negative number.
fn plausible(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// A GuideLLM distribution's statistics (× `factor`) into `out` under `key(stat)`; none of an
/// empty distribution.
fn put_dist(
    d: Option<&Value>,
    factor: f64,
    key: impl Fn(Stat) -> FigureKey,
    out: &mut BTreeMap<FigureKey, f64>,
) {
    let Some(d) = d.filter(|d| d.get("count").and_then(Value::as_u64).unwrap_or(0) > 0) else {
        return;
    };
    for (name, stat) in STATS {
        let v = d
            .get(name)
            .or_else(|| d.pointer(&format!("/percentiles/{name}")));
        if let Some(v) = plausible(v) {
            out.insert(key(stat), v * factor);
        }
    }
}

/// The load of a benchmark's strategy: concurrent streams, a rate, or synchronous (one at a
/// time); `num_prompts` is every request it made.
fn load_of(strategy: Option<&Value>, made: u64) -> Load {
    let s = |k: &str| strategy.and_then(|s| s.get(k));
    let rate = |r: Option<f64>| {
        r.filter(|r| r.is_finite() && *r > 0.0)
            .and_then(|r| format!("{r}").parse::<RequestRate>().ok())
    };
    let mut load = Load {
        num_prompts: Some(made),
        ..Load::default()
    };
    match s("type_").and_then(Value::as_str) {
        Some("synchronous") => load.max_concurrency = Some(1),
        Some("concurrent") => load.max_concurrency = s("streams").and_then(Value::as_u64),
        Some("throughput") => {
            load.request_rate = Some(RequestRate::Infinite);
            load.max_concurrency = s("max_concurrency").and_then(Value::as_u64);
        }
        Some("constant" | "poisson") => load.request_rate = rate(s("rate").and_then(Value::as_f64)),
        _ => {}
    }
    load
}

/// The model, backend kind and the synthetic data's fixed lengths (when its spread is none).
fn workload_of(b: &Value, data: Option<&Value>, prompt: Option<&Value>) -> Workload {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let synthetic =
        data.filter(|d| d.get("kind").and_then(Value::as_str) == Some("synthetic_text"));
    let fixed = |k: &str| {
        let d = synthetic?;
        let spread = ["stdev", "min", "max"]
            .iter()
            .any(|s| d.get(format!("{k}_{s}")).is_some_and(|v| !v.is_null()));
        (!spread)
            .then(|| d.get(k).and_then(Value::as_u64))
            .flatten()
    };
    Workload {
        model: text(b.pointer("/config/backend/model")),
        backend: text(b.pointer("/config/backend/kind")),
        input_len: fixed("prompt_tokens"),
        output_len: fixed("output_tokens"),
        mean_input_tokens: plausible(prompt.and_then(|p| p.get("mean"))).filter(|v| *v > 0.0),
        ..Workload::default()
    }
}

/// TTFT, E2EL and TPOT of every successful request's record into `step`: figures under
/// servebench's percentile method, their intervals, the TTFT and E2EL samples.
fn apply_records(recs: &[Value], step: &mut Step) {
    let field = |k: &str, f: f64| -> Vec<f64> {
        recs.iter()
            .filter_map(|r| plausible(r.get(k)))
            .map(|v| v * f)
            .collect()
    };
    for (name, metric, factor) in [
        ("time_to_first_token_ms", Metric::Ttft, 1.0),
        ("request_latency", Metric::E2el, 1e3),
        ("inter_token_latency_ms", Metric::Tpot, 1.0),
    ] {
        let mut samples = field(name, factor);
        if samples.is_empty() {
            continue;
        }
        step.metrics
            .retain(|k, _| !matches!(k, FigureKey::Latency(mk) if mk.metric == metric));
        match metric {
            Metric::Ttft => step.samples.ttft_ms = samples.clone(),
            Metric::E2el => step.samples.e2el_ms = samples.clone(),
            _ => {}
        }
        put_samples(&mut step.metrics, &mut step.intervals, metric, &mut samples);
    }
}
