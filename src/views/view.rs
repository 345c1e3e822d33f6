//! The common view of every document `compare`, `plot` and `report` read: a servebench result,
//! a servebench sweep, an imported document, or a foreign file (`import` formats) read directly.
//!
//! A [`View`] is a list of [`Series`] (one per sweep; an imported text with several sweeps has
//! several), each a list of [`Step`]s. A step carries its load values, the workload descriptor
//! used to decide comparability, and its metrics as a flat map under vLLM's key names
//! (`output_throughput`, `mean_ttft_ms`, `p99_itl_ms`, ...). A metric that is not known is
//! absent, never zero. Figures that exist under a foreign definition keep a prefix naming
//! the tool (`llmperf_mean_inter_token_latency_ms`), so a name never means two things.
//!
//! This module computes nothing new: it reads the numbers the documents hold (servebench's
//! `stats` computed them, or the imported tool did). Opening a file (sniffing what it is) is
//! `views::open`; to read a new format, add a parser to `import` that returns a [`View`];
//! everything downstream works unchanged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::RequestRate;
use crate::measure::record::RequestRecord;
use crate::results::document::BenchResult;
use crate::views::error::ViewError;

/// Version of the `imported` document written by `servebench import`.
pub const IMPORTED_SCHEMA_VERSION: u32 = 1;

/// What kind of document a view was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A servebench result (`servebench run`).
    Result,
    /// A servebench sweep document (`<stem>.sweep.json`).
    Sweep,
    /// An imported document (`servebench import`) or a foreign file read directly.
    Imported,
}

/// The load parameter a series varies (its x axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Parameter {
    NumPrompts,
    MaxConcurrency,
    RequestRate,
    /// Mean prompt tokens per request (seed 002's last section varies the prompt length).
    InputLen,
}

impl Parameter {
    pub fn as_str(self) -> &'static str {
        match self {
            Parameter::NumPrompts => "num_prompts",
            Parameter::MaxConcurrency => "max_concurrency",
            Parameter::RequestRate => "request_rate",
            Parameter::InputLen => "input_len",
        }
    }
    pub fn parse(s: &str) -> Option<Parameter> {
        match s {
            "num_prompts" => Some(Parameter::NumPrompts),
            "max_concurrency" => Some(Parameter::MaxConcurrency),
            "request_rate" => Some(Parameter::RequestRate),
            "input_len" => Some(Parameter::InputLen),
            _ => None,
        }
    }
}

/// The load of one step. `None`: not stated by the source.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Load {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_prompts: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_rate: Option<RequestRate>,
}

/// What was sent: two steps are comparable when these agree (see [`Workload::differences`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Prompt length the source says it asked for, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_len: Option<u64>,
    /// Output length the source says it asked for, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_len: Option<u64>,
    /// Measured prompt tokens per successful request (total input tokens / completed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_input_tokens: Option<f64>,
}

/// Relative tolerance on prompt lengths when deciding comparability.
const INPUT_LEN_TOLERANCE: f64 = 0.10;

impl Workload {
    /// The prompt length used for comparisons: measured when known, else the requested one.
    pub fn effective_input_len(&self) -> Option<f64> {
        self.mean_input_tokens.or(self.input_len.map(|l| l as f64))
    }

    /// Why `self` and `other` are not the same workload; empty when they are (as far as both
    /// sources say: a field only one of them states is not a difference). The backend is not
    /// part of the workload: comparing servers is the point.
    pub fn differences(&self, other: &Workload) -> Vec<String> {
        let mut out = Vec::new();
        let mut text = |what: &str, a: &Option<String>, b: &Option<String>| {
            if let (Some(a), Some(b)) = (a, b) {
                if a != b {
                    out.push(format!("{what} {a} vs {b}"));
                }
            }
        };
        text("model", &self.model, &other.model);
        text("dataset", &self.dataset, &other.dataset);
        if let (Some(a), Some(b)) = (self.effective_input_len(), other.effective_input_len()) {
            if (a - b).abs() > INPUT_LEN_TOLERANCE * a.max(b) {
                out.push(format!("input length {a:.0} vs {b:.0} tokens"));
            }
        }
        if let (Some(a), Some(b)) = (self.output_len, other.output_len) {
            if a != b {
                out.push(format!("output length {a} vs {b} tokens"));
            }
        }
        out
    }
}

/// Per-request samples, when the source has them (for CDFs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Samples {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ttft_ms: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub e2el_ms: Vec<f64>,
}

impl Samples {
    pub fn is_empty(&self) -> bool {
        self.ttft_ms.is_empty() && self.e2el_ms.is_empty()
    }
}

/// One load step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub load: Load,
    pub workload: Workload,
    /// vLLM key names → value; unknown figures are absent.
    pub metrics: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "Samples::is_empty")]
    pub samples: Samples,
    /// The per-request records file (servebench results), for the timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_file: Option<PathBuf>,
    /// The file this step was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<PathBuf>,
    /// Facts about this step worth a reader's attention (failures, guessed values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Step {
    pub fn metric(&self, key: &str) -> Option<f64> {
        self.metrics.get(key).copied()
    }

    /// The value of `p` for this step.
    pub fn load_value(&self, p: Parameter) -> Option<f64> {
        match p {
            Parameter::NumPrompts => self.load.num_prompts.map(|v| v as f64),
            Parameter::MaxConcurrency => self.load.max_concurrency.map(|v| v as f64),
            Parameter::RequestRate => match self.load.request_rate? {
                RequestRate::Infinite => Some(f64::INFINITY),
                RequestRate::PerSecond(r) => Some(r),
            },
            Parameter::InputLen => self.workload.effective_input_len(),
        }
    }
}

/// One sweep (or a single step): steps that share a workload and vary one parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Short description ("num_prompts sweep, input_len 80").
    pub name: String,
    pub parameter: Parameter,
    pub steps: Vec<Step>,
}

impl Series {
    /// The step whose load value is `v`.
    pub fn step_at(&self, v: f64) -> Option<&Step> {
        self.steps
            .iter()
            .find(|s| s.load_value(self.parameter) == Some(v))
    }

    /// The workload of the first step (what the series is about).
    pub fn workload(&self) -> Workload {
        self.steps
            .first()
            .map(|s| s.workload.clone())
            .unwrap_or_default()
    }
}

/// One per-request figure recomputed from an llmperf record under servebench's definitions,
/// next to llmperf's own (see `docs/metrics.md`, "Imported figures").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmperfRequest {
    pub index: usize,
    pub ok: bool,
    pub ttft_ms: f64,
    pub e2el_ms: f64,
    /// llmperf's `inter_token_latency_s`, ms (TTFT included).
    pub llmperf_itl_ms: f64,
    /// llmperf's `number_output_tokens` (a fixed Llama tokenizer).
    pub llmperf_output_tokens: Option<u64>,
    /// llmperf's `request_output_throughput_token_per_s`.
    pub llmperf_request_output_throughput: Option<f64>,
    /// N recovered as round(E2EL / llmperf ITL): the streamed chunks llmperf divided by.
    pub output_tokens: Option<u64>,
    /// (E2EL − TTFT) / (N − 1), ms: servebench's TPOT, the ITL excluding TTFT.
    pub tpot_ms: Option<f64>,
    /// N / E2EL, tokens per second.
    pub request_output_throughput: Option<f64>,
    /// llmperf ITL × (llmperf N − 1), seconds: exceeds E2EL when the figures contradict.
    pub itl_times_n_minus_1_s: Option<f64>,
    /// What does not add up in llmperf's own figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

/// Everything `compare`, `plot` and `report` need from one input file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct View {
    /// Who/what this is: server or backend, model, file.
    pub label: String,
    pub origin: Origin,
    /// The format it came from (`servebench`, `vllm-text`, `vllm-json`, `llmperf-requests`,
    /// `llmperf-summary`).
    pub format: String,
    pub path: PathBuf,
    pub series: Vec<Series>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub llmperf_requests: Vec<LlmperfRequest>,
}

impl View {
    /// Every step of every series.
    pub fn steps(&self) -> impl Iterator<Item = &Step> {
        self.series.iter().flat_map(|s| s.steps.iter())
    }
}

/// The `imported` document: a [`View`] saved by `servebench import`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImportedDoc {
    pub schema_version: u32,
    /// Always `"imported"`.
    pub kind: String,
    pub servebench_version: String,
    /// The file imported, as given.
    pub source: PathBuf,
    #[serde(flatten)]
    pub view: ImportedView,
}

/// The part of a [`View`] an imported document stores (its path is where it is read from).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImportedView {
    pub label: String,
    pub format: String,
    pub series: Vec<Series>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub llmperf_requests: Vec<LlmperfRequest>,
}

impl ImportedDoc {
    pub fn new(view: &View) -> ImportedDoc {
        ImportedDoc {
            schema_version: IMPORTED_SCHEMA_VERSION,
            kind: "imported".into(),
            servebench_version: env!("CARGO_PKG_VERSION").to_string(),
            source: view.path.clone(),
            view: ImportedView {
                label: view.label.clone(),
                format: view.format.clone(),
                series: view.series.clone(),
                notes: view.notes.clone(),
                llmperf_requests: view.llmperf_requests.clone(),
            },
        }
    }

    /// Writes the document as pretty JSON.
    pub fn save(&self, path: &Path) -> Result<(), ViewError> {
        let err = |error| ViewError::Write {
            path: path.to_path_buf(),
            error,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let mut text = serde_json::to_string_pretty(self).map_err(|e| err(e.into()))?;
        text.push('\n');
        std::fs::write(path, text).map_err(err)
    }
}

/// The file name without `.json`, `.sweep.json`, `.imported.json`, `.txt`.
pub fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for ext in [".sweep.json", ".imported.json", ".json", ".txt", ".jsonl"] {
        if let Some(s) = name.strip_suffix(ext) {
            return s.to_string();
        }
    }
    name
}

/// The numeric vLLM keys of a metric map (`null`s and non-numbers are skipped).
pub fn numeric_keys(map: &serde_json::Map<String, Value>) -> BTreeMap<String, f64> {
    map.iter()
        .filter(|(k, _)| is_metric_key(k))
        .filter_map(|(k, v)| v.as_f64().filter(|x| x.is_finite()).map(|x| (k.clone(), x)))
        .collect()
}

/// True for the keys that name a run figure (vLLM's names).
pub fn is_metric_key(k: &str) -> bool {
    const RUN: [&str; 11] = [
        "completed",
        "failed",
        "duration",
        "total_input_tokens",
        "total_output_tokens",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
    ];
    RUN.contains(&k)
        || (k.ends_with("_ms")
            && ["mean_", "median_", "std_", "p"]
                .iter()
                .any(|p| k.starts_with(p)))
}

/// The view of one servebench result: one series with one step.
pub fn from_result(path: &Path, r: &BenchResult) -> View {
    let c = &r.config;
    let map: serde_json::Map<String, Value> =
        r.vllm.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut metrics = numeric_keys(&map);
    // The summary is the source of truth for what the flat keys may lack.
    metrics.insert("completed".into(), r.summary.completed as f64);
    metrics.insert("failed".into(), r.summary.failed as f64);
    let records_file = crate::measure::record::records_next_to(path, r.records_file.as_deref());
    let samples = records_file
        .as_deref()
        .and_then(|f| records_in(f).ok())
        .map(samples_of)
        .unwrap_or_else(|| samples_from_vllm_lists(&map));
    let mut notes = Vec::new();
    if !r.complete {
        notes.push(format!(
            "run stopped before it completed ({} requests never sent)",
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
    let server = if c.simulated {
        "sim".to_string()
    } else {
        c.backend.as_str().to_string()
    };
    let step = Step {
        load: Load {
            num_prompts: Some(c.load.num_prompts),
            max_concurrency: c.load.max_concurrency,
            request_rate: Some(c.load.request_rate),
        },
        workload: Workload {
            model: Some(c.model.clone()),
            backend: Some(c.backend.as_str().to_string()),
            dataset: Some(c.workload.dataset.to_string()),
            input_len: Some(c.workload.input_len),
            output_len: Some(c.workload.output_len),
            mean_input_tokens: (r.summary.completed > 0)
                .then(|| r.summary.total_input_tokens as f64 / r.summary.completed as f64),
        },
        metrics,
        samples,
        records_file,
        source: Some(path.to_path_buf()),
        notes,
    };
    View {
        label: format!("{server} {} ({})", c.model, file_stem(path)),
        origin: Origin::Result,
        format: "servebench".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: file_stem(path),
            parameter: Parameter::NumPrompts,
            steps: vec![step],
        }],
        notes: Vec::new(),
        llmperf_requests: Vec::new(),
    }
}

/// Reads a JSON Lines records file (skipping lines that do not parse, e.g. a torn last line).
pub fn read_records(path: &Path) -> Result<Vec<RequestRecord>, ViewError> {
    records_in(path).map(Iterator::collect)
}

fn records_in(path: &Path) -> Result<impl Iterator<Item = RequestRecord>, ViewError> {
    crate::measure::record::read_jsonl(path).map_err(|error| ViewError::Read {
        path: path.to_path_buf(),
        error,
    })
}

/// TTFT and E2EL of every successful measured record (`stats::RequestMetrics`).
pub fn samples_of<R: std::borrow::Borrow<RequestRecord>>(
    records: impl IntoIterator<Item = R>,
) -> Samples {
    let mut s = Samples::default();
    for r in records {
        let r = r.borrow();
        if r.warmup {
            continue;
        }
        if let Some(m) = crate::results::stats::RequestMetrics::of(r) {
            s.ttft_ms.push(m.ttft_ns as f64 / 1e6);
            s.e2el_ms.push(m.e2el_ns as f64 / 1e6);
        }
    }
    s
}

/// Per-request samples from vLLM's `ttfts` and `itls` lists (seconds): TTFT, and E2EL as
/// TTFT + Σ ITL. Requests with an error (or no TTFT) are skipped.
pub fn samples_from_vllm_lists(map: &serde_json::Map<String, Value>) -> Samples {
    let list = |k: &str| map.get(k).and_then(Value::as_array).cloned();
    let Some(ttfts) = list("ttfts") else {
        return Samples::default();
    };
    let itls = list("itls");
    let errors = list("errors");
    let mut s = Samples::default();
    for (i, t) in ttfts.iter().enumerate() {
        let failed = errors
            .as_ref()
            .and_then(|e| e.get(i))
            .and_then(Value::as_str)
            .is_some_and(|e| !e.is_empty());
        let Some(t) = t.as_f64().filter(|t| *t > 0.0 && !failed) else {
            continue;
        };
        s.ttft_ms.push(t * 1e3);
        if let Some(gaps) = itls
            .as_ref()
            .and_then(|l| l.get(i))
            .and_then(Value::as_array)
        {
            let sum: f64 = gaps.iter().filter_map(Value::as_f64).sum();
            s.e2el_ms.push((t + sum) * 1e3);
        }
    }
    s
}

/// Whether a higher value of a metric is better (`Some(true)`), worse (`Some(false)`), or
/// neither (token totals, counts of what was asked).
pub fn higher_is_better(key: &str) -> Option<bool> {
    if key.contains("throughput") || key.contains("goodput") || key == "completed" {
        Some(true)
    } else if key.ends_with("_ms") || key == "failed" || key == "duration" {
        Some(false)
    } else {
        None
    }
}

/// Metric keys in reading order: run figures, then TTFT/TPOT/ITL/E2EL (mean, median, std,
/// percentiles ascending), then anything else (foreign figures) alphabetically.
pub fn ordered_keys<'a>(keys: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    const RUN: [&str; 11] = [
        "completed",
        "failed",
        "duration",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "total_input_tokens",
        "total_output_tokens",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
    ];
    fn rank(k: &str) -> (usize, usize, f64, String) {
        if let Some(i) = RUN.iter().position(|r| *r == k) {
            return (0, i, 0.0, String::new());
        }
        for (mi, m) in ["ttft", "tpot", "itl", "e2el"].iter().enumerate() {
            let Some(stat) = k.strip_suffix(&format!("_{m}_ms")) else {
                continue;
            };
            let (si, p) = match stat {
                "mean" => (0, 0.0),
                "median" => (1, 0.0),
                "std" => (3, 0.0),
                s => match s.strip_prefix('p').and_then(|p| p.parse::<f64>().ok()) {
                    Some(p) => (2, p),
                    None => continue,
                },
            };
            return (1 + mi, si, p, String::new());
        }
        (9, 0, 0.0, k.to_string())
    }
    let mut keys: Vec<String> = keys.into_iter().cloned().collect();
    keys.sort_by(|a, b| {
        let (ra, rb) = (rank(a), rank(b));
        (ra.0, ra.1)
            .cmp(&(rb.0, rb.1))
            .then(ra.2.total_cmp(&rb.2))
            .then(ra.3.cmp(&rb.3))
    });
    keys.dedup();
    keys
}

/// A metric value for tables: counts as integers, everything else with two decimals, like
/// vLLM's report.
pub fn fmt_value(key: &str, v: f64) -> String {
    let count = matches!(
        key,
        "completed"
            | "failed"
            | "total_input_tokens"
            | "total_output_tokens"
            | "max_concurrent_requests"
    );
    if count && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.2}")
    }
}

/// A load value for labels: `inf`, integers plain, else up to 3 decimals.
pub fn fmt_load(v: f64) -> String {
    if v.is_infinite() {
        "inf".into()
    } else if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
