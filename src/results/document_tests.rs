//! Tests of the result document: per-request arrays' cap, metadata's keys, the list of result keys.

use super::*;
use crate::results::stats::{summarize, SummaryOptions};

#[test]
fn per_request_arrays_are_omitted_beyond_the_cap() {
    const MS: u64 = 1_000_000;
    let rec = |id, ttft_ms| RequestRecord {
        id,
        chunk_ns: vec![ttft_ms * MS, (ttft_ms + 4) * MS],
        end_ns: (ttft_ms + 5) * MS,
        output_tokens: Some(2),
        ..RequestRecord::default()
    };
    // Completion order differs from id order; the arrays follow ids.
    let records = vec![rec(1, 30), rec(0, 10)];
    let mut summary = summarize(&records, &SummaryOptions::default());
    let build = |summary| {
        let dir = String::new();
        BenchResult::new(
            RunConfig::default(),
            summary,
            &records,
            dir.clone(),
            dir,
            0,
            None,
        )
    };
    let small = build(summary.clone());
    assert_eq!(small.vllm["ttfts"], json!([0.01, 0.03]));
    assert_eq!(small.vllm["itls"], json!([[0.004], [0.004]]));
    assert_eq!(small.vllm["output_lens"], json!([2, 2]));
    assert!(!small.vllm.contains_key("per_request_arrays_omitted"));

    summary.completed = PER_REQUEST_ARRAYS_MAX + 1;
    let big = build(summary);
    assert!(!big.keeps_per_request_arrays());
    for key in PER_REQUEST_ARRAYS {
        assert!(!big.vllm.contains_key(key), "{key}");
    }
    let why = big.vllm["per_request_arrays_omitted"].as_str().unwrap();
    assert!(why.starts_with("100001 measured requests"), "{why}");
    assert!(why.contains("records file"), "{why}");

    let mut long = summarize(&records, &SummaryOptions::default());
    long.total_output_chunks = PER_REQUEST_CHUNKS_MAX + 1;
    let long = build(long);
    assert!(!long.vllm.contains_key("itls"));
    let why = long.vllm["per_request_arrays_omitted"].as_str().unwrap();
    assert!(why.starts_with("8000001 output chunks"), "{why}");
}

/// A metadata key that is one of the result's own keys (`steady_state`, `mix`,
/// `summary`: config's one list of them) is not copied beside them; any other is.
#[test]
fn metadata_never_takes_a_key_of_the_result_itself() {
    let mut config = RunConfig::default();
    for k in ["steady_state", "mix", "summary", "gpu"] {
        config.tags.metadata.insert(k.into(), "x".into());
    }
    let none: Vec<RequestRecord> = Vec::new();
    let summary = summarize(&none, &SummaryOptions::default());
    let r = BenchResult::new(
        config,
        summary,
        &none,
        String::new(),
        String::new(),
        0,
        None,
    );
    for k in ["steady_state", "mix", "summary"] {
        assert!(!r.vllm.contains_key(k), "{k}");
    }
    assert_eq!(r.vllm["gpu"], json!("x"));
}

/// Every key the document writes of its own (each of its fields, its optional parts filled
/// so that they are written, and the vLLM-compatible keys) is in config's one list of
/// result keys, so a `--metadata` key can never take one.
#[test]
fn the_one_list_of_result_keys_covers_every_key_the_document_writes() {
    let r = BenchResult::empty();
    let mut doc = serde_json::to_value(&r).unwrap();
    let obj = doc.as_object_mut().unwrap();
    // The optional parts, written only when a run has them.
    for k in [
        "planned",
        "error",
        "records_lost",
        "steady_state",
        "mix",
        "jobs",
        "join",
        "stopped_early",
        "slices",
        "buckets",
        "rejudged",
    ] {
        obj.entry(k).or_insert(json!(null));
    }
    for k in [
        "window_end",
        "records_file",
        "validity",
        "server_metrics",
        "timebase",
    ] {
        obj.entry(k).or_insert(json!(null));
    }
    for k in ["merged_from", "cost", "energy", "per_adapter"] {
        obj.entry(k).or_insert(json!(null));
    }
    let missing: Vec<&String> = (obj.keys())
        .filter(|k| !crate::config::tags::is_result_key(k))
        .collect();
    assert!(
        missing.is_empty(),
        "not in config's result keys: {missing:?}"
    );
}
