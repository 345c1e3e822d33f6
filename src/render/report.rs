//! Renders a saved [`BenchResult`] as text. Computes nothing: every number comes from the
//! result's summary.
//!
//! The first block is vLLM's "Serving Benchmark Result" in exactly its layout (labels padded to
//! 40 columns, values to 10, section rules 50 wide, the same order), so scripts that parse the
//! seeds' reports parse ours. servebench's own lines follow in a second block.

use std::fmt::Write as _;

use crate::config::metric::percentile_word;
use crate::config::Metric;
use crate::results::document::BenchResult;
use crate::results::stats::Distribution;
use crate::results::validity::Verdict;

const WIDTH: usize = 50;

fn rule(title: &str, fill: char) -> String {
    let pad = WIDTH.saturating_sub(title.chars().count());
    let left = pad / 2;
    let fill_s = |n| std::iter::repeat_n(fill, n).collect::<String>();
    format!("{}{}{}\n", fill_s(left), title, fill_s(pad - left))
}

fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
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
    } else {
        c.base_url.clone()
    };
    line(&mut out, "Server:", server);
    line(&mut out, "Backend:", c.backend.as_str());
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
    if !result.complete {
        let why = if missing.is_empty() {
            format!("no (stopped; {} requests never sent)", result.unsent)
        } else {
            format!("no (shards {missing} missing)")
        };
        line(&mut out, "Run complete:", why);
    }
    if let (Some(good), Some(g)) = (s.good_requests, s.request_goodput) {
        let slos: Vec<String> = c
            .goodput
            .iter()
            .map(|x| format!("{}<={}ms", x.metric.key(), x.max_ms))
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
    let sources: Vec<String> = s
        .output_token_sources
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    line(&mut out, "Output token count source:", sources.join(" "));
    let sources: Vec<String> = s
        .input_token_sources
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    line(&mut out, "Input token count source:", sources.join(" "));
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
    line(&mut out, "Output chunks:", s.total_output_chunks);
    distribution(
        &mut out,
        "schedule lag",
        "ms",
        s.schedule_lag_ms.as_ref(),
        ps,
    );
    distribution(
        &mut out,
        "TTFT from scheduled",
        "ms",
        s.ttft_from_scheduled_ms.as_ref(),
        ps,
    );
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
        };
        line(&mut out, "Measurement:", verdict);
        for reason in &v.reasons {
            let _ = writeln!(out, "  {reason}");
        }
    }
    server_timings(&mut out, result);
    server_metrics(&mut out, result);
    if let Some(path) = &result.records_file {
        line(&mut out, "Records:", path.display());
    }
    out.push_str(&rule("", '='));
    out
}

/// servebench's TPOT and TTFT next to the server's own decode and prompt times (llama.cpp's
/// `timings`), and the per-request difference: what the client side adds per token.
fn server_timings(out: &mut String, result: &BenchResult) {
    let s = &result.summary;
    let ps = &result.config.metric_percentiles;
    if s.server_decode_per_token_ms.is_none() && s.server_prompt_ms.is_none() {
        return;
    }
    let value =
        |d: Option<&Distribution>| d.map_or_else(|| "n/a".into(), |d| format!("{:.2}", d.median));
    out.push_str(&rule("Server's own timings", '-'));
    line(out, "Median TPOT (ms):", value(s.tpot_ms.as_ref()));
    distribution(
        out,
        "server decode/token",
        "ms",
        s.server_decode_per_token_ms.as_ref(),
        ps,
    );
    distribution(
        out,
        "TPOT - server decode",
        "ms",
        s.tpot_minus_server_decode_ms.as_ref(),
        ps,
    );
    line(out, "Median TTFT (ms):", value(s.ttft_ms.as_ref()));
    distribution(
        out,
        "server prompt time",
        "ms",
        s.server_prompt_ms.as_ref(),
        ps,
    );
}

/// The server's own metrics scraped during the run, next to servebench's own counts.
fn server_metrics(out: &mut String, result: &BenchResult) {
    let Some(m) = &result.server_metrics else {
        return;
    };
    let s = &m.summary;
    let s_run = &result.summary;
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or_else(|| "n/a".into(), f);
    let two = |v: f64| format!("{v:.2}");
    let int = |v: f64| format!("{v:.0}");
    out.push_str(&rule("Server metrics", '-'));
    line(out, "Metrics URL:", &m.url);
    line(
        out,
        "Server metric names:",
        m.server.map_or("none recognized", |f| f.as_str()),
    );
    line(
        out,
        "Samples:",
        format!("{} (every {} s)", m.samples.len(), m.interval_s),
    );
    if m.failures > 0 {
        let first = m.errors.first().map_or("", String::as_str);
        line(
            out,
            "Scrape failures (warning):",
            format!("{} (first: {first})", m.failures),
        );
    }
    line(
        out,
        "Running requests (mean / max):",
        format!(
            "{} / {}",
            opt(s.running_mean, &two),
            opt(s.running_max, &int)
        ),
    );
    line(
        out,
        "Waiting requests (mean / max):",
        format!(
            "{} / {}",
            opt(s.waiting_mean, &two),
            opt(s.waiting_max, &int)
        ),
    );
    line(
        out,
        "Peak KV-cache usage (%):",
        opt(s.kv_cache_usage_max, &|v| format!("{:.1}", v * 100.0)),
    );
    line(
        out,
        "Server prompt tokens (client):",
        format!(
            "{} ({})",
            opt(s.prompt_tokens, &int),
            s_run.total_input_tokens
        ),
    );
    line(
        out,
        "Server generated tokens (client):",
        format!(
            "{} ({})",
            opt(s.generation_tokens, &int),
            s_run.total_output_tokens
        ),
    );
}

/// Columns of the per-step table of a sweep or an import, in this order when present.
const VIEW_COLUMNS: [(&str, &str); 12] = [
    ("completed", "ok"),
    ("failed", "failed"),
    ("duration", "duration s"),
    ("request_throughput", "req/s"),
    ("output_throughput", "out tok/s"),
    ("mean_ttft_ms", "mean TTFT"),
    ("p99_ttft_ms", "p99 TTFT"),
    ("mean_tpot_ms", "mean TPOT"),
    ("mean_itl_ms", "mean ITL"),
    ("p99_itl_ms", "p99 ITL"),
    ("mean_e2el_ms", "mean E2EL"),
    ("p99_e2el_ms", "p99 E2EL"),
];

fn table(out: &mut String, head: &[String], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    for r in std::iter::once(head).chain(rows.iter().map(Vec::as_slice)) {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    }
}

/// The text report of a sweep or an imported document: one table per series (a row per
/// step, latencies in ms), the notes, and llmperf's per-request table when there is one.
pub fn view_text(view: &crate::views::view::View) -> String {
    use crate::views::view::{fmt_load, fmt_value};
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({}, {})",
        view.label,
        view.format,
        view.path.display()
    );
    for n in &view.notes {
        let _ = writeln!(out, "note: {n}");
    }
    for s in &view.series {
        let _ = writeln!(out, "\n{}", s.name);
        let cols: Vec<(&str, &str)> = VIEW_COLUMNS
            .iter()
            .copied()
            .filter(|(k, _)| s.steps.iter().any(|st| st.metrics.contains_key(*k)))
            .collect();
        let mut head = vec![s.parameter.as_str().to_string()];
        head.extend(cols.iter().map(|(_, h)| h.to_string()));
        let rows: Vec<Vec<String>> = s
            .steps
            .iter()
            .map(|st| {
                let mut r = vec![st.load_value(s.parameter).map_or("?".into(), fmt_load)];
                r.extend(
                    cols.iter()
                        .map(|(k, _)| st.metric(k).map_or("—".into(), |v| fmt_value(k, v))),
                );
                r
            })
            .collect();
        table(&mut out, &head, &rows);
        for st in &s.steps {
            for n in &st.notes {
                let v = st.load_value(s.parameter).map_or("?".into(), fmt_load);
                let _ = writeln!(out, "  note ({} {v}): {n}", s.parameter.as_str());
            }
        }
    }
    if !view.llmperf_requests.is_empty() {
        out.push_str(&llmperf_table(&view.llmperf_requests, usize::MAX));
    }
    out
}

/// llmperf's figures next to servebench's recomputation, one row per request (at most
/// `limit`), with what does not add up flagged (`!`) and explained below.
pub fn llmperf_table(reqs: &[crate::views::view::LlmperfRequest], limit: usize) -> String {
    let f = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.2}"));
    let u = |v: Option<u64>| v.map_or("—".to_string(), |v| v.to_string());
    let head: Vec<String> = [
        "#",
        "TTFT ms",
        "E2E ms",
        "llmperf ITL ms",
        "llmperf N",
        "llmperf tok/s",
        "ITL×(N−1) s",
        "N",
        "TPOT ms",
        "N/E2E tok/s",
        "",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows: Vec<Vec<String>> = reqs
        .iter()
        .take(limit)
        .map(|r| {
            vec![
                r.index.to_string(),
                if r.ok {
                    f(Some(r.ttft_ms))
                } else {
                    "failed".into()
                },
                f(Some(r.e2el_ms)),
                f(Some(r.llmperf_itl_ms)),
                u(r.llmperf_output_tokens),
                f(r.llmperf_request_output_throughput),
                f(r.itl_times_n_minus_1_s),
                u(r.output_tokens),
                f(r.tpot_ms),
                f(r.request_output_throughput),
                if r.flags.is_empty() {
                    String::new()
                } else {
                    "!".into()
                },
            ]
        })
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nllmperf per request: its own figures | recomputed (N = round(E2E / llmperf ITL), TPOT = (E2E − TTFT) / (N − 1))"
    );
    table(&mut out, &head, &rows);
    if reqs.len() > limit {
        let _ = writeln!(out, "  ... {} more", reqs.len() - limit);
    }
    for r in reqs.iter().take(limit).filter(|r| !r.flags.is_empty()) {
        for fl in &r.flags {
            let _ = writeln!(out, "  ! #{}: {fl}", r.index);
        }
    }
    out
}

/// A short text account of an import: series, steps, notes, and the llmperf table.
pub fn import_summary(view: &crate::views::view::View, out: &std::path::Path) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let steps: usize = view.series.iter().map(|x| x.steps.len()).sum();
    let _ = writeln!(
        s,
        "imported {} ({}): {} series, {} steps -> {}",
        view.path.display(),
        view.format,
        view.series.len(),
        steps,
        out.display()
    );
    for x in &view.series {
        let values: Vec<String> = x
            .steps
            .iter()
            .filter_map(|st| st.load_value(x.parameter))
            .map(crate::views::view::fmt_load)
            .collect();
        let _ = writeln!(
            s,
            "  {}: {} steps, {} = {}",
            x.name,
            x.steps.len(),
            x.parameter.as_str(),
            values.join(", ")
        );
    }
    for n in &view.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    if !view.llmperf_requests.is_empty() {
        s.push_str(&llmperf_table(&view.llmperf_requests, 20));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_vllm_layout() {
        assert_eq!(
            rule(" Serving Benchmark Result ", '='),
            "============ Serving Benchmark Result ============\n"
        );
        assert_eq!(
            rule("Time per Output Token (excl. 1st token)", '-'),
            "-----Time per Output Token (excl. 1st token)------\n"
        );
        assert_eq!(
            rule("End-to-end Latency", '-'),
            "----------------End-to-end Latency----------------\n"
        );
        assert_eq!(rule("", '='), format!("{}\n", "=".repeat(50)));
    }

    /// The simulator's late-chunk count is printed in both modes; the engine model's says it
    /// is not judged (its step bursts leave together), the exact mode's judges the run.
    #[test]
    fn simulator_lateness_line_says_whether_it_is_judged() {
        use crate::results::stats::{summarize, SummaryOptions};
        use crate::results::validity::{RunFacts, Validity};
        let report = |mode: &str| {
            let facts = RunFacts {
                wall_s: 1.0,
                server_stats: Some(
                    serde_json::json!({"late_chunks": 50, "chunks": 1000, "mode": mode}),
                ),
                ..RunFacts::default()
            };
            let summary = summarize(&[], &SummaryOptions::default());
            let mut result = BenchResult::new(
                Default::default(),
                summary,
                &[],
                String::new(),
                String::new(),
                0,
                None,
            );
            result.validity = Some(Validity::judge(&mut [0.1], 0.0, facts));
            servebench_block(&result)
        };
        let late_line = |text: &str| {
            let l = text
                .lines()
                .find(|l| l.starts_with("Simulator chunks late"));
            l.unwrap().split_once(':').unwrap().1.trim().to_string()
        };
        let engine = report("engine");
        assert_eq!(
            late_line(&engine),
            "50 (engine model: reported, not judged)"
        );
        assert!(engine.contains("Measurement:                             valid"));
        let exact = report("exact");
        assert_eq!(late_line(&exact), "50");
        assert!(exact.contains("SERVER-LATE"));
    }

    #[test]
    fn lines_pad_like_vllm() {
        let mut s = String::new();
        line(&mut s, "Successful requests:", 1);
        num(&mut s, "Benchmark duration (s):", 2.556);
        assert_eq!(s, "Successful requests:                     1         \nBenchmark duration (s):                  2.56      \n");
    }

    /// A hand-built result with server timings and scraped server metrics: the lines the
    /// servebench block prints for them.
    #[test]
    fn server_timings_and_metrics_lines() {
        use crate::measure::prom::{MetricsSample, ServerFamily};
        use crate::results::server_metrics::{ServerMetrics, ServerMetricsSummary};
        use crate::results::stats::{summarize, SummaryOptions};
        let d = |median: f64| Distribution {
            count: 4,
            mean: median,
            median,
            std: 0.0,
            min: median,
            max: median,
            percentiles: vec![(99.0, median)],
            percentile_method: Default::default(),
        };
        let mut summary = summarize(&[], &SummaryOptions::default());
        summary.tpot_ms = Some(d(12.5));
        summary.ttft_ms = Some(d(130.0));
        summary.server_decode_per_token_ms = Some(d(12.25));
        summary.tpot_minus_server_decode_ms = Some(d(0.25));
        summary.server_prompt_ms = Some(d(120.0));
        summary.total_input_tokens = 40;
        summary.total_output_tokens = 256;
        let config = crate::config::RunConfig {
            metric_percentiles: vec![99.0],
            ..crate::config::RunConfig::default()
        };
        let mut result =
            BenchResult::new(config, summary, &[], String::new(), String::new(), 0, None);
        result.server_metrics = Some(ServerMetrics {
            url: "http://127.0.0.1:1/metrics".into(),
            interval_s: 0.5,
            server: Some(ServerFamily::Vllm),
            samples: vec![MetricsSample::default(); 3],
            failures: 1,
            errors: vec!["GET http://127.0.0.1:1/metrics: HTTP 503".into()],
            summary: ServerMetricsSummary {
                samples: 3,
                running_mean: Some(2.5),
                running_max: Some(4.0),
                waiting_mean: Some(0.5),
                waiting_max: Some(1.0),
                kv_cache_usage_max: Some(0.375),
                prompt_tokens: Some(40.0),
                generation_tokens: Some(256.0),
            },
        });
        let text = servebench_block(&result);
        let expected = "\
---------------Server's own timings---------------
Median TPOT (ms):                        12.50     
Mean server decode/token (ms):           12.25     
Median server decode/token (ms):         12.25     
P99 server decode/token (ms):            12.25     
Mean TPOT - server decode (ms):          0.25      
Median TPOT - server decode (ms):        0.25      
P99 TPOT - server decode (ms):           0.25      
Median TTFT (ms):                        130.00    
Mean server prompt time (ms):            120.00    
Median server prompt time (ms):          120.00    
P99 server prompt time (ms):             120.00    
------------------Server metrics------------------
Metrics URL:                             http://127.0.0.1:1/metrics
Server metric names:                     vllm      
Samples:                                 3 (every 0.5 s)
Scrape failures (warning):               1 (first: GET http://127.0.0.1:1/metrics: HTTP 503)
Running requests (mean / max):           2.50 / 4  
Waiting requests (mean / max):           0.50 / 1  
Peak KV-cache usage (%):                 37.5      
Server prompt tokens (client):           40 (40)   
Server generated tokens (client):        256 (256) 
";
        assert!(text.contains(expected), "{text}");
        // Neither section without the data.
        result.server_metrics = None;
        result.summary.server_decode_per_token_ms = None;
        result.summary.server_prompt_ms = None;
        let text = servebench_block(&result);
        assert!(!text.contains("Server metrics") && !text.contains("Server's own"));
    }
}
