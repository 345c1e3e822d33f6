//! Blocks of the servebench report that only some runs have: cost and energy, the
//! conversations of a multi-turn run, the steady window, and a workload mix's classes.

use super::lines::{line, rule};
use crate::results::document::BenchResult;
use crate::results::stats::steady::{SteadyVerdict, WindowMean};

/// `--cost-per-hour` and a DCGM exporter's power: what the window cost, per million tokens,
/// and its GPU energy (docs/metrics.md, "Cost and energy").
pub(super) fn cost(out: &mut String, result: &BenchResult) {
    if result.cost.is_none() && result.energy.is_none() {
        return;
    }
    out.push_str(&rule("Cost and energy", '-'));
    let fixed = |v: Option<f64>, d: usize| v.map_or_else(|| "-".into(), |v| format!("{v:.d$}"));
    if let Some(c) = &result.cost {
        line(
            out,
            "Price (USD per hour):",
            format!("{:.2}", c.usd_per_hour),
        );
        line(out, "Cost of the run (USD):", format!("{:.6}", c.usd));
        line(
            out,
            "$ per 1M output tokens:",
            fixed(c.usd_per_1m_output_tokens, 4),
        );
        line(
            out,
            "$ per 1M total tokens:",
            fixed(c.usd_per_1m_total_tokens, 4),
        );
    }
    if let Some(e) = &result.energy {
        line(
            out,
            "Mean GPU power (W):",
            format!("{:.1}", e.gpu_power_mean_w),
        );
        line(out, "GPU energy (J):", format!("{:.1}", e.joules));
        line(
            out,
            "Joules per output token:",
            fixed(e.joules_per_output_token, 4),
        );
        line(
            out,
            "Mean GPU utilisation (%):",
            fixed(e.gpu_util_mean_pct, 1),
        );
    }
}

/// Multi-turn runs: each conversation's totals (docs/metrics.md, "Multi-turn conversations").
pub(super) fn conversations(out: &mut String, result: &BenchResult) {
    let Some(c) = &result.summary.conversations else {
        return;
    };
    out.push_str(&rule("Conversations", '-'));
    line(
        out,
        "Conversations (failed):",
        format!("{} ({})", c.count, c.failed),
    );
    line(
        out,
        "Turns per conversation:",
        format!("{:.2}", c.turns_mean),
    );
    line(
        out,
        "Prompt / output tokens each:",
        format!("{:.1} / {:.1}", c.prompt_tokens_mean, c.output_tokens_mean),
    );
    if let Some(d) = &c.duration_ms {
        let p99 = d.at(99.0).map_or_else(|| "-".into(), |v| format!("{v:.2}"));
        line(
            out,
            "Duration mean / p99 (ms):",
            format!("{:.2} / {p99}", d.mean),
        );
    }
}

/// The steady window (`--steady-state auto`; docs/metrics.md, "Steady state"): its bounds and
/// its means with their batch-means 95% intervals, or why there is none.
pub(super) fn steady_state(out: &mut String, result: &BenchResult) {
    let Some(st) = &result.steady_state else {
        return;
    };
    out.push_str(&rule("Steady state (MSER-5)", '-'));
    let (Some(start), Some(end)) = (st.start_s, st.end_s) else {
        let never: Vec<&str> = (st.settled.iter())
            .filter(|s| s.at_s.is_none())
            .map(|s| s.series.as_str())
            .collect();
        let why = match st.verdict {
            SteadyVerdict::TooShort => "too short to tell".to_string(),
            _ => format!("still ramping ({} never settled)", never.join(", ")),
        };
        line(out, "Steady state:", format!("not reached: {why}"));
        return;
    };
    line(
        out,
        "Window (s from the first send):",
        format!("{start:.2} to {end:.2}"),
    );
    line(out, "Requests sent in the window:", st.requests);
    let mean = |out: &mut String, label: &str, m: &Option<WindowMean>| {
        if let Some(m) = m {
            let ci = m
                .ci95
                .map_or(String::new(), |[lo, hi]| format!("  [{lo:.2}, {hi:.2}]"));
            line(out, label, format!("{:.2}{ci}", m.mean));
        }
    };
    mean(
        out,
        "Output token throughput (tok/s):",
        &st.output_throughput,
    );
    mean(out, "Requests in flight:", &st.in_flight);
    mean(out, "Mean TTFT (ms):", &st.ttft_ms);
    mean(out, "Mean TPOT (ms):", &st.tpot_ms);
}

/// A workload mix (`--mix`; docs/metrics.md, "Workload mix"): Jain's fairness index, then each
/// class's requests, shares, goodput, SLO attainment and latencies (a class's name is shown
/// escaped, as every value).
pub(super) fn mix(out: &mut String, result: &BenchResult) {
    let Some(mix) = &result.mix else {
        return;
    };
    let opt =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    out.push_str(&rule("Workload mix", '-'));
    line(
        out,
        "Jain's fairness index:",
        opt(mix.jain_fairness_index, 4),
    );
    if mix.unclassed > 0 {
        line(out, "Requests of no class:", mix.unclassed);
    }
    for c in &mix.classes {
        let priority = c
            .priority
            .map_or(String::new(), |p| format!(" (priority {p})"));
        line(out, "Class:", format!("{}{priority}", c.name));
        line(
            out,
            "  Completed / failed requests:",
            format!("{} / {}", c.completed, c.failed),
        );
        line(
            out,
            "  Weight share / output token share:",
            format!("{:.4} / {}", c.weight_share, opt(c.output_token_share, 4)),
        );
        line(
            out,
            "  Normalised token share:",
            opt(c.normalized_token_share, 4),
        );
        line(
            out,
            "  Output token throughput (tok/s):",
            format!("{:.2}", c.output_throughput),
        );
        if let (Some(g), Some(a)) = (c.request_goodput, c.slo_attainment) {
            line(out, "  Request goodput (req/s):", format!("{g:.2}"));
            line(out, "  SLO attainment:", format!("{:.2}%", a * 100.0));
        }
        let pair = |m: Option<f64>, p: Option<f64>| format!("{} / {}", opt(m, 2), opt(p, 2));
        line(
            out,
            "  Mean / P99 TTFT (ms):",
            pair(c.mean_ttft_ms, c.p99_ttft_ms),
        );
        line(
            out,
            "  Mean / P99 TPOT (ms):",
            pair(c.mean_tpot_ms, c.p99_tpot_ms),
        );
        line(out, "  Mean E2EL (ms):", opt(c.mean_e2el_ms, 2));
        if let (Some(done), Some(failed)) = (c.probe_completed, c.probe_failed) {
            line(
                out,
                "  Probes completed / failed:",
                format!("{done} / {failed}"),
            );
            let probe = pair(c.probe_mean_ttft_ms, c.probe_p99_ttft_ms);
            line(out, "  Probe mean / P99 TTFT (ms):", probe);
            line(out, "  TTFT over the probes':", opt(c.ttft_over_probe, 2));
        }
        super::mix_alone::lines(out, c);
    }
}
