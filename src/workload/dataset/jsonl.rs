//! `jsonl`: the user's own prompts, one JSON object per line.
//!
//! Each non-blank line is `{"prompt": "..."}` or `{"messages": [{"role": ..., "content": ...},
//! ...]}`, with an optional `"output_len"` (else the spec's). `content` may be a string or an
//! array of parts, whose `{"type": "text", "text": ...}` parts are used. For `messages`,
//! `Prompt::text` is the contents joined by "\n" and `input_len` is its token count: the chat
//! template's own tokens are not included (the server adds them).
//!
//! A line may instead be a conversation: `{"turns": [...]}`, each turn a string (the user's
//! new text) or `{"prompt": "...", "output_len": N}`, sent as turns 0, 1, ... in order, each
//! with the history (the driver adds it); a turn without `output_len` takes the line's,
//! else the spec's. Lines are used in file order, one prompt or conversation per item; when
//! `n` is larger than the number of lines they are used again from the start.

use std::path::Path;

use serde_json::Value;

use super::{read_file, DatasetError, Prompt};
use crate::config::MAX_TOKENS;
use crate::tokenizer::Tokenizer;

pub(super) fn build(
    path: &Path,
    tok: &Tokenizer,
    output_len: u64,
    n: usize,
) -> Result<Vec<Prompt>, DatasetError> {
    let body = read_file(path)?;
    let bad = |line: usize, reason: String| DatasetError::BadLine {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut prompts = Vec::new();
    for (i, line) in body.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value =
            serde_json::from_str(line).map_err(|e| bad(line_no, format!("not valid JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad(line_no, "expected a JSON object".into()))?;
        let out = positive(obj.get("output_len"), output_len).map_err(|r| bad(line_no, r))?;
        if let Some(turns) = obj.get("turns") {
            let turns = turns
                .as_array()
                .filter(|t| !t.is_empty())
                .ok_or_else(|| bad(line_no, "\"turns\" must be a non-empty array".into()))?;
            let mut conversation = Vec::with_capacity(turns.len());
            for (k, t) in turns.iter().enumerate() {
                let (text, turn_out) = match t {
                    Value::String(s) => (s.as_str(), out),
                    Value::Object(o) => (
                        o.get("prompt").and_then(Value::as_str).ok_or_else(|| {
                            bad(line_no, format!("turn {k} needs a \"prompt\" string"))
                        })?,
                        positive(o.get("output_len"), out)
                            .map_err(|r| bad(line_no, format!("turn {k}: {r}")))?,
                    ),
                    _ => {
                        return Err(bad(
                            line_no,
                            format!("turn {k} must be a string or {{\"prompt\": ...}}"),
                        ))
                    }
                };
                conversation.push(Prompt {
                    text: text.to_string(),
                    input_len: tok.count(text) as u64,
                    output_len: turn_out,
                    turn: Some(k as u32),
                    ..Default::default()
                });
            }
            prompts.push(conversation);
            continue;
        }
        let (text, messages) = if let Some(p) = obj.get("prompt") {
            let p = p
                .as_str()
                .ok_or_else(|| bad(line_no, "\"prompt\" must be a string".into()))?;
            (p.to_string(), None)
        } else if let Some(m) = obj.get("messages") {
            let text = messages_text(m).map_err(|r| bad(line_no, r))?;
            (text, Some(m.clone()))
        } else {
            return Err(bad(
                line_no,
                "needs a \"prompt\" string, a \"messages\" array or a \"turns\" array".into(),
            ));
        };
        let input_len = tok.count(&text) as u64;
        prompts.push(vec![Prompt {
            text,
            input_len,
            output_len: out,
            messages,
            ..Default::default()
        }]);
    }
    if prompts.is_empty() {
        return Err(DatasetError::Empty(path.to_path_buf()));
    }
    let have = prompts.len();
    Ok((0..n).flat_map(|i| prompts[i % have].clone()).collect())
}

/// An `output_len` value: a positive integer up to the limit of `--output-len`, or `default`
/// when absent.
fn positive(v: Option<&Value>, default: u64) -> Result<u64, String> {
    match v {
        None | Some(Value::Null) => Ok(default),
        Some(x) => x
            .as_u64()
            .filter(|&o| o > 0 && o <= MAX_TOKENS)
            .ok_or_else(|| {
                format!("output_len must be a whole number in 1..={MAX_TOKENS} (as --output-len), got {x}")
            }),
    }
}

/// The text contents of a chat `messages` array, joined by "\n".
fn messages_text(m: &Value) -> Result<String, String> {
    let arr = m
        .as_array()
        .ok_or_else(|| "\"messages\" must be an array".to_string())?;
    if arr.is_empty() {
        return Err("\"messages\" is empty".into());
    }
    let mut parts = Vec::with_capacity(arr.len());
    for (i, msg) in arr.iter().enumerate() {
        let content = msg
            .get("content")
            .ok_or_else(|| format!("message {i} has no \"content\""))?;
        match content {
            Value::String(s) => parts.push(s.clone()),
            Value::Array(items) => {
                for it in items {
                    if let Some(t) = it.get("text").and_then(Value::as_str) {
                        parts.push(t.to_string());
                    }
                }
            }
            Value::Null => {}
            _ => {
                return Err(format!(
                    "message {i}: \"content\" must be a string or an array"
                ))
            }
        }
    }
    Ok(parts.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_23_an_output_len_is_capped_like_the_flag() {
        // 10^18 was sent as max_tokens.
        let huge = serde_json::json!(1_000_000_000_000_000_000u64);
        let e = positive(Some(&huge), 4).unwrap_err();
        assert!(
            e.contains("1000000000000000000") && e.contains("--output-len"),
            "{e}"
        );
        let most = serde_json::json!(MAX_TOKENS);
        assert_eq!(positive(Some(&most), 4), Ok(MAX_TOKENS));
        assert_eq!(positive(None, 4), Ok(4));
    }
}
