//! Speculative decoding in exact mode: how a stream's tokens are cut into
//! chunks ([`Chunks`]), and the counters a speculating server exposes ([`SpecCounters`],
//! vLLM's `vllm:spec_decode_*` names).
//!
//! A request's first chunk is its prefill's one token; every later chunk is one decoding step
//! that verified a draft of `K = draft_tokens` tokens, of which the step's entry of the
//! `accepted` pattern (cycled over the steps) were accepted, so it carries that many + 1 tokens
//! (the bonus token), the last cut to the token budget. Chunks keep their schedule (chunk `c`
//! at `t0 + ttft + c·itl`, `sim/mod.rs`), so a step, not a token, takes `itl`. The counters count
//! what the steps sent: a step is one draft of `K` tokens whose accepted tokens are the ones
//! it carried beyond the first (vLLM's `observe_draft`), each accepted position counted once.
//!
//! Imports nothing of the simulator (layer 0): the rules on its settings are in `config.rs`.

use std::fmt::Write as _;

/// Most draft tokens per step (`K`), and most steps in an acceptance pattern: small enough
/// that a stream's chunking is a `Copy` value, larger than speculative decoders use.
pub const MAX_DRAFT_TOKENS: u32 = 15;
pub const MAX_PATTERN: usize = 16;

/// Speculative decoding's settings (`--spec-draft-tokens`, `--spec-accepted`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecDecode {
    /// Draft tokens each step proposes, `K` (vLLM's `num_speculative_tokens`), 1..=15.
    pub draft_tokens: u32,
    /// Accepted tokens of each step, cycled over a stream's steps; each at most `K`, 1 to 16
    /// entries.
    pub accepted: Vec<u32>,
}

/// How one stream's tokens are cut into chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Chunks {
    /// `k` tokens per chunk (the last one fewer).
    Fixed(u32),
    /// Speculative decoding: 1 token, then `1 + accepted[s mod len]` for step `s`.
    Spec {
        draft: u8,
        accepted: [u8; MAX_PATTERN],
        len: u8,
    },
}

impl Chunks {
    /// The chunking of a server's settings: `spec` when given, else `per_chunk` tokens.
    pub(crate) fn of(per_chunk: u32, spec: Option<&SpecDecode>) -> Chunks {
        let Some(s) = spec.filter(|s| !s.accepted.is_empty()) else {
            return Chunks::Fixed(per_chunk.max(1));
        };
        let mut accepted = [0u8; MAX_PATTERN];
        let draft = s.draft_tokens.min(MAX_DRAFT_TOKENS);
        for (a, &x) in accepted.iter_mut().zip(&s.accepted) {
            *a = x.min(draft) as u8;
        }
        Chunks::Spec {
            draft: draft as u8,
            accepted,
            len: s.accepted.len().min(MAX_PATTERN) as u8,
        }
    }

    /// Tokens one cycle of the pattern's steps carries, and the pattern.
    fn cycle(accepted: &[u8; MAX_PATTERN], len: u8) -> (u64, &[u8]) {
        let steps = &accepted[..usize::from(len.max(1))];
        (steps.iter().map(|&a| u64::from(a) + 1).sum(), steps)
    }

    /// The first token of chunk `c` (before any cut to a budget).
    pub(crate) fn start(&self, c: u32) -> u64 {
        match *self {
            Chunks::Fixed(k) => u64::from(c) * u64::from(k.max(1)),
            Chunks::Spec { accepted, len, .. } => {
                if c == 0 {
                    return 0;
                }
                let (per_cycle, steps) = Self::cycle(&accepted, len);
                let s = u64::from(c - 1);
                let (cycles, rest) = (s / steps.len() as u64, (s % steps.len() as u64) as usize);
                let partial: u64 = steps[..rest].iter().map(|&a| u64::from(a) + 1).sum();
                1 + cycles * per_cycle + partial
            }
        }
    }

    /// Chunks that carry `tokens` (at least 1).
    pub(crate) fn count(&self, tokens: u32) -> u32 {
        match *self {
            Chunks::Fixed(k) => tokens.div_ceil(k.max(1)).max(1),
            Chunks::Spec { accepted, len, .. } => {
                if tokens <= 1 {
                    return 1;
                }
                let (per_cycle, steps) = Self::cycle(&accepted, len);
                let after = u64::from(tokens) - 1;
                let (cycles, mut rest) = (after / per_cycle, after % per_cycle);
                let mut c = 1 + cycles * steps.len() as u64;
                for &a in steps {
                    if rest == 0 {
                        break;
                    }
                    rest = rest.saturating_sub(u64::from(a) + 1);
                    c += 1;
                }
                u32::try_from(c).unwrap_or(u32::MAX)
            }
        }
    }

    /// Draft tokens per step, when speculating.
    pub(crate) fn draft(&self) -> Option<u32> {
        match *self {
            Chunks::Fixed(_) => None,
            Chunks::Spec { draft, .. } => Some(u32::from(draft)),
        }
    }
}

/// vLLM's speculative-decoding counters, as a server's `/metrics` has them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SpecCounters {
    pub(crate) drafts: u64,
    pub(crate) draft_tokens: u64,
    pub(crate) accepted: u64,
    /// Steps that accepted at least `p + 1` tokens, for each position `p` < `K`.
    pub(crate) per_position: Vec<u64>,
}

impl SpecCounters {
    /// Counts the steps of a stream cut by `chunks` that sent `sent` chunks carrying
    /// `generated` tokens (chunk 0, the prefill's token, is no step).
    pub(crate) fn count(&mut self, chunks: Chunks, sent: u32, generated: u32) {
        let Some(k) = chunks.draft() else {
            return;
        };
        if self.per_position.len() < k as usize {
            self.per_position.resize(k as usize, 0);
        }
        let end = u64::from(generated);
        for c in 1..sent {
            let carried = chunks.start(c + 1).min(end).saturating_sub(chunks.start(c));
            let accepted = carried.saturating_sub(1).min(u64::from(k));
            self.drafts += 1;
            self.draft_tokens += u64::from(k);
            self.accepted += accepted;
            for p in &mut self.per_position[..accepted as usize] {
                *p += 1;
            }
        }
    }

    /// The counters under vLLM's names (`labels`: the model's label, `model_name="..."`).
    pub(crate) fn render_vllm(&self, out: &mut String, labels: &str) {
        let counters = [
            (
                "vllm:spec_decode_num_drafts",
                "Number of spec decoding drafts.",
                self.drafts,
            ),
            (
                "vllm:spec_decode_num_draft_tokens",
                "Number of draft tokens.",
                self.draft_tokens,
            ),
            (
                "vllm:spec_decode_num_accepted_tokens",
                "Number of accepted tokens.",
                self.accepted,
            ),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(
                out,
                "# HELP {name}_total {help}\n# TYPE {name}_total counter"
            );
            let _ = writeln!(out, "{name}_total{{{labels}}} {v}");
        }
        let name = "vllm:spec_decode_num_accepted_tokens_per_pos";
        let _ = writeln!(
            out,
            "# HELP {name}_total Accepted tokens per draft position."
        );
        let _ = writeln!(out, "# TYPE {name}_total counter");
        for (p, v) in self.per_position.iter().enumerate() {
            let _ = writeln!(out, "{name}_total{{{labels},position=\"{p}\"}} {v}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(k: u32, accepted: &[u32]) -> Chunks {
        Chunks::of(
            1,
            Some(&SpecDecode {
                draft_tokens: k,
                accepted: accepted.to_vec(),
            }),
        )
    }

    /// By hand: K = 3, pattern 3, 1, 0: chunks of 1, 4, 2, 1, 4, 2, 1, ... tokens.
    #[test]
    fn spec_chunks_follow_the_pattern() {
        let c = spec(3, &[3, 1, 0]);
        let starts: Vec<u64> = (0..8).map(|i| c.start(i)).collect();
        assert_eq!(starts, [0, 1, 5, 7, 8, 12, 14, 15]);
        // 10 tokens: 1 | 4 | 2 | 1 | 2 (cut from 4).
        assert_eq!(c.count(10), 5);
        assert_eq!(
            (c.count(1), c.count(2), c.count(5), c.count(6)),
            (1, 2, 2, 3)
        );
        assert_eq!((c.count(7), c.count(8), c.count(15)), (3, 4, 7));
        for tokens in 1..200u32 {
            let n = c.count(tokens);
            assert!(c.start(n) >= u64::from(tokens) && c.start(n - 1) < u64::from(tokens));
        }
        let mut m = SpecCounters::default();
        m.count(c, 5, 10);
        // Steps carried 4, 2, 1, 2 tokens: accepted 3, 1, 0, 1.
        assert_eq!((m.drafts, m.draft_tokens, m.accepted), (4, 12, 5));
        assert_eq!(m.per_position, [3, 1, 1]);
        let fixed = Chunks::of(3, None);
        assert_eq!(
            (fixed.count(10), fixed.start(2), fixed.draft()),
            (4, 6, None)
        );
        let mut none = SpecCounters::default();
        none.count(fixed, 4, 10);
        assert_eq!(none, SpecCounters::default());
    }
}
