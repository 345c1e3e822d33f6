//! The report's lines of a run that asks for structured output or tool calls
//! (`--structured-output`): what a regex, choice or grammar run asked, the answers checked
//! (and not checked: a grammar's, or those whose check went over its budget), the share valid (vLLM's `correct_rate(%)`) and, for JSON
//! and tools, parsed as JSON, the checked answers by verdict, and for tool calls the time to the
//! first tool-call token and the tokens per call. Every number comes from the result's
//! summary (`results::stats::StructuredFigures`).

use super::lines::{distribution, line, rule};
use crate::config::structured::StructuredOutput;
use crate::results::document::BenchResult;

/// The most characters of the pattern or choices shown.
const MAX_ASKED_CHARS: usize = 80;

/// What a regex, choice or grammar run asked, for its line: the pattern and the choices
/// quoted with control characters escaped (they come from the command line), shortened.
fn asked(spec: &StructuredOutput) -> Option<String> {
    let text = match spec {
        StructuredOutput::Regex { pattern, .. } => format!("pattern {:?}", pattern.as_str()),
        StructuredOutput::Choice { choices, .. } => format!("one of {choices:?}"),
        StructuredOutput::Grammar { grammar, .. } => {
            format!("a grammar of {} bytes (answers not checked)", grammar.len())
        }
        StructuredOutput::Json { .. } | StructuredOutput::Tools { .. } => return None,
    };
    let mut short: String = text.chars().take(MAX_ASKED_CHARS).collect();
    if short.len() < text.len() {
        short.push_str("...");
    }
    Some(short)
}

/// servebench's lines of a structured run; nothing for any other run.
pub(super) fn lines(out: &mut String, result: &BenchResult) {
    let Some(st) = &result.summary.structured else {
        return;
    };
    let spec = result.config.structured.as_ref();
    let kind = spec.map_or("", |s| s.kind());
    out.push_str(&rule(&format!("Structured output ({kind})"), '-'));
    if let Some(asked) = spec.and_then(asked) {
        line(out, "Asked:", asked);
    }
    line(out, "Answers checked:", st.checked);
    if st.unchecked > 0 {
        line(out, "Answers not checked:", st.unchecked);
    }
    if st.over_budget > 0 {
        line(out, "  over the check's budget:", st.over_budget);
    }
    let share = |n: u64, pct: f64| format!("{n} ({pct:.2}%)");
    if let Some(rate) = st.correct_rate {
        line(out, "Valid, correct_rate(%):", share(st.valid, rate));
    }
    if let Some(rate) = st.json_rate.filter(|_| spec.is_none_or(|s| s.is_json())) {
        line(out, "Parsed as JSON:", share(st.json, rate));
    }
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
    if let Some(n) = st.mean_tool_calls_per_answer {
        line(out, "Tool calls per answer (mean):", format!("{n:.2}"));
    }
    let ps = &result.config.metric_percentiles;
    let d = st.ttft_tool_call_ms.as_ref();
    distribution(out, "tool-call TTFT", "ms", d, ps);
}
