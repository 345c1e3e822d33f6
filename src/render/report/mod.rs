//! Renders a saved [`BenchResult`] as text. Computes nothing: every number comes from the
//! result's summary.
//!
//! The first block is vLLM's "Serving Benchmark Result" in exactly its layout (labels padded to
//! 40 columns, values to 10, section rules 50 wide, the same order), so scripts that parse the
//! seeds' reports parse ours. servebench's own lines follow in a second block.
//!
//! This file owns the report of one result (`servebench run`, `report x.json`, `merge`); the
//! text of a sweep or an imported document is `report::view`. To add a section, write one
//! function here that appends its lines from the result's fields (say "not measured" rather
//! than print a zero) and call it from [`servebench_block`]; vLLM's block must keep vLLM's
//! layout exactly.

use std::fmt::Write as _;

use crate::config::metric::{percentile_word, Stat};
use crate::config::Metric;
use crate::results::document::BenchResult;
use crate::results::stats::Distribution;
use crate::results::validity::Verdict;

mod adapters;
mod audio;
mod blocks;
mod inputs;
mod joined;
mod media;
mod mix_alone;
mod phases;
mod server;
mod structured;
pub mod view;

#[cfg(test)]
mod tests;

const WIDTH: usize = 50;

fn rule(title: &str, fill: char) -> String {
    let pad = WIDTH.saturating_sub(title.chars().count());
    let left = pad / 2;
    let fill_s = |n| std::iter::repeat_n(fill, n).collect::<String>();
    format!("{}{}{}\n", fill_s(left), title, fill_s(pad - left))
}

/// One `label value` line; the value (it may hold a label, metadata or a server's message) is
/// kept on its line, every control character in it made visible.
fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let value = value.to_string();
    let value = crate::render::escape::terminal_line(&value);
    let _ = writeln!(out, "{:<40} {:<10}", label, value);
}

fn num(out: &mut String, label: &str, value: f64) {
    line(out, label, format!("{value:.2}"));
}

/// Header and name of each latency section, as vLLM prints them.
fn section(m: Metric) -> (&'static str, &'static str) {
    match m {
        Metric::Ttft => ("Time to First Token", "TTFT"),
        Metric::Tpot => ("Time per Output Token (excl. 1st token)", "TPOT"),
        Metric::Itl => ("Inter-token Latency", "ITL"),
        Metric::E2el => ("End-to-end Latency", "E2EL"),
    }
}

fn distribution(out: &mut String, name: &str, unit: &str, d: Option<&Distribution>, ps: &[f64]) {
    let value = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.2}"));
    line(
        out,
        &format!("Mean {name} ({unit}):"),
        value(d.map(|d| d.mean)),
    );
    line(
        out,
        &format!("Median {name} ({unit}):"),
        value(d.map(|d| d.median)),
    );
    for &p in ps {
        line(
            out,
            &format!("P{} {name} ({unit}):", percentile_word(p)),
            value(d.and_then(|d| d.at(p))),
        );
    }
}

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
        num(&mut out, "Request goodput (req/s):", g);
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
            distribution(&mut out, name, "ms", s.metric(m), &c.metric_percentiles);
        }
    }
    out.push_str(&rule("", '='));
    out
}

/// servebench's own lines: failures by kind, queueing, token sources, goodput, validity facts.
pub fn servebench_block(result: &BenchResult) -> String {
    let s = &result.summary;
    let c = &result.config;
    let ps = &c.metric_percentiles;
    let mut out = String::new();
    out.push_str(&rule(" servebench ", '-'));
    let server = if c.simulated {
        let preset = c.sim_preset.as_deref().unwrap_or("exact");
        match c.time_scale {
            k if k != 1.0 => {
                format!("simulated ({preset}; clock {k}x real time, figures in simulated time)")
            }
            _ => format!("simulated ({preset})"),
        }
    } else if c.time_scale != 1.0 {
        let k = c.time_scale;
        format!(
            "{} (servebench sim, clock {k}x real time per its /sim/info: figures in simulated time)",
            c.base_url
        )
    } else {
        c.base_url.clone()
    };
    line(&mut out, "Server:", server);
    line(&mut out, "Backend:", c.backend.as_str());
    if let Some(l) = &c.tags.label {
        line(&mut out, "Label:", l);
    }
    if !c.tags.metadata.is_empty() {
        line(&mut out, "Metadata:", c.tags.metadata_text());
    }
    if let Some(shard) = c.load.shard {
        line(
            &mut out,
            "Shard:",
            format!("{shard} (servebench merge joins the shards)"),
        );
    }
    let mut missing = String::new();
    if let Some(m) = &result.merged_from {
        let merged = format!("{} of {}", m.shards.len(), m.count);
        line(&mut out, "Merged shards:", merged);
        missing = crate::config::shard::list(&m.missing, m.count);
    }
    let hdr = s.hdr_figures();
    if !hdr.is_empty() {
        // docs/metrics.md, "Percentiles of very large runs".
        line(&mut out, "Percentiles within 0.05% (HDR):", hdr.join(" "));
    }
    line(&mut out, "Failed requests:", s.failed);
    for (kind, n) in &s.failures_by_kind {
        line(&mut out, &format!("  {kind}:"), n);
    }
    if let Some(e) = &result.window_end {
        let what = if e.cancel_mode {
            "--duration-cancel"
        } else {
            "drained within --grace"
        };
        line(
            &mut out,
            "In flight at the end:",
            format!(
                "{} ({what}: {} finished, {} cancelled)",
                e.in_flight, e.drained, e.cancelled
            ),
        );
    }
    if let Some(why) = &result.stopped_early {
        line(&mut out, "Stopped early:", why);
    }
    if !result.complete {
        let windowed = result.config.load.shape.window_s().is_some();
        let cause = if result.stopped_early.is_some() {
            "stopped early".to_string()
        } else if result.error.is_some() {
            "the records file could not be written".to_string()
        } else if !missing.is_empty() {
            format!("shards {missing} missing")
        } else if windowed && result.window_end.is_none() {
            "stopped before the end of its time window".to_string()
        } else if result.unsent_by.stopped > 0 || s.failures_by_kind.contains_key("cancelled") {
            "stopped".to_string()
        } else {
            "not every planned request was sent".to_string()
        };
        // docs/metrics.md, "Every planned request is accounted for".
        let reasons = result.unsent_by.describe();
        let unsent = match (result.unsent, result.planned, reasons.is_empty()) {
            (0, _, _) => String::new(),
            (n, Some(p), false) => format!("; {n} of {p} planned requests never sent: {reasons}"),
            (n, Some(p), true) => format!("; {n} of {p} planned requests never sent"),
            (n, None, _) => format!("; {n} requests never sent"),
        };
        let why = format!("no ({cause}{unsent})");
        line(&mut out, "Run complete:", why);
    }
    if let (Some(good), Some(g)) = (s.good_requests, s.request_goodput) {
        let slos: Vec<String> = c
            .goodput
            .iter()
            .map(|x| format!("{}<={}ms", x.metric.key(), x.max_ms))
            .chain(c.goodput_valid_output.then(|| "valid_output".to_string()))
            .collect();
        line(&mut out, "Goodput SLOs:", slos.join(" "));
        let pct = if s.completed + s.failed > 0 {
            100.0 * good as f64 / (s.completed + s.failed) as f64
        } else {
            0.0
        };
        line(
            &mut out,
            "Good requests:",
            format!("{good} ({pct:.1}% of all)"),
        );
        num(&mut out, "Request goodput (req/s):", g);
    }
    // A run answered per input (embeddings) generates nothing: no output nor TTFT lines.
    let pooled = s.total_input_sequences.is_some();
    inputs::lines(&mut out, result);
    structured::lines(&mut out, result);
    let sources: Vec<String> = s
        .output_token_sources
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    if !pooled {
        line(&mut out, "Output token count source:", sources.join(" "));
    }
    let sources: Vec<String> = s
        .input_token_sources
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    line(&mut out, "Input token count source:", sources.join(" "));
    if s.completed_without_done_marker > 0 {
        line(
            &mut out,
            "Streams ended without a terminator:",
            format!(
                "{} (complete: the body ended after the answer's finish chunk)",
                s.completed_without_done_marker
            ),
        );
    }
    if s.implausible_usage > 0 {
        let what: Vec<String> = (s.implausible_usage_by_field.iter())
            .map(|(k, n)| format!("{k}={n}"))
            .collect();
        line(
            &mut out,
            "Implausible server usage:",
            format!(
                "{} requests ({}; not believed)",
                s.implausible_usage,
                what.join(" ")
            ),
        );
    }
    if s.output_count_disagreements > 0 {
        line(
            &mut out,
            "Output count disagreements:",
            s.output_count_disagreements,
        );
    }
    line(
        &mut out,
        "Tokenizer:",
        c.workload
            .tokenizer
            .as_deref()
            .unwrap_or("words (the simulator's counting)"),
    );
    let span = |d: Option<&Distribution>| {
        d.map(|d| format!("{:.0} / {:.1} / {:.0}", d.min, d.mean, d.max))
    };
    if let Some(v) = span(s.input_len_requested.as_ref()) {
        line(&mut out, "Input tokens built min/mean/max:", v);
    }
    if let Some(v) = span(s.input_len_server.as_ref()) {
        line(&mut out, "Input tokens by server min/mean/max:", v);
        line(
            &mut out,
            "  requests where they differ:",
            s.input_len_disagreements,
        );
    }
    if let (Some(asked), Some(got)) = (
        span(s.output_len_requested.as_ref()),
        span(s.output_len_received.as_ref()),
    ) {
        line(&mut out, "Output tokens asked min/mean/max:", asked);
        line(&mut out, "Output tokens received min/mean/max:", got);
    }
    if !pooled {
        line(&mut out, "Output chunks:", s.total_output_chunks);
    }
    distribution(
        &mut out,
        "schedule lag",
        "ms",
        s.schedule_lag_ms.as_ref(),
        ps,
    );
    if !pooled {
        let from_scheduled = s.ttft_from_scheduled_ms.as_ref();
        distribution(&mut out, "TTFT from scheduled", "ms", from_scheduled, ps);
    }
    if s.time_to_first_reasoning_ms.is_some() {
        distribution(
            &mut out,
            "time to 1st reasoning",
            "ms",
            s.time_to_first_reasoning_ms.as_ref(),
            ps,
        );
        distribution(
            &mut out,
            "time to 1st answer",
            "ms",
            s.time_to_first_answer_ms.as_ref(),
            ps,
        );
    }
    if let Some(v) = &result.validity {
        if let Some(lag) = &v.event_loop_lag_ms {
            num(&mut out, "Event-loop lag max (ms):", lag.max);
        }
        line(
            &mut out,
            "Client CPU:",
            format!(
                "{:.2} s ({:.0}% of {} cores)",
                v.client_cpu_s,
                100.0 * v.client_cpu_utilisation,
                v.cores
            ),
        );
        if let Some(stats) = &v.server_stats {
            if let Some(late) = stats.get("late_chunks") {
                // An engine preset's chunks of one model step leave together, so many leave
                // more than 1 ms after the step; only the exact mode's lateness is judged.
                let engine =
                    stats.get("mode").and_then(serde_json::Value::as_str) == Some("engine");
                let note = if engine {
                    " (engine model: reported, not judged)"
                } else {
                    ""
                };
                line(
                    &mut out,
                    "Simulator chunks late > 1 ms:",
                    format!("{late}{note}"),
                );
            }
        }
        let verdict = match v.verdict {
            Verdict::Valid => "valid",
            Verdict::ClientBound => "CLIENT-BOUND",
            Verdict::ServerLate => "SERVER-LATE",
            Verdict::UsageImplausible => "USAGE-IMPLAUSIBLE",
        };
        line(&mut out, "Measurement:", verdict);
        for reason in &v.reasons {
            let _ = writeln!(out, "  {reason}");
        }
    }
    connection_setup(&mut out, result);
    blocks::cost(&mut out, result);
    prefix_cache(&mut out, result);
    ttft_by_turn(&mut out, result);
    blocks::conversations(&mut out, result);
    adapters::lines(&mut out, result);
    media::block(&mut out, result);
    audio::block(&mut out, result);
    if !pooled {
        ttft_breakdown(&mut out, result);
    }
    intervals(&mut out, result);
    phases::reasoning(&mut out, result);
    phases::spec_decode(&mut out, result);
    blocks::steady_state(&mut out, result);
    blocks::mix(&mut out, result);
    joined::lines(&mut out, result);
    server::timings(&mut out, result);
    server::metrics(&mut out, result);
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

/// Multi-turn runs: TTFT by turn index, mean / p99 and the requests of each turn.
fn ttft_by_turn(out: &mut String, result: &BenchResult) {
    let turns = &result.summary.ttft_by_turn;
    if turns.is_empty() {
        return;
    }
    out.push_str(&rule("TTFT by turn", '-'));
    for t in turns {
        let d = &t.ttft_ms;
        let p99 = d.at(99.0).map_or_else(|| "-".into(), |v| format!("{v:.2}"));
        let what = format!("turn {} mean / p99 (ms):", t.turn + 1);
        line(
            out,
            &what,
            format!("{:.2} / {p99} ({} requests)", d.mean, d.count),
        );
    }
}

/// The prefix-cache hit rate the workload was built to have and the one the server reported
/// (docs/metrics.md, "Prefix-cache hit rate"), and the gap.
fn prefix_cache(out: &mut String, result: &BenchResult) {
    let Some(c) = &result.summary.prefix_cache else {
        return;
    };
    out.push_str(&rule("Prefix cache", '-'));
    let pct = |r: Option<f64>, n: u64| {
        r.map_or("unknown".into(), |r| {
            format!("{:.1}% ({n} requests)", r * 100.0)
        })
    };
    line(
        out,
        "Designed hit rate:",
        pct(c.designed_hit_rate, c.designed_requests),
    );
    line(
        out,
        "Measured hit rate:",
        pct(c.measured_hit_rate, c.measured_requests),
    );
    if let (Some(d), Some(m)) = (c.designed_hit_rate, c.measured_hit_rate) {
        line(
            out,
            "Gap (measured - designed):",
            format!("{:+.1} points", (m - d) * 100.0),
        );
    }
}

/// How requests reached the server: new and reused connections, a new connection's setup
/// time, and, where any request opened one, TTFT with that setup included (the cold-start
/// figure; TTFT itself counts from the request's first byte written).
fn connection_setup(out: &mut String, result: &BenchResult) {
    let s = &result.summary;
    let ps = &result.config.metric_percentiles;
    if s.new_connections + s.reused_connections == 0 {
        return;
    }
    out.push_str(&rule("Connection setup", '-'));
    line(out, "New connections:", s.new_connections);
    line(out, "Reused connections:", s.reused_connections);
    if s.new_connections == 0 {
        return;
    }
    distribution(out, "connect", "ms", s.connection_setup_ms.as_ref(), ps);
    if s.total_input_sequences.is_some() {
        return;
    }
    distribution(
        out,
        "TTFT incl. connection setup",
        "ms",
        s.ttft_with_setup_ms.as_ref(),
        ps,
    );
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

/// Where the time from the scheduled send to the first token went: the client's queue and
/// connection setup, then TTFT's own parts; each part's mean and p99, "unknown" where no
/// request reported it.
fn ttft_breakdown(out: &mut String, result: &BenchResult) {
    let b = &result.summary.ttft_breakdown;
    if result.summary.completed == 0 {
        return;
    }
    out.push_str(&rule("TTFT breakdown (from scheduled)", '-'));
    let p99 = |d: &Distribution| d.at(99.0).map_or_else(|| "-".into(), |v| format!("{v:.2}"));
    for (name, d) in b.parts() {
        let value = d.map_or_else(
            || "unknown".to_string(),
            |d| format!("{:.2} / {}", d.mean, p99(d)),
        );
        line(out, &format!("{name} mean / p99 (ms):"), value);
    }
}

/// The 95% confidence interval of each reported mean, median and percentile that has one
/// (docs/metrics.md, "Confidence intervals").
fn intervals(out: &mut String, result: &BenchResult) {
    let c = &result.config;
    let mut lines = Vec::new();
    for m in Metric::ALL {
        let Some(d) = c
            .percentile_metrics
            .contains(&m)
            .then(|| result.summary.metric(m))
            .flatten()
        else {
            continue;
        };
        let stats = [Stat::Mean, Stat::Median];
        for stat in stats
            .into_iter()
            .chain(c.metric_percentiles.iter().map(|&p| Stat::Percentile(p)))
        {
            if let Some([lo, hi]) = d.ci95(stat) {
                let name = match stat {
                    Stat::Percentile(p) => format!("P{}", percentile_word(p)),
                    Stat::Median => "Median".into(),
                    _ => "Mean".into(),
                };
                lines.push((
                    format!("{name} {} (ms):", section(m).1),
                    format!("{lo:.2} .. {hi:.2}"),
                ));
            }
        }
    }
    if lines.is_empty() {
        return;
    }
    out.push_str(&rule("95% confidence intervals", '-'));
    for (label, value) in lines {
        line(out, &label, value);
    }
}
