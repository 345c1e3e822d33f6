//! The vocabulary of a view's metric map: which keys are figures ([`is_metric_key`],
//! [`numeric_keys`]), which way is better ([`higher_is_better`]) and the reading order of
//! tables ([`ordered_keys`]). Latency keys are read as `config::metric::MetricKey`s, so their
//! spelling lives there; run-level figures (`completed`, `output_throughput`, ...) are listed
//! here.
//!
//! Pure functions over key names: no file, no view. To add a run-level figure, add it to both
//! lists below (the filter and the reading order).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::config::metric::{MetricKey, Stat};

/// The numeric vLLM keys of a metric map (`null`s and non-numbers are skipped).
pub fn numeric_keys(map: &serde_json::Map<String, Value>) -> BTreeMap<String, f64> {
    map.iter()
        .filter(|(k, _)| is_metric_key(k))
        .filter_map(|(k, v)| v.as_f64().filter(|x| x.is_finite()).map(|x| (k.clone(), x)))
        .collect()
}

/// True for the keys that name a run figure (vLLM's names).
pub fn is_metric_key(k: &str) -> bool {
    const RUN: [&str; 13] = [
        "completed",
        "failed",
        "duration",
        "total_input_tokens",
        "total_output_tokens",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
        "total_input_sequences",
        "input_sequence_throughput",
    ];
    RUN.contains(&k)
        || (k.ends_with("_ms")
            && ["mean_", "median_", "std_", "p"]
                .iter()
                .any(|p| k.starts_with(p)))
}

/// neither (token totals, counts of what was asked).
pub fn higher_is_better(key: &str) -> Option<bool> {
    if key.contains("throughput") || key.contains("goodput") || key == "completed" {
        Some(true)
    } else if key.ends_with("_ms")
        || key == "failed"
        || key == "duration"
        || key.starts_with("usd_")
        || key.starts_with("joules_")
    {
        Some(false)
    } else {
        None
    }
}

/// Metric keys in reading order: run figures, then TTFT/TPOT/ITL/E2EL (mean, median, std,
/// percentiles ascending), then anything else (foreign figures) alphabetically.
pub fn ordered_keys<'a>(keys: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    const RUN: [&str; 13] = [
        "completed",
        "failed",
        "duration",
        "request_throughput",
        "input_sequence_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "total_input_tokens",
        "total_input_sequences",
        "total_output_tokens",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
    ];
    fn rank(k: &str) -> (usize, usize, f64, String) {
        if let Some(i) = RUN.iter().position(|r| *r == k) {
            return (0, i, 0.0, String::new());
        }
        match k.parse::<MetricKey>() {
            Ok(key) => {
                let (si, p) = match key.stat {
                    Stat::Mean => (0, 0.0),
                    Stat::Median => (1, 0.0),
                    Stat::Percentile(p) => (2, p),
                    Stat::Std => (3, 0.0),
                };
                (1 + key.metric as usize, si, p, String::new())
            }
            Err(_) => (9, 0, 0.0, k.to_string()),
        }
    }
    let mut keys: Vec<String> = keys.into_iter().cloned().collect();
    keys.sort_by(|a, b| {
        let (ra, rb) = (rank(a), rank(b));
        (ra.0, ra.1)
            .cmp(&(rb.0, rb.1))
            .then(ra.2.total_cmp(&rb.2))
            .then(ra.3.cmp(&rb.3))
    });
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_for_reading() {
        let keys: Vec<String> = [
            "p99_ttft_ms",
            "mean_itl_ms",
            "output_throughput",
            "median_ttft_ms",
            "p50_ttft_ms",
            "mean_ttft_ms",
            "llmperf_x",
            "completed",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            ordered_keys(&keys),
            [
                "completed",
                "output_throughput",
                "mean_ttft_ms",
                "median_ttft_ms",
                "p50_ttft_ms",
                "p99_ttft_ms",
                "mean_itl_ms",
                "llmperf_x"
            ]
        );
    }

    #[test]
    fn directions() {
        assert_eq!(higher_is_better("output_throughput"), Some(true));
        assert_eq!(higher_is_better("p99_itl_ms"), Some(false));
        assert_eq!(higher_is_better("total_input_tokens"), None);
    }
}
