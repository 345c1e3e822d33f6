//! `sharegpt`: real conversations from a ShareGPT JSON file.
//!
//! Format: a JSON array of `{"conversations": [{"from": "human", "value": ...},
//! {"from": "gpt", "value": ...}, ...]}`. The prompt is the first human/user turn; the
//! output length is the token count of the first gpt/assistant turn after it, unless a
//! fixed output length is given.
//!
//! Filtering follows vLLM's `benchmark_serving` defaults: skip conversations with fewer than
//! 2 turns, prompts or answers under [`SHAREGPT_MIN_LEN`] tokens (the answer check is skipped
//! when the output length is fixed), prompts over [`SHAREGPT_MAX_PROMPT_LEN`] tokens, and
//! prompt + output over [`SHAREGPT_MAX_TOTAL_LEN`]. Conversations are taken in a seeded
//! shuffle until `n` pass. When fewer than `n` pass, the passing ones are repeated in the same
//! order until there are `n` (vLLM likewise oversamples); none passing is an error.
//!
//! With `multi_turn` (`--multi-turn`) each of the `n` items is a whole conversation: every
//! human turn that an assistant turn answers, in order, as turns 0, 1, ... (the driver sends
//! each with the history; the recorded answer only sets the turn's output length). Each
//! turn passes the same per-turn filters (its new text at least [`SHAREGPT_MIN_LEN`] and at
//! most [`SHAREGPT_MAX_PROMPT_LEN`] tokens, its answer at least [`SHAREGPT_MIN_LEN`]); a
//! conversation ends before its first turn that fails them or that would take its running
//! total (every turn's text and answer so far) over [`SHAREGPT_MAX_CONVERSATION_LEN`]
//! tokens. Conversations with no passing turn are skipped.

use std::path::Path;

use rand::seq::SliceRandom;

use super::common::{read_file, rngs, Prompt};
use super::error::DatasetError;
use crate::tokenizer::Tokenizer;

/// Shortest prompt and answer kept, in tokens (vLLM's default).
pub const SHAREGPT_MIN_LEN: u64 = 4;
/// Longest prompt kept, in tokens (vLLM's default).
pub const SHAREGPT_MAX_PROMPT_LEN: u64 = 1024;
/// Longest prompt + output kept, in tokens (vLLM's default).
pub const SHAREGPT_MAX_TOTAL_LEN: u64 = 2048;
/// `--multi-turn`: longest conversation kept, every turn's text and answer summed, in tokens
/// (four single-turn totals: it fits an 8k context with the separators and chat template).
pub const SHAREGPT_MAX_CONVERSATION_LEN: u64 = 4 * SHAREGPT_MAX_TOTAL_LEN;

const HUMAN: &[&str] = &["human", "user"];
const ASSISTANT: &[&str] = &["gpt", "assistant", "chatgpt", "bard", "bing", "model"];

pub(super) fn build(
    path: &Path,
    tok: &Tokenizer,
    output_len: Option<u64>,
    multi_turn: bool,
    n: usize,
    seed: u64,
) -> Result<Vec<Prompt>, DatasetError> {
    if output_len == Some(0) {
        return Err(DatasetError::InvalidSpec(
            "output length must be at least 1".into(),
        ));
    }
    let body = read_file(path)?;
    if body.trim().is_empty() {
        return Err(DatasetError::Empty(path.to_path_buf()));
    }
    let data: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| DatasetError::BadFile {
            path: path.to_path_buf(),
            reason: format!("not valid JSON: {e}"),
        })?;
    let entries = data.as_array().ok_or_else(|| DatasetError::BadFile {
        path: path.to_path_buf(),
        reason: "not a ShareGPT file: expected a JSON array of {\"conversations\": [...]}".into(),
    })?;

    let (_, mut rng) = rngs(seed);
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.shuffle(&mut rng);

    // One item per conversation: its first turn, or (multi-turn) its passing turns.
    let mut picked: Vec<Vec<Prompt>> = Vec::with_capacity(n.min(entries.len()));
    for i in order {
        if picked.len() == n {
            break;
        }
        let mut conversation = Vec::new();
        let mut total = 0;
        for (prompt, answer) in pairs(&entries[i]) {
            let prompt_len = tok.count(prompt) as u64;
            let out_len = match output_len {
                Some(fixed) => fixed,
                None => tok.count(answer) as u64,
            };
            total += prompt_len + out_len;
            let too_short = prompt_len < SHAREGPT_MIN_LEN
                || (output_len.is_none() && out_len < SHAREGPT_MIN_LEN);
            let too_long = prompt_len > SHAREGPT_MAX_PROMPT_LEN
                || prompt_len + out_len > SHAREGPT_MAX_TOTAL_LEN
                || total > SHAREGPT_MAX_CONVERSATION_LEN;
            if too_short || too_long {
                break;
            }
            conversation.push(Prompt {
                text: prompt.to_string(),
                input_len: prompt_len,
                output_len: out_len,
                turn: multi_turn.then_some(conversation.len() as u32),
                ..Default::default()
            });
            if !multi_turn {
                break;
            }
        }
        if !conversation.is_empty() {
            picked.push(conversation);
        }
    }
    if picked.is_empty() {
        return Err(DatasetError::NoValidPrompts {
            path: path.to_path_buf(),
            reason: format!(
                "{} entries; each needs a human and a gpt turn, prompt and answer of at least \
                 {SHAREGPT_MIN_LEN} tokens, prompt at most {SHAREGPT_MAX_PROMPT_LEN}, \
                 total at most {SHAREGPT_MAX_TOTAL_LEN}",
                entries.len()
            ),
        });
    }
    let valid = picked.len();
    Ok((0..n).flat_map(|i| picked[i % valid].clone()).collect())
}

/// The (human turn, assistant turn answering it) pairs of an entry, in order: a human turn
/// counts when the next turn is an assistant's.
fn pairs(entry: &serde_json::Value) -> impl Iterator<Item = (&str, &str)> {
    let conv = entry
        .get("conversations")
        .and_then(|c| c.as_array())
        .map_or(&[][..], Vec::as_slice);
    let is = |t: &serde_json::Value, roles: &[&str]| {
        t.get("from")
            .and_then(|f| f.as_str())
            .is_some_and(|r| roles.contains(&r.to_ascii_lowercase().as_str()))
    };
    conv.windows(2).filter_map(move |w| {
        (is(&w[0], HUMAN) && is(&w[1], ASSISTANT)).then_some((value(&w[0])?, value(&w[1])?))
    })
}

fn value(turn: &serde_json::Value) -> Option<&str> {
    turn.get("value")?.as_str()
}
