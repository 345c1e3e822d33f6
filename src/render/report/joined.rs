//! The report's block of a saved join (`servebench join RESULT TRACE --save`; docs/metrics.md,
//! "The server's account of a request"): the counts of each side, the requests split by
//! their span and by the account in their own answer, and each part of the TTFT split, mean,
//! median and p99. Nothing when the result holds no join.

use super::lines::{line, rule};
use crate::results::document::BenchResult;

pub(super) fn lines(out: &mut String, result: &BenchResult) {
    let Some(j) = &result.join else {
        return;
    };
    out.push_str(&rule("Server's account (join)", '-'));
    line(out, "Trace:", j.trace.display());
    line(
        out,
        "Joined / requests / spans:",
        format!("{} / {} / {}", j.matched, j.requests, j.spans),
    );
    line(
        out,
        "Unmatched requests / spans:",
        format!("{} / {}", j.unmatched_requests, j.unmatched_spans),
    );
    line(
        out,
        "Duplicated ids / implausible spans:",
        format!("{} / {}", j.duplicate_ids, j.implausible),
    );
    line(
        out,
        "Split by span / by the answer's account:",
        format!("{} / {}", j.from_spans, j.from_answers),
    );
    for p in &j.parts {
        line(
            out,
            &format!("{} mean / median / p99 (ms):", p.name),
            format!("{:.3} / {:.3} / {:.3}", p.mean_ms, p.median_ms, p.p99_ms),
        );
    }
}
