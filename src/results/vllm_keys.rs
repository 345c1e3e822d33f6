//! The result document's vLLM-compatible keys: the run-level figures vLLM's `--save-result`
//! writes (`duration`, `completed`, `mean_ttft_ms`, `p99_itl_ms`, ...), servebench's keys
//! beside them (reasoning, structured output, media, audio), and the per-request arrays'
//! columns. Builds values only; `document.rs` decides when they are kept and owns the
//! document. A leaf: it imports nothing from `document.rs`.
//!
//! To add a key: insert it in [`vllm_keys`] from the summary, and name it in config's list of
//! the result's own keys (`config::tags::is_result_key`) so no `--metadata` key can take it.

use std::borrow::Borrow;
use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::config::metric::{percentile_word, MetricKey, Stat};
use crate::config::tags::is_result_key;
use crate::config::{Metric, RequestRate, RunConfig};
use crate::measure::record::RequestRecord;
use crate::results::stats::{Distribution, RunSummary};

/// vLLM's per-request arrays, one value per measured request in id order.
pub const PER_REQUEST_ARRAYS: [&str; 6] = [
    "input_lens",
    "output_lens",
    "ttfts",
    "itls",
    "generated_texts",
    "errors",
];

/// The per-request arrays' columns, in [`PER_REQUEST_ARRAYS`]'s order, from the run's records
/// (warm-ups skipped, ordered by id); times in the server's time: a simulator at
/// `--time-scale k` ran k times faster than real time.
pub(crate) fn per_request_columns<R: Borrow<RequestRecord>>(
    records: impl IntoIterator<Item = R>,
    k: f64,
) -> [Vec<Value>; 6] {
    let secs = |ns: u64| ns as f64 * k / 1e9;
    let mut rows: Vec<(u64, [Value; 6])> = records
        .into_iter()
        .filter(|r| !r.borrow().warmup)
        .map(|r| {
            let r = r.borrow();
            let ok = r.is_ok();
            let row = [
                json!(r.prompt_tokens.unwrap_or(0)),
                json!(if ok { r.output_tokens.unwrap_or(0) } else { 0 }),
                json!(r
                    .first_chunk_ns()
                    .filter(|_| ok)
                    .map_or(0.0, |t| secs(t - r.sent_ns))),
                json!(if ok {
                    crate::results::stats::itl_gaps_ns(r).map(secs).collect()
                } else {
                    Vec::<f64>::new()
                }),
                json!(r.generated_text.clone().unwrap_or_default()),
                match &r.outcome {
                    crate::measure::record::Outcome::Ok => json!(""),
                    crate::measure::record::Outcome::Failed { kind, message } => {
                        json!(format!("{}: {message}", kind.as_str()))
                    }
                },
            ];
            (r.id, row)
        })
        .collect();
    rows.sort_by_key(|(id, _)| *id);
    let mut columns: [Vec<Value>; 6] = Default::default();
    for (_, row) in rows {
        for (col, v) in columns.iter_mut().zip(row) {
            col.push(v);
        }
    }
    columns
}

fn distribution_keys(
    out: &mut BTreeMap<String, Value>,
    metric: Metric,
    d: Option<&Distribution>,
    ps: &[f64],
) {
    let get = |f: fn(&Distribution) -> f64| d.map(f).map_or(Value::Null, |v| json!(v));
    let key = |stat| MetricKey::new(stat, metric).to_string();
    out.insert(key(Stat::Mean), get(|d| d.mean));
    out.insert(key(Stat::Median), get(|d| d.median));
    out.insert(key(Stat::Std), get(|d| d.std));
    for &p in ps {
        let v = d.and_then(|d| d.at(p)).map_or(Value::Null, |v| json!(v));
        out.insert(key(Stat::Percentile(p)), v);
    }
    // `ci95_<key>`: [low, high], beside each key that has a 95% interval (docs/metrics.md).
    let stats = [Stat::Mean, Stat::Median];
    for stat in stats
        .into_iter()
        .chain(ps.iter().map(|&p| Stat::Percentile(p)))
    {
        if let Some(ci) = d.and_then(|d| d.ci95(stat)) {
            out.insert(format!("ci95_{}", key(stat)), json!(ci));
        }
    }
}

/// The run-level vLLM keys (the per-request arrays are set by
/// [`BenchResult::set_per_request_arrays`]).
pub(crate) fn vllm_keys(
    config: &RunConfig,
    s: &RunSummary,
    date: String,
) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let rate = match config.load.request_rate {
        RequestRate::Infinite => json!("inf"),
        RequestRate::PerSecond(r) => json!(r),
    };
    let fields = [
        ("date", json!(date)),
        ("backend", json!(config.backend.as_str())),
        ("model_id", json!(config.model)),
        ("tokenizer_id", Value::Null),
        ("num_prompts", json!(config.load.num_prompts)),
        ("request_rate", rate),
        ("burstiness", json!(config.load.burstiness)),
        ("max_concurrency", json!(config.load.max_concurrency)),
        ("duration", json!(s.duration_s)),
        ("completed", json!(s.completed)),
        ("failed", json!(s.failed)),
        ("total_input_tokens", json!(s.total_input_tokens)),
        ("total_output_tokens", json!(s.total_output_tokens)),
        ("request_throughput", json!(s.request_throughput)),
        ("request_goodput", json!(s.request_goodput)),
        ("output_throughput", json!(s.output_throughput)),
        ("total_token_throughput", json!(s.total_token_throughput)),
    ];
    out.extend(fields.into_iter().map(|(k, v)| (k.to_string(), v)));
    // An embeddings run (`--backend openai-embeddings`): its inputs answered, servebench's keys
    // beside vLLM's (vLLM's embeddings result counts tokens only).
    if let (Some(n), Some(per_s)) = (s.total_input_sequences, s.input_sequence_throughput) {
        out.insert("total_input_sequences".into(), json!(n));
        out.insert("input_sequence_throughput".into(), json!(per_s));
    }
    // Reasoning and answer phases: servebench's keys (vLLM's result has none).
    if let Some(x) = &s.reasoning {
        out.insert(
            "total_reasoning_tokens".into(),
            json!(x.total_reasoning_tokens),
        );
        out.insert("total_answer_tokens".into(), json!(x.total_answer_tokens));
        out.insert("reasoning_share".into(), json!(x.reasoning_share));
        out.insert("reasoning_throughput".into(), json!(x.reasoning_throughput));
        out.insert("answer_throughput".into(), json!(x.answer_throughput));
        for (name, d) in [
            ("reasoning_itl", &x.reasoning_itl_ms),
            ("answer_itl", &x.answer_itl_ms),
        ] {
            if let Some(d) = d {
                out.insert(format!("mean_{name}_ms"), json!(d.mean));
                out.insert(format!("median_{name}_ms"), json!(d.median));
                for (p, v) in &d.percentiles {
                    let p = percentile_word(*p);
                    out.insert(format!("p{p}_{name}_ms"), json!(v));
                }
            }
        }
    }
    // Structured output and tool calls (`--structured-output`): vLLM's `correct_rate(%)`
    // and servebench's keys beside it.
    if let Some(st) = &s.structured {
        // A grammar run checks no answer: no rate (vLLM's is None there); a regex or choice
        // run parses none as JSON.
        if let Some(rate) = st.correct_rate {
            out.insert("correct_rate(%)".into(), json!(rate));
        }
        let json_kind = config.structured.as_ref().is_none_or(|k| k.is_json());
        if let Some(rate) = st.json_rate.filter(|_| json_kind) {
            out.insert("json_rate(%)".into(), json!(rate));
        }
        if let Some(d) = &st.ttft_tool_call_ms {
            out.insert("mean_tool_call_ttft_ms".into(), json!(d.mean));
        }
        if let Some(t) = st.mean_tool_call_tokens {
            out.insert("mean_tool_call_tokens".into(), json!(t));
        }
    }
    // A run that sent media: servebench's keys (vLLM's result has none).
    out.extend(s.media.iter().flat_map(|m| m.keys()));
    // A run that sent audio: vLLM's `rtfx` and servebench's keys beside it.
    out.extend(s.audio.iter().flat_map(|a| a.keys()));
    // vLLM's `--label` and `--metadata` keys (a metadata key never replaces one of the above).
    if let Some(l) = &config.tags.label {
        out.insert("label".into(), json!(l));
    }
    // A metadata key that is one of the result's own keys (config's one list of them) would
    // replace that key or be lost: refused by `--metadata`'s check, skipped here too.
    for (k, v) in &config.tags.metadata {
        if !is_result_key(k) {
            out.entry(k.clone()).or_insert_with(|| json!(v));
        }
    }
    for m in Metric::ALL {
        distribution_keys(&mut out, m, s.metric(m), &config.metric_percentiles);
    }
    out
}
