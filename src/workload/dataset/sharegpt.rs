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

use std::path::Path;

use rand::seq::SliceRandom;

use super::{read_file, rngs, DatasetError, Prompt};
use crate::tokenizer::Tokenizer;

/// Shortest prompt and answer kept, in tokens (vLLM's default).
pub const SHAREGPT_MIN_LEN: u64 = 4;
/// Longest prompt kept, in tokens (vLLM's default).
pub const SHAREGPT_MAX_PROMPT_LEN: u64 = 1024;
/// Longest prompt + output kept, in tokens (vLLM's default).
pub const SHAREGPT_MAX_TOTAL_LEN: u64 = 2048;

const HUMAN: &[&str] = &["human", "user"];
const ASSISTANT: &[&str] = &["gpt", "assistant", "chatgpt", "bard", "bing", "model"];

pub(super) fn build(
    path: &Path,
    tok: &Tokenizer,
    output_len: Option<u64>,
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

    let mut picked: Vec<Prompt> = Vec::with_capacity(n.min(entries.len()));
    for i in order {
        if picked.len() == n {
            break;
        }
        let Some((prompt, answer)) = turns(&entries[i]) else {
            continue;
        };
        let prompt_len = tok.count(prompt) as u64;
        let out_len = match output_len {
            Some(fixed) => fixed,
            None => tok.count(answer) as u64,
        };
        let too_short =
            prompt_len < SHAREGPT_MIN_LEN || (output_len.is_none() && out_len < SHAREGPT_MIN_LEN);
        let too_long =
            prompt_len > SHAREGPT_MAX_PROMPT_LEN || prompt_len + out_len > SHAREGPT_MAX_TOTAL_LEN;
        if too_short || too_long {
            continue;
        }
        picked.push(Prompt {
            text: prompt.to_string(),
            input_len: prompt_len,
            output_len: out_len,
            messages: None,
            ..Default::default()
        });
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
    for i in valid..n {
        let again = picked[i % valid].clone();
        picked.push(again);
    }
    Ok(picked)
}

/// (first human turn, first assistant turn after it), if the entry has both.
fn turns(entry: &serde_json::Value) -> Option<(&str, &str)> {
    let conv = entry.get("conversations")?.as_array()?;
    if conv.len() < 2 {
        return None;
    }
    let role = |t: &serde_json::Value| t.get("from").and_then(|f| f.as_str()).map(str::to_string);
    let p = conv
        .iter()
        .position(|t| role(t).is_some_and(|r| HUMAN.contains(&r.to_ascii_lowercase().as_str())))?;
    let a = conv[p + 1..]
        .iter()
        .find(|t| role(t).is_some_and(|r| ASSISTANT.contains(&r.to_ascii_lowercase().as_str())))?;
    Some((value(&conv[p])?, value(a)?))
}

fn value(turn: &serde_json::Value) -> Option<&str> {
    turn.get("value")?.as_str()
}
