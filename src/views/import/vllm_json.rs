//! vLLM's `--save-result` JSON: one object per run (one object, an array, or JSON Lines, as
//! `views::import::parse` found them), mapped to one step each. The keys are already vLLM's
//! names, so only the load and workload are read from their own keys.
//!
//! Reads no file itself and knows no other format. To read one more vLLM key, map it in
//! [`vllm_json`] (a key is kept by `views::keys::numeric_keys` when it names a figure).

use std::path::Path;

use serde_json::{Map, Value};

use crate::config::figure::RunFigure;
use crate::config::RequestRate;
use crate::views::error::ViewError;
use crate::views::import::common::{label_of, varying_parameter};
use crate::views::keys::numeric_keys;
use crate::views::model::{Load, Origin, Series, Step, View, Workload};
use crate::views::samples::samples_from_vllm_lists;

pub(super) fn vllm_json(path: &Path, objects: Vec<Map<String, Value>>) -> Result<View, ViewError> {
    let mut steps = Vec::new();
    let mut notes = Vec::new();
    for o in &objects {
        let metrics = numeric_keys(o);
        if metrics.is_empty() {
            return Err(ViewError::parse(path, "vLLM result without any figure"));
        }
        let completed = metrics.get(&RunFigure::Completed.into()).map(|c| *c as u64);
        let rate = match o.get("request_rate") {
            Some(Value::String(s)) => s.parse().ok(),
            Some(Value::Number(n)) => n.as_f64().and_then(|r| {
                if r.is_infinite() {
                    Some(RequestRate::Infinite)
                } else {
                    format!("{r}").parse().ok()
                }
            }),
            _ => None,
        };
        let num_prompts = o.get("num_prompts").and_then(Value::as_u64);
        if num_prompts.is_none() {
            notes
                .push("no num_prompts key: the number of prompts is taken from 'completed'".into());
        }
        let mean_input_tokens = match (metrics.get(&RunFigure::TotalInputTokens.into()), completed)
        {
            (Some(t), Some(c)) if c > 0 => Some(t / c as f64),
            _ => None,
        };
        let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
        let u = |k: &str| o.get(k).and_then(Value::as_u64);
        steps.push(Step {
            load: Load {
                num_prompts: num_prompts.or(completed),
                max_concurrency: u("max_concurrency"),
                request_rate: rate,
                ..Load::default()
            },
            workload: Workload {
                model: s("model_id"),
                backend: s("backend"),
                dataset: s("dataset_name"),
                input_len: u("random_input_len").or(u("input_len")),
                output_len: u("random_output_len").or(u("output_len")),
                mean_input_tokens,
            },
            metrics,
            samples: samples_from_vllm_lists(o),
            ..Step::from_source(path)
        });
    }
    notes.dedup();
    let parameter = varying_parameter(&steps);
    let w = steps[0].workload.clone();
    Ok(View {
        label: label_of(w.backend.as_deref(), w.model.as_deref(), path),
        origin: Origin::Imported,
        format: "vllm-json".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: format!("{} sweep", parameter.as_str()),
            parameter,
            steps,
        }],
        notes,
        llmperf_requests: Vec::new(),
    })
}
