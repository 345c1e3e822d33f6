//! The view model: what `compare`, `plot` and `report` read from any document (a servebench
//! result, a servebench sweep, an imported document, or a foreign file read directly).
//!
//! A [`View`] is a list of [`Series`] (one per sweep; an imported text with several sweeps has
//! several), each a list of [`Step`]s. A step carries its load values, the workload descriptor
//! used to decide comparability, and its figures as a map from a typed
//! `config::figure::FigureKey` (which knows its unit and its better direction) to the value,
//! saved under vLLM's key names (`output_throughput`, `mean_ttft_ms`, `p99_itl_ms`, ...). A
//! figure that is not known is absent, never zero. A multi-LoRA run's step also carries each
//! adapter's [`Figures`], by the adapter's name. Figures that exist under a foreign
//! definition are keys of their own, named with the tool's prefix
//! (`llmperf_mean_inter_token_latency_ms`), so a name never means two things.
//!
//! Plain data: this file reads no file and computes nothing new (opening documents is
//! `views::open`, reading foreign formats `views::import`); it writes a load value as every
//! title and label does ([`fmt_load`]). A type here that is saved in an
//! imported document keeps its serialized names (a figure map is written in the order of its
//! names, as before keys were typed). To add a figure, give it a `FigureKey` and put it in a
//! step's `metrics`; to add a field, make it optional with `#[serde(default)]` so older
//! imported documents still read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, Serializer};

use crate::config::figure::FigureKey;
use crate::config::sweep::LoadParameter;
use crate::config::RequestRate;

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

/// The load of one step. `None`: not stated by the source.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Load {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_prompts: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_rate: Option<RequestRate>,
    /// The `prefix` dataset's distinct prefixes (a sweep over the prefix cache's working set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_prefixes: Option<u64>,
    /// The gap between a user's units, seconds (`--users`, `--user-gap`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_gap_s: Option<f64>,
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
    /// Each figure's value; unknown figures are absent.
    #[serde(serialize_with = "by_name")]
    pub metrics: BTreeMap<FigureKey, f64>,
    #[serde(default, skip_serializing_if = "Samples::is_empty")]
    pub samples: Samples,
    /// 95% intervals of the metrics that have one, by the metric's key (servebench results
    /// save them as `ci95_<key>`); empty for imports, which carry none.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "by_name"
    )]
    pub intervals: BTreeMap<FigureKey, [f64; 2]>,
    /// What a servebench result judged of itself (its validity verdict, its SLOs); absent
    /// for imports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<Judged>,
    /// The per-request records file (servebench results), for the timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_file: Option<PathBuf>,
    /// The run's steady window on the records' clock (ns), drawn on the timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_window_ns: Option<[u64; 2]>,
    /// The file this step was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<PathBuf>,
    /// Facts about this step worth a reader's attention (failures, guessed values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// A multi-LoRA run's figures of each adapter, by its name (a servebench result's
    /// `per_adapter`); empty for any other step. A name is outside text: escape it to show it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub adapters: BTreeMap<String, Figures>,
    /// The accelerators serving the endpoint (`run --gpus`, `import --gpus`); `None`: not
    /// known, and the Pareto front is per server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u32>,
    /// A servebench result's time slices (`--time-slice`), for their charts; absent otherwise.
    /// Not part of a view's JSON (`compare --format json`, an import): the result holds them.
    #[serde(skip)]
    pub slices: Option<crate::results::stats::slices::Slices>,
    /// A servebench result's "Server's account" block, for the HTML page's section; absent
    /// otherwise. Not part of a view's JSON (its figures are in `metrics`).
    #[serde(skip)]
    pub server_account: Option<crate::results::stats::ServerAccount>,
    /// A servebench result's figures by length bucket (`--bucket-by`), for the HTML page's
    /// table; absent otherwise. Not part of a view's JSON (the result holds them).
    #[serde(skip)]
    pub buckets: Option<crate::results::stats::buckets::Buckets>,
    /// An autoscaler benchmark's figures (a servebench result's `autoscale`), for their chart;
    /// absent otherwise. Not part of a view's JSON, as `slices`.
    #[serde(skip)]
    pub autoscale: Option<crate::results::autoscale::AutoscaleFigures>,
    /// The SLO controller's figures (a servebench result's `adaptive`), for its charts;
    /// absent otherwise. Not part of a view's JSON, as `slices`.
    #[serde(skip)]
    pub adaptive: Option<crate::results::adaptive::AdaptiveFigures>,
}

/// What a servebench result judged of itself, as its first screen shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// The validity verdict as reports write it (`valid`, `CLIENT-BOUND`, ...); absent in
    /// results saved before servebench judged its runs.
    pub verdict: Option<String>,
    /// Why the verdict is not `valid`, and which figures it touches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// The run's SLOs (`--goodput`) as `ttft ≤ 200 ms`; empty without.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slos: Vec<String>,
    /// Requests that met every SLO; absent without SLOs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good: Option<u64>,
    /// Measured requests (completed and failed): SLO attainment is `good / measured`.
    pub measured: u64,
}

impl Judged {
    /// SLO attainment: the share of measured requests that met every SLO (a failed request
    /// never does); `None` without SLOs or requests.
    pub fn slo_attainment(&self) -> Option<f64> {
        let good = self.good?;
        (self.measured > 0).then(|| good as f64 / self.measured as f64)
    }
}

/// Figures and their 95% intervals, by key: one LoRA adapter's in a step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    #[serde(serialize_with = "by_name")]
    pub metrics: BTreeMap<FigureKey, f64>,
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "by_name"
    )]
    pub intervals: BTreeMap<FigureKey, [f64; 2]>,
}

/// A figure map as a JSON object in the order of the figures' names.
fn by_name<V: Serialize, S: Serializer>(
    map: &BTreeMap<FigureKey, V>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let named: BTreeMap<String, &V> = map.iter().map(|(k, v)| (k.name(), v)).collect();
    named.serialize(s)
}

impl Step {
    /// A step read from the file `source`, nothing else known yet: an importer sets what its
    /// format states (`Step { load, metrics, ..Step::from_source(path) }`) and every other
    /// field stays absent.
    pub fn from_source(source: &Path) -> Step {
        Step {
            source: Some(source.to_path_buf()),
            ..Step::default()
        }
    }

    /// The value of figure `key`, when the step has it.
    pub fn metric(&self, key: impl Into<FigureKey>) -> Option<f64> {
        self.metrics.get(&key.into()).copied()
    }

    /// The value of `p` for this step.
    pub fn load_value(&self, p: LoadParameter) -> Option<f64> {
        match p {
            LoadParameter::NumPrompts => self.load.num_prompts.map(|v| v as f64),
            LoadParameter::MaxConcurrency => self.load.max_concurrency.map(|v| v as f64),
            LoadParameter::RequestRate => match self.load.request_rate? {
                RequestRate::Infinite => Some(f64::INFINITY),
                RequestRate::PerSecond(r) => Some(r),
            },
            LoadParameter::InputLen => self.workload.effective_input_len(),
            LoadParameter::NumPrefixes => self.load.num_prefixes.map(|v| v as f64),
            LoadParameter::UserGap => self.load.user_gap_s,
        }
    }
}

/// One sweep (or a single step): steps that share a workload and vary one parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Short description ("num_prompts sweep, input_len 80").
    pub name: String,
    pub parameter: LoadParameter,
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

/// A load value as titles and labels write it: `inf`, integers plain, else up to 3 decimals.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_differences_ignore_unknowns_and_backend() {
        let a = Workload {
            model: Some("m".into()),
            backend: Some("tgi".into()),
            mean_input_tokens: Some(81.6),
            input_len: Some(10000),
            ..Workload::default()
        };
        let b = Workload {
            backend: Some("vllm".into()),
            input_len: Some(80),
            mean_input_tokens: Some(81.7),
            ..Workload::default()
        };
        assert!(a.differences(&b).is_empty());
        let c = Workload {
            model: Some("other".into()),
            input_len: Some(10000),
            ..Workload::default()
        };
        let d = a.differences(&c);
        assert_eq!(d.len(), 2, "{d:?}");
    }
}
