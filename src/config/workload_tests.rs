//! Tests of `workload.rs`: the datasets' questions and checks, and the saved mirror's round trip.

use super::*;
use crate::config::RunConfig;

/// `config.workload` of result files written before each dataset carried its own settings
/// (one run of each dataset by the servebench of that time: the flags' values and every
/// default).
const SAVED: [&str; 7] = [
    r#"{"dataset":"random","dataset_path":null,"input_len":128,"output_len":128,"output_len_given":false,"range_ratio":0.0,"multi_turn":false,"prefix_len":0,"num_prefixes":1,"trace_block_size":512,"trace_speedup":1.0,"tokenizer":null}"#,
    r#"{"dataset":"random","dataset_path":null,"input_len":12,"output_len":4,"output_len_given":true,"range_ratio":0.5,"multi_turn":false,"prefix_len":0,"num_prefixes":1,"trace_block_size":512,"trace_speedup":1.0,"tokenizer":null}"#,
    r#"{"dataset":"book","dataset_path":"/tmp/old24/book.txt","input_len":20,"output_len":4,"output_len_given":true,"range_ratio":0.0,"multi_turn":false,"prefix_len":0,"num_prefixes":1,"trace_block_size":512,"trace_speedup":1.0,"tokenizer":"cl100k_base"}"#,
    r#"{"dataset":"sharegpt","dataset_path":"/tmp/old24/share.json","input_len":128,"output_len":128,"output_len_given":false,"range_ratio":0.0,"multi_turn":true,"prefix_len":0,"num_prefixes":1,"trace_block_size":512,"trace_speedup":1.0,"tokenizer":"cl100k_base"}"#,
    r#"{"dataset":"jsonl","dataset_path":"/tmp/old24/p.jsonl","input_len":128,"output_len":3,"output_len_given":true,"range_ratio":0.0,"multi_turn":false,"prefix_len":0,"num_prefixes":1,"trace_block_size":512,"trace_speedup":1.0,"tokenizer":"cl100k_base"}"#,
    r#"{"dataset":"prefix","dataset_path":null,"input_len":6,"output_len":3,"output_len_given":true,"range_ratio":0.0,"multi_turn":false,"prefix_len":8,"num_prefixes":2,"trace_block_size":512,"trace_speedup":1.0,"tokenizer":"cl100k_base"}"#,
    r#"{"dataset":"trace","dataset_path":"/tmp/old24/t.jsonl","input_len":128,"output_len":128,"output_len_given":false,"range_ratio":0.0,"multi_turn":false,"prefix_len":0,"num_prefixes":1,"trace_block_size":32,"trace_speedup":2.0,"tokenizer":null}"#,
];

#[test]
fn saved_workloads_round_trip_byte_for_byte() {
    for saved in SAVED {
        let w: WorkloadSpec = serde_json::from_str(saved).unwrap();
        assert_eq!(serde_json::to_string(&w).unwrap(), saved);
    }
    let w: WorkloadSpec = serde_json::from_str(SAVED[6]).unwrap();
    let trace = Dataset::Trace {
        path: "/tmp/old24/t.jsonl".into(),
        output_len: None,
        block_size: 32,
        speedup: 2.0,
    };
    assert_eq!(w.dataset, trace);
}

/// A whole saved `config` (pretty, as result documents hold it) reads and writes back the
/// same.
#[test]
fn a_saved_config_round_trips_byte_for_byte() {
    let saved = include_str!("../../tests/fixtures/config_sharegpt_saved.json").trim_end();
    let c: RunConfig = serde_json::from_str(saved).unwrap();
    assert_eq!(serde_json::to_string_pretty(&c).unwrap(), saved);
    assert!(c.workload.dataset.multi_turn());
    assert_eq!(c.workload.dataset.output_len_given(), None);
}

/// Documents older than `output_len_given` (and than every dataset but random) keep the
/// output length they asked for.
#[test]
fn the_oldest_documents_keep_their_output_len() {
    let w: WorkloadSpec =
        serde_json::from_str(r#"{"dataset":"random","input_len":32,"output_len":64}"#).unwrap();
    assert_eq!(w, WorkloadSpec::random(32, 64));
    let w: WorkloadSpec =
        serde_json::from_str(r#"{"dataset":"random","input_len":32,"output_len":128}"#).unwrap();
    assert_eq!(w.dataset.output_len_given(), None);
    assert_eq!(w.dataset.output_len(), 128);
}

#[test]
fn a_saved_file_dataset_without_its_file_is_named() {
    let e = serde_json::from_str::<WorkloadSpec>(
        r#"{"dataset":"book","input_len":32,"output_len":64}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("dataset_path") && e.contains("book"), "{e}");
}

/// Each dataset answers for itself: the questions callers ask, over every variant.
#[test]
fn every_dataset_answers_its_questions() {
    let all: Vec<Dataset> = SAVED[1..]
        .iter()
        .map(|s| serde_json::from_str::<WorkloadSpec>(s).unwrap().dataset)
        .collect();
    let names: Vec<&str> = all.iter().map(Dataset::name).collect();
    assert_eq!(
        names,
        ["random", "book", "sharegpt", "jsonl", "prefix", "trace"]
    );
    let files: Vec<bool> = all.iter().map(|d| d.path().is_some()).collect();
    assert_eq!(files, [false, true, true, true, false, true]);
    let words: Vec<bool> = all.iter().map(Dataset::builds_with_words).collect();
    assert_eq!(words, [true, false, false, false, false, true]);
    let built: Vec<Option<u64>> = all.iter().map(Dataset::longest_built_prompt).collect();
    assert_eq!(built, [Some(18), Some(20), None, None, Some(14), None]);
    let own: Vec<Option<f64>> = all.iter().map(Dataset::own_schedule).collect();
    assert_eq!(own, [None, None, None, None, None, Some(2.0)]);
    let talks: Vec<bool> = all.iter().map(Dataset::templates_conversations).collect();
    assert_eq!(talks, [false, false, true, true, false, false]);
    for d in &all {
        d.check().unwrap();
    }
}

#[test]
fn a_dataset_checks_only_its_own_settings() {
    let bad = |d: Dataset| d.check().unwrap_err().to_string();
    let random = |input_len, range_ratio| Dataset::Random {
        input_len,
        output_len: None,
        range_ratio,
    };
    assert!(bad(random(0, 0.0)).contains("--input-len"));
    assert!(bad(random(8, 1.0)).contains("--range-ratio"));
    let prefix = Dataset::Prefix {
        prefix_len: MAX_TOKENS,
        num_prefixes: 1,
        input_len: 2,
        output_len: Some(4),
    };
    assert!(bad(prefix).contains("--prefix-len"));
    let jsonl = |output_len| Dataset::Jsonl {
        path: "p.jsonl".into(),
        output_len,
    };
    assert!(bad(jsonl(Some(0))).contains("--output-len"));
    assert!(jsonl(None).check().is_ok());
}
