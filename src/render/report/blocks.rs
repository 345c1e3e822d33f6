//! Blocks of the servebench report that only some runs have: cost and energy, the
//! conversations of a multi-turn run, and the steady window.

use super::{line, rule};
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
