//! The report's blocks of the server's own account: its per-request timings (llama.cpp's
//! `timings`) beside servebench's, and its Prometheus metrics over the run.

use super::lines::{distribution, line, rule};
use crate::results::document::BenchResult;
use crate::results::stats::Distribution;

/// servebench's TPOT and TTFT next to the server's own decode and prompt times (llama.cpp's
/// `timings`), and the per-request difference: what the client side adds per token.
pub(super) fn timings(out: &mut String, result: &BenchResult) {
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
pub(super) fn metrics(out: &mut String, result: &BenchResult) {
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
    if m.over_limit > 0 {
        let l = crate::measure::prom::ParseLimits::SCRAPE;
        line(
            out,
            "Lines past scrape limits (warning):",
            format!(
                "{} not read (over {} series of known names, or a label over {} bytes)",
                m.over_limit, l.max_series, l.max_label_bytes
            ),
        );
    }
    if !s.implausible.is_empty() {
        line(
            out,
            "Implausible server counters:",
            format!("{} (not used)", s.implausible.join(" ")),
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
