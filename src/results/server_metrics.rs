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
    /// What the server's counters said that cannot be true ([`CounterCheck`] names, sorted,
    /// each once): the figures they feed are left out (`None`), never summed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub implausible: Vec<String>,
}

/// A fall of a counter is read as the server's restart (the counter began again from 0) only
/// when it falls to at most this fraction of the value before: a restarted counter holds what
/// one scrape interval counted, a small part of what the server had counted since it started.
/// Any other fall is no restart but a lie, and the counter's increase over the run is unknown.
pub const RESTART_NEAR_ZERO: f64 = 0.1;

/// Restarts believed over one run's scrapes: a second one is read as a counter that falls
/// and rises by turns, not a server that restarts twice during a measurement.
pub const MAX_RESTARTS: usize = 1;

/// The checks of the server's counters (docs/metrics.md, "The server's own metrics" and
/// "Speculative decoding"); each failed one is named in [`ServerMetricsSummary::implausible`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterCheck {
    /// A counter's window: it fell other than to near zero, or restarted more than once.
    Fell(&'static str),
    /// More accepted draft tokens than draft tokens proposed.
    AcceptedOverDraftTokens,
    /// More drafts than draft tokens (each draft holds at least one).
    DraftsOverDraftTokens,
    /// A position's accepted tokens more than the drafts.
    PositionOverDrafts,
    /// More drafts, or more accepted tokens, than the server's generated tokens over the same
    /// scrapes: each draft step and each accepted token is a generated token.
    OverGenerated,
}

impl CounterCheck {
    /// The name the summary and the report show.
    pub fn name(self) -> String {
        match self {
            CounterCheck::Fell(counter) => format!("{counter}_fell"),
            CounterCheck::AcceptedOverDraftTokens => "spec_accepted_over_draft_tokens".into(),
            CounterCheck::DraftsOverDraftTokens => "spec_drafts_over_draft_tokens".into(),
            CounterCheck::PositionOverDrafts => "spec_position_over_drafts".into(),
            CounterCheck::OverGenerated => "spec_over_generated".into(),
        }
    }
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

/// Speculative decoding's figures over `samples` (in time order); `None` without any. A
/// counter whose window is implausible, or counters that contradict each other or the
/// server's `generated` tokens over the run, are named in `flags` and leave every count and
/// ratio out.
fn spec_decode(
    samples: &[MetricsSample],
    generated: Option<f64>,
    flags: &mut Vec<CounterCheck>,
) -> Option<SpecDecodeFigures> {
    let series = |f: fn(&MetricsSample) -> Option<f64>| -> Vec<f64> {
        samples.iter().filter_map(f).collect()
    };
    let mut checked = |name, values: &[f64]| {
        let w = counter_window(values);
        if w.implausible {
            flags.push(CounterCheck::Fell(name));
        }
        (w.increase, w.implausible)
    };
    let (drafts, bad_drafts) = checked("spec_drafts", &series(|s| s.spec_drafts_total));
    let (draft_tokens, bad_tokens) =
        checked("spec_draft_tokens", &series(|s| s.spec_draft_tokens_total));
    let (accepted, bad_accepted) = checked(
        "spec_accepted_tokens",
        &series(|s| s.spec_accepted_tokens_total),
    );
    let lengths: Vec<f64> = series(|s| s.spec_accept_length)
        .into_iter()
        .filter(|&l| l >= 1.0)
        .collect();
    let reported = drafts.is_some() || accepted.is_some() || bad_drafts || bad_accepted;
    if !reported && lengths.is_empty() {
        return None;
    }
    let positions = (samples.iter())
        .map(|s| s.spec_accepted_per_position_total.len())
        .max()
        .unwrap_or(0);
    let at: Vec<(Option<f64>, bool)> = (0..positions)
        .map(|p| checked("spec_accepted_per_position", &series_at(samples, p)))
        .collect();
    let mut bad = bad_drafts || bad_tokens || bad_accepted || at.iter().any(|a| a.1);
    let mut check = |wrong: bool, what: CounterCheck| {
        if wrong {
            flags.push(what);
            bad = true;
        }
    };
    let over = |a: Option<f64>, b: Option<f64>| matches!((a, b), (Some(a), Some(b)) if a > b);
    check(
        over(accepted, draft_tokens),
        CounterCheck::AcceptedOverDraftTokens,
    );
    check(
        over(drafts, draft_tokens),
        CounterCheck::DraftsOverDraftTokens,
    );
    check(
        at.iter().any(|a| over(a.0, drafts)),
        CounterCheck::PositionOverDrafts,
    );
    check(
        over(drafts, generated) || over(accepted, generated),
        CounterCheck::OverGenerated,
    );
    let server_accept_length_mean =
        (!lengths.is_empty()).then(|| lengths.iter().sum::<f64>() / lengths.len() as f64);
    if bad {
        return Some(SpecDecodeFigures {
            server_accept_length_mean,
            ..SpecDecodeFigures::default()
        });
    }
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    Some(SpecDecodeFigures {
        num_drafts: drafts,
        draft_tokens,
        accepted_tokens: accepted,
        acceptance_rate: ratio(accepted, draft_tokens),
        acceptance_length: ratio(accepted, drafts).map(|x| 1.0 + x),
        per_position_acceptance_rates: (at.iter())
            .map(|a| ratio(a.0, drafts).unwrap_or(0.0))
            .collect(),
        server_accept_length_mean,
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

/// A counter's increase over a run, and whether its window is plausible.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CounterWindow {
    /// `None` with fewer than 2 values, or when the window is implausible.
    pub increase: Option<f64>,
    /// The counter fell other than to near zero ([`RESTART_NEAR_ZERO`]), or restarted more
    /// than [`MAX_RESTARTS`] times.
    pub implausible: bool,
}

/// The increase of a counter over `values` (in time order), as Prometheus' `increase` without
/// extrapolation: the sum of the rises between consecutive values, where a fall to near zero
/// means the counter restarted from 0 (so the new value is all rise). Any other fall, or a
/// second restart, makes the window implausible: no increase.
pub fn counter_window(values: &[f64]) -> CounterWindow {
    let mut restarts = 0;
    let mut sum = 0.0;
    let mut implausible = false;
    for w in values.windows(2) {
        if w[1] >= w[0] {
            sum += w[1] - w[0];
        } else if w[1] <= w[0] * RESTART_NEAR_ZERO && restarts < MAX_RESTARTS {
            restarts += 1;
            sum += w[1];
        } else {
            implausible = true;
        }
    }
    CounterWindow {
        increase: (values.len() >= 2 && !implausible).then_some(sum),
        implausible,
    }
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
    let mut flags = Vec::new();
    let prompt = counter_window(&series(|s| s.prompt_tokens_total));
    let generated = counter_window(&series(|s| s.generation_tokens_total));
    for (name, w) in [("prompt_tokens", prompt), ("generation_tokens", generated)] {
        if w.implausible {
            flags.push(CounterCheck::Fell(name));
        }
    }
    let spec_decode = spec_decode(samples, generated.increase, &mut flags);
    let mut implausible: Vec<String> = flags.into_iter().map(CounterCheck::name).collect();
    implausible.sort();
    implausible.dedup();
    ServerMetricsSummary {
        samples: samples.len() as u64,
        running_mean: mean(&running),
        running_max: max(&running),
        waiting_mean: mean(&waiting),
        waiting_max: max(&waiting),
        kv_cache_usage_max: max(&series(|s| s.kv_cache_usage)),
        prompt_tokens: prompt.increase,
        generation_tokens: generated.increase,
        gpu_power_mean_w: mean(&series(|s| s.gpu_power_w)),
        gpu_util_mean_pct: mean(&series(|s| s.gpu_util_pct)),
        spec_decode,
        implausible,
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

    /// A fall to near zero is one restart; a fall to more than a tenth of the value
    /// before, or a second restart, leaves the window without an increase, flagged by name,
    /// and the figure it feeds out.
    #[test]
    fn a_counter_that_falls_but_not_to_near_zero_is_implausible() {
        let w = |v: &[f64]| counter_window(v);
        assert_eq!(
            w(&[100.0, 150.0, 10.0, 40.0]).increase,
            Some(50.0 + 10.0 + 30.0)
        );
        assert_eq!(w(&[100.0, 150.0, 15.0]).increase, Some(65.0));
        for bad in [
            &[100.0, 150.0, 16.0][..],
            &[1e9, 5e8, 1e9],
            // Falls to zero and rises by turns: two restarts in one run.
            &[0.0, 1e9, 0.0, 1e9, 0.0, 1e9],
        ] {
            let got = w(bad);
            assert_eq!((got.increase, got.implausible), (None, true), "{bad:?}");
        }
        assert_eq!(w(&[5.0]).increase, None);
        assert!(!w(&[5.0]).implausible);
        let at = |generated: f64| MetricsSample {
            generation_tokens_total: Some(generated),
            prompt_tokens_total: Some(generated),
            ..MetricsSample::default()
        };
        let s = summarize_server_metrics(&[at(1e9), at(3e9), at(1e9), at(3e9)]);
        assert_eq!((s.prompt_tokens, s.generation_tokens), (None, None));
        assert_eq!(
            s.implausible,
            ["generation_tokens_fell", "prompt_tokens_fell"]
        );
    }

    /// Counters that contradict each other, or a run that generated 240 tokens: accepted
    /// past the draft tokens (a rate of 3,333,333%), accepted tokens and drafts past the
    /// tokens generated (a length of 100,001), a position past the drafts: each named, and
    /// no count or ratio shown.
    #[test]
    fn spec_decode_counters_that_cannot_be_true_are_named_not_used() {
        let at =
            |drafts: f64, tokens: f64, accepted: f64, pos: f64, generated: f64| MetricsSample {
                spec_drafts_total: Some(drafts),
                spec_draft_tokens_total: Some(tokens),
                spec_accepted_tokens_total: Some(accepted),
                spec_accepted_per_position_total: vec![pos],
                generation_tokens_total: Some(generated),
                ..MetricsSample::default()
            };
        let cases = [
            (
                at(70.0, 210.0, 7e6, 70.0, 240.0),
                "spec_accepted_over_draft_tokens",
            ),
            (at(70.0, 210.0, 7e6, 70.0, 240.0), "spec_over_generated"),
            (at(70.0, 7e6, 7e6, 70.0, 240.0), "spec_over_generated"),
            (
                at(300.0, 200.0, 100.0, 70.0, 1e6),
                "spec_drafts_over_draft_tokens",
            ),
            (
                at(70.0, 210.0, 100.0, 71.0, 1e6),
                "spec_position_over_drafts",
            ),
        ];
        for (end, named) in cases {
            let start = at(0.0, 0.0, 0.0, 0.0, 0.0);
            let s = summarize_server_metrics(&[start, end]);
            assert!(
                s.implausible.iter().any(|n| n == named),
                "{named}: {:?}",
                s.implausible
            );
            let f = s.spec_decode.expect("flagged, still reported");
            assert_eq!(f, SpecDecodeFigures::default(), "{named}");
        }
        // A drafts counter that falls by turns.
        let s = summarize_server_metrics(&[
            at(0.0, 0.0, 0.0, 0.0, 0.0),
            at(1e9, 3e9, 1e9, 1e9, 3e9),
            at(0.0, 3e9, 1e9, 1e9, 3e9),
            at(1e9, 3e9, 1e9, 1e9, 3e9),
            at(0.0, 3e9, 1e9, 1e9, 3e9),
        ]);
        assert_eq!(s.implausible, ["spec_drafts_fell"]);
        assert_eq!(s.spec_decode.unwrap().acceptance_length, None);
        // Plausible counters pass untouched.
        let s = summarize_server_metrics(&[
            at(0.0, 0.0, 0.0, 0.0, 0.0),
            at(10.0, 30.0, 18.0, 9.0, 40.0),
        ]);
        assert!(s.implausible.is_empty());
        assert_eq!(s.spec_decode.unwrap().acceptance_rate, Some(0.6));
    }
}
