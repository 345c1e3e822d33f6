//! One line of a trace that carries text, read: servebench's jsonl dataset line
//! (`{"prompt": ...}`, `{"messages": [...]}` or a conversation's `{"turns": [...]}`, with
//! `output_len`) or a generic trace line with text (`{"timestamp", "prompt", "output_length",
//! "session_id"}`); either may carry a `timestamp` in ms. Only what the anonymized line keeps
//! is taken: each prompt's text (to be tokenized and dropped), its output length, the time and
//! whether it belongs to a session.

use serde_json::{Map, Value};

use super::error::LineError;
use crate::config::limits::MAX_TOKENS;

/// A line's prompts, in the order they are sent.
#[derive(Debug, PartialEq)]
pub struct TextLine {
    /// `timestamp`, ms; `None` when the line gives none.
    pub at_ms: Option<f64>,
    /// Who the line's prompts belong to: none, a new conversation (`turns`), or the session
    /// named by its `session_id` (the name is kept only to number sessions, never written).
    pub session: Session,
    /// Each prompt's text and output length (when the line gives one).
    pub prompts: Vec<(String, Option<u64>)>,
}

/// Who a line's prompts belong to.
#[derive(Debug, PartialEq)]
pub enum Session {
    None,
    /// A `turns` line: a conversation of its own.
    Fresh,
    /// A generic trace line's `session_id`, as text.
    Named(String),
}

/// One non-blank line of the input, read.
pub fn read(line: &str) -> Result<TextLine, LineError> {
    let v: Value = serde_json::from_str(line).map_err(LineError::NotJson)?;
    let obj = v.as_object().ok_or(LineError::NotAnObject)?;
    let at_ms = timestamp(obj)?;
    let out = output_len(obj)?;
    let named = match obj.get("session_id") {
        None | Some(Value::Null) => Session::None,
        Some(Value::String(s)) => Session::Named(s.clone()),
        Some(Value::Number(n)) => Session::Named(n.to_string()),
        Some(_) => return Err(LineError::Session),
    };
    if let Some(turns) = obj.get("turns") {
        return Ok(TextLine {
            at_ms,
            session: Session::Fresh,
            prompts: conversation(turns, out)?,
        });
    }
    let text = if let Some(p) = obj.get("prompt") {
        p.as_str().ok_or(LineError::NotText("prompt"))?.to_string()
    } else if let Some(m) = obj.get("messages") {
        messages_text(m)?
    } else {
        return Err(LineError::NoText);
    };
    Ok(TextLine {
        at_ms,
        session: named,
        prompts: vec![(text, out)],
    })
}

/// A line's `timestamp`: a finite time in ms from 0, or `None`.
fn timestamp(obj: &Map<String, Value>) -> Result<Option<f64>, LineError> {
    match obj.get("timestamp") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => (v.as_f64())
            .filter(|t| t.is_finite() && *t >= 0.0)
            .map(Some)
            .ok_or(LineError::BadTimestamp),
    }
}

/// A line's output length: jsonl's `output_len` or a trace's `output_length`.
fn output_len(obj: &Map<String, Value>) -> Result<Option<u64>, LineError> {
    for field in ["output_len", "output_length"] {
        if let Some(v) = obj.get(field).filter(|v| !v.is_null()) {
            return positive(v, field).map(Some);
        }
    }
    Ok(None)
}

fn positive(v: &Value, field: &'static str) -> Result<u64, LineError> {
    (v.as_u64())
        .filter(|&o| (1..=MAX_TOKENS).contains(&o))
        .ok_or(LineError::OutputLen { field })
}

/// A `turns` array: each turn's text and output length (its own, else the line's).
fn conversation(turns: &Value, out: Option<u64>) -> Result<Vec<(String, Option<u64>)>, LineError> {
    let turns = (turns.as_array())
        .filter(|t| !t.is_empty())
        .ok_or(LineError::Turns)?;
    let mut prompts = Vec::with_capacity(turns.len());
    for t in turns {
        prompts.push(match t {
            Value::String(s) => (s.clone(), out),
            Value::Object(o) => {
                let text = (o.get("prompt").and_then(Value::as_str)).ok_or(LineError::Turns)?;
                let own = match o.get("output_len").filter(|v| !v.is_null()) {
                    Some(v) => Some(positive(v, "output_len")?),
                    None => out,
                };
                (text.to_string(), own)
            }
            _ => return Err(LineError::Turns),
        });
    }
    Ok(prompts)
}

/// The text contents of a chat `messages` array joined by "\n", as the jsonl dataset sends
/// them.
fn messages_text(m: &Value) -> Result<String, LineError> {
    let arr = (m.as_array())
        .filter(|a| !a.is_empty())
        .ok_or(LineError::Messages)?;
    let mut parts = Vec::with_capacity(arr.len());
    for msg in arr {
        match msg.get("content").ok_or(LineError::Messages)? {
            Value::String(s) => parts.push(s.as_str()),
            Value::Array(items) => {
                parts.extend(items.iter().filter_map(|it| it.get("text")?.as_str()));
            }
            Value::Null => {}
            _ => return Err(LineError::Messages),
        }
    }
    Ok(parts.join("\n"))
}
