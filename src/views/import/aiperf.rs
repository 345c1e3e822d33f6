//! AIPerf's results: `profile_export_aiperf.json` (its summary: one step) and, when given or
//! found beside it, its per-record `profile_export.jsonl`, whose successful records give the
//! step's latency figures under servebench's percentile method, their 95% intervals and the
//! per-request samples (so `compare` can judge them). Which AIPerf figure is which
//! servebench figure, and how their definitions differ (AIPerf counts output tokens with its
//! own tokenizer, reasoning included; its "inter token latency" is vLLM's TPOT): `docs/metrics.md`,
//! "AIPerf". Reads no file itself (`views::import` hands it the records) and knows no other
//! format. To map one more figure, add it to [`SUMMARY_LATENCIES`] or [`SUMMARY_RUN`].

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::config::figure::{FigureKey, RunFigure};
use crate::config::metric::{MetricKey, Stat};
use crate::config::sweep::LoadParameter;
use crate::config::Metric;
use crate::views::error::ViewError;
use crate::views::import::common::{label_of, put_samples};
use crate::views::model::{Load, Origin, Samples, Series, Step, View, Workload};

/// The most per-record lines one import reads.
pub const MAX_RECORDS: usize = 1_000_000;

/// AIPerf's per-request latency figures (milliseconds) and servebench's metric for each.
const SUMMARY_LATENCIES: [(&str, Metric); 6] = [
    ("time_to_first_token", Metric::Ttft),
    ("request_latency", Metric::E2el),
    // AIPerf's "inter token latency" is (latency − TTFT) / (tokens − 1) per request: vLLM's TPOT.
    ("inter_token_latency", Metric::Tpot),
    // Every gap between two streamed chunks, pooled: vLLM's ITL.
    ("inter_chunk_latency", Metric::Itl),
    ("time_to_second_token", Metric::Ttst),
    ("output_token_throughput_per_user", Metric::OutputTpsPerUser),
];

/// AIPerf's run figures (`avg` of each) and servebench's figure for each.
const SUMMARY_RUN: [(&str, RunFigure); 8] = [
    ("request_count", RunFigure::Completed),
    ("error_request_count", RunFigure::Failed),
    ("request_throughput", RunFigure::RequestThroughput),
    ("output_token_throughput", RunFigure::OutputThroughput),
    ("total_token_throughput", RunFigure::TotalTokenThroughput),
    ("total_output_tokens", RunFigure::TotalOutputTokens),
    ("total_isl", RunFigure::TotalInputTokens),
    ("benchmark_duration", RunFigure::Duration),
];

/// AIPerf's statistic names and servebench's.
const STATS: [(&str, Stat); 12] = [
    ("avg", Stat::Mean),
    ("std", Stat::Std),
    ("p50", Stat::Median),
    ("p1", Stat::Percentile(1.0)),
    ("p5", Stat::Percentile(5.0)),
    ("p10", Stat::Percentile(10.0)),
    ("p25", Stat::Percentile(25.0)),
    ("p50", Stat::Percentile(50.0)),
    ("p75", Stat::Percentile(75.0)),
    ("p90", Stat::Percentile(90.0)),
    ("p95", Stat::Percentile(95.0)),
    ("p99", Stat::Percentile(99.0)),
];

/// Whether `o` is AIPerf's summary export.
pub fn is_summary(o: &Map<String, Value>) -> bool {
    o.contains_key("aiperf_version")
        || (o.contains_key("input_config")
            && o.get("request_latency")
                .is_some_and(|v| v.get("unit").is_some()))
}

/// Whether `o` is one line of AIPerf's per-record export.
pub fn is_record(o: &Map<String, Value>) -> bool {
    o.get("metadata").is_some_and(Value::is_object)
        && o.get("metrics").is_some_and(Value::is_object)
}

/// A latency's factor to milliseconds from AIPerf's unit; `None`: not a time.
fn to_ms(unit: Option<&str>) -> Option<f64> {
    match unit? {
        "ms" => Some(1.0),
        "sec" | "s" => Some(1e3),
        "us" => Some(1e-3),
        "ns" => Some(1e-6),
        "tokens/sec/user" => Some(1.0),
        _ => None,
    }
}

/// The summary export (and its records, when there are some) as a one-step view.
pub fn aiperf(
    path: &Path,
    o: &Map<String, Value>,
    records: Option<(&Path, Vec<Map<String, Value>>)>,
) -> Result<View, ViewError> {
    let missing: Vec<&str> = ["request_count", "request_latency"]
        .into_iter()
        .filter(|k| {
            o.get(*k)
                .and_then(|v| v.get("avg"))
                .and_then(Value::as_f64)
                .is_none()
        })
        .collect();
    if !missing.is_empty() {
        return Err(ViewError::parse(
            path,
            format!(
                "AIPerf export without {}: nothing to compare",
                missing.join(" or ")
            ),
        ));
    }
    let mut notes = Vec::new();
    let m = summary_figures(o, &mut notes);
    let cfg = o.get("input_config").cloned().unwrap_or(Value::Null);
    let phase = (cfg
        .get("phases")
        .and_then(Value::as_array)
        .into_iter()
        .flatten())
    .find(|p| p.get("kind").and_then(Value::as_str) == Some("profiling"));
    let pu = |k: &str| phase.and_then(|p| p.get(k)).and_then(Value::as_u64);
    let prompts = cfg.pointer("/datasets/0/prompts");
    let len = |k: &str| {
        (prompts.and_then(|p| p.pointer(k)).and_then(Value::as_f64))
            .filter(|v| v.fract() == 0.0 && *v >= 0.0)
            .map(|v| v as u64)
    };
    let rate = phase
        .and_then(|p| p.get("request_rate").or(p.get("rate")))
        .and_then(Value::as_f64)
        .and_then(|r| format!("{r}").parse().ok());
    let model = (cfg.pointer("/models/items/0/name").and_then(Value::as_str)).map(str::to_string);
    let mut step = Step {
        load: Load {
            num_prompts: pu("requests"),
            max_concurrency: pu("concurrency"),
            request_rate: rate,
            ..Load::default()
        },
        workload: Workload {
            model: model.clone(),
            backend: cfg
                .pointer("/endpoint/type")
                .and_then(Value::as_str)
                .map(str::to_string),
            dataset: cfg
                .pointer("/datasets/0/type")
                .and_then(Value::as_str)
                .map(str::to_string),
            input_len: len("/isl/mean"),
            output_len: len("/osl/mean"),
            mean_input_tokens: o
                .get("input_sequence_length")
                .and_then(|v| v.get("avg"))
                .and_then(Value::as_f64),
        },
        metrics: m,
        ..Step::from_source(path)
    };
    notes.push("AIPerf export: output tokens counted by AIPerf's tokenizer, reasoning included; its inter token latency is servebench's TPOT, its inter chunk latency servebench's ITL".into());
    if let Some((rpath, recs)) = records {
        let (ok, failed) = apply_records(rpath, &recs, &mut step)?;
        let said = (
            step.metric(RunFigure::Completed),
            step.metric(RunFigure::Failed),
        );
        if said != (Some(ok as f64), Some(failed as f64)) {
            notes.push(format!(
                "the records ({ok} ok, {failed} failed) do not count as the summary does"
            ));
        }
        notes.push(format!(
            "latency figures, intervals and samples from the {} per-request records of {}",
            recs.len(),
            rpath.display()
        ));
    } else {
        notes.push("no per-request records beside the export: no intervals".into());
    }
    Ok(view(path, step, model, notes))
}

/// The summary's figures under servebench's keys; what is missing or in an unknown unit is
/// named in `notes`.
fn summary_figures(o: &Map<String, Value>, notes: &mut Vec<String>) -> BTreeMap<FigureKey, f64> {
    let mut m = BTreeMap::new();
    for (name, metric) in SUMMARY_LATENCIES {
        let Some(s) = o.get(name).and_then(Value::as_object) else {
            notes.push(format!("no {name} in the export"));
            continue;
        };
        let Some(f) = to_ms(s.get("unit").and_then(Value::as_str)) else {
            notes.push(format!("{name} in an unknown unit: left out"));
            continue;
        };
        for (stat_name, stat) in STATS {
            if let Some(v) = s
                .get(stat_name)
                .and_then(Value::as_f64)
                .filter(|v| v.is_finite())
            {
                m.insert(FigureKey::from(MetricKey::new(stat, metric)), v * f);
            }
        }
    }
    let avg = |k: &str| o.get(k).and_then(|v| v.get("avg")).and_then(Value::as_f64);
    for (name, fig) in SUMMARY_RUN {
        if let Some(v) = avg(name).filter(|v| v.is_finite() && *v >= 0.0) {
            m.insert(fig.into(), v);
        }
    }
    // AIPerf leaves the error count out when there was none: its empty error summary says so.
    if avg("error_request_count").is_none()
        && o.get("error_summary")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
    {
        m.insert(RunFigure::Failed.into(), 0.0);
    }
    m
}

/// The per-record export alone: every figure from the records (no throughput: no duration).
pub fn aiperf_records(path: &Path, recs: Vec<Map<String, Value>>) -> Result<View, ViewError> {
    let mut step = Step {
        ..Step::from_source(path)
    };
    let (ok, failed) = apply_records(path, &recs, &mut step)?;
    step.metrics.insert(RunFigure::Completed.into(), ok as f64);
    step.metrics.insert(RunFigure::Failed.into(), failed as f64);
    step.load.num_prompts = Some((ok + failed) as u64);
    let notes = vec![
        "AIPerf per-request records: latency figures under servebench's percentile method; no duration, so no throughput".into(),
    ];
    Ok(view(path, step, None, notes))
}

fn view(path: &Path, step: Step, model: Option<String>, notes: Vec<String>) -> View {
    View {
        label: label_of(Some("aiperf"), model.as_deref(), path),
        origin: Origin::Imported,
        format: "aiperf".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: "aiperf".into(),
            parameter: LoadParameter::MaxConcurrency,
            steps: vec![step],
        }],
        notes,
        llmperf_requests: Vec::new(),
    }
}

/// The successful records' latencies into `step` (figures, intervals, samples); returns the
/// counts of successful and failed records.
fn apply_records(
    path: &Path,
    recs: &[Map<String, Value>],
    step: &mut Step,
) -> Result<(usize, usize), ViewError> {
    if recs.len() > MAX_RECORDS {
        return Err(ViewError::parse(
            path,
            format!(
                "{} AIPerf records, more than the {MAX_RECORDS} one import reads",
                recs.len()
            ),
        ));
    }
    let mut series: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let (mut ok, mut failed) = (0, 0);
    for r in recs {
        if r.get("error").is_some_and(|e| !e.is_null()) {
            failed += 1;
            continue;
        }
        ok += 1;
        let metrics = r.get("metrics").and_then(Value::as_object);
        for (name, _) in SUMMARY_LATENCIES {
            let Some(v) = metrics.and_then(|m| m.get(name)) else {
                continue;
            };
            let Some(f) = to_ms(v.get("unit").and_then(Value::as_str)) else {
                continue;
            };
            let out = series.entry(name).or_default();
            match v.get("value") {
                Some(Value::Array(a)) => {
                    out.extend(a.iter().filter_map(Value::as_f64).map(|x| x * f))
                }
                Some(x) => out.extend(x.as_f64().map(|x| x * f)),
                None => {}
            }
        }
    }
    for (name, metric) in SUMMARY_LATENCIES {
        let Some(samples) = series.get_mut(name).filter(|s| !s.is_empty()) else {
            continue;
        };
        samples.retain(|x| x.is_finite());
        step.metrics
            .retain(|k, _| !matches!(k, FigureKey::Latency(mk) if mk.metric == metric));
        if matches!(metric, Metric::Ttft | Metric::E2el) {
            let keep = samples.clone();
            match metric {
                Metric::Ttft => step.samples.ttft_ms = keep,
                _ => step.samples.e2el_ms = keep,
            }
        }
        put_samples(&mut step.metrics, &mut step.intervals, metric, samples);
    }
    if step.samples == Samples::default() && ok > 0 {
        return Err(ViewError::parse(
            path,
            "AIPerf records without time_to_first_token or request_latency values",
        ));
    }
    Ok((ok, failed))
}
