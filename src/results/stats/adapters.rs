//! Multi-LoRA runs: the figures of each adapter's requests ([`AdapterFigures`],
//! docs/metrics.md, "Multi-LoRA traffic"), each computed as the run's are (one
//! [`Summarizer`] per adapter over its records), with rates over the whole run's duration so
//! the adapters' throughputs add up to the run's. The mix actually sent is each adapter's
//! count of measured requests (`sent`) and its share of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::distribution::Distribution;
use super::summarizer::Summarizer;
use super::summary::{RunSummary, SummaryOptions};
use crate::measure::record::RequestRecord;

/// The most adapters a run's figures are kept for, by name; the requests of any further one
/// are counted under [`OTHER`]. `--lora-modules` takes at most as many (`config::lora`); a
/// jsonl file may name more.
pub const MAX_ADAPTERS_KEPT: usize = 1024;
/// The name the requests of adapters past [`MAX_ADAPTERS_KEPT`] are counted under.
pub const OTHER: &str = "(other adapters)";

/// One adapter's figures in a run (and one length bucket's, `buckets.rs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdapterFigures {
    /// Measured requests sent to the adapter (successful and failed).
    pub sent: u64,
    /// `sent` / the run's measured requests.
    pub share: f64,
    pub completed: u64,
    pub failed: u64,
    /// Failed requests by kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failures_by_kind: BTreeMap<String, u64>,
    /// completed / the run's duration.
    pub request_throughput: f64,
    /// The adapter's output tokens / the run's duration.
    pub output_throughput: f64,
    /// The adapter's input and output tokens / the run's duration.
    pub total_token_throughput: f64,
    /// The adapter's requests meeting every SLO / the run's duration; `None` without SLOs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_goodput: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good_requests: Option<u64>,
    pub ttft_ms: Option<Distribution>,
    pub tpot_ms: Option<Distribution>,
    pub itl_ms: Option<Distribution>,
    pub e2el_ms: Option<Distribution>,
}

/// The figures of each adapter named by the measured `records` (records without an adapter
/// are the run's `--model`'s and are left out), rates over `duration_s`. Empty when no record
/// names an adapter.
pub fn per_adapter(
    records: impl IntoIterator<Item = RequestRecord>,
    opts: &SummaryOptions,
    duration_s: f64,
) -> BTreeMap<String, AdapterFigures> {
    let mut by: BTreeMap<String, Summarizer> = BTreeMap::new();
    let mut measured = 0u64;
    for r in records {
        if r.warmup {
            continue;
        }
        measured += 1;
        let Some(name) = r.adapter.as_deref() else {
            continue;
        };
        let key = match by.contains_key(name) || by.len() < MAX_ADAPTERS_KEPT {
            true => name,
            false => OTHER,
        };
        if !by.contains_key(key) {
            by.insert(key.to_string(), Summarizer::new(opts));
        }
        if let Some(s) = by.get_mut(key) {
            s.add(&r);
        }
    }
    by.into_iter()
        .map(|(name, s)| (name, group_figures(s.finish(), measured, duration_s)))
        .collect()
}

/// The figures of one group of a run's measured requests (an adapter's, a length bucket's)
/// from their summary: their share of the run's `measured` requests, and rates over the whole
/// run's `duration_s`, so the groups' throughputs add up to the run's.
pub(super) fn group_figures(s: RunSummary, measured: u64, duration_s: f64) -> AdapterFigures {
    let per_s = |n: f64| {
        if duration_s > 0.0 {
            n / duration_s
        } else {
            0.0
        }
    };
    let sent = s.completed + s.failed;
    let tokens = s.total_input_tokens as f64 + s.total_output_tokens as f64;
    AdapterFigures {
        sent,
        share: if measured > 0 {
            sent as f64 / measured as f64
        } else {
            0.0
        },
        completed: s.completed,
        failed: s.failed,
        failures_by_kind: s.failures_by_kind,
        request_throughput: per_s(s.completed as f64),
        output_throughput: per_s(s.total_output_tokens as f64),
        total_token_throughput: per_s(tokens),
        request_goodput: s.good_requests.map(|g| per_s(g as f64)),
        good_requests: s.good_requests,
        ttft_ms: s.ttft_ms,
        tpot_ms: s.tpot_ms,
        itl_ms: s.itl_ms,
        e2el_ms: s.e2el_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Slo, SloMetric};
    use crate::measure::record::{FailureKind, Outcome};

    /// A successful request to `adapter`: sent at `at` ms, first chunk `ttft` ms later, then
    /// 2 more chunks 10 ms apart (3 output tokens).
    fn ok(adapter: Option<&str>, at: u64, ttft: u64) -> RequestRecord {
        let ms = 1_000_000;
        let first = (at + ttft) * ms;
        RequestRecord {
            adapter: adapter.map(str::to_string),
            scheduled_ns: at * ms,
            sent_ns: at * ms,
            chunk_ns: vec![first, first + 10 * ms, first + 20 * ms],
            end_ns: first + 20 * ms,
            output_tokens: Some(3),
            prompt_tokens: Some(5),
            outcome: Outcome::Ok,
            ..RequestRecord::default()
        }
    }

    /// Each adapter's requests give its own figures, hand-computed: the mix
    /// sent, TTFT and TPOT, throughputs over the run's duration (adding up to the run's), and
    /// goodput against the run's SLOs; records of the base model are left out.
    #[test]
    fn each_adapter_s_figures_are_its_requests_figures() {
        let mut failed = ok(Some("b"), 0, 0);
        failed.outcome = Outcome::failed(FailureKind::HttpStatus, "HTTP 404");
        failed.chunk_ns.clear();
        let records = vec![
            ok(Some("a"), 0, 30),
            ok(Some("a"), 100, 70),
            ok(Some("b"), 200, 30),
            failed,
            ok(None, 300, 30),
        ];
        let opts = SummaryOptions {
            percentiles: vec![50.0],
            goodput: vec![Slo {
                metric: SloMetric::Ttft,
                max_ms: 50.0,
            }],
            time_scale: 1.0,
            valid_output: false,
        };
        let figures = per_adapter(records, &opts, 2.0);
        assert_eq!(figures.keys().collect::<Vec<_>>(), ["a", "b"]);
        let a = &figures["a"];
        assert_eq!((a.sent, a.completed, a.failed), (2, 2, 0));
        assert!((a.share - 0.4).abs() < 1e-12, "2 of 5 measured");
        assert_eq!(a.ttft_ms.as_ref().unwrap().mean, 50.0);
        assert_eq!(a.tpot_ms.as_ref().unwrap().mean, 10.0);
        assert_eq!(a.request_throughput, 1.0);
        assert_eq!(a.output_throughput, 3.0);
        assert_eq!(a.total_token_throughput, 8.0);
        assert_eq!((a.good_requests, a.request_goodput), (Some(1), Some(0.5)));
        let b = &figures["b"];
        assert_eq!((b.sent, b.completed, b.failed), (2, 1, 1));
        assert_eq!(b.failures_by_kind.get("http_status"), Some(&1));
        assert_eq!(b.ttft_ms.as_ref().unwrap().mean, 30.0);
        assert!(per_adapter(vec![ok(None, 0, 1)], &opts, 1.0).is_empty());
    }
}
