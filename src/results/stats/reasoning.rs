//! Reasoning and answer phases (docs/metrics.md, "Reasoning"): of each
//! successful request's N output tokens, those spent reasoning (`reasoning_tokens`, from one
//! source) and the rest, the answer; the run's totals, the share of output spent reasoning, each
//! phase's throughput over the run, and each phase's ITL gaps: a request's gaps between the
//! chunks of its reasoning phase (its first `reasoning_chunks` chunks), and the rest, from the
//! last reasoning chunk on, as its answer's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::distribution::{Distribution, NS_PER_MS};
use super::request::itl_gaps_ns;
use super::samples::SampleSet;
use crate::measure::record::{RequestRecord, TokenSource};

/// A run's reasoning figures; present when some successful request reasoned.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReasoningFigures {
    /// Successful requests with a reasoning count, and by the count's source.
    pub requests: u64,
    pub token_sources: BTreeMap<String, u64>,
    /// Σ reasoning tokens, and Σ (N − reasoning tokens), over successful requests (one
    /// without reasoning is all answer); saturating at 2^64 − 1.
    pub total_reasoning_tokens: u64,
    pub total_answer_tokens: u64,
    /// Σ reasoning tokens / Σ N: the share of the output spent reasoning.
    pub reasoning_share: f64,
    /// Each phase's tokens over the run's duration, tokens/s.
    pub reasoning_throughput: f64,
    pub answer_throughput: f64,
    /// ITL gaps inside the reasoning phase, and from its last chunk to the end, ms (pooled).
    pub reasoning_itl_ms: Option<Distribution>,
    pub answer_itl_ms: Option<Distribution>,
}

/// Running sums over successful requests.
#[derive(Clone, Debug)]
pub(super) struct ReasoningSums {
    any: bool,
    requests: u64,
    sources: BTreeMap<String, u64>,
    reasoning: u128,
    answer: u128,
    reasoning_itl: SampleSet,
    answer_itl: SampleSet,
}

impl ReasoningSums {
    pub(super) fn new(set: impl Fn() -> SampleSet) -> Self {
        ReasoningSums {
            any: false,
            requests: 0,
            sources: BTreeMap::new(),
            reasoning: 0,
            answer: 0,
            reasoning_itl: set(),
            answer_itl: set(),
        }
    }

    /// Adds a successful request of `n` output tokens; `k`: the server's clock speed-up.
    pub(super) fn add(&mut self, r: &RequestRecord, n: u64, k: f64) {
        let reasoning = r.reasoning_tokens.unwrap_or(0).min(n);
        self.any |= r.reasoning_tokens.is_some() || r.reasoning_chunks.is_some();
        if r.reasoning_tokens.is_some() {
            self.requests += 1;
            let source = r.reasoning_tokens_source.unwrap_or(TokenSource::ChunkCount);
            *self.sources.entry(source.as_str().into()).or_insert(0) += 1;
        }
        self.reasoning += u128::from(reasoning);
        self.answer += u128::from(n - reasoning);
        // Gap j ends at chunk j + 1: inside the reasoning phase while that chunk is in it.
        let phase = r.reasoning_chunks.unwrap_or(0);
        for (j, gap) in itl_gaps_ns(r).enumerate() {
            let ms = gap as f64 * k / NS_PER_MS;
            match (j as u64 + 1) < phase {
                true => self.reasoning_itl.add(ms),
                false => self.answer_itl.add(ms),
            }
        }
    }

    pub(super) fn merge(&mut self, o: ReasoningSums) {
        self.any |= o.any;
        self.requests += o.requests;
        for (k, n) in o.sources {
            *self.sources.entry(k).or_insert(0) += n;
        }
        self.reasoning += o.reasoning;
        self.answer += o.answer;
        self.reasoning_itl.merge(o.reasoning_itl);
        self.answer_itl.merge(o.answer_itl);
    }

    /// `None` when no successful request reasoned; `duration_s`: the run's.
    pub(super) fn finish(self, ps: &[f64], duration_s: f64) -> Option<ReasoningFigures> {
        if !self.any {
            return None;
        }
        let per_s = |x: u128| match duration_s > 0.0 {
            true => x as f64 / duration_s,
            false => 0.0,
        };
        let total = self.reasoning + self.answer;
        // Gaps of one request are not independent: no interval (as pooled ITL's percentiles).
        let pooled = |d: Option<Distribution>| {
            d.map(|mut d| {
                d.ci95_mean = None;
                d.ci95_median = None;
                d.ci95_percentiles.clear();
                d
            })
        };
        let saturated = |n: u128| u64::try_from(n).unwrap_or(u64::MAX);
        Some(ReasoningFigures {
            requests: self.requests,
            token_sources: self.sources,
            total_reasoning_tokens: saturated(self.reasoning),
            total_answer_tokens: saturated(self.answer),
            reasoning_share: match total {
                0 => 0.0,
                t => self.reasoning as f64 / t as f64,
            },
            reasoning_throughput: per_s(self.reasoning),
            answer_throughput: per_s(self.answer),
            reasoning_itl_ms: pooled(self.reasoning_itl.finish(ps)),
            answer_itl_ms: pooled(self.answer_itl.finish(ps)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::Outcome;

    fn record(
        chunks: &[u64],
        reasoning_chunks: Option<u64>,
        reasoning: Option<u64>,
    ) -> RequestRecord {
        RequestRecord {
            sent_ns: 0,
            chunk_ns: chunks.to_vec(),
            end_ns: *chunks.last().unwrap(),
            outcome: Outcome::Ok,
            reasoning_chunks,
            reasoning_tokens: reasoning,
            reasoning_tokens_source: reasoning.map(|_| TokenSource::ServerUsage),
            ..RequestRecord::default()
        }
    }

    /// By hand: a request of 6 chunks whose first 3 reason (8 of its 10 tokens:
    /// 2 gaps in the reasoning phase, 3 from its last chunk on), one without reasoning (4
    /// tokens, 1 gap, all answer), over a run of 2 s.
    #[test]
    fn reasoning_phases_by_hand() {
        let ms = 1_000_000;
        let mut s = ReasoningSums::new(|| SampleSet::with_limit(100));
        let a = record(
            &[10 * ms, 12 * ms, 14 * ms, 20 * ms, 21 * ms, 22 * ms],
            Some(3),
            Some(8),
        );
        s.add(&a, 10, 1.0);
        let b = record(&[5 * ms, 9 * ms], None, None);
        s.add(&b, 4, 1.0);
        let f = s.finish(&[50.0], 2.0).unwrap();
        assert_eq!(
            (f.requests, f.token_sources.get("server_usage")),
            (1, Some(&1))
        );
        assert_eq!((f.total_reasoning_tokens, f.total_answer_tokens), (8, 6));
        assert!((f.reasoning_share - 8.0 / 14.0).abs() < 1e-12);
        assert_eq!((f.reasoning_throughput, f.answer_throughput), (4.0, 3.0));
        let r = f.reasoning_itl_ms.unwrap();
        assert_eq!((r.count, r.mean), (2, 2.0));
        let a = f.answer_itl_ms.unwrap();
        // 6 (the turn to the answer), 1, 1, and the plain request's 4.
        assert_eq!((a.count, a.mean), (4, 3.0));
        let none = ReasoningSums::new(|| SampleSet::with_limit(100));
        assert_eq!(none.finish(&[50.0], 1.0), None);
    }
}
