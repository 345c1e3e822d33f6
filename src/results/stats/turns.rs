//! TTFT by turn of multi-turn conversations (docs/metrics.md, "Multi-turn conversations"):
//! the history grows turn by turn, so with a working prefix cache TTFT should not grow with it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::distribution::Distribution;
use super::samples::SampleSet;

/// One turn index's TTFT over the successful requests of that turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnTtft {
    /// From 0.
    pub turn: u32,
    pub ttft_ms: Distribution,
}

#[derive(Clone, Debug, Default)]
pub(super) struct TurnSets(BTreeMap<u32, SampleSet>);

impl TurnSets {
    pub(super) fn add(&mut self, turn: Option<u32>, ttft_ms: f64) {
        if let Some(t) = turn {
            self.0.entry(t).or_default().add(ttft_ms);
        }
    }

    pub(super) fn merge(&mut self, other: TurnSets) {
        for (t, s) in other.0 {
            self.0.entry(t).or_default().merge(s);
        }
    }

    pub(super) fn finish(self, ps: &[f64]) -> Vec<TurnTtft> {
        (self.0.into_iter())
            .filter_map(|(turn, s)| {
                Some(TurnTtft {
                    turn,
                    ttft_ms: s.finish(ps)?,
                })
            })
            .collect()
    }
}
