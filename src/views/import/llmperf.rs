//! llmperf's files: `*_individual_responses.json` (per-request records, recomputed under
//! servebench's definitions, [`llmperf_request`]) and `*_summary.json` (figures mapped where
//! the definitions agree, kept under `llmperf_` names where they do not). See
//! `docs/metrics.md`, "Imported figures".
//!
//! Reads no file itself and knows no other format; statistics use `results::stats::
//! Distribution` so percentiles are servebench's. To map one more llmperf figure, add it to
//! [`llmperf_summary`] (or the records' pass) under servebench's `FigureKey` when its
//! definition is the same, as an `LlmperfFigure` (saved with an `llmperf_` name) when not.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::config::figure::{FigureKey, LlmperfFigure, RunFigure};
use crate::config::metric::{MetricKey, Stat};
use crate::config::sweep::LoadParameter;
use crate::config::Metric;
use crate::results::stats::Distribution;
use crate::views::error::ViewError;
use crate::views::import::common::label_of;
use crate::views::model::{LlmperfRequest, Load, Origin, Samples, Series, Step, View, Workload};

/// Percentiles computed for per-request imports (llmperf records).
const PERCENTILES: [f64; 5] = [50.0, 75.0, 90.0, 95.0, 99.0];

/// One llmperf record recomputed under servebench's definitions (`docs/metrics.md`).
pub fn llmperf_request(index: usize, o: &Map<String, Value>) -> LlmperfRequest {
    let f = |k: &str| o.get(k).and_then(Value::as_f64);
    let ok = o.get("error_code").is_none_or(Value::is_null);
    let e2e = f("end_to_end_latency_s").unwrap_or(0.0);
    let ttft = f("ttft_s").unwrap_or(0.0);
    let itl = f("inter_token_latency_s").unwrap_or(0.0);
    let llm_n = o.get("number_output_tokens").and_then(Value::as_u64);
    let llm_rot = f("request_output_throughput_token_per_s");
    // llmperf's ITL is E2E divided by the streamed chunks, so the chunks are E2E / ITL.
    let n = (itl > 0.0 && e2e > 0.0)
        .then(|| (e2e / itl).round() as u64)
        .filter(|n| *n > 0);
    let tpot_ms = n
        .filter(|n| *n >= 2)
        .map(|n| (e2e - ttft) / (n - 1) as f64 * 1e3);
    let itl_x = llm_n.filter(|n| *n >= 1).map(|n| itl * (n - 1) as f64);
    let mut flags = Vec::new();
    if ok {
        if let Some(x) = itl_x.filter(|x| *x > e2e) {
            flags.push(format!(
                "ITL × (N − 1) = {x:.2} s exceeds E2E {e2e:.2} s: llmperf's ITL includes TTFT and its N is counted by another tokenizer"
            ));
        }
        if let (Some(a), Some(b)) = (llm_n, n) {
            if a != b {
                flags.push(format!(
                    "llmperf counts {a} output tokens (Llama tokenizer); its latencies imply {b} streamed tokens"
                ));
            }
        }
        if let (Some(r), Some(a)) = (llm_rot, llm_n) {
            if e2e > 0.0 && (r - a as f64 / e2e).abs() > 1e-6 * r.abs().max(1.0) {
                flags.push(format!(
                    "request_output_throughput {r:.2} ≠ N / E2E {:.2}",
                    a as f64 / e2e
                ));
            }
        }
        if let Some(n) = n {
            let ratio = e2e / itl;
            if (ratio - n as f64).abs() > 0.05 {
                flags.push(format!(
                    "E2E / ITL = {ratio:.3} is not a whole number: the recovered N is approximate"
                ));
            }
        }
    }
    LlmperfRequest {
        index,
        ok,
        ttft_ms: ttft * 1e3,
        e2el_ms: e2e * 1e3,
        llmperf_itl_ms: itl * 1e3,
        llmperf_output_tokens: llm_n,
        llmperf_request_output_throughput: llm_rot,
        output_tokens: n,
        tpot_ms,
        request_output_throughput: n.filter(|_| e2e > 0.0).map(|n| n as f64 / e2e),
        itl_times_n_minus_1_s: itl_x,
        flags,
    }
}

fn put_distribution(m: &mut BTreeMap<FigureKey, f64>, metric: Metric, samples: &mut [f64]) {
    if let Some(d) = Distribution::of(samples, &PERCENTILES) {
        let key = |stat| FigureKey::from(MetricKey::new(stat, metric));
        m.insert(key(Stat::Mean), d.mean);
        m.insert(key(Stat::Median), d.median);
        m.insert(key(Stat::Std), d.std);
        for (p, v) in d.percentiles {
            m.insert(key(Stat::Percentile(p)), v);
        }
    }
}

pub(super) fn llmperf_requests(
    path: &Path,
    objects: &[Map<String, Value>],
) -> Result<View, ViewError> {
    let reqs: Vec<LlmperfRequest> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| llmperf_request(i, o))
        .collect();
    let ok: Vec<&LlmperfRequest> = reqs.iter().filter(|r| r.ok).collect();
    let mut m = BTreeMap::new();
    m.insert(RunFigure::Completed.into(), ok.len() as f64);
    m.insert(RunFigure::Failed.into(), (reqs.len() - ok.len()) as f64);
    let mut ttft: Vec<f64> = ok.iter().map(|r| r.ttft_ms).collect();
    let mut e2el: Vec<f64> = ok.iter().map(|r| r.e2el_ms).collect();
    let mut tpot: Vec<f64> = ok.iter().filter_map(|r| r.tpot_ms).collect();
    let samples = Samples {
        ttft_ms: ttft.clone(),
        e2el_ms: e2el.clone(),
    };
    put_distribution(&mut m, Metric::Ttft, &mut ttft);
    put_distribution(&mut m, Metric::E2el, &mut e2el);
    put_distribution(&mut m, Metric::Tpot, &mut tpot);
    // Pooled per-chunk ITL mean: Σ(E2EL − TTFT) / Σ(N − 1), exact when E2E ends at the last chunk.
    let (gaps, count) = ok
        .iter()
        .filter_map(|r| r.output_tokens.filter(|n| *n >= 2).map(|n| (r, n)))
        .fold((0.0, 0u64), |(g, c), (r, n)| {
            (g + r.e2el_ms - r.ttft_ms, c + n - 1)
        });
    if count > 0 {
        m.insert(
            MetricKey::new(Stat::Mean, Metric::Itl).into(),
            gaps / count as f64,
        );
    }
    let total_out: Option<u64> = ok.iter().map(|r| r.output_tokens).sum();
    if let Some(t) = total_out {
        m.insert(RunFigure::TotalOutputTokens.into(), t as f64);
    }
    let inputs: Option<Vec<u64>> = objects
        .iter()
        .zip(&reqs)
        .filter(|(_, r)| r.ok)
        .map(|(o, _)| o.get("number_input_tokens").and_then(Value::as_u64))
        .collect();
    let total_in = inputs.as_ref().map(|v| v.iter().sum::<u64>());
    if let Some(t) = total_in {
        m.insert(RunFigure::TotalInputTokens.into(), t as f64);
    }
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    if let Some(x) = mean(ok.iter().map(|r| r.llmperf_itl_ms).collect()) {
        m.insert(LlmperfFigure::MeanInterTokenLatency.into(), x);
    }
    if let Some(x) = mean(
        ok.iter()
            .filter_map(|r| r.llmperf_request_output_throughput)
            .collect(),
    ) {
        m.insert(LlmperfFigure::MeanRequestOutputThroughput.into(), x);
    }
    if let Some(x) = mean(
        ok.iter()
            .filter_map(|r| r.llmperf_output_tokens.map(|n| n as f64))
            .collect(),
    ) {
        m.insert(LlmperfFigure::MeanNumberOutputTokens.into(), x);
    }
    let flagged = reqs.iter().filter(|r| !r.flags.is_empty()).count();
    let mut notes = vec![
        "llmperf per-request records recomputed under servebench's definitions: N = round(E2E / llmperf ITL); TPOT = (E2E − TTFT) / (N − 1); mean ITL = Σ(E2E − TTFT) / Σ(N − 1); no duration, so no throughput".to_string(),
        "input tokens are llmperf's Llama-tokenizer counts".to_string(),
    ];
    if flagged > 0 {
        notes.push(format!(
            "{flagged} of {} records have inconsistent llmperf figures (see the per-request table)",
            reqs.len()
        ));
    }
    let step = Step {
        load: Load {
            num_prompts: Some(reqs.len() as u64),
            ..Load::default()
        },
        workload: Workload {
            mean_input_tokens: match (total_in, ok.len()) {
                (Some(t), n) if n > 0 => Some(t as f64 / n as f64),
                _ => None,
            },
            ..Workload::default()
        },
        metrics: m,
        samples,
        ..Step::from_source(path)
    };
    Ok(View {
        label: label_of(Some("llmperf"), None, path),
        origin: Origin::Imported,
        format: "llmperf-requests".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: "llmperf requests".into(),
            parameter: LoadParameter::NumPrompts,
            steps: vec![step],
        }],
        notes,
        llmperf_requests: reqs,
    })
}

pub(super) fn llmperf_summary(path: &Path, o: &Map<String, Value>) -> Result<View, ViewError> {
    let f = |k: &str| {
        o.get(k).and_then(|v| {
            v.as_f64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
    };
    let mut m = BTreeMap::new();
    // Same definitions as servebench's: TTFT and E2E (seconds → ms), pandas' linear quantiles.
    for (theirs, ours) in [
        ("ttft_s", Metric::Ttft),
        ("end_to_end_latency_s", Metric::E2el),
    ] {
        let key = |stat| FigureKey::from(MetricKey::new(stat, ours));
        if let Some(v) = f(&format!("results_{theirs}_mean")) {
            m.insert(key(Stat::Mean), v * 1e3);
        }
        for p in [25, 50, 75, 90, 95, 99] {
            if let Some(v) = f(&format!("results_{theirs}_quantiles_p{p}")) {
                m.insert(key(Stat::Percentile(p.into())), v * 1e3);
                if p == 50 {
                    m.insert(key(Stat::Median), v * 1e3);
                }
            }
        }
        // pandas' std is the sample std (ddof = 1): a different figure, kept under llmperf's name.
        if let Some(v) = f(&format!("results_{theirs}_stddev")) {
            m.insert(LlmperfFigure::Std(ours).into(), v * 1e3);
        }
    }
    // Different definitions: kept under llmperf's names.
    if let Some(v) = f("results_inter_token_latency_s_mean") {
        m.insert(LlmperfFigure::MeanInterTokenLatency.into(), v * 1e3);
    }
    if let Some(v) = f("results_inter_token_latency_s_quantiles_p99") {
        m.insert(LlmperfFigure::P99InterTokenLatency.into(), v * 1e3);
    }
    if let Some(v) = f("results_mean_output_throughput_token_per_s") {
        m.insert(LlmperfFigure::OutputThroughput.into(), v);
    }
    if let Some(v) = f("results_request_output_throughput_token_per_s_mean") {
        m.insert(LlmperfFigure::MeanRequestOutputThroughput.into(), v);
    }
    if let Some(v) = f("results_num_completed_requests") {
        m.insert(RunFigure::Completed.into(), v);
    }
    if let Some(v) = f("results_number_errors") {
        m.insert(RunFigure::Failed.into(), v);
    }
    if let Some(v) = f("results_num_completed_requests_per_min") {
        m.insert(RunFigure::RequestThroughput.into(), v / 60.0);
    }
    let model = o.get("model").and_then(Value::as_str).map(str::to_string);
    let step = Step {
        load: Load {
            num_prompts: f("results_num_requests_started").map(|v| v as u64),
            max_concurrency: f("num_concurrent_requests").map(|v| v as u64),
            ..Load::default()
        },
        workload: Workload {
            model: model.clone(),
            input_len: f("mean_input_tokens").map(|v| v as u64),
            output_len: f("mean_output_tokens").map(|v| v as u64),
            mean_input_tokens: f("results_number_input_tokens_mean"),
            ..Workload::default()
        },
        metrics: m,
        ..Step::from_source(path)
    };
    Ok(View {
        label: label_of(Some("llmperf"), model.as_deref(), path),
        origin: Origin::Imported,
        format: "llmperf-summary".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: "llmperf summary".into(),
            parameter: LoadParameter::MaxConcurrency,
            steps: vec![step],
        }],
        notes: vec![
            "llmperf summary: TTFT and E2E map to servebench's figures; its ITL (TTFT included), output throughput and token counts (Llama tokenizer) are kept under llmperf_ names".into(),
        ],
        llmperf_requests: Vec::new(),
    })
}
