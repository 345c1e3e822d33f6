//! Tests of `config::figure`: figure keys, their units and directions.

use super::*;

fn key(s: &str) -> FigureKey {
    FigureKey::named(s)
}

#[test]
fn every_known_name_reads_back_as_itself() {
    let mut all: Vec<FigureKey> = RunFigure::ALL.map(FigureKey::from).to_vec();
    all.extend(CostFigure::ALL.map(FigureKey::from));
    all.extend(TtftPart::ALL.map(FigureKey::from));
    all.extend(
        [
            LlmperfFigure::MeanInterTokenLatency,
            LlmperfFigure::P99InterTokenLatency,
            LlmperfFigure::OutputThroughput,
            LlmperfFigure::MeanRequestOutputThroughput,
            LlmperfFigure::MeanNumberOutputTokens,
            LlmperfFigure::Std(Metric::Ttft),
            LlmperfFigure::Std(Metric::E2el),
        ]
        .map(FigureKey::from),
    );
    for m in Metric::ALL {
        for stat in [Stat::Mean, Stat::Median, Stat::Std, Stat::Percentile(99.9)] {
            all.push(MetricKey::new(stat, m).into());
        }
    }
    for k in all {
        let name = k.name();
        assert_eq!(FigureKey::known(&name), Some(k.clone()), "{name}");
        assert!(k.unit().is_some(), "{name}");
        let json = serde_json::to_string(&k).unwrap();
        assert_eq!(json, format!("\"{name}\""));
        assert_eq!(serde_json::from_str::<FigureKey>(&json).unwrap(), k);
    }
}

#[test]
fn unknown_names_are_kept_and_never_judged() {
    for s in [
        "mean_foo_ms",
        "llmperf_new_figure",
        "mean_ttft_part_x_ms",
        "x",
    ] {
        let k = key(s);
        assert_eq!(k, FigureKey::Other(s.into()), "{s}");
        assert_eq!(k.name(), s);
        assert_eq!(k.better(), None);
        assert_eq!(k.unit(), None);
    }
}

#[test]
fn directions_and_units_come_from_the_key() {
    let better = |s: &str| key(s).better();
    assert_eq!(better("output_throughput"), Some(Better::Higher));
    assert_eq!(better("max_output_tokens_per_s"), Some(Better::Higher));
    assert_eq!(better("completed"), Some(Better::Higher));
    assert_eq!(better("p99_itl_ms"), Some(Better::Lower));
    assert_eq!(better("std_ttft_ms"), Some(Better::Lower));
    assert_eq!(better("usd_per_1m_output_tokens"), Some(Better::Lower));
    assert_eq!(better("llmperf_output_throughput"), Some(Better::Higher));
    assert_eq!(better("llmperf_std_e2el_ms"), Some(Better::Lower));
    assert_eq!(better("total_input_tokens"), None);
    assert_eq!(better("max_concurrent_requests"), None);
    assert_eq!(better("llmperf_mean_number_output_tokens"), None);
    assert_eq!(key("failed").unit(), Some(Unit::Requests));
    assert_eq!(key("duration").unit(), Some(Unit::Seconds));
    assert_eq!(
        key("llmperf_mean_number_output_tokens").unit(),
        Some(Unit::TokensPerRequest)
    );
    assert_eq!(
        key("joules_per_output_token").unit(),
        Some(Unit::JoulesPerToken)
    );
}

#[test]
fn keys_order_for_reading() {
    let mut keys: Vec<FigureKey> = [
        "usd_per_1m_output_tokens",
        "p99_ttft_ms",
        "mean_itl_ms",
        "output_throughput",
        "std_ttft_ms",
        "median_ttft_ms",
        "p50_ttft_ms",
        "mean_ttft_ms",
        "mean_ttft_part_prefill_ms",
        "llmperf_x",
        "joules_per_output_token",
        "completed",
    ]
    .map(key)
    .to_vec();
    keys.sort();
    let names: Vec<String> = keys.iter().map(FigureKey::name).collect();
    assert_eq!(
        names,
        [
            "completed",
            "output_throughput",
            "mean_ttft_ms",
            "median_ttft_ms",
            "p50_ttft_ms",
            "p99_ttft_ms",
            "std_ttft_ms",
            "mean_itl_ms",
            "joules_per_output_token",
            "llmperf_x",
            "mean_ttft_part_prefill_ms",
            "usd_per_1m_output_tokens",
        ]
    );
}
