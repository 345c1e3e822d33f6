//! The report's block of a run over several endpoints (docs/metrics.md, "Several
//! endpoints"): for each endpoint, its URL (saved redacted), the requests sent to it and their
//! share, its outcomes, throughputs, TTFT, ITL and E2EL, and when `--failover` stopped it.
//! Every number comes from the result's `per_endpoint`.

use super::lines::{distribution, line, num, rule};
use crate::results::document::BenchResult;

/// Each endpoint's lines, after a rule naming how many there are; nothing for one endpoint.
pub(super) fn lines(out: &mut String, result: &BenchResult) {
    if result.per_endpoint.is_empty() {
        return;
    }
    let n = result.per_endpoint.len();
    out.push_str(&rule(&format!(" Endpoints ({n}) "), '-'));
    let ps = &result.config.metric_percentiles;
    for e in &result.per_endpoint {
        let a = &e.figures;
        let url = crate::render::escape::terminal_line(&e.url);
        let heading = format!("Endpoint {} {url}:", e.endpoint);
        let share = 100.0 * a.share;
        let sent = format!(
            "{} sent ({share:.1}%), {} ok, {} failed",
            a.sent, a.completed, a.failed
        );
        line(out, &heading, sent);
        for (kind, count) in &a.failures_by_kind {
            line(out, &format!("  {kind}:"), count);
        }
        if let Some(at) = e.stopped_at_s {
            line(out, "  Stopped by --failover at (s):", format!("{at:.3}"));
        }
        num(out, "  Request throughput (req/s):", a.request_throughput);
        num(
            out,
            "  Output token throughput (tok/s):",
            a.output_throughput,
        );
        for (name, d) in [
            ("TTFT", &a.ttft_ms),
            ("ITL", &a.itl_ms),
            ("E2EL", &a.e2el_ms),
        ] {
            let mut block = String::new();
            distribution(&mut block, name, "ms", d.as_ref(), ps);
            for l in block.lines() {
                out.push_str("  ");
                out.push_str(&l.replacen("  ", "", 1));
                out.push('\n');
            }
        }
    }
}
