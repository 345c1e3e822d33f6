//! Reads other tools' result files into a [`View`], and saves them as `imported` documents
//! that `compare`, `plot` and `report` read like native results.
//!
//! Formats (detected from the content, not the file name, in [`parse`]), one file each:
//! - `vllm_text`: vLLM's text report: every "Serving Benchmark Result" block, with the load
//!   and workload stated in the lines around it (a `benchmark_serving.py`/`vllm bench serve`
//!   command line, `num_prompts: 1, 2, 4, ...`, `num_prompt:1`, `seq_length: 80`, a bare server
//!   name such as `vllm`, vLLM's own `Maximum request concurrency:` and `Traffic request
//!   rate:` lines).
//! - `vllm_json`: vLLM's `--save-result` JSON (one object, an array of them, or JSON Lines).
//! - `llmperf`: llmperf's `*_individual_responses.json` (a list of per-request records; a
//!   record pasted with `#` comments, as in seed 000, is read too) and its `*_summary.json`.
//! - `llm_d`: llm-d's Benchmark Report, version 0.2 or 0.2.1 (one report, or an array: a sweep),
//!   written by any tool; `render::llm_d` writes it with the same vocabulary.
//! - `aiperf`: AIPerf's `profile_export_aiperf.json`, with its per-record `profile_export.jsonl`
//!   when it lies beside it (read here, bounded), or the records file alone.
//! - `inference_perf`: inference-perf's lifecycle reports (one stage, or the whole run).
//! - `guidellm`: GuideLLM's `benchmarks.json` (report schema version 2): a step per benchmark.
//!
//! This file only sniffs and dispatches (and writes the `imported` document, `import_file`);
//! what the formats share (labels, the varying parameter) is `common`. How numbers of prompts
//! are assigned to text blocks, and how llmperf's figures are recomputed under servebench's
//! definitions, is in `docs/metrics.md` ("Imported figures"). Importers only read and map; the
//! per-request statistics of llmperf records use `stats::Distribution` so the percentile
//! method is servebench's one. No importer reads servebench's own documents (`views::open`).
//!
//! To add a format: a new file here with one function returning a [`View`]; detect the format
//! in [`parse`] (or `parse_json`); map its keys to vLLM's names (latency keys as
//! `config::metric::MetricKey`s); state what it cannot say (absent, never zero); and add a
//! fixture test to `tests.rs`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use self::llmperf::{llmperf_requests, llmperf_summary};
use self::vllm_json::vllm_json;
use self::vllm_text::parse_vllm_text;
use crate::views::error::ViewError;
use crate::views::imported::ImportedDoc;
use crate::views::model::{file_stem, View};

pub mod aiperf;
mod common;
pub mod guidellm;
pub mod inference_perf;
pub mod llm_d;
pub mod llmperf;
mod vllm_json;
mod vllm_text;

#[cfg(test)]
mod tests;

/// Reads a foreign file (text already loaded) into a view.
pub fn parse(path: &Path, text: &str) -> Result<View, ViewError> {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => return parse_json(path, value),
        Err(e)
            if text.contains("\"guidellm_version\"")
                || text.contains("\"generative_benchmark\"") =>
        {
            return Err(ViewError::parse(
                path,
                format!("a GuideLLM report that is not whole JSON (truncated?): {e}"),
            ))
        }
        Err(_) => {}
    }
    if let Some(records) = aiperf_lines(path, text)? {
        return aiperf::aiperf_records(path, records);
    }
    if text.contains("Serving Benchmark Result") {
        return parse_vllm_text(path, text);
    }
    if let Some(objects) = json_lines(text) {
        return vllm_json(path, objects);
    }
    if text.contains("end_to_end_latency_s") {
        let records = commented_objects(text);
        if !records.is_empty() {
            return llmperf_requests(path, &records);
        }
    }
    Err(ViewError::parse(
        path,
        "not a format servebench reads: no \"Serving Benchmark Result\" block (vLLM text report), \
         and not vLLM --save-result JSON, llmperf JSON, or a servebench document",
    ))
}

fn parse_json(path: &Path, value: Value) -> Result<View, ViewError> {
    match value {
        Value::Array(items) => {
            let objects: Vec<Map<String, Value>> = items
                .into_iter()
                .filter_map(|v| match v {
                    Value::Object(m) => Some(m),
                    _ => None,
                })
                .collect();
            match objects.first() {
                Some(o) if llm_d::is_report(o) => llm_d::llm_d(path, objects),
                Some(o) if o.contains_key("end_to_end_latency_s") => {
                    llmperf_requests(path, &objects)
                }
                Some(o) if is_vllm_json(o) => vllm_json(path, objects),
                Some(_) => Err(ViewError::parse(
                    path,
                    "a JSON list, but not of llmperf or vLLM results",
                )),
                None => Err(ViewError::parse(
                    path,
                    "an empty JSON list: nothing to import",
                )),
            }
        }
        Value::Object(o) => {
            if llm_d::is_report(&o) {
                llm_d::llm_d(path, vec![o])
            } else if aiperf::is_summary(&o) {
                match aiperf_records_beside(path)? {
                    Some((p, r)) => aiperf::aiperf(path, &o, Some((&p, r))),
                    None => aiperf::aiperf(path, &o, None),
                }
            } else if inference_perf::is_report(&o) {
                inference_perf::inference_perf(path, o)
            } else if guidellm::is_report(&o) {
                guidellm::guidellm(path, &o)
            } else if o.get("schema_version").is_some() && o.get("config").is_some()
                || o.get("kind").and_then(Value::as_str).is_some()
            {
                Err(ViewError::parse(
                    path,
                    "already a servebench document: compare, plot and report read it directly",
                ))
            } else if o.keys().any(|k| k.starts_with("results_")) {
                llmperf_summary(path, &o)
            } else if is_vllm_json(&o) {
                vllm_json(path, vec![o])
            } else {
                Err(ViewError::parse(
                    path,
                    "JSON, but not vLLM --save-result (no 'completed' or throughput keys), llmperf, llm-d, AIPerf, GuideLLM or inference-perf",
                ))
            }
        }
        _ => Err(ViewError::parse(path, "JSON, but not an object or a list")),
    }
}

fn is_vllm_json(o: &Map<String, Value>) -> bool {
    ["completed", "request_throughput", "output_throughput"]
        .iter()
        .any(|k| o.contains_key(*k))
}

/// The objects of a JSON Lines file, one per line.
type Records = Vec<Map<String, Value>>;

/// AIPerf's per-record JSONL (its first line a record): every line's object; `None` when the
/// text is not that format.
fn aiperf_lines(path: &Path, text: &str) -> Result<Option<Records>, ViewError> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    match lines.next().map(serde_json::from_str::<Value>) {
        Some(Ok(Value::Object(o))) if aiperf::is_record(&o) => {}
        _ => return Ok(None),
    }
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        if out.len() >= aiperf::MAX_RECORDS {
            return Err(ViewError::parse(
                path,
                format!(
                    "more than {} AIPerf records: the most one import reads",
                    aiperf::MAX_RECORDS
                ),
            ));
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(o)) => out.push(o),
            _ => {
                return Err(ViewError::parse(
                    path,
                    format!("line {}: not an AIPerf record (a JSON object)", i + 1),
                ))
            }
        }
    }
    Ok(Some(out))
}

/// AIPerf's per-record file beside its summary export (`X_aiperf.json` → `X.jsonl`), read
/// when it is there.
fn aiperf_records_beside(path: &Path) -> Result<Option<(PathBuf, Records)>, ViewError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let Some(stem) = name.as_deref().and_then(|n| n.strip_suffix("_aiperf.json")) else {
        return Ok(None);
    };
    let beside = path.with_file_name(format!("{stem}.jsonl"));
    if !beside.is_file() {
        return Ok(None);
    }
    let bytes = crate::results::read::read_bounded(&beside)?;
    Ok(aiperf_lines(&beside, &String::from_utf8_lossy(&bytes))?.map(|r| (beside, r)))
}

/// Every line a JSON object (vLLM's `--append-result` files); `None` otherwise.
fn json_lines(text: &str) -> Option<Vec<Map<String, Value>>> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(o)) if is_vllm_json(&o) => out.push(o),
            _ => return None,
        }
    }
    (!out.is_empty()).then_some(out)
}

/// `{...}` objects in a text where each line may end in a `# comment` (seed 000's paste).
fn commented_objects(text: &str) -> Vec<Map<String, Value>> {
    let cleaned: String = text
        .lines()
        .map(|l| {
            let mut in_str = false;
            let mut cut = l.len();
            for (i, c) in l.char_indices() {
                match c {
                    '"' => in_str = !in_str,
                    '#' if !in_str => {
                        cut = i;
                        break;
                    }
                    _ => {}
                }
            }
            format!("{}\n", &l[..cut])
        })
        .collect();
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = None;
    for (i, c) in cleaned.char_indices() {
        match c {
            '{' => {
                if depth == 0 {
                    start = Some(i);
                }
                depth += 1;
            }
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    if let Some(s) = start.take() {
                        if let Ok(Value::Object(o)) = serde_json::from_str(&cleaned[s..=i]) {
                            if o.contains_key("end_to_end_latency_s") {
                                out.push(o);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

// ---------------------------------------------------------------- import command

/// Where `import` writes the document for `input`: `out` itself for a single input, inside
/// `out` (a directory) for several, else `<stem>.imported.json` in the current directory.
pub fn output_path(input: &Path, out: Option<&Path>, several: bool) -> PathBuf {
    let name = format!("{}.imported.json", file_stem(input));
    match out {
        Some(o) if several => o.join(name),
        Some(o) => o.to_path_buf(),
        None => PathBuf::from(name),
    }
}

/// Reads a foreign file and saves it as an imported document at `out`; returns the view.
/// `gpus` (`import --gpus`): the accelerators that served it, kept on every step (a foreign
/// format does not say).
pub fn import_file(input: &Path, out: &Path, gpus: Option<u32>) -> Result<View, ViewError> {
    let text = crate::results::read::read_bounded(input)?;
    let mut view = parse(input, &String::from_utf8_lossy(&text))?;
    if gpus.is_some() {
        (view.series.iter_mut())
            .flat_map(|s| s.steps.iter_mut())
            .for_each(|st| st.gpus = gpus);
    }
    ImportedDoc::new(&view).save(out)?;
    Ok(view)
}
