//! Opening any file `compare`, `plot` and `report` are given: sniff what it is ([`kind`]: a
//! result, a records file, or anything else), then read it into a [`View`]: a servebench
//! result, a sweep document (and the step results it links), an imported document, or else a
//! foreign file through `views::import`.
//!
//! This module only dispatches and maps servebench's own documents (their types and loaders
//! are `results::document`, `results::sweep` and `views::imported`); it computes nothing new
//! and draws nothing. To open one more servebench document kind, recognise its `kind` in
//! [`load`] and map it to a [`View`] here; a foreign format goes to `views::import`.

use std::path::Path;

use serde_json::Value;

use crate::config::figure::{CostFigure, FigureKey, JobFigure, RunFigure};
use crate::config::metric::{MetricKey, Stat};
use crate::config::sweep::LoadParameter;
use crate::config::tags::MAX_GPUS;
use crate::config::DEFAULT_INPUT_LEN;
use crate::config::{Metric, Slo};
use crate::results::document::BenchResult;
use crate::results::jobs::JobFigures;
use crate::results::stats::adapters::AdapterFigures;
use crate::results::stats::Distribution;
use crate::results::sweep::SweepDoc;
use crate::views::error::ViewError;
use crate::views::keys::numeric_keys;
use crate::views::model::{
    file_stem, Figures, Judged, Load, Origin, Samples, Series, Step, View, Workload,
};
use crate::views::samples::{records_in, samples_from_vllm_lists, samples_of};

/// Reads any supported file into a view: servebench result, sweep or imported document, or a
/// foreign file (`import`'s formats).
pub fn load(path: &Path) -> Result<View, ViewError> {
    load_judged(path, &[])
}

/// [`load`], with a result's or each sweep step's goodput re-judged under `slos` from its
/// records where it was measured under others (`report --goodput`; `results::rejudge`); none
/// given: as saved. An imported document has no records to re-judge: refused.
pub fn load_judged(path: &Path, slos: &[Slo]) -> Result<View, ViewError> {
    let bytes = crate::results::read::read_bounded(path)?;
    let text = String::from_utf8_lossy(&bytes);
    if let Ok(value) = serde_json::from_str::<Value>(&text) {
        match value.get("kind").and_then(Value::as_str) {
            Some("sweep") => return load_sweep(path, &value, slos),
            Some("imported") if slos.is_empty() => {
                return crate::views::imported::open(path, value)
            }
            _ => {}
        }
        if value.get("schema_version").is_some() && value.get("config").is_some() {
            let mut result = BenchResult::from_value(path, value)?;
            rejudge(path, &mut result, slos)?;
            return Ok(from_result(path, &result));
        }
    }
    if !slos.is_empty() {
        return Err(ViewError::parse(
            path,
            "--goodput re-judges a servebench result or sweep from its records; this file has none",
        ));
    }
    crate::views::import::parse(path, &text)
}

/// Re-judges a result under `slos` when some are given and it was measured under others.
fn rejudge(path: &Path, r: &mut BenchResult, slos: &[Slo]) -> Result<(), ViewError> {
    if !slos.is_empty() {
        crate::results::rejudge::rejudge(path, r, slos)?;
    }
    Ok(())
}

/// What a file holds, as far as choosing how to print it needs to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A servebench result (or a file that cannot be read: the result loader then says why).
    Result,
    /// A records file: a `.jsonl` file whose first line is a request record (or that has no
    /// line).
    Records,
    /// Anything else: a sweep, an imported document, or another tool's file ([`load`]).
    View,
}

/// What `path` holds: a `.jsonl` file by the start of its first line (a record names its
/// `scheduled_ns` within its first fields; vLLM's `--append-result` lines do not), any other
/// file by [`is_result_file`].
pub fn kind(path: &Path) -> Kind {
    if path.extension().is_some_and(|e| e == "jsonl") {
        return match first_line(path) {
            Some(line) if !line.contains("\"scheduled_ns\":") => Kind::View,
            _ => Kind::Records,
        };
    }
    if is_result_file(path) {
        Kind::Result
    } else {
        Kind::View
    }
}

/// The start (64 KiB) of the first line of `path` that is not blank; `None` when there is
/// none or the file cannot be read.
fn first_line(path: &Path) -> Option<String> {
    use std::io::{BufRead, Read};
    let mut file = std::io::BufReader::new(std::fs::File::open(path).ok()?);
    loop {
        let mut line = Vec::new();
        let read = (&mut file)
            .take(64 << 10)
            .read_until(b'\n', &mut line)
            .ok()?;
        if read == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&line);
        if !text.trim().is_empty() {
            return Some(text.into_owned());
        }
        if !line.ends_with(b"\n") {
            // The 64 KiB of a blank line's start: read past the rest of it.
            file.skip_until(b'\n').ok()?;
        }
    }
}

/// True when `path` holds a servebench result document (or cannot be read: the result
/// loader then says why).
pub fn is_result_file(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return true;
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(v) => v.get("kind").is_none() && v.get("config").is_some(),
        Err(_) => false,
    }
}

/// The sweep document's step results as one series. The sweep document is the one
/// `drive::sweep` writes (`results::sweep::SweepDoc`).
fn load_sweep(path: &Path, value: &Value, slos: &[Slo]) -> Result<View, ViewError> {
    // An unknown parameter is reported after the document's other faults, by name.
    let mut value = value.clone();
    let named = value
        .get("parameter")
        .and_then(Value::as_str)
        .map(str::to_string);
    let unknown = named.filter(|p| LoadParameter::parse(p).is_none());
    if unknown.is_some() {
        value["parameter"] = Value::from(LoadParameter::NumPrompts.as_str());
    }
    let doc: SweepDoc =
        serde_json::from_value(value).map_err(|e| ViewError::parse(path, e.to_string()))?;
    if doc.schema_version != 1 {
        return Err(ViewError::parse(
            path,
            format!(
                "sweep schema_version {} is not supported (this build reads 1)",
                doc.schema_version
            ),
        ));
    }
    if let Some(p) = unknown {
        return Err(ViewError::parse(
            path,
            format!("unknown sweep parameter '{p}'"),
        ));
    }
    let parameter = doc.parameter;
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut steps = Vec::new();
    let mut label = None;
    for s in &doc.steps {
        let file = dir.join(&s.result);
        let mut result = BenchResult::load(&file)?;
        rejudge(&file, &mut result, slos)?;
        let mut v = from_result(&file, &result);
        // Name the series after the sweep, not after its first step's file.
        label.get_or_insert_with(|| v.label.replace(&file_stem(&file), &file_stem(path)));
        let mut step = v.series.remove(0).steps.remove(0);
        if !s.complete {
            step.notes.push(format!(
                "step {} was stopped before it completed",
                serde_json::json!(s.value)
            ));
        }
        steps.push(step);
    }
    let mut notes = Vec::new();
    if !doc.complete || doc.steps.len() < doc.values.len() {
        notes.push(format!(
            "sweep incomplete: {} of {} steps ran",
            doc.steps.len(),
            doc.values.len().max(doc.steps.len())
        ));
    }
    let stem = file_stem(path);
    Ok(View {
        label: label.unwrap_or_else(|| stem.clone()),
        origin: Origin::Sweep,
        format: "servebench".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: format!("{} sweep ({stem})", parameter.as_str()),
            parameter,
            steps,
        }],
        notes,
        llmperf_requests: Vec::new(),
    })
}

/// The view of one servebench result: one series with one step.
pub fn from_result(path: &Path, r: &BenchResult) -> View {
    let c = &r.config;
    let server = if c.simulated {
        "sim".to_string()
    } else {
        c.backend.as_str().to_string()
    };
    View {
        label: (c.tags).name(&format!("{server} {} ({})", c.model, file_stem(path))),
        origin: Origin::Result,
        format: "servebench".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: file_stem(path),
            parameter: LoadParameter::NumPrompts,
            steps: vec![step_of(path, r, true)],
        }],
        notes: Vec::new(),
        llmperf_requests: Vec::new(),
    }
}

/// One result saved at `path` as a step: its figures, and with `samples` its per-request
/// samples (read from its records file, else its vLLM lists).
pub fn step_of(path: &Path, r: &BenchResult, samples: bool) -> Step {
    let c = &r.config;
    let map: serde_json::Map<String, Value> =
        r.vllm.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut metrics = numeric_keys(&map);
    // The summary is the source of truth for what the flat keys may lack.
    metrics.insert(RunFigure::Completed.into(), r.summary.completed as f64);
    metrics.insert(RunFigure::Failed.into(), r.summary.failed as f64);
    if let Some(ttft) = &r.summary.ttft_ms {
        let parts = r.summary.ttft_breakdown.part_means(ttft.mean);
        metrics.extend(parts.map(|(part, mean)| (part.into(), mean)));
    }
    if let Some(cost) = &r.cost {
        let per_1m = [
            (
                CostFigure::UsdPer1mOutputTokens,
                cost.usd_per_1m_output_tokens,
            ),
            (
                CostFigure::UsdPer1mTotalTokens,
                cost.usd_per_1m_total_tokens,
            ),
        ];
        metrics.extend(per_1m.into_iter().filter_map(|(k, v)| Some((k.into(), v?))));
    }
    if let Some(j) = r.energy.and_then(|e| e.joules_per_output_token) {
        metrics.insert(CostFigure::JoulesPerOutputToken.into(), j);
    }
    if let Some(c) = &r.summary.prefix_cache {
        let rates = [
            (RunFigure::DesignedPrefixHitRate, c.designed_hit_rate),
            (RunFigure::MeasuredPrefixHitRate, c.measured_hit_rate),
        ];
        metrics.extend(rates.into_iter().filter_map(|(k, v)| Some((k.into(), v?))));
    }
    if let Some(a) = &r.summary.server_account {
        metrics.extend(a.figures().into_iter().map(|(k, v)| (k.into(), v)));
    }
    let (job_metrics, job_intervals) = r.jobs.as_ref().map(job_figures).unwrap_or_default();
    metrics.extend(job_metrics);
    let records_file = crate::measure::record::records_next_to(path, r.records_file.as_deref());
    let samples = match samples {
        true => (records_file.as_deref())
            .and_then(|f| records_in(f).ok())
            .map(samples_of)
            .unwrap_or_else(|| samples_from_vllm_lists(&map)),
        false => Samples::default(),
    };
    let (gpus, notes) = step_notes(r);
    Step {
        load: Load {
            num_prompts: Some(c.load.num_prompts),
            max_concurrency: c.load.max_concurrency,
            request_rate: Some(c.load.request_rate),
            num_prefixes: match c.workload.dataset {
                crate::config::Dataset::Prefix { num_prefixes, .. } => Some(num_prefixes),
                _ => None,
            },
            user_gap_s: c.load.shape.user_gap_s,
        },
        workload: Workload {
            model: Some(c.model.clone()),
            backend: Some(c.backend.as_str().to_string()),
            dataset: Some(c.workload.dataset.to_string()),
            // As the document saves it (a dataset whose file sets the lengths saves the default).
            input_len: Some(c.workload.dataset.input_len().unwrap_or(DEFAULT_INPUT_LEN)),
            output_len: Some(c.workload.dataset.output_len()),
            mean_input_tokens: (r.summary.completed > 0)
                .then(|| r.summary.total_input_tokens as f64 / r.summary.completed as f64),
        },
        metrics,
        samples,
        intervals: map
            .iter()
            .filter_map(|(k, v)| {
                let key = FigureKey::named(k.strip_prefix("ci95_")?);
                let [lo, hi] = v.as_array()?.as_slice() else {
                    return None;
                };
                Some((key, [lo.as_f64()?, hi.as_f64()?]))
            })
            .chain(job_intervals)
            .collect(),
        judged: Some(judged(r)),
        records_file,
        steady_window_ns: r.steady_state.as_ref().and_then(|s| s.window_ns),
        source: Some(path.to_path_buf()),
        notes,
        adapters: (r.per_adapter.iter())
            .map(|(name, a)| (name.clone(), adapter_figures(a)))
            .collect(),
        gpus,
        slices: r.slices.clone(),
        server_account: r.summary.server_account.clone(),
        buckets: r.buckets.clone(),
        autoscale: r.autoscale.clone(),
        adaptive: r.adaptive.clone(),
    }
}

/// A step's accelerator count when it is believable, and the notes a reader of it needs: a
/// count not believed, a re-judged verdict, an incomplete run, failed requests by kind.
fn step_notes(r: &BenchResult) -> (Option<u32>, Vec<String>) {
    let c = &r.config;
    let mut notes = Vec::new();
    // A saved count outside `--gpus`' range is not believed: the step is per server.
    let gpus = c.tags.gpus.filter(|g| (1..=MAX_GPUS).contains(g));
    if let (Some(g), None) = (c.tags.gpus, gpus) {
        notes.push(format!(
            "gpus {g} is not a count of accelerators (1 to {MAX_GPUS}): figures per server"
        ));
    }
    notes.extend(r.rejudged.as_ref().map(|j| j.describe()));
    if !r.complete {
        notes.push(format!(
            "run incomplete ({} planned requests never sent)",
            r.unsent
        ));
    }
    if r.summary.failed > 0 {
        let kinds: Vec<String> = r
            .summary
            .failures_by_kind
            .iter()
            .map(|(k, n)| format!("{k}={n}"))
            .collect();
        notes.push(format!(
            "{} failed requests ({})",
            r.summary.failed,
            kinds.join(" ")
        ));
    }
    (gpus, notes)
}

/// The result's verdict and SLOs, as its first screen shows them.
fn judged(r: &BenchResult) -> Judged {
    let slos: Vec<String> = (r.config.goodput.iter())
        .map(|s| format!("{} ≤ {} ms", s.metric.key(), s.max_ms))
        .collect();
    Judged {
        verdict: r.validity.as_ref().map(|v| v.verdict.as_str().to_string()),
        reasons: r
            .validity
            .as_ref()
            .map(|v| v.reasons.clone())
            .unwrap_or_default(),
        good: (!slos.is_empty())
            .then_some(r.summary.good_requests)
            .flatten(),
        slos,
        measured: r.summary.completed + r.summary.failed,
    }
}

/// Figures, or intervals, by key.
type Pairs<T> = Vec<(FigureKey, T)>;

/// An agentic run's job figures as `compare` and `plot` show them (docs/metrics.md, "Jobs"),
/// and the intervals of the four JCT figures (the bootstrap over jobs).
fn job_figures(j: &JobFigures) -> (Pairs<f64>, Pairs<[f64; 2]>) {
    use JobFigure as F;
    let count = |n: u64| Some(n as f64);
    let values = [
        (F::JobsPerS, Some(j.jobs_per_s)),
        (F::JobGoodput, j.job_goodput),
        (F::JctSloAttainment, j.jct_slo_attainment),
        (F::MeanJct, j.mean_jct_ms),
        (F::MedianJct, j.median_jct_ms),
        (F::P90Jct, j.p90_jct_ms),
        (F::P99Jct, j.p99_jct_ms),
        (F::MeanCriticalPath, j.mean_critical_path_ms),
        (F::MeanBeyond, j.mean_beyond_ms),
        (F::MeanFirstTtft, j.mean_first_ttft_ms),
        (F::MeanCalls, j.mean_calls),
        (F::MeanInputTokens, j.mean_input_tokens),
        (F::MeanOutputTokens, j.mean_output_tokens),
        (F::CacheHitRate, j.cache_hit_rate),
        (F::Completed, count(j.completed)),
        (F::Failed, count(j.failed)),
        (F::Cut, count(j.cut)),
        (F::Unsent, j.unsent.map(|n| n as f64)),
    ];
    let intervals = [
        (F::MeanJct, j.ci95_mean_jct_ms),
        (F::MedianJct, j.ci95_median_jct_ms),
        (F::P90Jct, j.ci95_p90_jct_ms),
        (F::P99Jct, j.ci95_p99_jct_ms),
    ];
    let finite = |(k, v): (F, Option<f64>)| Some((k.into(), v.filter(|x| x.is_finite())?));
    (
        values.into_iter().filter_map(finite).collect(),
        (intervals.into_iter())
            .filter_map(|(k, ci)| Some((k.into(), ci?)))
            .collect(),
    )
}

/// One adapter's figures as `compare` and `plot` show them (docs/metrics.md, "Multi-LoRA
/// traffic"): mean and p99 TTFT, mean TPOT (each with its 95% interval where the result has
/// one), output throughput, goodput where there were SLOs, completed and failed requests.
fn adapter_figures(a: &AdapterFigures) -> Figures {
    let mut f = Figures::default();
    let mut stat = |metric: Metric, stat: Stat, d: &Option<Distribution>| {
        let Some(d) = d else { return };
        let (value, ci) = match stat {
            Stat::Percentile(p) => {
                let Some((_, value)) = d.percentiles.iter().find(|(q, _)| *q == p) else {
                    return;
                };
                let ci = d.ci95_percentiles.iter().find(|(q, _)| *q == p);
                (*value, ci.map(|(_, ci)| *ci))
            }
            _ => (d.mean, d.ci95_mean),
        };
        let key: FigureKey = MetricKey::new(stat, metric).into();
        if let Some(ci) = ci {
            f.intervals.insert(key.clone(), ci);
        }
        f.metrics.insert(key, value);
    };
    stat(Metric::Ttft, Stat::Mean, &a.ttft_ms);
    stat(Metric::Ttft, Stat::Percentile(99.0), &a.ttft_ms);
    stat(Metric::Tpot, Stat::Mean, &a.tpot_ms);
    let figures = [
        (RunFigure::OutputThroughput, Some(a.output_throughput)),
        (RunFigure::RequestGoodput, a.request_goodput),
        (RunFigure::Completed, Some(a.completed as f64)),
        (RunFigure::Failed, Some(a.failed as f64)),
    ];
    (f.metrics).extend(
        figures
            .into_iter()
            .filter_map(|(k, v)| Some((k.into(), v?))),
    );
    f
}

#[cfg(test)]
#[path = "open_jobs_tests.rs"]
mod jobs_tests;
