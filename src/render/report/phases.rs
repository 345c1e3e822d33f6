//! Blocks of the servebench report for how a run's output was generated:
//! its reasoning and answer phases, and speculative decoding. Every number comes from the
//! result's summary and the server's metrics.

use super::lines::{distribution, line, num, rule};
use crate::results::document::BenchResult;

/// Reasoning and answer phases (docs/metrics.md, "Reasoning"): present when a request
/// reasoned.
pub(super) fn reasoning(out: &mut String, result: &BenchResult) {
    let Some(x) = &result.summary.reasoning else {
        return;
    };
    let ps = &result.config.metric_percentiles;
    out.push_str(&rule("Reasoning and answer", '-'));
    let sources: Vec<String> = (x.token_sources.iter())
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let counted = match sources.is_empty() {
        true => x.requests.to_string(),
        false => format!("{} ({})", x.requests, sources.join(", ")),
    };
    line(out, "Requests with a reasoning count:", counted);
    line(out, "Reasoning tokens:", x.total_reasoning_tokens);
    line(out, "Answer tokens:", x.total_answer_tokens);
    line(
        out,
        "Output spent reasoning:",
        format!("{:.1}%", 100.0 * x.reasoning_share),
    );
    num(out, "Reasoning throughput (tok/s):", x.reasoning_throughput);
    num(out, "Answer throughput (tok/s):", x.answer_throughput);
    distribution(out, "reasoning ITL", "ms", x.reasoning_itl_ms.as_ref(), ps);
    distribution(out, "answer ITL", "ms", x.answer_itl_ms.as_ref(), ps);
}

/// Speculative decoding (docs/metrics.md, "Speculative decoding"): the chunks' tokens, when
/// some chunk carried several, and the server's acceptance figures, when it reported them.
pub(super) fn spec_decode(out: &mut String, result: &BenchResult) {
    let chunks = (result.summary.tokens_per_chunk.as_ref()).filter(|d| d.max > 1.0);
    let server = (result.server_metrics.as_ref()).and_then(|m| m.summary.spec_decode.as_ref());
    if chunks.is_none() && server.is_none() {
        return;
    }
    out.push_str(&rule("Speculative decoding", '-'));
    if let Some(d) = chunks {
        let ps = &result.config.metric_percentiles;
        line(out, "Chunks with a token count:", d.count);
        distribution(out, "tokens per chunk", "tokens", Some(d), ps);
        line(out, "Max tokens per chunk:", d.max);
    }
    let Some(f) = server else {
        return;
    };
    let count = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.0}"));
    line(out, "Drafts (server):", count(f.num_drafts));
    line(out, "Draft tokens (server):", count(f.draft_tokens));
    line(out, "Accepted tokens (server):", count(f.accepted_tokens));
    if let Some(r) = f.acceptance_rate {
        line(out, "Acceptance rate:", format!("{:.1}%", 100.0 * r));
    }
    if let Some(l) = f.acceptance_length {
        line(out, "Mean acceptance length:", format!("{l:.2}"));
    }
    if !f.per_position_acceptance_rates.is_empty() {
        let rates: Vec<String> = (f.per_position_acceptance_rates.iter())
            .map(|r| format!("{r:.3}"))
            .collect();
        line(out, "Acceptance by position:", rates.join(", "));
    }
    if let Some(l) = f.server_accept_length_mean {
        line(
            out,
            "Accept length (server gauge, mean):",
            format!("{l:.2}"),
        );
    }
}
