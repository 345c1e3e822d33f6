//! Multi-turn conversations (docs/metrics.md, "Multi-turn conversations"): TTFT by turn (the
//! history grows turn by turn, so with a working prefix cache TTFT should not grow with it),
//! and each conversation's totals.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::distribution::Distribution;
use super::samples::SampleSet;
use crate::measure::record::RequestRecord;

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

/// Per-conversation totals over the measured conversations (any with a turn recorded).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationTotals {
    pub count: u64,
    /// Conversations with a failed turn (a failed turn ends its conversation).
    pub failed: u64,
    /// Turns sent per conversation, mean.
    pub turns_mean: f64,
    /// Prompt and output tokens per conversation over its successful turns, means (prompt
    /// tokens include each turn's history).
    pub prompt_tokens_mean: f64,
    pub output_tokens_mean: f64,
    /// From the first turn's scheduled send to the last turn's end, think times included,
    /// over the conversations with no failed turn.
    pub duration_ms: Option<Distribution>,
}

/// One conversation's running totals; raw record times (ns, real).
#[derive(Clone, Copy, Debug)]
struct Talk {
    first_scheduled_ns: u64,
    last_end_ns: u64,
    turns: u64,
    failed: bool,
    prompt_tokens: u64,
    output_tokens: u64,
}

#[derive(Clone, Debug, Default)]
pub(super) struct ConversationSums(BTreeMap<u64, Talk>);

impl ConversationSums {
    /// `output_tokens`: the successful request's counted output, else `None`.
    pub(super) fn add(&mut self, r: &RequestRecord, output_tokens: Option<u64>) {
        let Some(c) = r.conversation else {
            return;
        };
        let t = Talk {
            first_scheduled_ns: r.scheduled_ns,
            last_end_ns: r.end_ns,
            turns: 1,
            failed: output_tokens.is_none(),
            prompt_tokens: output_tokens.and(r.prompt_tokens).unwrap_or(0),
            output_tokens: output_tokens.unwrap_or(0),
        };
        self.put(c, t);
    }

    fn put(&mut self, c: u64, t: Talk) {
        self.0
            .entry(c)
            .and_modify(|a| {
                a.first_scheduled_ns = a.first_scheduled_ns.min(t.first_scheduled_ns);
                a.last_end_ns = a.last_end_ns.max(t.last_end_ns);
                a.turns = a.turns.saturating_add(t.turns);
                a.failed |= t.failed;
                a.prompt_tokens = a.prompt_tokens.saturating_add(t.prompt_tokens);
                a.output_tokens = a.output_tokens.saturating_add(t.output_tokens);
            })
            .or_insert(t);
    }

    pub(super) fn merge(&mut self, other: ConversationSums) {
        for (c, t) in other.0 {
            self.put(c, t);
        }
    }

    /// `time_scale`: the simulator's clock speed-up, so durations are in the server's time.
    pub(super) fn finish(self, ps: &[f64], time_scale: f64) -> Option<ConversationTotals> {
        let n = self.0.len() as u64;
        if n == 0 {
            return None;
        }
        // Summed in 128 bits: no sum of counts wraps.
        let mean = |f: fn(&Talk) -> u64| {
            self.0.values().map(|t| u128::from(f(t))).sum::<u128>() as f64 / n as f64
        };
        let mut durations = SampleSet::default();
        for t in self.0.values().filter(|t| !t.failed) {
            let ns = t.last_end_ns.saturating_sub(t.first_scheduled_ns);
            durations.add(ns as f64 * time_scale / 1e6);
        }
        Some(ConversationTotals {
            count: n,
            failed: self.0.values().filter(|t| t.failed).count() as u64,
            turns_mean: mean(|t| t.turns),
            prompt_tokens_mean: mean(|t| t.prompt_tokens),
            output_tokens_mean: mean(|t| t.output_tokens),
            duration_ms: durations.finish(ps),
        })
    }
}
