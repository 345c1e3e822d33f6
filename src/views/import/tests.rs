//! Fixture tests of the importers (one or more per format).

use super::llmperf::llmperf_request;
use super::vllm_text::{flags, number_list, text_key};
use super::*;
use crate::config::figure::FigureKey;
use crate::config::sweep::LoadParameter;
use crate::config::RequestRate;
use crate::views::model::Series;

fn key(name: &str) -> FigureKey {
    FigureKey::named(name)
}

#[test]
fn lists_expand_both_ways() {
    assert_eq!(number_list("1, 2, 4, 8").unwrap(), vec![vec![1, 2, 4, 8]]);
    let c = number_list("1,2,...,4096").unwrap();
    assert_eq!(c[0].len(), 13);
    assert_eq!(c[0].last(), Some(&4096));
    assert_eq!(c[1].len(), 4096);
    assert_eq!(
        number_list("10,20,...,50").unwrap(),
        vec![vec![10, 20, 30, 40, 50]]
    );
    assert!(number_list("a, b").is_none());
}

/// A range up to u64::MAX is no endless loop (it overflowed and wrapped).
#[test]
fn ranges_that_overflow_are_refused_quickly() {
    assert_eq!(number_list("1, 2, ..., 18446744073709551615"), None);
    assert_eq!(number_list("1, 3, ..., 18446744073709551615"), None);
    assert_eq!(number_list("5, 6, ..., 2"), None);
    let long = number_list("1, 2, ..., 9223372036854775808").unwrap();
    assert_eq!(long[0].len(), 64);
}

#[test]
fn report_labels_map_to_vllm_keys() {
    assert_eq!(text_key("Mean TTFT (ms)").unwrap().name(), "mean_ttft_ms");
    assert_eq!(text_key("P99.9 ITL (ms)").unwrap().name(), "p99.9_itl_ms");
    assert_eq!(
        text_key("Median E2EL (ms)").unwrap().name(),
        "median_e2el_ms"
    );
    assert_eq!(
        text_key("Output token throughput (tok/s)").unwrap().name(),
        "output_throughput"
    );
    assert_eq!(text_key("Whatever (ms)"), None);
}

fn text_view(name: &str, text: &str) -> View {
    parse(Path::new(name), text).unwrap()
}

fn values(s: &Series) -> Vec<f64> {
    s.steps
        .iter()
        .map(|st| st.load_value(s.parameter).unwrap())
        .collect()
}

#[test]
fn seed_001_one_block_per_doubling_step() {
    let v = text_view(
        "seed001.txt",
        include_str!("../../../tests/fixtures/seed001_tgi.txt"),
    );
    assert_eq!(v.format, "vllm-text");
    assert_eq!(v.series.len(), 1);
    let s = &v.series[0];
    assert_eq!(s.parameter, LoadParameter::NumPrompts);
    let doubling: Vec<f64> = (0..13).map(|i| f64::from(1u32 << i)).collect();
    assert_eq!(values(s), doubling);
    let w = &s.steps[0].workload;
    assert_eq!(w.backend.as_deref(), Some("tgi"));
    assert_eq!(
        w.model.as_deref(),
        Some("meta-llama/Llama-3.1-405B-Instruct")
    );
    assert_eq!(w.dataset.as_deref(), Some("book"));
    let at512 = s.step_at(512.0).unwrap();
    assert_eq!(at512.metric(key("output_throughput")), Some(767.92));
    assert_eq!(at512.metric(key("mean_ttft_ms")), Some(14086.51));
    assert_eq!(at512.metric(key("p99_itl_ms")), Some(369.31));
    assert_eq!(at512.metric(key("failed")), None);
    // The last step sent 4096 prompts and 2537 succeeded.
    let last = s.step_at(4096.0).unwrap();
    assert_eq!(last.metric(key("completed")), Some(2537.0));
    assert_eq!(last.metric(key("failed")), Some(1559.0));
    // No E2EL section in this seed: absent, not zero.
    assert_eq!(last.metric(key("mean_e2el_ms")), None);
    assert!(v.notes.iter().any(|n| n.contains("10000")), "{:?}", v.notes);
}

#[test]
fn seed_002_three_sections() {
    let v = text_view(
        "seed002.txt",
        include_str!("../../../tests/fixtures/seed002_vllm.txt"),
    );
    let counts: Vec<usize> = v.series.iter().map(|s| s.steps.len()).collect();
    assert_eq!(counts, [12, 7, 4]);
    let (a, b, c) = (&v.series[0], &v.series[1], &v.series[2]);
    assert_eq!(values(a)[11], 2048.0);
    assert_eq!(a.steps[0].workload.input_len, Some(80));
    assert_eq!(a.steps[0].workload.backend.as_deref(), Some("vllm"));
    assert_eq!(
        a.step_at(512.0).unwrap().metric(key("output_throughput")),
        Some(402.21)
    );
    assert_eq!(values(b), [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]);
    assert_eq!(b.steps[0].workload.input_len, Some(10000));
    // num_prompt:1 then four single-request blocks of decreasing prompt length.
    assert_eq!(c.parameter, LoadParameter::InputLen);
    assert_eq!(values(c), [128000.0, 64000.0, 32000.0, 16000.0]);
    assert!(c.steps.iter().all(|s| s.load.num_prompts == Some(1)));
    assert_eq!(c.steps[0].workload.input_len, None);
    assert_eq!(c.steps[0].metric(key("mean_ttft_ms")), Some(734188.96));
    assert!(v.notes.is_empty(), "{:?}", v.notes);
}

#[test]
fn seed_003_percentiles_and_e2el() {
    let v = text_view(
        "seed003.txt",
        include_str!("../../../tests/fixtures/seed003_report.txt"),
    );
    assert_eq!(v.series.len(), 1);
    let s = &v.series[0].steps[0];
    assert_eq!(s.load.num_prompts, Some(3000));
    assert!(v.notes[0].contains("Successful requests"));
    for m in ["ttft", "tpot", "itl", "e2el"] {
        for stat in ["mean", "median", "p50", "p75", "p90", "p95", "p99"] {
            assert!(
                s.metric(key(&format!("{stat}_{m}_ms"))).is_some(),
                "{stat}_{m}_ms"
            );
        }
    }
    assert_eq!(s.metric(key("mean_e2el_ms")), Some(44313.70));
    assert_eq!(s.metric(key("p99_e2el_ms")), Some(73790.91));
    assert_eq!(s.metric(key("total_output_tokens")), Some(2004890.0));
    assert_eq!(s.metrics.len(), 7 + 4 * 7);
}

#[test]
fn seed_000_llmperf_record_recomputed() {
    let v = text_view(
        "seed000.txt",
        include_str!("../../../tests/fixtures/seed000_llmperf.txt"),
    );
    assert_eq!(v.format, "llmperf-requests");
    let r = &v.llmperf_requests[0];
    assert_eq!(r.output_tokens, Some(150));
    assert_eq!(r.llmperf_output_tokens, Some(173));
    let tpot = r.tpot_ms.unwrap();
    assert_eq!(format!("{tpot:.1}"), "22.0");
    assert!((tpot - (3.327015427999868 - 0.04729403999999704) / 149.0 * 1e3).abs() < 1e-9);
    assert_eq!(format!("{:.2}", r.itl_times_n_minus_1_s.unwrap()), "3.81");
    assert!(r.flags[0].contains("exceeds E2E"), "{:?}", r.flags);
    assert!(r.flags[1].contains("173") && r.flags[1].contains("150"));
    let s = &v.series[0].steps[0];
    assert_eq!(
        format!("{:.1}", s.metric(key("mean_tpot_ms")).unwrap()),
        "22.0"
    );
    assert_eq!(
        format!("{:.1}", s.metric(key("mean_itl_ms")).unwrap()),
        "22.0"
    );
    assert_eq!(s.metric(key("total_output_tokens")), Some(150.0));
    assert_eq!(
        format!(
            "{:.2}",
            s.metric(key("llmperf_mean_inter_token_latency_ms"))
                .unwrap()
        ),
        "22.18"
    );
    // No duration in per-request files: no throughput, rather than a made-up one.
    assert_eq!(s.metric(key("output_throughput")), None);
}

#[test]
fn llmperf_consistent_record_is_not_flagged() {
    // 100 chunks over 1 s with TTFT included in llmperf's ITL, counted by the same tokenizer.
    let o: Map<String, Value> = serde_json::from_str(
        r#"{"error_code": null, "error_msg": "", "ttft_s": 0.1, "end_to_end_latency_s": 1.0,
            "inter_token_latency_s": 0.01, "number_output_tokens": 100,
            "request_output_throughput_token_per_s": 100.0, "number_input_tokens": 5}"#,
    )
    .unwrap();
    let r = llmperf_request(0, &o);
    assert_eq!(r.output_tokens, Some(100));
    assert!(r.flags.is_empty(), "{:?}", r.flags);
    assert!((r.tpot_ms.unwrap() - 900.0 / 99.0).abs() < 1e-9);
}

#[test]
fn llmperf_summary_maps_same_definitions_only() {
    let text = r#"{"model": "m", "mean_input_tokens": 550, "mean_output_tokens": 150,
        "num_concurrent_requests": 4, "results_ttft_s_mean": 0.5,
        "results_ttft_s_quantiles_p50": 0.4, "results_ttft_s_quantiles_p99": 0.9,
        "results_ttft_s_stddev": 0.1, "results_inter_token_latency_s_mean": 0.05,
        "results_end_to_end_latency_s_mean": 7.0, "results_num_completed_requests": 80,
        "results_number_errors": 0, "results_num_requests_started": 80,
        "results_num_completed_requests_per_min": 6.0,
        "results_mean_output_throughput_token_per_s": 20.0}"#;
    let v = text_view("s.json", text);
    let s = &v.series[0].steps[0];
    assert_eq!(s.metric(key("mean_ttft_ms")), Some(500.0));
    assert_eq!(s.metric(key("median_ttft_ms")), Some(400.0));
    assert_eq!(s.metric(key("p99_ttft_ms")), Some(900.0));
    assert_eq!(s.metric(key("std_ttft_ms")), None);
    assert_eq!(s.metric(key("mean_itl_ms")), None);
    assert_eq!(
        s.metric(key("llmperf_mean_inter_token_latency_ms")),
        Some(50.0)
    );
    assert_eq!(s.metric(key("request_throughput")), Some(0.1));
    assert_eq!(s.load.max_concurrency, Some(4));
    assert_eq!(s.workload.model.as_deref(), Some("m"));
}

#[test]
fn vllm_json_keys_and_per_request_lists() {
    let text = r#"{"backend": "vllm", "model_id": "m", "num_prompts": 3, "request_rate": "inf",
        "max_concurrency": null, "completed": 2, "duration": 2.0, "total_input_tokens": 20,
        "total_output_tokens": 8, "output_throughput": 4.0, "mean_ttft_ms": 150.0,
        "p99_itl_ms": null, "ttfts": [0.1, 0.2, 0.0], "itls": [[0.01, 0.02], [0.01], []],
        "errors": ["", "", "boom"]}"#;
    let v = text_view("r.json", text);
    assert_eq!(v.format, "vllm-json");
    let s = &v.series[0].steps[0];
    assert_eq!(s.load.num_prompts, Some(3));
    assert_eq!(s.load.request_rate, Some(RequestRate::Infinite));
    assert_eq!(s.load.max_concurrency, None);
    assert_eq!(s.metric(key("p99_itl_ms")), None);
    assert_eq!(s.metric(key("mean_ttft_ms")), Some(150.0));
    assert_eq!(s.workload.mean_input_tokens, Some(10.0));
    assert_eq!(s.samples.ttft_ms, [100.0, 200.0]);
    assert!((s.samples.e2el_ms[0] - 130.0).abs() < 1e-9);
    // JSON Lines (vLLM's --append-result) give one step per line.
    let lines = format!(
        "{}\n{}\n",
        text.replace('\n', " "),
        text.replace('\n', " ")
            .replace("\"num_prompts\": 3", "\"num_prompts\": 6")
    );
    let v = text_view("r.jsonl", &lines);
    assert_eq!(values(&v.series[0]), [3.0, 6.0]);
}

#[test]
fn unknown_text_and_servebench_documents_are_refused() {
    assert!(parse(Path::new("x"), "hello")
        .unwrap_err()
        .to_string()
        .contains("not a format"));
    let e = parse(Path::new("x"), r#"{"kind": "sweep"}"#).unwrap_err();
    assert!(e.to_string().contains("already a servebench document"));
}

#[test]
fn command_line_flags() {
    let f = flags("python x.py --backend tgi --model m --num-prompt=1,2,...,8 --book-input-len 10");
    assert!(f.contains(&("backend".into(), "tgi".into())));
    assert!(f.contains(&("num-prompt".into(), "1,2,...,8".into())));
    assert!(f.contains(&("book-input-len".into(), "10".into())));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// Any text, and any text behind a report's first line, parses to a view
    /// or a one-line error, never a panic.
    #[test]
    fn arbitrary_text_never_panics(
        tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1024),
    ) {
        let path = std::path::Path::new("fuzz.txt");
        let text = String::from_utf8_lossy(&tail);
        let _ = parse(path, &text);
        let report = format!("num_prompts: 1, 2, ..., {}\n============ Serving Benchmark Result ============\n{text}", tail.len());
        if let Err(e) = parse(path, &report) {
            proptest::prop_assert!(!e.to_string().contains('\n'));
        }
    }
}
