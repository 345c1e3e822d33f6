//! Reads other tools' result files into a [`View`], and saves them as `imported` documents
//! that `compare`, `plot` and `report` read like native results.
//!
//! Formats (detected from the content, not the file name):
//! - vLLM's text report: every "Serving Benchmark Result" block, with the load and workload
//!   stated in the lines around it (a `benchmark_serving.py`/`vllm bench serve` command line,
//!   `num_prompts: 1, 2, 4, ...`, `num_prompt:1`, `seq_length: 80`, a bare server name such as
//!   `vllm`, vLLM's own `Maximum request concurrency:` and `Traffic request rate:` lines).
//! - vLLM's `--save-result` JSON (one object, an array of them, or JSON Lines).
//! - llmperf's `*_individual_responses.json` (a list of per-request records; a record pasted
//!   with `#` comments, as in seed 000, is read too) and its `*_summary.json`.
//!
//! How numbers of prompts are assigned to text blocks, and how llmperf's figures are
//! recomputed under servebench's definitions, is in `docs/metrics.md` ("Imported figures").
//! This module only reads and maps; the per-request statistics of llmperf records use
//! `stats::Distribution` so the percentile method is servebench's one.
//!
//! To add a format: detect it in [`parse`], map its keys to vLLM's names, state what it cannot
//! say (absent, never zero), and add a fixture test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::RequestRate;
use crate::results::stats::Distribution;
use crate::views::error::ViewError;
use crate::views::view::{
    file_stem, numeric_keys, samples_from_vllm_lists, ImportedDoc, LlmperfRequest, Load, Origin,
    Parameter, Samples, Series, Step, View, Workload,
};

/// Percentiles computed for per-request imports (llmperf records).
const PERCENTILES: [f64; 5] = [50.0, 75.0, 90.0, 95.0, 99.0];

fn bad(path: &Path, why: impl Into<String>) -> ViewError {
    ViewError::Parse {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// Reads a foreign file (text already loaded) into a view.
pub fn parse(path: &Path, text: &str) -> Result<View, ViewError> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return parse_json(path, value);
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
    Err(bad(
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
                Some(o) if o.contains_key("end_to_end_latency_s") => {
                    llmperf_requests(path, &objects)
                }
                Some(o) if is_vllm_json(o) => vllm_json(path, objects),
                Some(_) => Err(bad(path, "a JSON list, but not of llmperf or vLLM results")),
                None => Err(bad(path, "an empty JSON list: nothing to import")),
            }
        }
        Value::Object(o) => {
            if o.get("schema_version").is_some() && o.get("config").is_some()
                || o.get("kind").and_then(Value::as_str).is_some()
            {
                Err(bad(
                    path,
                    "already a servebench document: compare, plot and report read it directly",
                ))
            } else if o.keys().any(|k| k.starts_with("results_")) {
                llmperf_summary(path, &o)
            } else if is_vllm_json(&o) {
                vllm_json(path, vec![o])
            } else {
                Err(bad(
                    path,
                    "JSON, but neither vLLM --save-result (no 'completed' or throughput keys) nor llmperf",
                ))
            }
        }
        _ => Err(bad(path, "JSON, but not an object or a list")),
    }
}

fn is_vllm_json(o: &Map<String, Value>) -> bool {
    ["completed", "request_throughput", "output_throughput"]
        .iter()
        .any(|k| o.contains_key(*k))
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

// ---------------------------------------------------------------- vLLM text reports

/// The context the lines around the blocks give.
#[derive(Clone, Debug, Default)]
struct Context {
    server: Option<String>,
    model: Option<String>,
    dataset: Option<String>,
    input_len: Option<u64>,
    output_len: Option<u64>,
    num_prompts: Option<Vec<u64>>,
    /// The list as written, when it had to be expanded ("1,2,...,4096").
    num_prompts_text: Option<String>,
    request_rate: Option<RequestRate>,
    max_concurrency: Option<u64>,
}

#[derive(Debug, Default)]
struct Block {
    metrics: BTreeMap<String, f64>,
    request_rate: Option<RequestRate>,
    max_concurrency: Option<u64>,
    ignored: Vec<String>,
}

#[derive(Debug, Default)]
struct Section {
    ctx: Context,
    blocks: Vec<Block>,
}

const SERVERS: [&str; 12] = [
    "vllm",
    "tgi",
    "sglang",
    "trtllm",
    "tensorrt-llm",
    "lmdeploy",
    "llama.cpp",
    "llamacpp",
    "mii",
    "deepspeed-mii",
    "openai",
    "scalellm",
];

/// The metric key of a report line's label, under vLLM's `--save-result` names.
fn text_key(label: &str) -> Option<String> {
    let fixed = match label {
        "Successful requests" => "completed",
        "Failed requests" => "failed",
        "Benchmark duration (s)" => "duration",
        "Total input tokens" => "total_input_tokens",
        "Total generated tokens" => "total_output_tokens",
        "Request throughput (req/s)" => "request_throughput",
        "Request goodput (req/s)" => "request_goodput",
        "Output token throughput (tok/s)" => "output_throughput",
        "Total Token throughput (tok/s)" | "Total token throughput (tok/s)" => {
            "total_token_throughput"
        }
        "Peak output token throughput (tok/s)" => "max_output_tokens_per_s",
        "Peak concurrent requests" => "max_concurrent_requests",
        _ => "",
    };
    if !fixed.is_empty() {
        return Some(fixed.to_string());
    }
    let rest = label.strip_suffix(" (ms)")?;
    let (stat, metric) = rest.split_once(' ')?;
    let metric = match metric {
        "TTFT" => "ttft",
        "TPOT" => "tpot",
        "ITL" => "itl",
        "E2EL" => "e2el",
        _ => return None,
    };
    let stat = match stat {
        "Mean" => "mean".to_string(),
        "Median" => "median".to_string(),
        "Std" => "std".to_string(),
        p => {
            let n = p.strip_prefix('P')?;
            n.parse::<f64>().ok()?;
            format!("p{n}")
        }
    };
    Some(format!("{stat}_{metric}_ms"))
}

/// A list of numbers, possibly with an ellipsis: `1, 2, 4`, `1,2,...,4096`. Returns every
/// candidate expansion (geometric first, then arithmetic) for the caller to pick from.
fn number_list(s: &str) -> Option<Vec<Vec<u64>>> {
    let parts: Vec<&str> = s
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() {
        return None;
    }
    let dots = parts
        .iter()
        .position(|p| *p == "..." || *p == "…" || *p == "..");
    let nums = |ps: &[&str]| -> Option<Vec<u64>> { ps.iter().map(|p| p.parse().ok()).collect() };
    let Some(d) = dots else {
        return Some(vec![nums(&parts)?]);
    };
    let head = nums(&parts[..d])?;
    let tail = nums(&parts[d + 1..])?;
    let (&last, &a) = (tail.first()?, head.first()?);
    if head.len() < 2 || tail.len() != 1 {
        return None;
    }
    let b = head[1];
    let mut candidates = Vec::new();
    if a > 0 && b > a && b % a == 0 {
        let r = b / a;
        if head.windows(2).all(|w| w[1] == w[0] * r) {
            let mut v = vec![a];
            while let Some(&x) = v.last() {
                if x >= last {
                    break;
                }
                v.push(x * r);
            }
            if v.last() == Some(&last) {
                candidates.push(v);
            }
        }
    }
    if b > a {
        let step = b - a;
        if head.windows(2).all(|w| w[1] == w[0] + step) && (last - a) % step == 0 {
            let n = (last - a) / step + 1;
            if n <= 100_000 {
                candidates.push((0..n).map(|i| a + i * step).collect());
            }
        }
    }
    (!candidates.is_empty()).then_some(candidates)
}

/// `--flag=value` / `--flag value` pairs of a command line.
fn flags(line: &str) -> Vec<(String, String)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if let Some(f) = words[i].strip_prefix("--") {
            if let Some((k, v)) = f.split_once('=') {
                out.push((k.to_string(), v.trim_matches('"').to_string()));
            } else if i + 1 < words.len() && !words[i + 1].starts_with("--") {
                out.push((f.to_string(), words[i + 1].trim_matches('"').to_string()));
                i += 1;
            }
        }
        i += 1;
    }
    out
}

fn is_command_line(l: &str) -> bool {
    l.contains("benchmark_serving")
        || l.contains("bench serve")
        || (l.starts_with("python") && l.contains("--"))
}

/// What a header line says; `true` when it starts a new section's headers.
fn header(l: &str, ctx: &mut Context) -> bool {
    if is_command_line(l) {
        for (k, v) in flags(l) {
            match k.as_str() {
                "backend" => ctx.server = Some(v),
                "model" => ctx.model = Some(v),
                "dataset-name" | "dataset" => ctx.dataset = Some(v),
                "request-rate" => ctx.request_rate = v.parse().ok(),
                "max-concurrency" => ctx.max_concurrency = v.parse().ok(),
                "num-prompts" | "num-prompt" => {
                    ctx.num_prompts_text = Some(v.clone());
                    ctx.num_prompts = number_list(&v).map(|mut c| c.remove(0));
                }
                k if k.ends_with("input-len") => ctx.input_len = v.parse().ok(),
                k if k.ends_with("output-len") => ctx.output_len = v.parse().ok(),
                _ => {}
            }
        }
        return true;
    }
    let lower = l.to_ascii_lowercase();
    if SERVERS.contains(&lower.as_str()) {
        ctx.server = Some(lower);
        return false;
    }
    let Some((name, value)) = lower.split_once([':', '=']) else {
        return false;
    };
    let name = name.trim().replace('-', "_");
    let value = value.trim();
    match name.as_str() {
        "num_prompts" | "num_prompt" => {
            ctx.num_prompts_text = Some(value.to_string());
            ctx.num_prompts = number_list(value).map(|mut c| c.remove(0));
            true
        }
        "seq_length" | "input_len" | "seq_len" | "input_length" => {
            ctx.input_len = value.parse().ok();
            true
        }
        "output_len" | "output_length" => {
            ctx.output_len = value.parse().ok();
            true
        }
        _ => false,
    }
}

fn parse_vllm_text(path: &Path, text: &str) -> Result<View, ViewError> {
    // File-wide context (server, model: from a bare name or a command line) carries into
    // every section; section headers (the prompt list, the lengths) do not.
    let mut file_ctx = Context::default();
    let mut sections: Vec<Section> = vec![Section::default()];
    let mut in_block: Option<Block> = None;
    let mut pending_rate = None;
    let mut pending_conc = None;
    for raw in text.lines() {
        let l = raw.trim().trim_start_matches('#').trim();
        if l.contains("Serving Benchmark Result") {
            if let Some(b) = in_block.take() {
                sections.last_mut().expect("one section").blocks.push(b);
            }
            in_block = Some(Block {
                request_rate: pending_rate.take(),
                max_concurrency: pending_conc.take(),
                ..Block::default()
            });
            continue;
        }
        if let Some(block) = in_block.as_mut() {
            if !l.is_empty() && l.chars().all(|c| c == '=') {
                sections
                    .last_mut()
                    .expect("one section")
                    .blocks
                    .push(in_block.take().expect("in a block"));
                continue;
            }
            if l.starts_with('-') || l.is_empty() {
                continue;
            }
            if let Some((label, value)) = l.split_once(':') {
                let value = value.split_whitespace().next().unwrap_or("");
                match (text_key(label.trim()), value.parse::<f64>()) {
                    (Some(k), Ok(v)) if v.is_finite() => {
                        block.metrics.insert(k, v);
                    }
                    _ => {
                        if label.trim() == "Maximum request concurrency" {
                            block.max_concurrency = value.parse().ok();
                        } else if label.trim() == "Traffic request rate" {
                            block.request_rate = value.parse().ok();
                        } else {
                            block.ignored.push(l.to_string());
                        }
                    }
                }
            }
            continue;
        }
        // Outside blocks: per-block preambles vLLM prints, and headers.
        if let Some(v) = l.strip_prefix("Traffic request rate:") {
            pending_rate = v.trim().parse().ok();
            continue;
        }
        if let Some(v) = l.strip_prefix("Maximum request concurrency:") {
            pending_conc = v.trim().parse().ok();
            continue;
        }
        let mut probe = sections.last().expect("one section").ctx.clone();
        let before_server = probe.server.clone();
        if header(l, &mut probe) {
            let current = sections.last_mut().expect("one section");
            if current.blocks.is_empty() {
                current.ctx = probe;
            } else {
                // Headers after results start a new section, inheriting only file context.
                let mut ctx = file_ctx.clone();
                header(l, &mut ctx);
                sections.push(Section {
                    ctx,
                    blocks: Vec::new(),
                });
            }
            if is_command_line(l) {
                header(l, &mut file_ctx);
            }
        } else if probe.server != before_server {
            file_ctx.server = probe.server.clone();
            sections.last_mut().expect("one section").ctx.server = probe.server;
        }
    }
    if let Some(b) = in_block.take() {
        sections.last_mut().expect("one section").blocks.push(b);
    }
    for s in &mut sections {
        s.blocks.retain(|b| !b.metrics.is_empty());
    }
    let sections: Vec<Section> = sections
        .into_iter()
        .filter(|s| !s.blocks.is_empty())
        .collect();
    if sections.is_empty() {
        return Err(bad(
            path,
            "no \"Serving Benchmark Result\" block with figures found",
        ));
    }
    let mut notes = Vec::new();
    let n_sections = sections.len();
    let mut series = Vec::new();
    for (i, s) in sections.into_iter().enumerate() {
        series.push(text_series(path, s, i, n_sections, &mut notes));
    }
    let ctx_server = series
        .iter()
        .flat_map(|s| s.steps.iter())
        .find_map(|s| s.workload.backend.clone());
    let model = series
        .iter()
        .flat_map(|s| s.steps.iter())
        .find_map(|s| s.workload.model.clone());
    Ok(View {
        label: label_of(ctx_server.as_deref(), model.as_deref(), path),
        origin: Origin::Imported,
        format: "vllm-text".into(),
        path: path.to_path_buf(),
        series,
        notes,
        llmperf_requests: Vec::new(),
    })
}

fn label_of(server: Option<&str>, model: Option<&str>, path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    parts.extend(server.map(str::to_string));
    parts.extend(model.map(str::to_string));
    parts.push(format!("({})", file_stem(path)));
    parts.join(" ")
}

fn text_series(
    path: &Path,
    s: Section,
    index: usize,
    of: usize,
    notes: &mut Vec<String>,
) -> Series {
    let ctx = &s.ctx;
    let n = s.blocks.len();
    let completed: Vec<Option<u64>> = s
        .blocks
        .iter()
        .map(|b| b.metrics.get("completed").map(|c| *c as u64))
        .collect();
    let where_ = if of > 1 {
        format!("section {} of {}", index + 1, of)
    } else {
        file_stem(path)
    };
    // Numbers of prompts: the stated list in order, else the stated single value, else the
    // successful requests (a lower bound when requests failed).
    let mut assigned: Vec<Option<u64>> = vec![None; n];
    let mut from_list = false;
    if let Some(list) = &ctx.num_prompts {
        let list = match (&ctx.num_prompts_text, list.len()) {
            // Re-pick the ellipsis expansion whose length matches the blocks.
            (Some(t), len) if len != n => number_list(t)
                .and_then(|c| c.into_iter().find(|v| v.len() == n))
                .unwrap_or_else(|| list.clone()),
            _ => list.clone(),
        };
        if list.len() == 1 {
            assigned = vec![Some(list[0]); n];
        } else {
            for (i, a) in assigned.iter_mut().enumerate() {
                *a = list.get(i).copied();
            }
            if list.len() != n {
                notes.push(format!(
                    "{where_}: the prompt list has {} values but {n} results follow; assigned in order",
                    list.len()
                ));
            }
        }
        let fits = assigned.iter().zip(&completed).all(|(a, c)| match (a, c) {
            (Some(a), Some(c)) => c <= a,
            _ => true,
        });
        if fits {
            from_list = true;
        } else {
            notes.push(format!(
                "{where_}: the prompt list does not fit the successful requests; using those instead"
            ));
            assigned = vec![None; n];
        }
    }
    if assigned.iter().any(Option::is_none) && !from_list {
        notes.push(format!(
            "{where_}: number of prompts not stated per result; taken from \"Successful requests\" (failed requests, if any, are not counted)"
        ));
    }
    let mut steps = Vec::with_capacity(n);
    for (i, b) in s.blocks.into_iter().enumerate() {
        let mut metrics = b.metrics;
        let completed_here = completed[i];
        let num_prompts = assigned[i].or(completed_here);
        let mut step_notes = Vec::new();
        if let (Some(np), Some(c), true) = (assigned[i], completed_here, from_list) {
            if np > c {
                metrics.insert("failed".into(), (np - c) as f64);
                step_notes.push(format!("{np} prompts, {c} successful: {} failed", np - c));
            }
        }
        if !b.ignored.is_empty() {
            step_notes.push(format!("lines not understood: {}", b.ignored.join(" | ")));
        }
        let mean_input_tokens = match (metrics.get("total_input_tokens"), completed_here) {
            (Some(t), Some(c)) if c > 0 => Some(t / c as f64),
            _ => None,
        };
        steps.push(Step {
            load: Load {
                num_prompts,
                max_concurrency: b.max_concurrency.or(ctx.max_concurrency),
                request_rate: b.request_rate.or(ctx.request_rate),
            },
            workload: Workload {
                model: ctx.model.clone(),
                backend: ctx.server.clone(),
                dataset: ctx.dataset.clone(),
                input_len: ctx.input_len,
                output_len: ctx.output_len,
                mean_input_tokens,
            },
            metrics,
            samples: Samples::default(),
            records_file: None,
            source: Some(path.to_path_buf()),
            notes: step_notes,
        });
    }
    if let (Some(declared), Some(measured)) = (
        ctx.input_len,
        steps.iter().find_map(|s| s.workload.mean_input_tokens),
    ) {
        if (declared as f64 - measured).abs() > 0.1 * declared as f64 {
            notes.push(format!(
                "{where_}: input length {declared} is stated, but the results average {measured:.0} input tokens per request; comparisons use the measured length"
            ));
        }
    }
    let parameter = varying_parameter(&steps);
    let mut name = format!("{} sweep", parameter.as_str());
    if parameter != Parameter::InputLen {
        let measured = steps.iter().find_map(|s| s.workload.mean_input_tokens);
        match (ctx.input_len, measured) {
            (Some(l), Some(m)) if (l as f64 - m).abs() > 0.1 * l as f64 => {
                name.push_str(&format!(", input ~{m:.0} tokens (stated {l})"))
            }
            (Some(l), _) => name.push_str(&format!(", input_len {l}")),
            (None, Some(m)) => name.push_str(&format!(", input ~{m:.0} tokens")),
            (None, None) => {}
        }
    } else if let Some(np) = steps.first().and_then(|s| s.load.num_prompts) {
        name.push_str(&format!(", num_prompts {np}"));
    }
    if of > 1 {
        name = format!("{name} ({where_})");
    }
    Series {
        name,
        parameter,
        steps,
    }
}

/// The load parameter that varies across steps (num_prompts when nothing does).
fn varying_parameter(steps: &[Step]) -> Parameter {
    let distinct = |p: Parameter| {
        let mut v: Vec<i64> = steps
            .iter()
            .filter_map(|s| s.load_value(p))
            .map(|x| {
                if x.is_finite() {
                    x.round() as i64
                } else {
                    i64::MAX
                }
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    for p in [
        Parameter::NumPrompts,
        Parameter::MaxConcurrency,
        Parameter::RequestRate,
        Parameter::InputLen,
    ] {
        if distinct(p) > 1 {
            return p;
        }
    }
    Parameter::NumPrompts
}

// ---------------------------------------------------------------- vLLM --save-result JSON

fn vllm_json(path: &Path, objects: Vec<Map<String, Value>>) -> Result<View, ViewError> {
    let mut steps = Vec::new();
    let mut notes = Vec::new();
    for o in &objects {
        let metrics = numeric_keys(o);
        if metrics.is_empty() {
            return Err(bad(path, "vLLM result without any figure"));
        }
        let completed = metrics.get("completed").map(|c| *c as u64);
        let rate = match o.get("request_rate") {
            Some(Value::String(s)) => s.parse().ok(),
            Some(Value::Number(n)) => n.as_f64().and_then(|r| {
                if r.is_infinite() {
                    Some(RequestRate::Infinite)
                } else {
                    format!("{r}").parse().ok()
                }
            }),
            _ => None,
        };
        let num_prompts = o.get("num_prompts").and_then(Value::as_u64);
        if num_prompts.is_none() {
            notes
                .push("no num_prompts key: the number of prompts is taken from 'completed'".into());
        }
        let mean_input_tokens = match (metrics.get("total_input_tokens"), completed) {
            (Some(t), Some(c)) if c > 0 => Some(t / c as f64),
            _ => None,
        };
        let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
        let u = |k: &str| o.get(k).and_then(Value::as_u64);
        steps.push(Step {
            load: Load {
                num_prompts: num_prompts.or(completed),
                max_concurrency: u("max_concurrency"),
                request_rate: rate,
            },
            workload: Workload {
                model: s("model_id"),
                backend: s("backend"),
                dataset: s("dataset_name"),
                input_len: u("random_input_len").or(u("input_len")),
                output_len: u("random_output_len").or(u("output_len")),
                mean_input_tokens,
            },
            metrics,
            samples: samples_from_vllm_lists(o),
            records_file: None,
            source: Some(path.to_path_buf()),
            notes: Vec::new(),
        });
    }
    notes.dedup();
    let parameter = varying_parameter(&steps);
    let w = steps[0].workload.clone();
    Ok(View {
        label: label_of(w.backend.as_deref(), w.model.as_deref(), path),
        origin: Origin::Imported,
        format: "vllm-json".into(),
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

// ---------------------------------------------------------------- llmperf

/// One llmperf record recomputed under servebench's definitions (`docs/metrics.md`).
pub fn llmperf_request(index: usize, o: &Map<String, Value>) -> LlmperfRequest {
    let f = |k: &str| o.get(k).and_then(Value::as_f64);
    let ok = o.get("error_code").is_none_or(Value::is_null);
    let e2e = f("end_to_end_latency_s").unwrap_or(0.0);
    let ttft = f("ttft_s").unwrap_or(0.0);
    let itl = f("inter_token_latency_s").unwrap_or(0.0);
    let llm_n = o.get("number_output_tokens").and_then(Value::as_u64);
    let llm_rot = f("request_output_throughput_token_per_s");
    // llmperf's ITL is E2E divided by the streamed chunks, so the chunks are E2E / ITL.
    let n = (itl > 0.0 && e2e > 0.0)
        .then(|| (e2e / itl).round() as u64)
        .filter(|n| *n > 0);
    let tpot_ms = n
        .filter(|n| *n >= 2)
        .map(|n| (e2e - ttft) / (n - 1) as f64 * 1e3);
    let itl_x = llm_n.filter(|n| *n >= 1).map(|n| itl * (n - 1) as f64);
    let mut flags = Vec::new();
    if ok {
        if let Some(x) = itl_x.filter(|x| *x > e2e) {
            flags.push(format!(
                "ITL × (N − 1) = {x:.2} s exceeds E2E {e2e:.2} s: llmperf's ITL includes TTFT and its N is counted by another tokenizer"
            ));
        }
        if let (Some(a), Some(b)) = (llm_n, n) {
            if a != b {
                flags.push(format!(
                    "llmperf counts {a} output tokens (Llama tokenizer); its latencies imply {b} streamed tokens"
                ));
            }
        }
        if let (Some(r), Some(a)) = (llm_rot, llm_n) {
            if e2e > 0.0 && (r - a as f64 / e2e).abs() > 1e-6 * r.abs().max(1.0) {
                flags.push(format!(
                    "request_output_throughput {r:.2} ≠ N / E2E {:.2}",
                    a as f64 / e2e
                ));
            }
        }
        if let Some(n) = n {
            let ratio = e2e / itl;
            if (ratio - n as f64).abs() > 0.05 {
                flags.push(format!(
                    "E2E / ITL = {ratio:.3} is not a whole number: the recovered N is approximate"
                ));
            }
        }
    }
    LlmperfRequest {
        index,
        ok,
        ttft_ms: ttft * 1e3,
        e2el_ms: e2e * 1e3,
        llmperf_itl_ms: itl * 1e3,
        llmperf_output_tokens: llm_n,
        llmperf_request_output_throughput: llm_rot,
        output_tokens: n,
        tpot_ms,
        request_output_throughput: n.filter(|_| e2e > 0.0).map(|n| n as f64 / e2e),
        itl_times_n_minus_1_s: itl_x,
        flags,
    }
}

fn put_distribution(m: &mut BTreeMap<String, f64>, key: &str, samples: &mut [f64]) {
    if let Some(d) = Distribution::of(samples, &PERCENTILES) {
        m.insert(format!("mean_{key}_ms"), d.mean);
        m.insert(format!("median_{key}_ms"), d.median);
        m.insert(format!("std_{key}_ms"), d.std);
        for (p, v) in d.percentiles {
            m.insert(
                format!("p{}_{key}_ms", crate::config::metric::percentile_word(p)),
                v,
            );
        }
    }
}

fn llmperf_requests(path: &Path, objects: &[Map<String, Value>]) -> Result<View, ViewError> {
    let reqs: Vec<LlmperfRequest> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| llmperf_request(i, o))
        .collect();
    let ok: Vec<&LlmperfRequest> = reqs.iter().filter(|r| r.ok).collect();
    let mut m = BTreeMap::new();
    m.insert("completed".into(), ok.len() as f64);
    m.insert("failed".into(), (reqs.len() - ok.len()) as f64);
    let mut ttft: Vec<f64> = ok.iter().map(|r| r.ttft_ms).collect();
    let mut e2el: Vec<f64> = ok.iter().map(|r| r.e2el_ms).collect();
    let mut tpot: Vec<f64> = ok.iter().filter_map(|r| r.tpot_ms).collect();
    let samples = Samples {
        ttft_ms: ttft.clone(),
        e2el_ms: e2el.clone(),
    };
    put_distribution(&mut m, "ttft", &mut ttft);
    put_distribution(&mut m, "e2el", &mut e2el);
    put_distribution(&mut m, "tpot", &mut tpot);
    // Pooled per-chunk ITL mean: Σ(E2EL − TTFT) / Σ(N − 1), exact when E2E ends at the last chunk.
    let (gaps, count) = ok
        .iter()
        .filter_map(|r| r.output_tokens.filter(|n| *n >= 2).map(|n| (r, n)))
        .fold((0.0, 0u64), |(g, c), (r, n)| {
            (g + r.e2el_ms - r.ttft_ms, c + n - 1)
        });
    if count > 0 {
        m.insert("mean_itl_ms".into(), gaps / count as f64);
    }
    let total_out: Option<u64> = ok.iter().map(|r| r.output_tokens).sum();
    if let Some(t) = total_out {
        m.insert("total_output_tokens".into(), t as f64);
    }
    let inputs: Option<Vec<u64>> = objects
        .iter()
        .zip(&reqs)
        .filter(|(_, r)| r.ok)
        .map(|(o, _)| o.get("number_input_tokens").and_then(Value::as_u64))
        .collect();
    let total_in = inputs.as_ref().map(|v| v.iter().sum::<u64>());
    if let Some(t) = total_in {
        m.insert("total_input_tokens".into(), t as f64);
    }
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    if let Some(x) = mean(ok.iter().map(|r| r.llmperf_itl_ms).collect()) {
        m.insert("llmperf_mean_inter_token_latency_ms".into(), x);
    }
    if let Some(x) = mean(
        ok.iter()
            .filter_map(|r| r.llmperf_request_output_throughput)
            .collect(),
    ) {
        m.insert("llmperf_mean_request_output_throughput".into(), x);
    }
    if let Some(x) = mean(
        ok.iter()
            .filter_map(|r| r.llmperf_output_tokens.map(|n| n as f64))
            .collect(),
    ) {
        m.insert("llmperf_mean_number_output_tokens".into(), x);
    }
    let flagged = reqs.iter().filter(|r| !r.flags.is_empty()).count();
    let mut notes = vec![
        "llmperf per-request records recomputed under servebench's definitions: N = round(E2E / llmperf ITL); TPOT = (E2E − TTFT) / (N − 1); mean ITL = Σ(E2E − TTFT) / Σ(N − 1); no duration, so no throughput".to_string(),
        "input tokens are llmperf's Llama-tokenizer counts".to_string(),
    ];
    if flagged > 0 {
        notes.push(format!(
            "{flagged} of {} records have inconsistent llmperf figures (see the per-request table)",
            reqs.len()
        ));
    }
    let step = Step {
        load: Load {
            num_prompts: Some(reqs.len() as u64),
            ..Load::default()
        },
        workload: Workload {
            mean_input_tokens: match (total_in, ok.len()) {
                (Some(t), n) if n > 0 => Some(t as f64 / n as f64),
                _ => None,
            },
            ..Workload::default()
        },
        metrics: m,
        samples,
        records_file: None,
        source: Some(path.to_path_buf()),
        notes: Vec::new(),
    };
    Ok(View {
        label: label_of(Some("llmperf"), None, path),
        origin: Origin::Imported,
        format: "llmperf-requests".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: "llmperf requests".into(),
            parameter: Parameter::NumPrompts,
            steps: vec![step],
        }],
        notes,
        llmperf_requests: reqs,
    })
}

fn llmperf_summary(path: &Path, o: &Map<String, Value>) -> Result<View, ViewError> {
    let f = |k: &str| {
        o.get(k).and_then(|v| {
            v.as_f64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
    };
    let mut m = BTreeMap::new();
    // Same definitions as servebench's: TTFT and E2E (seconds → ms), pandas' linear quantiles.
    for (theirs, ours) in [("ttft_s", "ttft"), ("end_to_end_latency_s", "e2el")] {
        if let Some(v) = f(&format!("results_{theirs}_mean")) {
            m.insert(format!("mean_{ours}_ms"), v * 1e3);
        }
        for p in [25, 50, 75, 90, 95, 99] {
            if let Some(v) = f(&format!("results_{theirs}_quantiles_p{p}")) {
                m.insert(format!("p{p}_{ours}_ms"), v * 1e3);
                if p == 50 {
                    m.insert(format!("median_{ours}_ms"), v * 1e3);
                }
            }
        }
        // pandas' std is the sample std (ddof = 1): a different figure, kept under llmperf's name.
        if let Some(v) = f(&format!("results_{theirs}_stddev")) {
            m.insert(format!("llmperf_std_{ours}_ms"), v * 1e3);
        }
    }
    // Different definitions: kept under llmperf's names.
    if let Some(v) = f("results_inter_token_latency_s_mean") {
        m.insert("llmperf_mean_inter_token_latency_ms".into(), v * 1e3);
    }
    if let Some(v) = f("results_inter_token_latency_s_quantiles_p99") {
        m.insert("llmperf_p99_inter_token_latency_ms".into(), v * 1e3);
    }
    if let Some(v) = f("results_mean_output_throughput_token_per_s") {
        m.insert("llmperf_output_throughput".into(), v);
    }
    if let Some(v) = f("results_request_output_throughput_token_per_s_mean") {
        m.insert("llmperf_mean_request_output_throughput".into(), v);
    }
    if let Some(v) = f("results_num_completed_requests") {
        m.insert("completed".into(), v);
    }
    if let Some(v) = f("results_number_errors") {
        m.insert("failed".into(), v);
    }
    if let Some(v) = f("results_num_completed_requests_per_min") {
        m.insert("request_throughput".into(), v / 60.0);
    }
    let model = o.get("model").and_then(Value::as_str).map(str::to_string);
    let step = Step {
        load: Load {
            num_prompts: f("results_num_requests_started").map(|v| v as u64),
            max_concurrency: f("num_concurrent_requests").map(|v| v as u64),
            request_rate: None,
        },
        workload: Workload {
            model: model.clone(),
            backend: None,
            dataset: None,
            input_len: f("mean_input_tokens").map(|v| v as u64),
            output_len: f("mean_output_tokens").map(|v| v as u64),
            mean_input_tokens: f("results_number_input_tokens_mean"),
        },
        metrics: m,
        samples: Samples::default(),
        records_file: None,
        source: Some(path.to_path_buf()),
        notes: Vec::new(),
    };
    Ok(View {
        label: label_of(Some("llmperf"), model.as_deref(), path),
        origin: Origin::Imported,
        format: "llmperf-summary".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: "llmperf summary".into(),
            parameter: Parameter::MaxConcurrency,
            steps: vec![step],
        }],
        notes: vec![
            "llmperf summary: TTFT and E2E map to servebench's figures; its ITL (TTFT included), output throughput and token counts (Llama tokenizer) are kept under llmperf_ names".into(),
        ],
        llmperf_requests: Vec::new(),
    })
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
pub fn import_file(input: &Path, out: &Path) -> Result<View, ViewError> {
    let text = std::fs::read(input).map_err(|error| ViewError::Read {
        path: input.to_path_buf(),
        error,
    })?;
    let view = parse(input, &String::from_utf8_lossy(&text))?;
    ImportedDoc::new(&view).save(out)?;
    Ok(view)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_expand_both_ways() {
        assert_eq!(number_list("1, 2, 4, 8").unwrap(), vec![vec![1, 2, 4, 8]]);
        let c = number_list("1,2,...,4096").unwrap();
        assert_eq!(c[0].len(), 13);
        assert_eq!(c[0].last(), Some(&4096));
        assert_eq!(c[1].len(), 4096);
        assert_eq!(
            number_list("10,20,...,50").unwrap(),
            vec![vec![10, 20, 30, 40, 50]]
        );
        assert!(number_list("a, b").is_none());
    }

    #[test]
    fn report_labels_map_to_vllm_keys() {
        assert_eq!(text_key("Mean TTFT (ms)").unwrap(), "mean_ttft_ms");
        assert_eq!(text_key("P99.9 ITL (ms)").unwrap(), "p99.9_itl_ms");
        assert_eq!(text_key("Median E2EL (ms)").unwrap(), "median_e2el_ms");
        assert_eq!(
            text_key("Output token throughput (tok/s)").unwrap(),
            "output_throughput"
        );
        assert_eq!(text_key("Whatever (ms)"), None);
    }

    fn text_view(name: &str, text: &str) -> View {
        parse(Path::new(name), text).unwrap()
    }

    fn values(s: &Series) -> Vec<f64> {
        s.steps
            .iter()
            .map(|st| st.load_value(s.parameter).unwrap())
            .collect()
    }

    #[test]
    fn seed_001_one_block_per_doubling_step() {
        let v = text_view(
            "seed001.txt",
            include_str!("../../tests/fixtures/seed001_tgi.txt"),
        );
        assert_eq!(v.format, "vllm-text");
        assert_eq!(v.series.len(), 1);
        let s = &v.series[0];
        assert_eq!(s.parameter, Parameter::NumPrompts);
        let doubling: Vec<f64> = (0..13).map(|i| f64::from(1u32 << i)).collect();
        assert_eq!(values(s), doubling);
        let w = &s.steps[0].workload;
        assert_eq!(w.backend.as_deref(), Some("tgi"));
        assert_eq!(
            w.model.as_deref(),
            Some("meta-llama/Llama-3.1-405B-Instruct")
        );
        assert_eq!(w.dataset.as_deref(), Some("book"));
        let at512 = s.step_at(512.0).unwrap();
        assert_eq!(at512.metric("output_throughput"), Some(767.92));
        assert_eq!(at512.metric("mean_ttft_ms"), Some(14086.51));
        assert_eq!(at512.metric("p99_itl_ms"), Some(369.31));
        assert_eq!(at512.metric("failed"), None);
        // The last step sent 4096 prompts and 2537 succeeded.
        let last = s.step_at(4096.0).unwrap();
        assert_eq!(last.metric("completed"), Some(2537.0));
        assert_eq!(last.metric("failed"), Some(1559.0));
        // No E2EL section in this seed: absent, not zero.
        assert_eq!(last.metric("mean_e2el_ms"), None);
        assert!(v.notes.iter().any(|n| n.contains("10000")), "{:?}", v.notes);
    }

    #[test]
    fn seed_002_three_sections() {
        let v = text_view(
            "seed002.txt",
            include_str!("../../tests/fixtures/seed002_vllm.txt"),
        );
        let counts: Vec<usize> = v.series.iter().map(|s| s.steps.len()).collect();
        assert_eq!(counts, [12, 7, 4]);
        let (a, b, c) = (&v.series[0], &v.series[1], &v.series[2]);
        assert_eq!(values(a)[11], 2048.0);
        assert_eq!(a.steps[0].workload.input_len, Some(80));
        assert_eq!(a.steps[0].workload.backend.as_deref(), Some("vllm"));
        assert_eq!(
            a.step_at(512.0).unwrap().metric("output_throughput"),
            Some(402.21)
        );
        assert_eq!(values(b), [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]);
        assert_eq!(b.steps[0].workload.input_len, Some(10000));
        // num_prompt:1 then four single-request blocks of decreasing prompt length.
        assert_eq!(c.parameter, Parameter::InputLen);
        assert_eq!(values(c), [128000.0, 64000.0, 32000.0, 16000.0]);
        assert!(c.steps.iter().all(|s| s.load.num_prompts == Some(1)));
        assert_eq!(c.steps[0].workload.input_len, None);
        assert_eq!(c.steps[0].metric("mean_ttft_ms"), Some(734188.96));
        assert!(v.notes.is_empty(), "{:?}", v.notes);
    }

    #[test]
    fn seed_003_percentiles_and_e2el() {
        let v = text_view(
            "seed003.txt",
            include_str!("../../tests/fixtures/seed003_report.txt"),
        );
        assert_eq!(v.series.len(), 1);
        let s = &v.series[0].steps[0];
        assert_eq!(s.load.num_prompts, Some(3000));
        assert!(v.notes[0].contains("Successful requests"));
        for m in ["ttft", "tpot", "itl", "e2el"] {
            for stat in ["mean", "median", "p50", "p75", "p90", "p95", "p99"] {
                assert!(
                    s.metric(&format!("{stat}_{m}_ms")).is_some(),
                    "{stat}_{m}_ms"
                );
            }
        }
        assert_eq!(s.metric("mean_e2el_ms"), Some(44313.70));
        assert_eq!(s.metric("p99_e2el_ms"), Some(73790.91));
        assert_eq!(s.metric("total_output_tokens"), Some(2004890.0));
        assert_eq!(s.metrics.len(), 7 + 4 * 7);
    }

    #[test]
    fn seed_000_llmperf_record_recomputed() {
        let v = text_view(
            "seed000.txt",
            include_str!("../../tests/fixtures/seed000_llmperf.txt"),
        );
        assert_eq!(v.format, "llmperf-requests");
        let r = &v.llmperf_requests[0];
        assert_eq!(r.output_tokens, Some(150));
        assert_eq!(r.llmperf_output_tokens, Some(173));
        let tpot = r.tpot_ms.unwrap();
        assert_eq!(format!("{tpot:.1}"), "22.0");
        assert!((tpot - (3.327015427999868 - 0.04729403999999704) / 149.0 * 1e3).abs() < 1e-9);
        assert_eq!(format!("{:.2}", r.itl_times_n_minus_1_s.unwrap()), "3.81");
        assert!(r.flags[0].contains("exceeds E2E"), "{:?}", r.flags);
        assert!(r.flags[1].contains("173") && r.flags[1].contains("150"));
        let s = &v.series[0].steps[0];
        assert_eq!(format!("{:.1}", s.metric("mean_tpot_ms").unwrap()), "22.0");
        assert_eq!(format!("{:.1}", s.metric("mean_itl_ms").unwrap()), "22.0");
        assert_eq!(s.metric("total_output_tokens"), Some(150.0));
        assert_eq!(
            format!(
                "{:.2}",
                s.metric("llmperf_mean_inter_token_latency_ms").unwrap()
            ),
            "22.18"
        );
        // No duration in per-request files: no throughput, rather than a made-up one.
        assert_eq!(s.metric("output_throughput"), None);
    }

    #[test]
    fn llmperf_consistent_record_is_not_flagged() {
        // 100 chunks over 1 s with TTFT included in llmperf's ITL, counted by the same tokenizer.
        let o: Map<String, Value> = serde_json::from_str(
            r#"{"error_code": null, "error_msg": "", "ttft_s": 0.1, "end_to_end_latency_s": 1.0,
                "inter_token_latency_s": 0.01, "number_output_tokens": 100,
                "request_output_throughput_token_per_s": 100.0, "number_input_tokens": 5}"#,
        )
        .unwrap();
        let r = llmperf_request(0, &o);
        assert_eq!(r.output_tokens, Some(100));
        assert!(r.flags.is_empty(), "{:?}", r.flags);
        assert!((r.tpot_ms.unwrap() - 900.0 / 99.0).abs() < 1e-9);
    }

    #[test]
    fn llmperf_summary_maps_same_definitions_only() {
        let text = r#"{"model": "m", "mean_input_tokens": 550, "mean_output_tokens": 150,
            "num_concurrent_requests": 4, "results_ttft_s_mean": 0.5,
            "results_ttft_s_quantiles_p50": 0.4, "results_ttft_s_quantiles_p99": 0.9,
            "results_ttft_s_stddev": 0.1, "results_inter_token_latency_s_mean": 0.05,
            "results_end_to_end_latency_s_mean": 7.0, "results_num_completed_requests": 80,
            "results_number_errors": 0, "results_num_requests_started": 80,
            "results_num_completed_requests_per_min": 6.0,
            "results_mean_output_throughput_token_per_s": 20.0}"#;
        let v = text_view("s.json", text);
        let s = &v.series[0].steps[0];
        assert_eq!(s.metric("mean_ttft_ms"), Some(500.0));
        assert_eq!(s.metric("median_ttft_ms"), Some(400.0));
        assert_eq!(s.metric("p99_ttft_ms"), Some(900.0));
        assert_eq!(s.metric("std_ttft_ms"), None);
        assert_eq!(s.metric("mean_itl_ms"), None);
        assert_eq!(s.metric("llmperf_mean_inter_token_latency_ms"), Some(50.0));
        assert_eq!(s.metric("request_throughput"), Some(0.1));
        assert_eq!(s.load.max_concurrency, Some(4));
        assert_eq!(s.workload.model.as_deref(), Some("m"));
    }

    #[test]
    fn vllm_json_keys_and_per_request_lists() {
        let text = r#"{"backend": "vllm", "model_id": "m", "num_prompts": 3, "request_rate": "inf",
            "max_concurrency": null, "completed": 2, "duration": 2.0, "total_input_tokens": 20,
            "total_output_tokens": 8, "output_throughput": 4.0, "mean_ttft_ms": 150.0,
            "p99_itl_ms": null, "ttfts": [0.1, 0.2, 0.0], "itls": [[0.01, 0.02], [0.01], []],
            "errors": ["", "", "boom"]}"#;
        let v = text_view("r.json", text);
        assert_eq!(v.format, "vllm-json");
        let s = &v.series[0].steps[0];
        assert_eq!(s.load.num_prompts, Some(3));
        assert_eq!(s.load.request_rate, Some(RequestRate::Infinite));
        assert_eq!(s.load.max_concurrency, None);
        assert_eq!(s.metric("p99_itl_ms"), None);
        assert_eq!(s.metric("mean_ttft_ms"), Some(150.0));
        assert_eq!(s.workload.mean_input_tokens, Some(10.0));
        assert_eq!(s.samples.ttft_ms, [100.0, 200.0]);
        assert!((s.samples.e2el_ms[0] - 130.0).abs() < 1e-9);
        // JSON Lines (vLLM's --append-result) give one step per line.
        let lines = format!(
            "{}\n{}\n",
            text.replace('\n', " "),
            text.replace('\n', " ")
                .replace("\"num_prompts\": 3", "\"num_prompts\": 6")
        );
        let v = text_view("r.jsonl", &lines);
        assert_eq!(values(&v.series[0]), [3.0, 6.0]);
    }

    #[test]
    fn unknown_text_and_servebench_documents_are_refused() {
        assert!(parse(Path::new("x"), "hello")
            .unwrap_err()
            .to_string()
            .contains("not a format"));
        let e = parse(Path::new("x"), r#"{"kind": "sweep"}"#).unwrap_err();
        assert!(e.to_string().contains("already a servebench document"));
    }

    #[test]
    fn command_line_flags() {
        let f =
            flags("python x.py --backend tgi --model m --num-prompt=1,2,...,8 --book-input-len 10");
        assert!(f.contains(&("backend".into(), "tgi".into())));
        assert!(f.contains(&("num-prompt".into(), "1,2,...,8".into())));
        assert!(f.contains(&("book-input-len".into(), "10".into())));
    }
}
