//! A workload mix's figures (`--mix`; docs/metrics.md, "Workload mix"): per
//! class its requests, goodput and SLO attainment, its latencies, its share of the output
//! tokens against its configured weight, and Jain's fairness index over the classes.
//!
//! Computed from the run's records after the run ([`MixFigures::of`]), each record counted in
//! the class it names (`RequestRecord::class`); a record of no class or of a class the mix
//! does not have is left out of every class (and counted in `unclassed`). The probes'
//! records (`--probe-request-rate`: a low rate beside the load, outside its concurrency cap)
//! give each class's `probe_*` figures, its latency without the run's own queueing, and
//! `ttft_over_probe`, the class's mean TTFT against its probes'.

use serde::{Deserialize, Serialize};

use super::distribution::NS_PER_MS;
use super::mix_alone::{AloneFigures, Interference, Latency};
use super::request::RequestMetrics;
use super::samples::SampleSet;
use crate::config::mix::Mix;
use crate::config::Slo;
use crate::measure::record::RequestRecord;

/// The mix's figures, saved in the result as `mix`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MixFigures {
    /// One entry per class, in the mix's order.
    pub classes: Vec<ClassFigures>,
    /// Jain's index over the classes' normalised token shares, (Σxᵢ)² / (n·Σxᵢ²); `None`
    /// when no class produced a token.
    pub jain_fairness_index: Option<f64>,
    /// Measured records that named no class of the mix.
    #[serde(default)]
    pub unclassed: u64,
}

/// One class's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassFigures {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Its configured share of the requests: weight / the sum of weights.
    pub weight_share: f64,
    pub completed: u64,
    pub failed: u64,
    /// Output tokens of its completed requests.
    pub total_output_tokens: u64,
    /// Its output tokens / every class's; `None` when no class produced a token.
    pub output_token_share: Option<f64>,
    /// output_token_share / weight_share: 1 when the class got exactly its weight's share.
    pub normalized_token_share: Option<f64>,
    /// total_output_tokens / the run's duration.
    pub output_throughput: f64,
    /// Its requests that met its SLOs / the run's duration; `None` without SLOs.
    pub request_goodput: Option<f64>,
    /// Its requests that met its SLOs / its measured requests (a failed one never does);
    /// `None` without SLOs.
    pub slo_attainment: Option<f64>,
    pub mean_ttft_ms: Option<f64>,
    pub p99_ttft_ms: Option<f64>,
    pub mean_tpot_ms: Option<f64>,
    pub p99_tpot_ms: Option<f64>,
    pub mean_e2el_ms: Option<f64>,
    /// Its probes that completed and failed (`--probe-request-rate`; absent without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_completed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_failed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_mean_ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_p99_ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_mean_tpot_ms: Option<f64>,
    /// mean_ttft_ms / probe_mean_ttft_ms: how much longer the class's requests waited for
    /// their first token than its probes did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_over_probe: Option<f64>,
    /// Median TTFT, median and P99 E2EL (absent in results older than `--mix-alone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_e2el_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_e2el_ms: Option<f64>,
    /// The class run alone after the mixed run (`--mix-alone`; `mix_alone.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone: Option<AloneFigures>,
    /// Its latency mixed ÷ its latency alone, figure by figure (`--mix-alone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<Interference>,
}

/// Jain's fairness index of `x`: (Σxᵢ)² / (n·Σxᵢ²), in [1/n, 1]; `None` for no values or
/// when every value is 0.
pub fn jain_index(x: &[f64]) -> Option<f64> {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    (!x.is_empty() && squares > 0.0).then(|| sum * sum / (x.len() as f64 * squares))
}

/// One class's running sums.
#[derive(Default)]
struct Acc {
    completed: u64,
    failed: u64,
    good: u64,
    tokens: u64,
    ttft: SampleSet,
    tpot: SampleSet,
    e2el: SampleSet,
}

impl Acc {
    /// Counts `r` (its figures in a clock `time_scale` times slower), good when it meets
    /// `slos` (or there are none).
    fn add(&mut self, r: &RequestRecord, slos: &[Slo], time_scale: f64) {
        let Some(m) = RequestMetrics::of(r).map(|m| m.scaled(time_scale)) else {
            self.failed += 1;
            return;
        };
        self.completed += 1;
        self.tokens = self.tokens.saturating_add(m.output_tokens);
        self.good += u64::from(slos.is_empty() || m.meets(slos));
        self.ttft.add(m.ttft_ns as f64 / NS_PER_MS);
        self.e2el.add(m.e2el_ns as f64 / NS_PER_MS);
        if let Some(t) = m.tpot_ms {
            self.tpot.add(t);
        }
    }
}

impl MixFigures {
    /// The figures of `records` (warm-ups are skipped) and `probes` (none: no probe figures)
    /// for `mix`, over a run of `duration_s` in the server's time (`time_scale`: its clock's
    /// speed-up). A class with SLOs of its own is judged by them, one without by
    /// `run_goodput` (`--goodput`).
    pub fn of(
        mix: &Mix,
        records: impl IntoIterator<Item = RequestRecord>,
        probes: &[RequestRecord],
        (duration_s, time_scale, run_goodput): (f64, f64, &[Slo]),
    ) -> MixFigures {
        let slos: Vec<Vec<Slo>> = (mix.classes.iter())
            .map(|c| match c.slo.slos() {
                own if own.is_empty() => run_goodput.to_vec(),
                own => own,
            })
            .collect();
        let mut accs: Vec<Acc> = mix.classes.iter().map(|_| Acc::default()).collect();
        let mut unclassed = 0;
        for r in records.into_iter().filter(|r| !r.warmup) {
            let Some(acc) = r.class.and_then(|c| accs.get_mut(c as usize)) else {
                unclassed += 1;
                continue;
            };
            acc.add(&r, &slos[r.class.unwrap_or(0) as usize], time_scale);
        }
        let mut probed: Vec<Acc> = mix.classes.iter().map(|_| Acc::default()).collect();
        for r in probes {
            let Some(acc) = r.class.and_then(|c| probed.get_mut(c as usize)) else {
                continue;
            };
            acc.add(r, &[], time_scale);
        }
        let all_tokens: u64 = accs.iter().map(|a| a.tokens).sum();
        let shares = mix.weight_shares();
        let per_s = |x: f64| {
            if duration_s > 0.0 {
                x / duration_s
            } else {
                0.0
            }
        };
        let ps = [99.0];
        let probing = !probes.is_empty();
        let classes: Vec<ClassFigures> = (mix.classes.iter().zip(accs).zip(shares))
            .zip(slos.iter().zip(probed))
            .map(|(((c, a), weight_share), (slos, p))| {
                let token_share = (all_tokens > 0).then(|| a.tokens as f64 / all_tokens as f64);
                let has_slos = !slos.is_empty();
                let measured = a.completed + a.failed;
                let (ttft, tpot, e2el) =
                    (a.ttft.finish(&ps), a.tpot.finish(&ps), a.e2el.finish(&ps));
                let (p_ttft, p_tpot) = (p.ttft.finish(&ps), p.tpot.finish(&ps));
                let mean_ttft_ms = ttft.as_ref().map(|d| d.mean);
                let probe_mean_ttft_ms = p_ttft.as_ref().map(|d| d.mean);
                ClassFigures {
                    name: c.name.clone(),
                    priority: c.priority,
                    weight_share,
                    completed: a.completed,
                    failed: a.failed,
                    total_output_tokens: a.tokens,
                    output_token_share: token_share,
                    normalized_token_share: token_share.map(|t| t / weight_share),
                    output_throughput: per_s(a.tokens as f64),
                    request_goodput: has_slos.then(|| per_s(a.good as f64)),
                    slo_attainment: (has_slos && measured > 0)
                        .then(|| a.good as f64 / measured as f64),
                    mean_ttft_ms,
                    p99_ttft_ms: ttft.as_ref().and_then(|d| d.at(99.0)),
                    mean_tpot_ms: tpot.as_ref().map(|d| d.mean),
                    p99_tpot_ms: tpot.as_ref().and_then(|d| d.at(99.0)),
                    mean_e2el_ms: e2el.as_ref().map(|d| d.mean),
                    probe_completed: probing.then_some(p.completed),
                    probe_failed: probing.then_some(p.failed),
                    probe_mean_ttft_ms,
                    probe_p99_ttft_ms: p_ttft.as_ref().and_then(|d| d.at(99.0)),
                    probe_mean_tpot_ms: p_tpot.as_ref().map(|d| d.mean),
                    ttft_over_probe: (mean_ttft_ms.zip(probe_mean_ttft_ms))
                        .filter(|(_, probe)| *probe > 0.0)
                        .map(|(mean, probe)| mean / probe),
                    p50_ttft_ms: ttft.as_ref().map(|d| d.median),
                    p50_e2el_ms: e2el.as_ref().map(|d| d.median),
                    p99_e2el_ms: e2el.as_ref().and_then(|d| d.at(99.0)),
                    alone: None,
                    interference: None,
                }
            })
            .collect();
        let normalized: Option<Vec<f64>> =
            classes.iter().map(|c| c.normalized_token_share).collect();
        MixFigures {
            jain_fairness_index: normalized.as_deref().and_then(jain_index),
            classes,
            unclassed,
        }
    }
}

impl ClassFigures {
    /// Its latency figures.
    pub fn latency(&self) -> Latency {
        Latency {
            mean_ttft_ms: self.mean_ttft_ms,
            p50_ttft_ms: self.p50_ttft_ms,
            p99_ttft_ms: self.p99_ttft_ms,
            mean_e2el_ms: self.mean_e2el_ms,
            p50_e2el_ms: self.p50_e2el_ms,
            p99_e2el_ms: self.p99_e2el_ms,
        }
    }

    /// Its figures as a class's in a run alone, saved as `file`, whose result says whether it
    /// was `complete`, what it `planned` and what it left `unsent` (`--mix-alone`).
    pub fn alone_figures(
        &self,
        file: std::path::PathBuf,
        (complete, planned, unsent): (bool, Option<u64>, u64),
    ) -> AloneFigures {
        AloneFigures {
            result: file,
            complete,
            planned,
            completed: self.completed,
            failed: self.failed,
            unsent,
            latency: self.latency(),
        }
    }

    /// Sets the class's figures alone and its interference from them (`--mix-alone`).
    pub fn set_alone(&mut self, alone: AloneFigures) {
        self.interference = Some(Interference::of(&self.latency(), &alone.latency));
        self.alone = Some(alone);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::Outcome;

    fn mix() -> Mix {
        Mix::from_json(
            r#"{"classes": [
                {"name": "a", "weight": 3, "slo": {"ttft_ms": 100}},
                {"name": "b", "weight": 1}]}"#,
            "m",
        )
        .unwrap()
    }

    /// A completed record of `class`: sent at 0, first chunk at `ttft_ms`, `n` tokens 10 ms
    /// apart.
    fn record(class: u32, ttft_ms: u64, n: u64) -> RequestRecord {
        let ms = 1_000_000;
        RequestRecord {
            class: Some(class),
            chunk_ns: (0..n).map(|i| (ttft_ms + 10 * i) * ms).collect(),
            output_tokens: Some(n),
            outcome: Outcome::Ok,
            ..RequestRecord::default()
        }
    }

    #[test]
    fn jain_index_is_the_hand_computed_value() {
        // x = (8/7, 4/7): (12/7)² / (2 · 80/49) = 144 / 160.
        let j = jain_index(&[8.0 / 7.0, 4.0 / 7.0]).unwrap();
        assert!((j - 0.9).abs() < 1e-12, "{j}");
        assert_eq!(jain_index(&[2.0, 2.0, 2.0]), Some(1.0));
        let one_of_four = jain_index(&[1.0, 0.0, 0.0, 0.0]).unwrap();
        assert!((one_of_four - 0.25).abs() < 1e-12);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
        assert_eq!(jain_index(&[]), None);
    }

    #[test]
    fn class_figures_are_the_hand_computed_values() {
        // Class a: 6 requests of 20 tokens (one misses its 100 ms TTFT SLO, one fails);
        // class b: 2 of 10 tokens. Tokens 120 and 20: shares 6/7 and 1/7 against weights
        // 3/4 and 1/4, normalised 8/7 and 4/7, Jain's index 0.9.
        let mut records: Vec<RequestRecord> = (0..5).map(|_| record(0, 50, 20)).collect();
        records.push(record(0, 150, 20));
        let mut failed = record(0, 50, 20);
        failed.outcome = Outcome::failed(crate::measure::record::FailureKind::Timeout, "t");
        records.push(failed);
        records.extend([record(1, 50, 10), record(1, 70, 10)]);
        let mut warm = record(1, 50, 999);
        warm.warmup = true;
        records.push(warm);
        records.push(record(7, 50, 10));
        let probes = [record(1, 20, 10), record(1, 40, 10), record(5, 1, 1)];
        let f = MixFigures::of(&mix(), records, &probes, (2.0, 1.0, &[]));
        let (a, b) = (&f.classes[0], &f.classes[1]);
        assert_eq!((a.completed, a.failed, a.total_output_tokens), (6, 1, 120));
        assert_eq!((b.completed, b.failed, b.total_output_tokens), (2, 0, 20));
        assert_eq!(f.unclassed, 1);
        assert!((a.output_token_share.unwrap() - 6.0 / 7.0).abs() < 1e-12);
        assert!((a.normalized_token_share.unwrap() - 8.0 / 7.0).abs() < 1e-12);
        assert!((b.normalized_token_share.unwrap() - 4.0 / 7.0).abs() < 1e-12);
        assert!((f.jain_fairness_index.unwrap() - 0.9).abs() < 1e-12);
        // a: 5 good of 7 measured; b has no SLO (and the run none).
        assert_eq!(a.request_goodput, Some(2.5));
        assert!((a.slo_attainment.unwrap() - 5.0 / 7.0).abs() < 1e-12);
        assert_eq!((b.request_goodput, b.slo_attainment), (None, None));
        assert_eq!(a.output_throughput, 60.0);
        assert_eq!(b.mean_ttft_ms, Some(60.0));
        assert_eq!(b.mean_tpot_ms, Some(10.0));
        assert_eq!(b.mean_e2el_ms, Some(150.0));
        // Class b's probes: TTFT 20 and 40 ms against its requests' 50 and 70.
        assert_eq!((b.probe_completed, b.probe_failed), (Some(2), Some(0)));
        assert_eq!((a.probe_completed, a.probe_mean_ttft_ms), (Some(0), None));
        assert_eq!(b.probe_mean_ttft_ms, Some(30.0));
        assert_eq!(b.ttft_over_probe, Some(2.0));
        let none = MixFigures::of(&mix(), Vec::new(), &[], (1.0, 1.0, &[]));
        assert_eq!(none.classes[0].probe_completed, None);
    }
}
