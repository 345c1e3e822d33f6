//! `random` and `prefix`: text made of the tokenizer's own vocabulary.
//!
//! Method: draw (seeded) ordinary word tokens from `Tokenizer::word_tokens` — a letters-only
//! token first, then tokens that are a space followed by letters — and decode them. Each such
//! token is a whole pre-token on its own and re-encodes to itself, so the decoded text
//! normally re-encodes to exactly the drawn ids (this is vLLM's encode → decode → re-encode,
//! made exact by the choice of tokens). The count is still checked for every prompt, and
//! `fit_exact` adds or drops words until it is exact; if that fails, fresh words are drawn.

use std::collections::HashSet;

use rand::rngs::StdRng;
use rand::RngExt;

use super::common::{check_max, fit_exact, rngs, LengthSampler, Prompt};
use super::error::DatasetError;
use crate::tokenizer::{Tokenizer, WordTokens};

/// Fresh draws of words before `word_text` gives up.
const DRAWS: usize = 4;

pub(super) fn random(
    tok: &Tokenizer,
    lens: &LengthSampler,
    n: usize,
    seed: u64,
) -> Result<Vec<Prompt>, DatasetError> {
    let (mut len_rng, mut text_rng) = rngs(seed);
    let words = usable_words(tok)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let (input_len, output_len) = lens.draw(&mut len_rng);
        let text = word_text(tok, words, "", input_len, &mut text_rng)?;
        out.push(Prompt {
            text,
            input_len,
            output_len,
            messages: None,
            ..Default::default()
        });
    }
    Ok(out)
}

pub(super) fn prefix(
    tok: &Tokenizer,
    prefix_len: u64,
    input_len: u64,
    output_len: u64,
    num_prefixes: u64,
    n: usize,
    seed: u64,
) -> Result<Vec<Prompt>, DatasetError> {
    if num_prefixes == 0 {
        return Err(DatasetError::InvalidSpec(
            "the number of prefixes must be at least 1".into(),
        ));
    }
    if input_len == 0 || output_len == 0 {
        return Err(DatasetError::InvalidSpec(
            "prefix dataset: input (suffix) and output lengths must be at least 1".into(),
        ));
    }
    check_max("prefix length", prefix_len)?;
    check_max("input length", input_len)?;
    check_max("output length", output_len)?;
    let (_, mut rng) = rngs(seed);
    let words = usable_words(tok)?;
    let groups = usize::try_from(num_prefixes).unwrap_or(usize::MAX).min(n);
    let mut prefixes = Vec::with_capacity(groups);
    for _ in 0..groups {
        prefixes.push(if prefix_len == 0 {
            String::new()
        } else {
            word_text(tok, words, "", prefix_len, &mut rng)?
        });
    }
    let total = prefix_len + input_len;
    let mut seen_suffixes: HashSet<String> = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let head = &prefixes[i % groups];
        // Suffixes are distinct whenever the vocabulary allows (a few fresh draws).
        let mut text = word_text(tok, words, head, total, &mut rng)?;
        for _ in 0..8 {
            if seen_suffixes.insert(text[head.len()..].to_string()) {
                break;
            }
            text = word_text(tok, words, head, total, &mut rng)?;
        }
        out.push(Prompt {
            text,
            input_len: total,
            output_len,
            messages: None,
            // The group's first prompt sends its prefix; the others repeat it.
            designed_cached: Some(if i < groups { 0 } else { prefix_len }),
            ..Default::default()
        });
    }
    Ok(out)
}

pub(super) fn usable_words(tok: &Tokenizer) -> Result<&WordTokens, DatasetError> {
    let words = tok.word_tokens();
    if words.spaced.is_empty() {
        return Err(DatasetError::NotExact {
            target: 0,
            tokenizer: tok.name().to_string(),
            reason: "its vocabulary has no plain \" word\" tokens to make text from".into(),
        });
    }
    Ok(words)
}

/// Vocabulary words, exactly `target` tokens (a `graph` call's `input_len`), as `random`
/// makes its prompts.
pub(super) fn exact_text(
    tok: &Tokenizer,
    target: u64,
    rng: &mut StdRng,
) -> Result<String, DatasetError> {
    word_text(tok, usable_words(tok)?, "", target, rng)
}

/// `head` followed by vocabulary words, exactly `target` tokens in all (`head` is kept
/// verbatim; with an empty head the text starts with a letters-only word).
fn word_text(
    tok: &Tokenizer,
    words: &WordTokens,
    head: &str,
    target: u64,
    rng: &mut StdRng,
) -> Result<String, DatasetError> {
    let not_exact = |reason: &str| DatasetError::NotExact {
        target,
        tokenizer: tok.name().to_string(),
        reason: reason.to_string(),
    };
    let target_us = usize::try_from(target).map_err(|_| not_exact("length too large"))?;
    let head_len = if head.is_empty() { 0 } else { tok.count(head) };
    if head_len > target_us {
        return Err(not_exact("the shared prefix alone is longer"));
    }
    let want = target_us - head_len;
    for _ in 0..DRAWS {
        let mut ids: Vec<u32> = Vec::with_capacity(want + 16);
        let draw = |ids: &mut Vec<u32>, rng: &mut StdRng| {
            let from = if ids.is_empty() && head.is_empty() && !words.leading.is_empty() {
                &words.leading
            } else {
                &words.spaced
            };
            ids.push(from[rng.random_range(0..from.len())]);
        };
        while ids.len() < want {
            draw(&mut ids, rng);
        }
        let fitted = fit_exact(tok, target_us, want, want * 2 + 64, |k| {
            while ids.len() < k {
                draw(&mut ids, rng);
            }
            let mut text = String::with_capacity(head.len() + k * 8);
            text.push_str(head);
            text.push_str(&tok.decode(&ids[..k]));
            Some(text)
        });
        if let Some(text) = fitted {
            return Ok(text);
        }
    }
    Err(not_exact(
        "re-tokenizing the drawn words never gave the target",
    ))
}
