//! Renders a saved [`BenchResult`] as text. Computes nothing: every number comes from the
//! result's summary.
//!
//! The first block is vLLM's "Serving Benchmark Result" in exactly its layout (labels padded to
//! 40 columns, values to 10, section rules 50 wide, the same order), so scripts that parse the
//! seeds' reports parse ours. servebench's own lines follow in a second block.
//!
//! This file owns the report of one result (`servebench run`, `report x.json`, `merge`); the
//! text of a sweep or an imported document is `report::view`. Each section of servebench's
//! block is a file beside this one (`header.rs`, `outcome.rs`, `tokens.rs`, `latency.rs`,
//! `validity.rs`, ...); the line layout they share is `lines.rs`, a leaf that imports no
//! section. To add a section, write a function in the section file of its concern (or a new
//! one) that appends its lines from the result's fields (say "not measured" rather than print
//! a zero), importing its layout from `lines.rs` (never from this file), and call it from
//! [`servebench_block`]; vLLM's block must keep vLLM's layout exactly.

use std::fmt::Write as _;

use crate::config::Metric;
use crate::results::document::BenchResult;
use lines::{distribution, line, num, rule, section};

mod account;
mod adapters;
mod adaptive;
mod audio;
mod autoscale;
mod blocks;
mod buckets;
mod cache;
mod endpoints;
mod header;
mod hooks;
mod inputs;
mod jobs;
mod joined;
mod latency;
mod lines;
mod media;
mod mix_alone;
mod outcome;
mod phases;
mod server;
mod slices;
mod structured;
mod tokens;
mod users;
mod validity;
pub mod view;

#[cfg(test)]
mod tests;

/// The whole text report: vLLM's block, then servebench's.
pub fn text(result: &BenchResult) -> String {
    let mut out = vllm_block(result);
    out.push_str(&servebench_block(result));
    out
}

/// vLLM's "Serving Benchmark Result" block.
pub fn vllm_block(result: &BenchResult) -> String {
    if result.summary.total_input_sequences.is_some() {
        return inputs::vllm_block(result);
    }
    let s = &result.summary;
    let c = &result.config;
    let mut out = String::new();
    out.push_str(&rule(" Serving Benchmark Result ", '='));
    line(&mut out, "Successful requests:", s.completed);
    num(&mut out, "Benchmark duration (s):", s.duration_s);
    line(&mut out, "Total input tokens:", s.total_input_tokens);
    line(&mut out, "Total generated tokens:", s.total_output_tokens);
    num(
        &mut out,
        "Request throughput (req/s):",
        s.request_throughput,
    );
    if let Some(g) = s.request_goodput {
        let label = match result.rejudged {
            Some(_) => "Request goodput, re-judged (req/s):",
            None => "Request goodput (req/s):",
        };
        num(&mut out, label, g);
    }
    num(
        &mut out,
        "Output token throughput (tok/s):",
        s.output_throughput,
    );
    num(
        &mut out,
        "Total Token throughput (tok/s):",
        s.total_token_throughput,
    );
    for m in Metric::ALL {
        if c.percentile_metrics.contains(&m) {
            let (header, name) = section(m);
            out.push_str(&rule(header, '-'));
            let unit = m.unit().as_str();
            distribution(&mut out, name, unit, s.metric(m), &c.metric_percentiles);
        }
    }
    out.push_str(&rule("", '='));
    out
}

/// servebench's own lines: failures by kind, queueing, token sources, goodput, validity facts.
pub fn servebench_block(result: &BenchResult) -> String {
    let mut out = String::new();
    out.push_str(&rule(" servebench ", '-'));
    header::lines(&mut out, result);
    outcome::lines(&mut out, result);
    // A run answered per input (embeddings) generates nothing: no output nor TTFT lines.
    let pooled = result.summary.total_input_sequences.is_some();
    inputs::lines(&mut out, result);
    structured::lines(&mut out, result);
    tokens::lines(&mut out, result, pooled);
    latency::scheduling(&mut out, result, pooled);
    validity::lines(&mut out, result);
    latency::connection_setup(&mut out, result);
    blocks::cost(&mut out, result);
    cache::prefix_cache(&mut out, result);
    users::lines(&mut out, result);
    latency::ttft_by_turn(&mut out, result);
    blocks::conversations(&mut out, result);
    adapters::lines(&mut out, result);
    endpoints::lines(&mut out, result);
    buckets::lines(&mut out, result);
    media::block(&mut out, result);
    audio::block(&mut out, result);
    if !pooled {
        latency::ttft_breakdown(&mut out, result);
    }
    latency::intervals(&mut out, result);
    phases::reasoning(&mut out, result);
    phases::spec_decode(&mut out, result);
    blocks::steady_state(&mut out, result);
    slices::table(&mut out, result);
    autoscale::block(&mut out, result);
    blocks::mix(&mut out, result);
    jobs::block(&mut out, result);
    joined::lines(&mut out, result);
    server::timings(&mut out, result);
    account::block(&mut out, result);
    server::metrics(&mut out, result);
    hooks::lines(&mut out, result);
    adaptive::block(&mut out, result);
    if let Some(path) = &result.records_file {
        line(&mut out, "Records:", path.display());
    }
    out.push_str(&rule("", '='));
    out
}

/// The "Workload mix" block of `result` alone (printed again once each class was also run
/// alone, `--mix-alone`); empty without a mix.
pub fn mix(result: &BenchResult) -> String {
    let mut out = String::new();
    blocks::mix(&mut out, result);
    out
}

/// `run --repeat K`: each figure's spread across the runs, next to the runs' own 95% interval.
pub fn repeats(doc: &crate::results::repeat::RepeatDoc) -> String {
    let mut out = rule(&format!(" Across {} repeated runs ", doc.runs.len()), '=');
    let _ = writeln!(
        out,
        "{:<22} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "figure", "mean", "min", "max", "stdev", "within ±"
    );
    for (key, s) in &doc.metrics {
        let within = s
            .within_run_ci95_half_width
            .map_or_else(|| "-".to_string(), |h| format!("{h:.3}"));
        let _ = writeln!(
            out,
            "{key:<22} {:>12.3} {:>12.3} {:>12.3} {:>12.3} {within:>12}",
            s.mean, s.min, s.max, s.stdev
        );
    }
    out.push_str(&rule("", '='));
    out
}
