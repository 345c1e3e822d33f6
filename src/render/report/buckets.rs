//! The report's block of a run with `--bucket-by` (docs/metrics.md, "Figures by length
//! bucket"): each bucket's requests, outcomes, throughputs, goodput and TTFT, TPOT and E2EL,
//! laid out as an adapter's are; every number from the result's `buckets`.

use super::adapters::group;
use super::lines::{line, rule};
use crate::results::document::BenchResult;

/// Each bucket's lines, after a rule naming the bucketing; nothing without one.
pub(super) fn lines(out: &mut String, result: &BenchResult) {
    let Some(b) = &result.buckets else {
        return;
    };
    out.push_str(&rule(&format!(" By {} ", b.by.field.as_str()), '-'));
    for bucket in &b.buckets {
        let heading = format!("{} {} tokens:", b.by.field.as_str(), bucket.label);
        group(out, &heading, &bucket.figures, result);
    }
    if b.below > 0 {
        line(out, "Below the first edge (in no bucket):", b.below);
    }
}
