//! Per-request samples for CDFs and timelines: TTFT and E2EL from a servebench records file,
//! or from vLLM's per-request lists (`ttfts`, `itls`) in a result or an imported JSON.
//!
//! Reads records (`measure::record`) and computes each request's figures with
//! `results::stats::RequestMetrics`, so definitions stay servebench's; it builds no view. To
//! sample one more figure, add a field to `Samples` (`views::model`) and fill it in both
//! functions here.

use std::path::Path;

use serde_json::Value;

use crate::measure::record::RequestRecord;
use crate::views::error::ViewError;
use crate::views::model::Samples;

/// Reads a JSON Lines records file (skipping lines that do not parse, e.g. a torn last line).
pub fn read_records(path: &Path) -> Result<Vec<RequestRecord>, ViewError> {
    records_in(path).map(Iterator::collect)
}

pub fn records_in(path: &Path) -> Result<impl Iterator<Item = RequestRecord>, ViewError> {
    crate::measure::record::read_jsonl(path).map_err(|error| ViewError::Read {
        path: path.to_path_buf(),
        error,
    })
}

/// TTFT and E2EL of every successful measured record (`stats::RequestMetrics`).
pub fn samples_of<R: std::borrow::Borrow<RequestRecord>>(
    records: impl IntoIterator<Item = R>,
) -> Samples {
    let mut s = Samples::default();
    for r in records {
        let r = r.borrow();
        if r.warmup {
            continue;
        }
        if let Some(m) = crate::results::stats::RequestMetrics::of(r) {
            s.ttft_ms.push(m.ttft_ns as f64 / 1e6);
            s.e2el_ms.push(m.e2el_ns as f64 / 1e6);
        }
    }
    s
}

/// Per-request samples from vLLM's `ttfts` and `itls` lists (seconds): TTFT, and E2EL as
/// TTFT + Σ ITL. Requests with an error (or no TTFT) are skipped.
pub fn samples_from_vllm_lists(map: &serde_json::Map<String, Value>) -> Samples {
    let list = |k: &str| map.get(k).and_then(Value::as_array).cloned();
    let Some(ttfts) = list("ttfts") else {
        return Samples::default();
    };
    let itls = list("itls");
    let errors = list("errors");
    let mut s = Samples::default();
    for (i, t) in ttfts.iter().enumerate() {
        let failed = errors
            .as_ref()
            .and_then(|e| e.get(i))
            .and_then(Value::as_str)
            .is_some_and(|e| !e.is_empty());
        let Some(t) = t.as_f64().filter(|t| *t > 0.0 && !failed) else {
            continue;
        };
        s.ttft_ms.push(t * 1e3);
        if let Some(gaps) = itls
            .as_ref()
            .and_then(|l| l.get(i))
            .and_then(Value::as_array)
        {
            let sum: f64 = gaps.iter().filter_map(Value::as_f64).sum();
            s.e2el_ms.push((t + sum) * 1e3);
        }
    }
    s
}
