//! Blocks of the servebench report that only some runs have: cost and energy, and the
//! conversations of a multi-turn run.

use super::{line, rule};
use crate::results::document::BenchResult;

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
