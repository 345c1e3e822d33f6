//! Tests of `config`: the run configuration's parsing and its rules.

use super::*;

#[test]
fn rates_parse() {
    assert_eq!("inf".parse::<RequestRate>().unwrap(), RequestRate::Infinite);
    assert_eq!(
        "2.5".parse::<RequestRate>().unwrap(),
        RequestRate::PerSecond(2.5)
    );
    assert!("0".parse::<RequestRate>().is_err());
    assert!("-1".parse::<RequestRate>().is_err());
    assert!("x".parse::<RequestRate>().is_err());
}

#[test]
fn slos_parse_and_reject_bad_values() {
    let s: Slo = "ttft:500".parse().unwrap();
    assert_eq!(s.metric, SloMetric::Ttft);
    assert_eq!(s.max_ms, 500.0);
    let ttfa: Slo = "ttfa:2000".parse().unwrap();
    assert_eq!((ttfa.metric, ttfa.max_ms), (SloMetric::Ttfa, 2000.0));
    assert!("ttfa:0".parse::<Slo>().is_err());
    assert!("ttft".parse::<Slo>().is_err());
    assert!("itl:5".parse::<Slo>().is_err());
    assert!("tpot:-5".parse::<Slo>().is_err());
    // Not SLO metrics: a time to second token and a rate (better higher) bound nothing here.
    let e = "ttst:5".parse::<Slo>().unwrap_err().to_string();
    assert!(e.contains("'ttst:5'"), "{e}");
    assert!("output_tps_per_user:50".parse::<Slo>().is_err());
}

#[test]
fn url_joins_base_and_endpoint() {
    let c = RunConfig {
        base_url: "http://h:1/".into(),
        endpoint: "/v1/completions".into(),
        ..RunConfig::default()
    };
    assert_eq!(c.url(), "http://h:1/v1/completions");
}

#[test]
fn validate_names_the_bad_option() {
    let c = RunConfig {
        metric_percentiles: vec![50.0, 101.0],
        ..RunConfig::default()
    };
    assert!(c
        .validate()
        .unwrap_err()
        .to_string()
        .contains("--metric-percentiles"));
    let c = RunConfig {
        base_url: "localhost:8000".into(),
        ..RunConfig::default()
    };
    assert!(c.validate().unwrap_err().to_string().contains("--base-url"));
}

/// `--duration` at `inf` with no concurrency cap once sent about 228,000 requests in
/// 2 s (218,000 of them connect failures) and called the run complete.
#[test]
fn an_uncapped_closed_loop_window_is_refused() {
    let mut c = RunConfig::default();
    c.load.shape.duration_s = Some(2.0);
    let err = c.validate().unwrap_err().to_string();
    assert!(
        err.contains("--duration") && err.contains("--max-concurrency"),
        "{err}"
    );
    c.load.max_concurrency = Some(8);
    assert!(c.validate().is_ok());
    c.load.max_concurrency = None;
    c.load.request_rate = RequestRate::PerSecond(5.0);
    assert!(c.validate().is_ok());
}

/// The jobs datasets: their calls follow their graph, not `--turns`; they are built locally,
/// not with the server's /tokenize; and the generator's jobs times calls are bounded.
#[test]
fn jobs_datasets_refuse_turns_the_server_s_tokenizer_and_too_many_calls() {
    let graph = Dataset::Graph {
        path: "jobs.jsonl".into(),
        output_len: None,
    };
    let agentic = |fanout, depth| Dataset::Agentic {
        input_len: 8,
        output_len: None,
        shape: workload::AgenticShape {
            fanout,
            depth,
            gap_ms: 0.0,
        },
    };
    let with = |d: Dataset| {
        let mut c = RunConfig::default();
        c.workload.dataset = d;
        c
    };
    for d in [graph.clone(), agentic(2, 2)] {
        assert!(with(d.clone()).validate().is_ok(), "{d}: no tokenizer");
        let mut c = with(d.clone());
        c.load.shape.turns = Some(3);
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("--turns") && e.contains(d.name()), "{e}");
        let mut c = with(d.clone());
        c.workload.tokenizer = Some("server".into());
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("--tokenizer") && e.contains(d.name()), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
    // 10^6 jobs of 1,000 calls: 10^9 requests.
    let mut c = with(agentic(100, 10));
    c.load.num_prompts = 1_000_000;
    let e = c.validate().unwrap_err().to_string();
    assert!(
        e.contains("--num-prompts") && e.contains("1000000000"),
        "{e}"
    );
    // 10^6 jobs of 10 calls of 8 tokens: 8 * 10^7 tokens, within the bound.
    let mut c = with(agentic(10, 1));
    c.load.num_prompts = 1_000_000;
    assert!(c.validate().is_ok());
}

/// A job SLO bounds a job: refused in one line naming `--goodput` for a dataset without jobs.
#[test]
fn a_job_slo_needs_a_dataset_of_jobs() {
    let c = RunConfig {
        job_goodput: vec!["jct:5000".parse().unwrap()],
        ..RunConfig::default()
    };
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("--goodput") && e.contains("jct:MS"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}
