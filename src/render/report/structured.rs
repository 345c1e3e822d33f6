//! The report's lines of a run that asks for structured output or tool calls
//! (`--structured-output`): the answers checked, the share valid (vLLM's `correct_rate(%)`)
//! and parsed as JSON, the checked answers by verdict, and for tool calls the time to the
//! first tool-call token and the tokens per call. Every number comes from the result's
//! summary (`results::stats::StructuredFigures`).

use super::{distribution, line, rule};
use crate::results::document::BenchResult;

/// servebench's lines of a structured run; nothing for any other run.
pub(super) fn lines(out: &mut String, result: &BenchResult) {
    let Some(st) = &result.summary.structured else {
        return;
    };
    let kind = result.config.structured.as_ref().map_or("", |s| s.kind());
    out.push_str(&rule(&format!("Structured output ({kind})"), '-'));
    line(out, "Answers checked:", st.checked);
    let share = |n: u64, pct: f64| format!("{n} ({pct:.2}%)");
    line(
        out,
        "Valid, correct_rate(%):",
        share(st.valid, st.correct_rate),
    );
    line(out, "Parsed as JSON:", share(st.json, st.json_rate));
    for (verdict, n) in st.by_verdict.iter().filter(|(v, _)| *v != "valid") {
        line(out, &format!("  {verdict}:"), n);
    }
    if st.tool_calls == 0 {
        return;
    }
    line(out, "Answers with a tool call:", st.tool_calls);
    if let Some(t) = st.mean_tool_call_tokens {
        line(out, "Tool-call tokens (mean):", format!("{t:.2}"));
    }
    let ps = &result.config.metric_percentiles;
    let d = st.ttft_tool_call_ms.as_ref();
    distribution(out, "tool-call TTFT", "ms", d, ps);
}
