//! The report's block of a multi-LoRA run (docs/metrics.md, "Multi-LoRA traffic"): for each
//! adapter, the requests sent to it and their share of the run's (the mix actually sent), its
//! outcomes, throughputs, goodput and TTFT, TPOT and E2EL. Every number comes from the
//! result's `per_adapter`; an adapter's name is outside text, shown escaped. A group's lines
//! ([`group`]) are also a length bucket's (`buckets.rs`).

use super::lines::{distribution, line, num, rule};
use crate::config::Metric;
use crate::results::document::BenchResult;
use crate::results::stats::adapters::AdapterFigures;

/// Each adapter's lines, after a rule naming how many there are; nothing for a run without
/// adapters.
pub(super) fn lines(out: &mut String, result: &BenchResult) {
    if result.per_adapter.is_empty() {
        return;
    }
    let n = result.per_adapter.len();
    out.push_str(&rule(&format!(" LoRA adapters ({n}) "), '-'));
    for (name, a) in &result.per_adapter {
        let name = crate::render::escape::terminal_line(name);
        group(out, &format!("Adapter {name}:"), a, result);
    }
}

/// One group's lines (an adapter's, a length bucket's), under `heading`: its requests and
/// their share of the run's, outcomes, throughputs, goodput and TTFT, TPOT and E2EL.
pub(super) fn group(out: &mut String, heading: &str, a: &AdapterFigures, result: &BenchResult) {
    let ps = &result.config.metric_percentiles;
    let pooled = result.summary.total_input_sequences.is_some();
    let share = 100.0 * a.share;
    let sent = format!(
        "{} sent ({share:.1}%), {} ok, {} failed",
        a.sent, a.completed, a.failed
    );
    line(out, heading, sent);
    for (kind, count) in &a.failures_by_kind {
        line(out, &format!("  {kind}:"), count);
    }
    num(out, "  Request throughput (req/s):", a.request_throughput);
    if !pooled {
        num(
            out,
            "  Output token throughput (tok/s):",
            a.output_throughput,
        );
    }
    num(
        out,
        "  Total token throughput (tok/s):",
        a.total_token_throughput,
    );
    if let Some(g) = a.request_goodput {
        num(out, "  Request goodput (req/s):", g);
    }
    let metrics = match pooled {
        true => vec![(Metric::E2el, a.e2el_ms.as_ref())],
        false => vec![
            (Metric::Ttft, a.ttft_ms.as_ref()),
            (Metric::Tpot, a.tpot_ms.as_ref()),
            (Metric::E2el, a.e2el_ms.as_ref()),
        ],
    };
    for (m, d) in metrics {
        let name = m.key().to_uppercase();
        let mut block = String::new();
        distribution(&mut block, &name, "ms", d, ps);
        // Indented by two, the value kept in its column: two of the label's padding go.
        for l in block.lines() {
            out.push_str("  ");
            out.push_str(&l.replacen("  ", "", 1));
            out.push('\n');
        }
    }
}
