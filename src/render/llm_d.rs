//! A view written as llm-d's Benchmark Report, version `0.2` (llm-d-benchmark's common schema;
//! `tests/data/llm-d/br_v0_2_json_schema.json`): one report per step, so a single run is one
//! JSON object and a sweep (or any view of several steps) a JSON array of reports that share
//! `run.eid`, each with its `scenario.load.standardized.stage`.
//!
//! Every field servebench knows is filled and the rest is absent, never invented (an imported
//! view, measured by another tool, has no `scenario.load`: its tool and version are not known): the schema's
//! vocabulary and the field-by-field mapping are `views::import::llm_d`'s (which reads it back)
//! and `docs/metrics.md` ("llm-d Benchmark Report"). Computes nothing: every value is a
//! figure of the view, or a quotient of two of them where the schema asks for a mean.

use serde_json::{json, Map, Value};

use crate::config::figure::{FigureKey, RunFigure};
use crate::config::metric::{MetricKey, Stat};
use crate::views::import::llm_d::{LATENCIES, PERCENTILES, THROUGHPUTS, TOOL, VERSION};
use crate::views::model::{file_stem, Origin, Step, View};

/// The view as llm-d reports: one object for one step, an array for several.
pub fn report(view: &View) -> Value {
    let steps: Vec<&Step> = view.steps().collect();
    let eid = file_stem(&view.path);
    let several = steps.len() > 1;
    let mut reports: Vec<Value> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let e = several.then_some(eid.as_str());
            step_report(s, i, e, &eid, view.origin != Origin::Imported)
        })
        .collect();
    if several {
        Value::Array(reports)
    } else {
        reports.pop().unwrap_or(Value::Array(Vec::new()))
    }
}

/// The view's reports as the pretty JSON `report --format llm-d` prints and `--save-llm-d`
/// writes.
pub fn text(view: &View) -> String {
    let mut s = serde_json::to_string_pretty(&report(view)).unwrap_or_default();
    s.push('\n');
    s
}

/// One step's report; `measured`: servebench measured it (an imported view's load generator
/// and its version are another tool's, not known here: no `scenario.load` then).
fn step_report(s: &Step, stage: usize, eid: Option<&str>, stem: &str, measured: bool) -> Value {
    let uid = match &s.source {
        Some(p) => file_stem(p),
        None => format!("{stem}-{stage}"),
    };
    let mut run = Map::new();
    run.insert("uid".into(), json!(uid));
    if let Some(e) = eid {
        run.insert("eid".into(), json!(e));
    }
    if let Some(d) = s.metric(RunFigure::Duration).filter(|d| d.is_finite()) {
        run.insert("time".into(), json!({ "duration": format!("PT{d}S") }));
    }
    let mut doc = Map::new();
    doc.insert("version".into(), json!(VERSION));
    doc.insert("run".into(), Value::Object(run));
    if let Some(load) = load(s, stage).filter(|_| measured) {
        doc.insert("scenario".into(), json!({ "load": load }));
    }
    doc.insert(
        "results".into(),
        json!({ "request_performance": { "aggregate": aggregate(s) } }),
    );
    Value::Object(doc)
}

/// `scenario.load`, when the prompt length (which the schema requires) is known.
fn load(s: &Step, stage: usize) -> Option<Value> {
    let w = &s.workload;
    let isl = match (w.input_len, w.mean_input_tokens) {
        (Some(l), _) => json!(l),
        (None, Some(m)) => json!(m),
        (None, None) => return None,
    };
    let source = match w.dataset.as_deref() {
        Some("random") => "random",
        Some("sharegpt") => "sampled",
        _ => "unknown",
    };
    let mut std = Map::new();
    std.insert("tool".into(), json!(TOOL));
    std.insert("tool_version".into(), json!(env!("CARGO_PKG_VERSION")));
    std.insert("source".into(), json!(source));
    std.insert("stage".into(), json!(stage));
    std.insert(
        "input_seq_len".into(),
        json!({ "distribution": "other", "value": isl }),
    );
    if let Some(o) = w.output_len {
        std.insert(
            "output_seq_len".into(),
            json!({ "distribution": "other", "value": o }),
        );
    }
    match s.load.request_rate {
        Some(crate::config::RequestRate::PerSecond(r)) if r > 0.0 => {
            std.insert("rate_qps".into(), json!(r));
        }
        _ => {}
    }
    if let Some(c) = s.load.max_concurrency.filter(|c| *c >= 1) {
        std.insert("concurrency".into(), json!(c));
    }
    let mut args = Map::new();
    for (k, v) in [
        ("model", &w.model),
        ("backend", &w.backend),
        ("dataset", &w.dataset),
    ] {
        if let Some(v) = v {
            args.insert(k.into(), json!(v));
        }
    }
    let mut native = Map::new();
    if !args.is_empty() {
        native.insert("args".into(), Value::Object(args));
    }
    Some(json!({
        "metadata": { "schema_version": "0.0.1" },
        "standardized": std,
        "native": native,
    }))
}

fn aggregate(s: &Step) -> Value {
    let mut agg = Map::new();
    let completed = s.metric(RunFigure::Completed);
    let failed = s.metric(RunFigure::Failed);
    if let Some(c) = completed {
        let mut req = Map::new();
        req.insert("total".into(), json!((c + failed.unwrap_or(0.0)) as u64));
        if let Some(f) = failed {
            req.insert("failures".into(), json!(f as u64));
        }
        if let Some(m) = s.workload.mean_input_tokens {
            req.insert("input_length".into(), json!({"units": "count", "mean": m}));
        }
        if let Some(t) = s.metric(RunFigure::TotalOutputTokens).filter(|_| c > 0.0) {
            req.insert(
                "output_length".into(),
                json!({"units": "count", "mean": t / c}),
            );
        }
        agg.insert("requests".into(), Value::Object(req));
    }
    let mut lat = Map::new();
    for (field, metric, unit, _) in LATENCIES {
        let key = |stat| FigureKey::from(MetricKey::new(stat, metric));
        let Some(mean) = s.metrics.get(&key(Stat::Mean)) else {
            continue;
        };
        let mut st = Map::new();
        st.insert("units".into(), json!(unit));
        st.insert("mean".into(), json!(mean));
        if let Some(v) = s.metrics.get(&key(Stat::Std)) {
            st.insert("stddev".into(), json!(v));
        }
        for (name, p) in PERCENTILES {
            let v = s.metrics.get(&key(Stat::Percentile(p)));
            let v = v.or_else(|| (p == 50.0).then(|| s.metrics.get(&key(Stat::Median)))?);
            if let Some(v) = v {
                st.insert(name.into(), json!(v));
            }
        }
        lat.insert(field.into(), Value::Object(st));
    }
    if !lat.is_empty() {
        agg.insert("latency".into(), Value::Object(lat));
    }
    let mut tput = Map::new();
    for (field, fig, unit) in THROUGHPUTS {
        if let Some(v) = s.metric(fig).filter(|v| v.is_finite()) {
            tput.insert(field.into(), json!({"units": unit, "mean": v}));
        }
    }
    if !tput.is_empty() {
        agg.insert("throughput".into(), Value::Object(tput));
    }
    Value::Object(agg)
}
