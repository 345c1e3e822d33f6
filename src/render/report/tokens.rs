//! Where the token counts came from and how far to trust them: the sources of input and
//! output counts, streams without a terminator, implausible usage, disagreements, the
//! tokenizer, and the lengths built, counted by the server, asked and received.

use super::lines::line;
use crate::results::document::BenchResult;
use crate::results::stats::Distribution;

/// The token-count lines; `pooled` (a run answered per input, embeddings) has no output lines.
pub(super) fn lines(out: &mut String, result: &BenchResult, pooled: bool) {
    let s = &result.summary;
    let c = &result.config;
    let sources: Vec<String> = s
        .output_token_sources
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    if !pooled {
        line(out, "Output token count source:", sources.join(" "));
    }
    let sources: Vec<String> = s
        .input_token_sources
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    line(out, "Input token count source:", sources.join(" "));
    if s.completed_without_done_marker > 0 {
        line(
            out,
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
            out,
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
            out,
            "Output count disagreements:",
            s.output_count_disagreements,
        );
    }
    line(
        out,
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
        line(out, "Input tokens built min/mean/max:", v);
    }
    if let Some(v) = span(s.input_len_server.as_ref()) {
        line(out, "Input tokens by server min/mean/max:", v);
        line(
            out,
            "  requests where they differ:",
            s.input_len_disagreements,
        );
    }
    if let (Some(asked), Some(got)) = (
        span(s.output_len_requested.as_ref()),
        span(s.output_len_received.as_ref()),
    ) {
        line(out, "Output tokens asked min/mean/max:", asked);
        line(out, "Output tokens received min/mean/max:", got);
    }
    if !pooled {
        line(out, "Output chunks:", s.total_output_chunks);
    }
}
