//! Tests of `measure::prom`: the parser (fixtures and a property test), each server's names,
//! and the scrape's limits.

use super::*;
use proptest::prelude::*;

fn sample(name: &str, labels: &[(&str, &str)], value: f64) -> PromSample {
    PromSample {
        name: name.into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        value,
        timestamp_ms: None,
    }
}

#[test]
fn parses_samples_labels_comments_and_timestamps() {
    let text = "# HELP http_requests_total The total number of HTTP requests.\n\
        # TYPE http_requests_total counter\n\
        http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n\
        http_requests_total{method=\"post\",code=\"400\"}    3 1395066363000\n\
        \n\
        # A comment\n\
        msdos_file_access_time_seconds{path=\"C:\\\\DIR\\\\FILE.TXT\",error=\"Cannot find file:\\n\\\"FILE.TXT\\\"\"} 1.458255915e9\n\
        metric_without_timestamp_and_labels 12.47\n\
        something_weird{problem=\"division by zero\"} +Inf -3982045\n\
        trailing_comma{a=\"1\",} NaN\n\
        rpc_duration_seconds_bucket{le=\"+Inf\"} 2693\n";
    let e = parse(text);
    assert!(e.bad_lines.is_empty(), "{:?}", e.bad_lines);
    assert_eq!(e.samples.len(), 7);
    assert_eq!(
        e.samples[0],
        PromSample {
            timestamp_ms: Some(1395066363000),
            ..sample(
                "http_requests_total",
                &[("method", "post"), ("code", "200")],
                1027.0
            )
        }
    );
    assert_eq!(e.samples[1].value, 3.0);
    assert_eq!(
        e.samples[2].labels,
        vec![
            ("path".to_string(), "C:\\DIR\\FILE.TXT".to_string()),
            (
                "error".to_string(),
                "Cannot find file:\n\"FILE.TXT\"".to_string()
            )
        ]
    );
    assert_eq!(e.samples[2].value, 1.458255915e9);
    assert_eq!(e.samples[3].labels, vec![]);
    assert_eq!(e.samples[4].value, f64::INFINITY);
    assert_eq!(e.samples[4].timestamp_ms, Some(-3982045));
    assert!(e.samples[5].value.is_nan());
    assert_eq!(e.samples[6].labels[0].1, "+Inf");
}

#[test]
fn bad_lines_are_reported_and_the_rest_read() {
    let e = parse(
        "good 1\n{a=\"b\"} 2\nno_value\nbad{a=b} 3\nx 1 2 3\nunterminated{a=\"b} 1\nalso_good 2\n",
    );
    assert_eq!(e.samples.len(), 2);
    let lines: Vec<usize> = e.bad_lines.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, vec![2, 3, 4, 5, 6]);
}

/// A piece of each server's real `/metrics` text, and what servebench reads from it.
#[test]
fn vllm_names_map_to_common_names() {
    let text = r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
vllm:num_requests_running{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 7.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.5
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1024.0
vllm:prompt_tokens_created{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.7e9
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 512.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.001",model_name="m"} 0.0
"#;
    let (family, s) = extract(&parse(text).samples);
    assert_eq!(family, Some(ServerFamily::Vllm));
    assert_eq!(
        s,
        MetricsSample {
            at_ns: 0,
            running: Some(5.0),
            waiting: Some(7.0),
            kv_cache_usage: Some(0.5),
            prompt_tokens_total: Some(1024.0),
            generation_tokens_total: Some(512.0),
            ..MetricsSample::default()
        }
    );
    // vLLM V0 names its KV-cache gauge differently.
    let (_, old) = extract(
        &parse("vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.125\nvllm:num_requests_running{model_name=\"m\"} 1\n").samples,
    );
    assert_eq!(old.kv_cache_usage, Some(0.125));
}

#[test]
fn sglang_names_map_to_common_names() {
    let text = r#"# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="qwen/qwen2.5-7b"} 12.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="qwen/qwen2.5-7b"} 4.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="qwen/qwen2.5-7b"} 0.31
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="qwen/qwen2.5-7b"} 8.0e+04
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="qwen/qwen2.5-7b"} 2.5e+04
"#;
    let (family, s) = extract(&parse(text).samples);
    assert_eq!(family, Some(ServerFamily::Sglang));
    assert_eq!(
        (s.running, s.waiting, s.kv_cache_usage),
        (Some(12.0), Some(4.0), Some(0.31))
    );
    assert_eq!(
        (s.prompt_tokens_total, s.generation_tokens_total),
        (Some(80000.0), Some(25000.0))
    );
}

#[test]
fn tgi_names_map_to_common_names() {
    let text = r#"# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 6
# TYPE tgi_queue_size gauge
tgi_queue_size 2
# TYPE tgi_request_input_length histogram
tgi_request_input_length_bucket{le="1024"} 10
tgi_request_input_length_bucket{le="+Inf"} 10
tgi_request_input_length_sum 3210
tgi_request_input_length_count 10
# TYPE tgi_request_generated_tokens histogram
tgi_request_generated_tokens_bucket{le="+Inf"} 10
tgi_request_generated_tokens_sum 1280
tgi_request_generated_tokens_count 10
"#;
    let (family, s) = extract(&parse(text).samples);
    assert_eq!(family, Some(ServerFamily::Tgi));
    assert_eq!(
        s,
        MetricsSample {
            at_ns: 0,
            running: Some(6.0),
            waiting: Some(2.0),
            kv_cache_usage: None,
            prompt_tokens_total: Some(3210.0),
            generation_tokens_total: Some(1280.0),
            ..MetricsSample::default()
        }
    );
}

#[test]
fn llamacpp_names_map_to_common_names() {
    // As the real server's /metrics answers (xllamacpp 2026.10), plus the KV-cache gauge
    // of older llama.cpp servers.
    let text = r#"# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 431
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 256
# TYPE llamacpp:predicted_tokens_seconds gauge
llamacpp:predicted_tokens_seconds 70.5
# HELP llamacpp:requests_processing Number of requests processing
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 4
# HELP llamacpp:requests_deferred Number of requests deferred
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 3
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.0625
"#;
    let (family, s) = extract(&parse(text).samples);
    assert_eq!(family, Some(ServerFamily::Llamacpp));
    assert_eq!(
        s,
        MetricsSample {
            at_ns: 0,
            running: Some(4.0),
            waiting: Some(3.0),
            kv_cache_usage: Some(0.0625),
            prompt_tokens_total: Some(431.0),
            generation_tokens_total: Some(256.0),
            ..MetricsSample::default()
        }
    );
}

#[test]
fn unknown_names_and_non_finite_values_are_left_out() {
    let (family, s) = extract(&parse("process_cpu_seconds_total 3\nup 1\n").samples);
    assert_eq!((family, s), (None, MetricsSample::default()));
    let (family, s) =
        extract(&parse("vllm:num_requests_running NaN\nvllm:num_requests_waiting 1\n").samples);
    assert_eq!(family, Some(ServerFamily::Vllm));
    assert_eq!((s.running, s.waiting), (None, Some(1.0)));
}

#[test]
fn known_lines_are_read_within_the_limits_and_the_rest_counted() {
    let limits = ParseLimits {
        max_series: 2,
        max_label_bytes: 8,
    };
    let text = format!(
        "other{{a=\"{}\"}} 1\nvllm:num_requests_running{{m=\"{}\"}} 7\n\
         vllm:num_requests_running{{m=\"ok\"}} 1\nvllm:num_requests_waiting 2\n\
         vllm:kv_cache_usage_perc 0.5\nDCGM_FI_DEV_GPU_UTIL 9\n",
        "x".repeat(100),
        "y".repeat(9)
    );
    let e = parse_known(&text, limits);
    let names: Vec<&str> = e.samples.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["vllm:num_requests_running", "vllm:num_requests_waiting"]
    );
    assert_eq!(e.samples[0].value, 1.0);
    // The long label, then the two known lines past the series limit.
    assert_eq!(e.over_limit, 3);
    // Unlimited, the known lines are what `parse` reads of them.
    let all = ParseLimits {
        max_series: usize::MAX,
        max_label_bytes: usize::MAX,
    };
    let known: Vec<PromSample> = (parse(&text).samples.into_iter())
        .filter(|s| known_name(&s.name))
        .collect();
    assert_eq!(parse_known(&text, all).samples, known);
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

proptest! {
    /// Whatever samples are written in the text format, with any spacing, comments and
    /// escapes, the parser reads the same samples back.
    #[test]
    fn written_samples_read_back(
        series in proptest::collection::vec((
            "[a-zA-Z_:][a-zA-Z0-9_:]{0,20}",
            proptest::collection::vec(("[a-zA-Z_][a-zA-Z0-9_]{0,8}", "[ -~\n]{0,12}"), 0..4),
            -1e12f64..1e12,
            proptest::option::of(any::<i64>()),
            "[ \t]{1,3}",
            any::<bool>(),
        ), 0..20),
    ) {
        let mut text = String::new();
        let mut expect = Vec::new();
        for (name, labels, value, ts, gap, comment) in series {
            if comment {
                text.push_str(&format!("# HELP {name} some help\n# TYPE {name} gauge\n"));
            }
            text.push_str(&name);
            if !labels.is_empty() {
                let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
                text.push_str(&format!("{{{}}}", pairs.join(",")));
            }
            text.push_str(&format!("{gap}{value:?}"));
            if let Some(t) = ts {
                text.push_str(&format!("{gap}{t}"));
            }
            text.push('\n');
            expect.push(PromSample { name, labels, value, timestamp_ms: ts });
        }
        let e = parse(&text);
        prop_assert!(e.bad_lines.is_empty(), "{:?}\n{}", e.bad_lines, text);
        prop_assert_eq!(e.samples, expect);
    }
}

/// vLLM's speculative-decoding counters (summed over engines, the accepted tokens
/// by their `position` label) and SGLang's acceptance-length gauge; a position label that is
/// not a small number is not read, and the parse of a scrape keeps their lines.
#[test]
fn spec_decode_counters_are_read() {
    let text = r#"# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 1
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 6
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 48
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 23
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 12
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 4
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 7
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="1"} 1
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="x"} 99
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="900"} 99
"#;
    let read = parse_known(text, ParseLimits::SCRAPE);
    assert_eq!(read.samples.len(), 11, "{:?}", read.bad_lines);
    let (family, s) = extract(&read.samples);
    assert_eq!(family, Some(ServerFamily::Vllm));
    assert_eq!(
        (
            s.spec_drafts_total,
            s.spec_draft_tokens_total,
            s.spec_accepted_tokens_total
        ),
        (Some(16.0), Some(48.0), Some(23.0))
    );
    assert_eq!(s.spec_accepted_per_position_total, [12.0, 8.0, 4.0]);
    assert_eq!(s.spec_accept_length, None);
    let mut g = MetricsSample::default();
    let sglang = [
        sample("sglang:spec_accept_length", &[("tp_rank", "0")], 2.0),
        sample("sglang:spec_accept_length", &[("tp_rank", "1")], 3.0),
    ];
    assert!(extract_spec(&sglang, &mut g));
    assert_eq!(g.spec_accept_length, Some(2.5));
    assert!(!extract_spec(&[], &mut MetricsSample::default()));
}
