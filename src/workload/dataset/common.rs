//! What every dataset builds with: the [`Prompt`] it returns, the lengths it draws
//! ([`LengthSampler`], [`MAX_LEN`]), its seeded random streams, the fix-up loop behind every
//! exact length ([`fit_exact`]) and the read of a dataset file as text.
//!
//! A leaf beside the datasets: each of them may use it, and it imports none of them (only the
//! errors' leaf, `error.rs`). Something a second dataset needs goes here, not in `mod.rs`.

use std::collections::HashSet;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::error::DatasetError;
use crate::tokenizer::Tokenizer;

/// One prompt to send.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prompt {
    /// The prompt text (for `messages` prompts: the message contents joined by "\n").
    pub text: String,
    /// The tokenizer's count of `text`: exact, no BOS or chat-template tokens.
    pub input_len: u64,
    /// The number of tokens to ask the server for.
    pub output_len: u64,
    /// The chat messages, for jsonl lines that gave `messages` instead of `prompt`.
    pub messages: Option<serde_json::Value>,
    /// `trace`: the send time, ms from the trace's first timestamp.
    pub at_ms: Option<f64>,
    /// Tokens that repeat a prefix of an earlier prompt of the same build (`prefix`, `trace`).
    pub designed_cached: Option<u64>,
    /// The turn of a conversation this prompt is (0 starts one; a conversation's turns are
    /// consecutive); `None`: a single request.
    pub turn: Option<u32>,
    /// The model (a LoRA adapter) a jsonl line names for its request (`"model"`).
    pub model: Option<String>,
    /// A rerank pair's documents (a jsonl line's `"documents"`; `text` is its query).
    pub documents: Vec<String>,
    /// Media sent beside `text` (a jsonl line's `image_files`, as data URLs).
    pub parts: Vec<crate::measure::client::Part>,
    /// The call of an agentic job this prompt is (`graph`, `agentic`): `text` is its own
    /// new text, the replies it splices are added when it is sent.
    pub call: Option<crate::measure::job::CallPlace>,
}

/// The longest prompt or output servebench builds, in tokens (far above any context window;
/// it keeps a typo such as an extra zero from allocating gigabytes).
pub const MAX_LEN: u64 = 1 << 24;

/// Input/output lengths, uniform integers in [floor(L(1−r)), ceil(L(1+r))] as vLLM draws them
/// (never below 1).
#[derive(Clone, Debug)]
pub(crate) struct LengthSampler {
    input: (u64, u64),
    output: (u64, u64),
}

impl LengthSampler {
    pub(crate) fn new(input_len: u64, output_len: u64, r: f64) -> Result<Self, DatasetError> {
        if !(0.0..1.0).contains(&r) {
            return Err(DatasetError::InvalidSpec(format!(
                "range ratio {r} is outside [0, 1)"
            )));
        }
        if input_len == 0 {
            return Err(DatasetError::InvalidSpec(
                "input length must be at least 1".into(),
            ));
        }
        if output_len == 0 {
            return Err(DatasetError::InvalidSpec(
                "output length must be at least 1".into(),
            ));
        }
        check_max("input length", input_len)?;
        check_max("output length", output_len)?;
        Ok(LengthSampler {
            input: Self::bounds(input_len, r),
            output: Self::bounds(output_len, r),
        })
    }

    fn bounds(len: u64, r: f64) -> (u64, u64) {
        let l = len as f64;
        let lo = ((l * (1.0 - r)).floor() as u64).max(1);
        let hi = ((l * (1.0 + r)).ceil() as u64).max(lo);
        (lo, hi)
    }

    /// The largest input length this sampler can draw.
    pub(crate) fn max_input(&self) -> u64 {
        self.input.1
    }

    /// (input_len, output_len) for the next prompt.
    pub(crate) fn draw(&self, rng: &mut StdRng) -> (u64, u64) {
        (
            rng.random_range(self.input.0..=self.input.1),
            rng.random_range(self.output.0..=self.output.1),
        )
    }
}

pub(crate) fn check_max(what: &str, len: u64) -> Result<(), DatasetError> {
    if len > MAX_LEN {
        return Err(DatasetError::InvalidSpec(format!(
            "{what} {len} is above the limit of {MAX_LEN} tokens"
        )));
    }
    Ok(())
}

/// Separate, reproducible random streams for lengths and for text, so that changing how text
/// is made never changes the lengths drawn for a seed.
pub(crate) fn rngs(seed: u64) -> (StdRng, StdRng) {
    (
        StdRng::seed_from_u64(seed ^ 0x1E46_7115_0000_0001),
        StdRng::seed_from_u64(seed ^ 0x7E47_0000_0000_0002),
    )
}

/// How many candidate sizes `fit_exact` tries before giving up.
const FIT_ATTEMPTS: usize = 40;

/// The fix-up loop behind every exact length. `text_of(k)` makes a candidate text from `k`
/// source tokens (a slice of a book, `k` vocabulary words, ...), growing with `k`. Starting at
/// `k = start_k`, it re-tokenizes the candidate and moves `k` by the difference between the
/// count and the target (a merge across a boundary costs a token, a split adds one), then by
/// single steps once a size repeats. Returns the first candidate whose count is exactly
/// `target`, or None when no size in reach works (the caller then changes the source: another
/// start offset, other words).
pub(crate) fn fit_exact<F>(
    tok: &Tokenizer,
    target: usize,
    start_k: usize,
    max_k: usize,
    mut text_of: F,
) -> Option<String>
where
    F: FnMut(usize) -> Option<String>,
{
    let mut seen = HashSet::new();
    let max_k = max_k.max(1);
    let mut k = start_k.clamp(1, max_k);
    for _ in 0..FIT_ATTEMPTS {
        let text = text_of(k)?;
        let c = tok.count(&text);
        if c == target {
            return Some(text);
        }
        seen.insert(k);
        let jump = (k as i64 + target as i64 - c as i64).clamp(1, max_k as i64) as usize;
        let step = if c > target {
            k.saturating_sub(1).max(1)
        } else {
            (k + 1).min(max_k)
        };
        k = if !seen.contains(&jump) {
            jump
        } else if !seen.contains(&step) {
            step
        } else {
            return None;
        };
    }
    None
}

pub(super) fn read_file(path: &Path) -> Result<String, DatasetError> {
    let bytes = std::fs::read(path).map_err(|source| DatasetError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| DatasetError::BadFile {
        path: path.to_path_buf(),
        reason: format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
    })
}
