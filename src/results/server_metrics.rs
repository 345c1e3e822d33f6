//! The server's own metrics over a run, as saved in the result document: the scraped series
//! (sampled by `drive::scrape`) and the figures over it. Definitions in `docs/metrics.md`,
//! "The server's own metrics".

use serde::{Deserialize, Serialize};

use crate::measure::prom::{MetricsSample, ServerFamily};

/// The scraped series of one run, as saved in the result document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerMetrics {
    pub url: String,
    pub interval_s: f64,
    /// The server family whose names were found (first successful scrape).
    pub server: Option<ServerFamily>,
    /// Successful scrapes, in time order.
    pub samples: Vec<MetricsSample>,
    /// Scrapes that failed (no answer, non-2xx, or no known metric name in the answer).
    pub failures: u64,
    /// The first few distinct failure messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Lines of the answers left unread past the scrape's limits (series read per answer, a
    /// label's size), over all scrapes; each is counted, none read.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub over_limit: u64,
    /// Figures over the series ([`summarize_server_metrics`]).
    pub summary: ServerMetricsSummary,
}

/// Figures over the server's own metrics, scraped during a run (`scrape`). Definitions in
/// `docs/metrics.md`, "The server's own metrics". Each is `None` when the server did not
/// report what it needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerMetricsSummary {
    /// Successful scrapes.
    pub samples: u64,
    /// Mean and largest number of running requests over the samples.
    pub running_mean: Option<f64>,
    pub running_max: Option<f64>,
    /// Mean and largest number of waiting (queued) requests over the samples.
    pub waiting_mean: Option<f64>,
    pub waiting_max: Option<f64>,
    /// Largest KV-cache usage seen, a fraction (0..=1).
    pub kv_cache_usage_max: Option<f64>,
    /// Increase of the server's prompt-token counter from the first to the last sample.
    pub prompt_tokens: Option<f64>,
    /// Increase of the server's generated-token counter from the first to the last sample.
    pub generation_tokens: Option<f64>,
    /// A DCGM exporter's GPU power (all GPUs), mean over the samples, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_power_mean_w: Option<f64>,
    /// A DCGM exporter's GPU utilisation (mean over GPUs), mean over the samples, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_util_mean_pct: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The increase of a counter over `values` (in time order), as Prometheus' `increase` without
/// extrapolation: the sum of the rises between consecutive values, where a fall means the
/// counter restarted from 0 (so the new value is all rise). `None` with fewer than 2 values.
pub fn counter_increase(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    Some(
        values
            .windows(2)
            .map(|w| if w[1] >= w[0] { w[1] - w[0] } else { w[1] })
            .sum(),
    )
}

/// Summarizes a scraped series (samples in time order).
pub fn summarize_server_metrics(samples: &[MetricsSample]) -> ServerMetricsSummary {
    let series = |f: fn(&MetricsSample) -> Option<f64>| -> Vec<f64> {
        samples.iter().filter_map(f).collect()
    };
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let max = |v: &[f64]| v.iter().copied().reduce(f64::max);
    let running = series(|s| s.running);
    let waiting = series(|s| s.waiting);
    ServerMetricsSummary {
        samples: samples.len() as u64,
        running_mean: mean(&running),
        running_max: max(&running),
        waiting_mean: mean(&waiting),
        waiting_max: max(&waiting),
        kv_cache_usage_max: max(&series(|s| s.kv_cache_usage)),
        prompt_tokens: counter_increase(&series(|s| s.prompt_tokens_total)),
        generation_tokens: counter_increase(&series(|s| s.generation_tokens_total)),
        gpu_power_mean_w: mean(&series(|s| s.gpu_power_w)),
        gpu_util_mean_pct: mean(&series(|s| s.gpu_util_pct)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_server_metrics_summary() {
        let at = |at_ns, running, waiting, kv, prompt, generated| MetricsSample {
            at_ns,
            running: Some(running),
            waiting,
            kv_cache_usage: kv,
            prompt_tokens_total: Some(prompt),
            generation_tokens_total: Some(generated),
            gpu_power_w: Some(100.0 * running),
            gpu_util_pct: None,
        };
        let samples = vec![
            at(0, 0.0, Some(0.0), Some(0.1), 100.0, 1000.0),
            at(1, 4.0, Some(4.0), Some(0.5), 180.0, 1010.0),
            at(2, 4.0, None, Some(0.3), 260.0, 1050.0),
            // The server restarted: its counters began again from 0.
            at(3, 0.0, Some(2.0), None, 20.0, 30.0),
        ];
        let s = summarize_server_metrics(&samples);
        assert_eq!(s.samples, 4);
        assert_eq!((s.running_mean, s.running_max), (Some(2.0), Some(4.0)));
        assert_eq!((s.waiting_mean, s.waiting_max), (Some(2.0), Some(4.0)));
        assert_eq!(s.kv_cache_usage_max, Some(0.5));
        assert_eq!(s.prompt_tokens, Some(80.0 + 80.0 + 20.0));
        assert_eq!(s.generation_tokens, Some(10.0 + 40.0 + 30.0));
        assert_eq!(
            (s.gpu_power_mean_w, s.gpu_util_mean_pct),
            (Some(200.0), None)
        );
        let one = summarize_server_metrics(&samples[..1]);
        assert_eq!((one.prompt_tokens, one.running_max), (None, Some(0.0)));
        assert_eq!(
            summarize_server_metrics(&[]),
            ServerMetricsSummary::default()
        );
    }
}
