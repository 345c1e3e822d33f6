//! A class alone against mixed (`--mix-alone`; docs/metrics.md, "A class
//! alone"): after the mixed run, each class of the mix is run alone at its share of the load
//! (`config::mix::alone_config`), and its latency alone is set beside its latency mixed.
//!
//! [`AloneFigures`] are a class's figures in its run alone, taken from that run's result
//! (`ClassFigures::alone_figures`); [`Interference`] is the mixed figure ÷ the alone one, figure by
//! figure: 1 when the other classes cost the class nothing, above 1 by what they cost it.
//! Pure: the runs are `drive::mix_alone`'s.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A class's latency figures, milliseconds: what a run alone and the mixed run set side by
/// side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub mean_ttft_ms: Option<f64>,
    pub p50_ttft_ms: Option<f64>,
    pub p99_ttft_ms: Option<f64>,
    pub mean_e2el_ms: Option<f64>,
    pub p50_e2el_ms: Option<f64>,
    pub p99_e2el_ms: Option<f64>,
}

/// A class's figures in its run alone.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AloneFigures {
    /// The run alone's result file, beside the mixed run's.
    pub result: PathBuf,
    /// Whether the run alone sent everything it planned and ended on its own.
    pub complete: bool,
    /// Its planned requests: completed + failed + unsent.
    pub planned: Option<u64>,
    pub completed: u64,
    pub failed: u64,
    pub unsent: u64,
    #[serde(flatten)]
    pub latency: Latency,
}

/// A class's latency mixed ÷ its latency alone, for each figure both runs have (and the alone
/// one above 0).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Interference {
    pub mean_ttft: Option<f64>,
    pub p50_ttft: Option<f64>,
    pub p99_ttft: Option<f64>,
    pub mean_e2el: Option<f64>,
    pub p50_e2el: Option<f64>,
    pub p99_e2el: Option<f64>,
}

impl Interference {
    /// `mixed`'s figures over `alone`'s.
    pub fn of(mixed: &Latency, alone: &Latency) -> Interference {
        let ratio = |m: Option<f64>, a: Option<f64>| {
            (m.zip(a)).filter(|(_, a)| *a > 0.0).map(|(m, a)| m / a)
        };
        Interference {
            mean_ttft: ratio(mixed.mean_ttft_ms, alone.mean_ttft_ms),
            p50_ttft: ratio(mixed.p50_ttft_ms, alone.p50_ttft_ms),
            p99_ttft: ratio(mixed.p99_ttft_ms, alone.p99_ttft_ms),
            mean_e2el: ratio(mixed.mean_e2el_ms, alone.mean_e2el_ms),
            p50_e2el: ratio(mixed.p50_e2el_ms, alone.p50_e2el_ms),
            p99_e2el: ratio(mixed.p99_e2el_ms, alone.p99_e2el_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interference_is_mixed_over_alone_figure_by_figure() {
        let mixed = Latency {
            mean_ttft_ms: Some(300.0),
            p50_ttft_ms: Some(250.0),
            p99_ttft_ms: Some(900.0),
            mean_e2el_ms: Some(400.0),
            p50_e2el_ms: None,
            p99_e2el_ms: Some(1000.0),
        };
        let alone = Latency {
            mean_ttft_ms: Some(100.0),
            p50_ttft_ms: Some(50.0),
            p99_ttft_ms: Some(0.0),
            mean_e2el_ms: Some(400.0),
            p50_e2el_ms: Some(10.0),
            p99_e2el_ms: Some(500.0),
        };
        let i = Interference::of(&mixed, &alone);
        assert_eq!((i.mean_ttft, i.p50_ttft), (Some(3.0), Some(5.0)));
        // An alone figure of 0 or a figure one run lacks gives no ratio.
        assert_eq!((i.p99_ttft, i.p50_e2el), (None, None));
        assert_eq!((i.mean_e2el, i.p99_e2el), (Some(1.0), Some(2.0)));
    }
}
