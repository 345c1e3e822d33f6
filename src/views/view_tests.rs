//! Tests of the view model: comparability, keys, formatting, records.

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
fn workload_differences_ignore_unknowns_and_backend() {
    let a = Workload {
        model: Some("m".into()),
        backend: Some("tgi".into()),
        mean_input_tokens: Some(81.6),
        input_len: Some(10000),
        ..Workload::default()
    };
    let b = Workload {
        backend: Some("vllm".into()),
        input_len: Some(80),
        mean_input_tokens: Some(81.7),
        ..Workload::default()
    };
    assert!(a.differences(&b).is_empty());
    let c = Workload {
        model: Some("other".into()),
        input_len: Some(10000),
        ..Workload::default()
    };
    let d = a.differences(&c);
    assert_eq!(d.len(), 2, "{d:?}");
}

#[test]
fn directions() {
    assert_eq!(higher_is_better("output_throughput"), Some(true));
    assert_eq!(higher_is_better("p99_itl_ms"), Some(false));
    assert_eq!(higher_is_better("total_input_tokens"), None);
}
