//! Tests of the result report's layout and lines.

use super::*;
use crate::results::stats::Distribution;

#[test]
fn rules_match_vllm_layout() {
    assert_eq!(
        rule(" Serving Benchmark Result ", '='),
        "============ Serving Benchmark Result ============\n"
    );
    assert_eq!(
        rule("Time per Output Token (excl. 1st token)", '-'),
        "-----Time per Output Token (excl. 1st token)------\n"
    );
    assert_eq!(
        rule("End-to-end Latency", '-'),
        "----------------End-to-end Latency----------------\n"
    );
    assert_eq!(rule("", '='), format!("{}\n", "=".repeat(50)));
}

/// The simulator's late-chunk count is printed in both modes; the engine model's says it
/// is not judged (its step bursts leave together), the exact mode's judges the run.
#[test]
fn simulator_lateness_line_says_whether_it_is_judged() {
    use crate::results::validity::{RunFacts, Validity};
    let report = |mode: &str| {
        let facts = RunFacts {
            wall_s: 1.0,
            server_stats: Some(
                serde_json::json!({"late_chunks": 50, "chunks": 1000, "mode": mode}),
            ),
            ..RunFacts::default()
        };
        let mut result = BenchResult::empty();
        result.validity = Some(Validity::judge(&mut [0.1], 0.0, facts));
        servebench_block(&result)
    };
    let late_line = |text: &str| {
        let l = text
            .lines()
            .find(|l| l.starts_with("Simulator chunks late"));
        l.unwrap().split_once(':').unwrap().1.trim().to_string()
    };
    let engine = report("engine");
    assert_eq!(
        late_line(&engine),
        "50 (engine model: reported, not judged)"
    );
    assert!(engine.contains("Measurement:                             valid"));
    let exact = report("exact");
    assert_eq!(late_line(&exact), "50");
    assert!(exact.contains("SERVER-LATE"));
}

#[test]
fn lines_pad_like_vllm() {
    let mut s = String::new();
    line(&mut s, "Successful requests:", 1);
    num(&mut s, "Benchmark duration (s):", 2.556);
    assert_eq!(s, "Successful requests:                     1         \nBenchmark duration (s):                  2.56      \n");
}

/// A hand-built result with server timings and scraped server metrics: the lines the
/// servebench block prints for them.
#[test]
fn server_timings_and_metrics_lines() {
    use crate::measure::prom::{MetricsSample, ServerFamily};
    use crate::results::server_metrics::{ServerMetrics, ServerMetricsSummary};
    let d = |median: f64| Distribution {
        count: 4,
        mean: median,
        median,
        std: 0.0,
        min: median,
        max: median,
        percentiles: vec![(99.0, median)],
        percentile_method: Default::default(),
        ci95_mean: None,
        ci95_median: None,
        ci95_percentiles: Vec::new(),
    };
    let mut summary = crate::results::stats::summarize(&[], &Default::default());
    summary.tpot_ms = Some(d(12.5));
    summary.ttft_ms = Some(d(130.0));
    summary.server_decode_per_token_ms = Some(d(12.25));
    summary.tpot_minus_server_decode_ms = Some(d(0.25));
    summary.server_prompt_ms = Some(d(120.0));
    summary.total_input_tokens = 40;
    summary.total_output_tokens = 256;
    let config = crate::config::RunConfig {
        metric_percentiles: vec![99.0],
        ..crate::config::RunConfig::default()
    };
    let mut result = BenchResult::new(config, summary, &[], String::new(), String::new(), 0, None);
    result.server_metrics = Some(ServerMetrics {
        url: "http://127.0.0.1:1/metrics".into(),
        interval_s: 0.5,
        server: Some(ServerFamily::Vllm),
        samples: vec![MetricsSample::default(); 3],
        failures: 1,
        errors: vec!["GET http://127.0.0.1:1/metrics: HTTP 503".into()],
        over_limit: 0,
        summary: ServerMetricsSummary {
            samples: 3,
            running_mean: Some(2.5),
            running_max: Some(4.0),
            waiting_mean: Some(0.5),
            waiting_max: Some(1.0),
            kv_cache_usage_max: Some(0.375),
            prompt_tokens: Some(40.0),
            generation_tokens: Some(256.0),
            ..ServerMetricsSummary::default()
        },
    });
    let text = servebench_block(&result);
    let expected = "\
---------------Server's own timings---------------
Median TPOT (ms):                        12.50     
Mean server decode/token (ms):           12.25     
Median server decode/token (ms):         12.25     
P99 server decode/token (ms):            12.25     
Mean TPOT - server decode (ms):          0.25      
Median TPOT - server decode (ms):        0.25      
P99 TPOT - server decode (ms):           0.25      
Median TTFT (ms):                        130.00    
Mean server prompt time (ms):            120.00    
Median server prompt time (ms):          120.00    
P99 server prompt time (ms):             120.00    
------------------Server metrics------------------
Metrics URL:                             http://127.0.0.1:1/metrics
Server metric names:                     vllm      
Samples:                                 3 (every 0.5 s)
Scrape failures (warning):               1 (first: GET http://127.0.0.1:1/metrics: HTTP 503)
Running requests (mean / max):           2.50 / 4  
Waiting requests (mean / max):           0.50 / 1  
Peak KV-cache usage (%):                 37.5      
Server prompt tokens (client):           40 (40)   
Server generated tokens (client):        256 (256) 
";
    assert!(text.contains(expected), "{text}");
    // Neither section without the data.
    result.server_metrics = None;
    result.summary.server_decode_per_token_ms = None;
    result.summary.server_prompt_ms = None;
    let text = servebench_block(&result);
    assert!(!text.contains("Server metrics") && !text.contains("Server's own"));
}

/// The "Jobs" block, line by line (a label and its adapter-free value as vLLM pads them),
/// with the JCT intervals and the cut jobs; none for a run without jobs.
#[test]
fn the_jobs_block_line_by_line() {
    use crate::results::jobs::{IntervalMethod, JobFigures};
    let mut r = BenchResult::empty();
    assert!(!text(&r).contains("JCT"));
    r.jobs = Some(JobFigures {
        planned: Some(12),
        completed: 10,
        failed: 1,
        cut: 1,
        unsent: Some(0),
        jobs_per_s: 2.5,
        mean_jct_ms: Some(120.0),
        ci95_mean_jct_ms: Some([110.0, 131.5]),
        median_jct_ms: Some(118.0),
        p90_jct_ms: Some(150.0),
        p99_jct_ms: Some(170.25),
        mean_critical_path_ms: Some(100.0),
        mean_beyond_ms: Some(20.0),
        mean_first_ttft_ms: Some(15.0),
        mean_calls: Some(4.0),
        mean_input_tokens: Some(800.0),
        mean_output_tokens: Some(64.0),
        cache_hit_rate: Some(0.375),
        job_goodput: Some(2.0),
        jct_slo_attainment: Some(0.8),
        cut_jobs: vec![11],
        intervals: Some(IntervalMethod {
            method: "percentile_bootstrap".into(),
            resamples: 1000,
            seed: 1,
        }),
        ..JobFigures::default()
    });
    let report = text(&r);
    let block: Vec<&str> = (report.lines())
        .skip_while(|l| !l.contains("Jobs--"))
        .take(19)
        .collect();
    let want = [
        "-----------------------Jobs-----------------------",
        "Jobs planned:                            12        ",
        "Jobs completed / failed / cut / unsent:  10 / 1 / 1 / 0",
        "Job throughput (jobs/s):                 2.50      ",
        "Job goodput (jobs/s):                    2.00      ",
        "JCT SLO attainment:                      80.0%     ",
        "Mean JCT (ms):                           120.00 [110.00, 131.50]",
        "Median JCT (ms):                         118.00    ",
        "P90 JCT (ms):                            150.00    ",
        "P99 JCT (ms):                            170.25    ",
        "JCT intervals (95%):                     bootstrap over jobs, 1000 resamples",
        "Mean critical path (ms):                 100.00    ",
        "Mean time beyond it (ms):                20.00     ",
        "Mean first-call TTFT (ms):               15.00     ",
        "Mean calls per job:                      4.00      ",
        "Mean input / output tokens per job:      800.00 / 64.00",
        "Calls' prefix-cache hit rate:            37.5%     ",
        "Cut jobs:                                11        ",
    ];
    assert_eq!(block[..want.len()], want);
}
