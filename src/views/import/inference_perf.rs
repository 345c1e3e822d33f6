//! inference-perf's request lifecycle report (`stage_N_lifecycle_metrics.json`, one stage, or
//! `summary_lifecycle_metrics.json`, the whole run) as a one-step view. Its latencies are in
//! seconds; which of its figures is which servebench figure, and where the definitions differ
//! (its TPOT ends at the last token, not the end of the response; its normalized TPOT has no
//! servebench figure and is left out): `docs/metrics.md`, "inference-perf". Reads no file itself
//! and knows no other format. To map one more figure, add it to [`LATENCIES`] or [`RUN`].

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::config::figure::{FigureKey, RunFigure};
use crate::config::metric::{MetricKey, Stat};
use crate::config::sweep::LoadParameter;
use crate::config::Metric;
use crate::views::error::ViewError;
use crate::views::import::common::label_of;
use crate::views::model::{Load, Origin, Series, Step, View, Workload};

/// `successes.latency`'s fields (seconds) and servebench's metric for each.
const LATENCIES: [(&str, Metric); 4] = [
    ("time_to_first_token", Metric::Ttft),
    ("request_latency", Metric::E2el),
    ("time_per_output_token", Metric::Tpot),
    ("inter_token_latency", Metric::Itl),
];

/// Run figures: a JSON pointer below `successes` (or the document) and servebench's figure.
const RUN: [(&str, RunFigure); 7] = [
    ("/successes/count", RunFigure::Completed),
    ("/failures/count", RunFigure::Failed),
    (
        "/successes/throughput/requests_per_sec",
        RunFigure::RequestThroughput,
    ),
    (
        "/successes/throughput/output_tokens_per_sec",
        RunFigure::OutputThroughput,
    ),
    (
        "/successes/throughput/total_tokens_per_sec",
        RunFigure::TotalTokenThroughput,
    ),
    (
        "/successes/output_tokens/total",
        RunFigure::TotalOutputTokens,
    ),
    ("/benchmark_time_seconds", RunFigure::Duration),
];

/// Whether `o` is an inference-perf lifecycle report.
pub fn is_report(o: &Map<String, Value>) -> bool {
    o.get("load_summary").is_some_and(Value::is_object)
        && o.get("successes").is_some_and(Value::is_object)
}

/// The report as a one-step view.
pub fn inference_perf(path: &Path, o: Map<String, Value>) -> Result<View, ViewError> {
    let doc = Value::Object(o);
    let num = |p: &str| {
        doc.pointer(p)
            .and_then(Value::as_f64)
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    let missing: Vec<&str> = [
        "/successes/count",
        "/successes/latency/request_latency/mean",
    ]
    .into_iter()
    .filter(|p| num(p).is_none())
    .collect();
    if !missing.is_empty() {
        return Err(ViewError::parse(
            path,
            format!(
                "inference-perf report without {}: nothing to compare",
                missing.join(" or ")
            ),
        ));
    }
    let mut m = BTreeMap::new();
    for (name, metric) in LATENCIES {
        let Some(s) = doc
            .pointer(&format!("/successes/latency/{name}"))
            .and_then(Value::as_object)
        else {
            continue;
        };
        for (k, v) in s {
            let stat = match k.as_str() {
                "mean" => Stat::Mean,
                "median" => Stat::Median,
                p => match p.strip_prefix('p').and_then(|x| x.parse::<f64>().ok()) {
                    Some(q) if q > 0.0 && q <= 100.0 => Stat::Percentile(q),
                    _ => continue,
                },
            };
            if let Some(v) = v.as_f64().filter(|v| v.is_finite()) {
                m.insert(FigureKey::from(MetricKey::new(stat, metric)), v * 1e3);
            }
        }
    }
    for (ptr, fig) in RUN {
        if let Some(v) = num(ptr) {
            m.insert(fig.into(), v);
        }
    }
    if let Some(t) = num("/successes/prompt_tokens/total") {
        m.insert(RunFigure::TotalInputTokens.into(), t);
    }
    let rate = num("/load_summary/requested_rate").and_then(|r| format!("{r}").parse().ok());
    let step = Step {
        load: Load {
            num_prompts: num("/load_summary/count").map(|c| c as u64),
            request_rate: rate,
            ..Load::default()
        },
        workload: Workload {
            mean_input_tokens: num("/successes/prompt_tokens/mean"),
            ..Workload::default()
        },
        metrics: m,
        ..Step::from_source(path)
    };
    Ok(View {
        label: label_of(Some("inference-perf"), None, path),
        origin: Origin::Imported,
        format: "inference-perf".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: "inference-perf".into(),
            parameter: LoadParameter::RequestRate,
            steps: vec![step],
        }],
        notes: vec![
            "inference-perf report: seconds as milliseconds; its TPOT ends at the last token (servebench's at the response's end); its normalized TPOT and input token rate are left out; no per-request samples, so no intervals".into(),
        ],
        llmperf_requests: Vec::new(),
    })
}
