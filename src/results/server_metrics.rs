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
    /// Speculative decoding over the run ([`SpecDecodeFigures`]); absent when the server
    /// reported none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<SpecDecodeFigures>,
}

/// Speculative decoding over a run, from the server's counters (docs/metrics.md,
/// "Speculative decoding"; vLLM's `vllm bench serve` computes the same from its counters
/// before and after a run).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeFigures {
    /// Increases over the run: drafts (decoding steps that verified a draft), draft tokens
    /// proposed, draft tokens accepted.
    pub num_drafts: Option<f64>,
    pub draft_tokens: Option<f64>,
    pub accepted_tokens: Option<f64>,
    /// accepted / draft tokens, 0..=1.
    pub acceptance_rate: Option<f64>,
    /// 1 + accepted / drafts: tokens per step, the bonus token included.
    pub acceptance_length: Option<f64>,
    /// Accepted tokens at each draft position / drafts, position 0 first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_position_acceptance_rates: Vec<f64>,
    /// SGLang's own acceptance-length gauge, mean over the samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_accept_length_mean: Option<f64>,
}

/// Speculative decoding's figures over `samples` (in time order); `None` without any.
fn spec_decode(samples: &[MetricsSample]) -> Option<SpecDecodeFigures> {
    let series = |f: fn(&MetricsSample) -> Option<f64>| -> Vec<f64> {
        samples.iter().filter_map(f).collect()
    };
    let drafts = counter_increase(&series(|s| s.spec_drafts_total));
    let draft_tokens = counter_increase(&series(|s| s.spec_draft_tokens_total));
    let accepted = counter_increase(&series(|s| s.spec_accepted_tokens_total));
    let lengths = series(|s| s.spec_accept_length);
    if drafts.is_none() && accepted.is_none() && lengths.is_empty() {
        return None;
    }
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let positions = (samples.iter())
        .map(|s| s.spec_accepted_per_position_total.len())
        .max()
        .unwrap_or(0);
    let per_position = (0..positions)
        .map(|p| {
            let at = series_at(samples, p);
            ratio(counter_increase(&at), drafts).unwrap_or(0.0)
        })
        .collect();
    Some(SpecDecodeFigures {
        num_drafts: drafts,
        draft_tokens,
        accepted_tokens: accepted,
        acceptance_rate: ratio(accepted, draft_tokens),
        acceptance_length: ratio(accepted, drafts).map(|x| 1.0 + x),
        per_position_acceptance_rates: per_position,
        server_accept_length_mean: (!lengths.is_empty())
            .then(|| lengths.iter().sum::<f64>() / lengths.len() as f64),
    })
}

/// The accepted tokens at draft position `p` over the samples that report it.
fn series_at(samples: &[MetricsSample], p: usize) -> Vec<f64> {
    (samples.iter())
        .filter_map(|s| s.spec_accepted_per_position_total.get(p).copied())
        .collect()
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
        spec_decode: spec_decode(samples),
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
            ..MetricsSample::default()
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
        assert_eq!(s.spec_decode, None);
    }

    /// By hand: vLLM's counters rise by 10 drafts of 3 tokens, 18 accepted
    /// (positions 9, 6, 3) over the run: acceptance rate 18/30, length 1 + 18/10.
    #[test]
    fn spec_decode_figures_by_hand() {
        let at = |drafts: f64, accepted: f64, pos: [f64; 3]| MetricsSample {
            spec_drafts_total: Some(drafts),
            spec_draft_tokens_total: Some(3.0 * drafts),
            spec_accepted_tokens_total: Some(accepted),
            spec_accepted_per_position_total: pos.to_vec(),
            ..MetricsSample::default()
        };
        let samples = [
            at(5.0, 7.0, [4.0, 2.0, 1.0]),
            at(9.0, 15.0, [8.0, 5.0, 2.0]),
            at(15.0, 25.0, [13.0, 8.0, 4.0]),
        ];
        let f = summarize_server_metrics(&samples).spec_decode.unwrap();
        assert_eq!(
            (f.num_drafts, f.draft_tokens, f.accepted_tokens),
            (Some(10.0), Some(30.0), Some(18.0))
        );
        assert_eq!(f.acceptance_rate, Some(0.6));
        assert!((f.acceptance_length.unwrap() - 2.8).abs() < 1e-12);
        assert_eq!(f.per_position_acceptance_rates, [0.9, 0.6, 0.3]);
        assert_eq!(f.server_accept_length_mean, None);
        let sglang = MetricsSample {
            spec_accept_length: Some(2.5),
            ..MetricsSample::default()
        };
        let g = summarize_server_metrics(&[sglang.clone(), sglang])
            .spec_decode
            .unwrap();
        assert_eq!(
            (g.server_accept_length_mean, g.acceptance_rate),
            (Some(2.5), None)
        );
    }
}
