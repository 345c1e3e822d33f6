//! `run --repeat K`: the spread of each headline figure across K runs of one configuration,
//! next to the within-run 95% interval (docs/metrics.md, "Repeated runs"). A run's interval
//! covers its own requests' spread; the spread across runs is what a comparison of two
//! configurations must beat.

use std::collections::BTreeMap;

use serde::Serialize;

use super::document::BenchResult;

/// The saved `<stem>.repeat.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RepeatDoc {
    pub kind: &'static str,
    pub servebench_version: &'static str,
    /// The runs' result files, in order.
    pub runs: Vec<String>,
    /// By vLLM key: the figure across the runs.
    pub metrics: BTreeMap<String, Spread>,
}

/// One figure across the runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub values: Vec<f64>,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation across runs (n − 1); 0 for one run.
    pub stdev: f64,
    /// The mean half-width of the runs' own 95% intervals, where they have one.
    pub within_run_ci95_half_width: Option<f64>,
}

/// The figures every repeat summary carries: throughputs and each latency's mean, median
/// and requested percentiles (whatever keys the first run has).
fn headline(key: &str) -> bool {
    key.ends_with("throughput")
        || (key.ends_with("_ms")
            && (key.starts_with("mean_") || key.starts_with("median_") || key.starts_with('p')))
}

/// The spread of `results` (files `runs`), figure by figure.
pub fn spread(results: &[BenchResult], runs: Vec<String>) -> RepeatDoc {
    let mut metrics = BTreeMap::new();
    let keys = results.first().map(|r| r.vllm.keys()).into_iter().flatten();
    for key in keys.filter(|k| headline(k)) {
        let values: Vec<f64> = results
            .iter()
            .filter_map(|r| r.vllm.get(key)?.as_f64())
            .collect();
        if values.len() != results.len() {
            continue;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        let halves: Vec<f64> = results
            .iter()
            .filter_map(|r| {
                let ci = r.vllm.get(&format!("ci95_{key}"))?.as_array()?;
                Some((ci.get(1)?.as_f64()? - ci.first()?.as_f64()?) / 2.0)
            })
            .collect();
        metrics.insert(
            key.clone(),
            Spread {
                mean,
                min: values.iter().copied().fold(f64::INFINITY, f64::min),
                max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                stdev: var.sqrt(),
                within_run_ci95_half_width: (halves.len() == results.len())
                    .then(|| halves.iter().sum::<f64>() / n),
                values,
            },
        );
    }
    RepeatDoc {
        kind: "repeat",
        servebench_version: env!("CARGO_PKG_VERSION"),
        runs,
        metrics,
    }
}
