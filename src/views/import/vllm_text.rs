//! vLLM's text report (`Serving Benchmark Result` blocks) with the context the lines around
//! them give: which server, model and lengths, how many prompts (a list such as
//! `num_prompts: 1, 2, 4, ...` is matched to the blocks), which rate and concurrency.
//!
//! Owns only the reading of the text; each line's figure is a `config::figure::FigureKey` (a
//! `RunFigure` or a latency `MetricKey`). To read one more kind of
//! context line, teach [`header`] (or the command-line [`flags`]) the spelling, and add a
//! fixture test to `tests.rs`; a new report label goes to [`text_key`].

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::figure::{FigureKey, RunFigure};
use crate::config::metric::{MetricKey, Stat};
use crate::config::sweep::LoadParameter;
use crate::config::{Metric, RequestRate};
use crate::views::error::ViewError;
use crate::views::import::common::{label_of, varying_parameter};
use crate::views::model::{file_stem, Load, Origin, Series, Step, View, Workload};

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
    metrics: BTreeMap<FigureKey, f64>,
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

/// The figure of a report line's label.
pub(super) fn text_key(label: &str) -> Option<FigureKey> {
    let fixed = match label {
        "Successful requests" => Some(RunFigure::Completed),
        "Failed requests" => Some(RunFigure::Failed),
        "Benchmark duration (s)" => Some(RunFigure::Duration),
        "Total input tokens" => Some(RunFigure::TotalInputTokens),
        "Total generated tokens" => Some(RunFigure::TotalOutputTokens),
        "Request throughput (req/s)" => Some(RunFigure::RequestThroughput),
        "Input throughput (inputs/s)" => Some(RunFigure::InputSequenceThroughput),
        "Request goodput (req/s)" => Some(RunFigure::RequestGoodput),
        "Output token throughput (tok/s)" => Some(RunFigure::OutputThroughput),
        "Total Token throughput (tok/s)" | "Total token throughput (tok/s)" => {
            Some(RunFigure::TotalTokenThroughput)
        }
        "Peak output token throughput (tok/s)" => Some(RunFigure::MaxOutputTokensPerS),
        "Peak concurrent requests" => Some(RunFigure::MaxConcurrentRequests),
        _ => None,
    };
    if let Some(fixed) = fixed {
        return Some(fixed.into());
    }
    let rest = label.strip_suffix(" (ms)")?;
    let (stat, metric) = rest.split_once(' ')?;
    let metric = match metric {
        "TTFT" => Metric::Ttft,
        "TPOT" => Metric::Tpot,
        "ITL" => Metric::Itl,
        "E2EL" => Metric::E2el,
        _ => return None,
    };
    let stat = match stat {
        "Mean" => Stat::Mean,
        "Median" => Stat::Median,
        "Std" => Stat::Std,
        p => format!("p{}", p.strip_prefix('P')?).parse().ok()?,
    };
    Some(MetricKey::new(stat, metric).into())
}

/// A list of numbers, possibly with an ellipsis: `1, 2, 4`, `1,2,...,4096`. Returns every
/// candidate expansion (geometric first, then arithmetic) for the caller to pick from.
pub(super) fn number_list(s: &str) -> Option<Vec<Vec<u64>>> {
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
        if head.windows(2).all(|w| w[0].checked_mul(r) == Some(w[1])) {
            let mut v = vec![a];
            while let Some(&x) = v.last() {
                match x.checked_mul(r) {
                    Some(next) if x < last => v.push(next),
                    _ => break,
                }
            }
            if v.last() == Some(&last) {
                candidates.push(v);
            }
        }
    }
    if b > a {
        let step = b - a;
        let span = last.checked_sub(a);
        if head
            .windows(2)
            .all(|w| w[0].checked_add(step) == Some(w[1]))
            && span.is_some_and(|s| s % step == 0)
        {
            let n = span.unwrap_or(0) / step + 1;
            if n <= 100_000 {
                candidates.push((0..n).map(|i| a + i * step).collect());
            }
        }
    }
    (!candidates.is_empty()).then_some(candidates)
}

/// `--flag=value` / `--flag value` pairs of a command line.
pub(super) fn flags(line: &str) -> Vec<(String, String)> {
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

pub(super) fn parse_vllm_text(path: &Path, text: &str) -> Result<View, ViewError> {
    let sections = scan_sections(text);
    if sections.is_empty() {
        return Err(ViewError::parse(
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

/// One `label: value` line inside a result block: a figure, the block's load, or a line not
/// understood (kept for the step's notes).
fn block_line(block: &mut Block, l: &str) {
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
}

/// The file's sections, each with its context and its result blocks that hold figures;
/// sections without such a block are dropped.
fn scan_sections(text: &str) -> Vec<Section> {
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
            block_line(block, l);
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
    sections
        .into_iter()
        .filter(|s| !s.blocks.is_empty())
        .collect()
}

fn text_series(
    path: &Path,
    s: Section,
    index: usize,
    of: usize,
    notes: &mut Vec<String>,
) -> Series {
    let ctx = &s.ctx;
    let completed: Vec<Option<u64>> = s
        .blocks
        .iter()
        .map(|b| {
            b.metrics
                .get(&RunFigure::Completed.into())
                .map(|c| *c as u64)
        })
        .collect();
    let where_ = if of > 1 {
        format!("section {} of {}", index + 1, of)
    } else {
        file_stem(path)
    };
    let (assigned, from_list) = assign_prompts(ctx, &completed, &where_, notes);
    let steps: Vec<Step> = (s.blocks.into_iter().enumerate())
        .map(|(i, b)| text_step(path, ctx, b, assigned[i], completed[i], from_list))
        .collect();
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
    if parameter != LoadParameter::InputLen {
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

/// Each block's number of prompts (`completed` has one entry per block), and whether they
/// came from the stated list; notes when they could not.
fn assign_prompts(
    ctx: &Context,
    completed: &[Option<u64>],
    where_: &str,
    notes: &mut Vec<String>,
) -> (Vec<Option<u64>>, bool) {
    let n = completed.len();
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
        let fits = assigned.iter().zip(completed).all(|(a, c)| match (a, c) {
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
    (assigned, from_list)
}

/// One block as a step: its figures, its load (the block's, else the section's) and the
/// section's workload; `assigned` prompts beyond the `completed` ones count as failed when
/// they came from the stated list.
fn text_step(
    path: &Path,
    ctx: &Context,
    b: Block,
    assigned: Option<u64>,
    completed_here: Option<u64>,
    from_list: bool,
) -> Step {
    let mut metrics = b.metrics;
    let num_prompts = assigned.or(completed_here);
    let mut step_notes = Vec::new();
    if let (Some(np), Some(c), true) = (assigned, completed_here, from_list) {
        if np > c {
            metrics.insert(RunFigure::Failed.into(), (np - c) as f64);
            step_notes.push(format!("{np} prompts, {c} successful: {} failed", np - c));
        }
    }
    if !b.ignored.is_empty() {
        step_notes.push(format!("lines not understood: {}", b.ignored.join(" | ")));
    }
    let mean_input_tokens = match (
        metrics.get(&RunFigure::TotalInputTokens.into()),
        completed_here,
    ) {
        (Some(t), Some(c)) if c > 0 => Some(t / c as f64),
        _ => None,
    };
    Step {
        load: Load {
            num_prompts,
            max_concurrency: b.max_concurrency.or(ctx.max_concurrency),
            request_rate: b.request_rate.or(ctx.request_rate),
            ..Load::default()
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
        notes: step_notes,
        ..Step::from_source(path)
    }
}
