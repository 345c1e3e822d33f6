//! `jsonl`: the user's own prompts, one JSON object per line.
//!
//! Each non-blank line is `{"prompt": "..."}` or `{"messages": [{"role": ..., "content": ...},
//! ...]}`, with an optional `"output_len"` (else the spec's). `content` may be a string or an
//! array of parts, whose `{"type": "text", "text": ...}` parts are used. For `messages`,
//! `Prompt::text` is the contents joined by "\n" and `input_len` is its token count: the chat
//! template's own tokens are not included (the server adds them).
//!
//! A `"prompt"` line may add `"image_files"`, a list of PNG or JPEG files (relative to the
//! jsonl file's folder, or absolute), vLLM's custom image format: each is read (at most
//! [`MAX_IMAGE_FILE_BYTES`]), checked to be what it says by its first bytes, and sent after the
//! prompt as a base64 `data:` URL in an `image_url` content part (`workload::media`). A line's
//! `"audio"` names a WAV file (or a list), each sent after the text as an `input_audio`
//! content part (base64, format `wav`), read whole (its `fmt` and `data` chunks; the clip's
//! duration from them); with `--backend openai-audio` the line's one file is the
//! transcription's `file` and its prompt (which may be left out there) the form's `prompt`. A line's
//! `messages` carry their own content parts instead (an `image_url` part goes out as written).
//!
//! A line may instead be a conversation: `{"turns": [...]}`, each turn a string (the user's
//! new text) or `{"prompt": "...", "output_len": N}`, sent as turns 0, 1, ... in order, each
//! with the history (the driver adds it); a turn without `output_len` takes the line's,
//! else the spec's. A line's optional `"model"` names the model (a LoRA adapter) its request, or
//! each turn of its conversation, is sent to. A line `{"query": "...", "documents": [...]}` is
//! a rerank request's real pair (`--backend rerank`, `tei-rerank`): its query and documents,
//! its length the query's tokens beside each document's. Lines are used in file order, one prompt or conversation per item; when
//! `n` is larger than the number of lines they are used again from the start.

use std::path::Path;

use serde_json::Value;

use super::{read_file, DatasetError, Prompt};
use crate::config::media::{MAX_IMAGE_FILE_BYTES, MAX_MM_BYTES};
use crate::config::MAX_TOKENS;
use crate::measure::client::Part;
use crate::tokenizer::Tokenizer;
use crate::workload::audio::wav_file;
use crate::workload::media::image_file_url;

/// What is wrong with one line of a jsonl file (the line's number is in
/// [`DatasetError::BadJsonlLine`]).
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("not valid JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("expected a JSON object")]
    NotAnObject,
    #[error("needs a \"prompt\" string, a \"messages\" array or a \"turns\" array")]
    NoPrompt,
    #[error("\"prompt\" must be a string")]
    PromptNotText,
    #[error("\"turns\" must be a non-empty array")]
    NoTurns,
    #[error("turn {0} needs a \"prompt\" string")]
    TurnWithoutPrompt(usize),
    #[error("turn {0} must be a string or {{\"prompt\": ...}}")]
    TurnNotText(usize),
    #[error("turn {turn}: {why}")]
    Turn { turn: usize, why: Box<LineError> },
    #[error("output_len must be a whole number in 1..={MAX_TOKENS} (as --output-len), got {0}")]
    OutputLen(Value),
    #[error("\"messages\" must be an array")]
    MessagesNotArray,
    #[error("\"messages\" is empty")]
    NoMessages,
    #[error("message {0} has no \"content\"")]
    NoContent(usize),
    #[error("message {0}: \"content\" must be a string or an array")]
    ContentNotText(usize),
    #[error("\"documents\" must be a list of 1 to {max} strings beside \"query\" (a rerank pair)", max = crate::config::MAX_INPUTS_PER_REQUEST)]
    Documents,
    #[error("\"query\" must be a string")]
    QueryNotText,
    #[error("\"model\" must be an adapter's name: a string of 1 to {max} bytes without spaces or control characters", max = crate::config::lora::MAX_ADAPTER_NAME)]
    Model,
    #[error("\"image_files\" must be an array of file names, with a \"prompt\"")]
    ImageFiles,
    #[error("image file {file}: {why}")]
    ImageFile { file: String, why: String },
    #[error("\"audio\" must be a WAV file's name or an array of them, with a \"prompt\"")]
    AudioFiles,
    #[error("audio file {file}: {why}")]
    AudioFile { file: String, why: String },
    #[error("--backend openai-audio sends one WAV clip per request: the line names {0} \"audio\" files, not exactly one")]
    NotOneClip(usize),
}

pub(super) fn build(
    path: &Path,
    tok: &Tokenizer,
    output_len: u64,
    n: usize,
) -> Result<Vec<Prompt>, DatasetError> {
    let body = read_file(path)?;
    let bad = |line: usize, reason: LineError| DatasetError::BadJsonlLine {
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
            serde_json::from_str(line).map_err(|e| bad(line_no, LineError::NotJson(e)))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad(line_no, LineError::NotAnObject))?;
        let out = positive(obj.get("output_len"), output_len).map_err(|r| bad(line_no, r))?;
        let model = model(obj.get("model")).map_err(|r| bad(line_no, r))?;
        if let Some(turns) = obj.get("turns") {
            let turns = turns
                .as_array()
                .filter(|t| !t.is_empty())
                .ok_or_else(|| bad(line_no, LineError::NoTurns))?;
            let mut conversation = Vec::with_capacity(turns.len());
            for (k, t) in turns.iter().enumerate() {
                let (text, turn_out) = match t {
                    Value::String(s) => (s.as_str(), out),
                    Value::Object(o) => (
                        (o.get("prompt").and_then(Value::as_str))
                            .ok_or_else(|| bad(line_no, LineError::TurnWithoutPrompt(k)))?,
                        positive(o.get("output_len"), out).map_err(|why| {
                            let why = Box::new(why);
                            bad(line_no, LineError::Turn { turn: k, why })
                        })?,
                    ),
                    _ => return Err(bad(line_no, LineError::TurnNotText(k))),
                };
                conversation.push(Prompt {
                    text: text.to_string(),
                    input_len: tok.count(text) as u64,
                    output_len: turn_out,
                    turn: Some(k as u32),
                    model: model.clone(),
                    ..Default::default()
                });
            }
            prompts.push(conversation);
            continue;
        }
        if let Some(q) = obj.get("query") {
            let query = q
                .as_str()
                .ok_or_else(|| bad(line_no, LineError::QueryNotText))?;
            let docs = documents(obj.get("documents")).map_err(|r| bad(line_no, r))?;
            // What a cross-encoder reads: the query beside each document.
            let q_len = tok.count(query) as u64;
            let d_len: u64 = docs.iter().map(|d| tok.count(d) as u64).sum();
            prompts.push(vec![Prompt {
                text: query.to_string(),
                input_len: d_len + q_len * docs.len() as u64,
                output_len: out,
                model,
                documents: docs,
                ..Default::default()
            }]);
            continue;
        }
        let (text, messages) = if let Some(p) = obj.get("prompt") {
            let p = p
                .as_str()
                .ok_or_else(|| bad(line_no, LineError::PromptNotText))?;
            (p.to_string(), None)
        } else if let Some(m) = obj.get("messages") {
            let text = messages_text(m).map_err(|r| bad(line_no, r))?;
            (text, Some(m.clone()))
        } else if obj.contains_key("audio") {
            // A clip alone (a transcription's file, no prompt field).
            (String::new(), None)
        } else {
            return Err(bad(line_no, LineError::NoPrompt));
        };
        let parts = match obj.get("image_files") {
            None => Vec::new(),
            Some(_) if messages.is_some() => return Err(bad(line_no, LineError::ImageFiles)),
            Some(files) => images(files, path).map_err(|r| bad(line_no, r))?,
        };
        let mut parts = parts;
        match obj.get("audio") {
            None => {}
            Some(_) if messages.is_some() => return Err(bad(line_no, LineError::AudioFiles)),
            Some(files) => parts.extend(clips(files, path).map_err(|r| bad(line_no, r))?),
        }
        let input_len = tok.count(&text) as u64;
        prompts.push(vec![Prompt {
            text,
            input_len,
            output_len: out,
            messages,
            model,
            parts,
            ..Default::default()
        }]);
    }
    if prompts.is_empty() {
        return Err(DatasetError::Empty(path.to_path_buf()));
    }
    let have = prompts.len();
    // Every request holds its images: the run's are bounded before they are copied.
    let bytes = |p: &Vec<Prompt>| -> u64 { p.iter().flat_map(|p| &p.parts).map(Part::bytes).sum() };
    let total: u64 = (0..n).map(|i| bytes(&prompts[i % have])).sum();
    if total > MAX_MM_BYTES {
        return Err(DatasetError::BadFile {
            path: path.to_path_buf(),
            reason: format!("the images of {n} requests would hold {total} bytes in memory, more than {MAX_MM_BYTES}; ask for fewer requests or smaller images"),
        });
    }
    Ok((0..n).flat_map(|i| prompts[i % have].clone()).collect())
}

/// `--backend openai-audio`: the first non-blank line of the jsonl file at `path` that does not
/// name exactly one `"audio"` file, as the error naming the file and the line (a transcription
/// sends one clip). Called only when a built request was found without exactly one clip, so a
/// good file is read once.
pub fn one_clip_per_line(path: &Path) -> Result<(), DatasetError> {
    let body = read_file(path)?;
    for (i, line) in body.lines().enumerate() {
        // The build has read every line as JSON already: a line that is not is skipped here.
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let clips = match v.get("audio") {
            Some(Value::Array(a)) => a.len(),
            Some(_) => 1,
            None => 0,
        };
        if clips != 1 {
            return Err(DatasetError::BadJsonlLine {
                path: path.to_path_buf(),
                line: i + 1,
                reason: LineError::NotOneClip(clips),
            });
        }
    }
    Ok(())
}

/// A rerank pair line's `"documents"`: 1 to `MAX_INPUTS_PER_REQUEST` strings.
fn documents(v: Option<&Value>) -> Result<Vec<String>, LineError> {
    let items = v.and_then(Value::as_array).ok_or(LineError::Documents)?;
    if items.is_empty() || items.len() > crate::config::MAX_INPUTS_PER_REQUEST as usize {
        return Err(LineError::Documents);
    }
    (items.iter())
        .map(|d| d.as_str().map(str::to_string).ok_or(LineError::Documents))
        .collect()
}

/// A line's `"model"`: the LoRA adapter its request goes to, a name as `--lora-modules`
/// takes one; `None` when absent.
fn model(v: Option<&Value>) -> Result<Option<String>, LineError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            let named = crate::config::lora::LoraModule {
                name: s.clone(),
                weight: 1.0,
            };
            crate::config::lora::check(std::slice::from_ref(&named))
                .map_err(|_| LineError::Model)?;
            Ok(Some(named.name))
        }
        Some(_) => Err(LineError::Model),
    }
}

/// A line's `audio`: a WAV file (or a list), each read whole as base64 for an audio part
/// (chat's `input_audio`, a transcription's file).
fn clips(files: &Value, jsonl: &Path) -> Result<Vec<Part>, LineError> {
    let names: Vec<&Value> = match files {
        Value::Array(a) => a.iter().collect(),
        one => vec![one],
    };
    let dir = jsonl.parent().unwrap_or(Path::new("."));
    let mut parts = Vec::with_capacity(names.len());
    for f in names {
        let name = f.as_str().ok_or(LineError::AudioFiles)?;
        let (data, duration) = wav_file(&dir.join(name), MAX_IMAGE_FILE_BYTES).map_err(|why| {
            LineError::AudioFile {
                file: name.to_string(),
                why,
            }
        })?;
        parts.push(Part::Audio {
            data,
            format: "wav".into(),
            duration,
        });
    }
    Ok(parts)
}

/// A line's `image_files`: each file read (relative to the jsonl file's folder) as a data URL.
fn images(files: &Value, jsonl: &Path) -> Result<Vec<Part>, LineError> {
    let files = files.as_array().ok_or(LineError::ImageFiles)?;
    let dir = jsonl.parent().unwrap_or(Path::new("."));
    let mut parts = Vec::with_capacity(files.len());
    for f in files {
        let name = f.as_str().ok_or(LineError::ImageFiles)?;
        let url = image_file_url(&dir.join(name), MAX_IMAGE_FILE_BYTES).map_err(|why| {
            LineError::ImageFile {
                file: name.to_string(),
                why,
            }
        })?;
        parts.push(Part::Image { url });
    }
    Ok(parts)
}

/// An `output_len` value: a positive integer up to the limit of `--output-len`, or `default`
/// when absent.
fn positive(v: Option<&Value>, default: u64) -> Result<u64, LineError> {
    match v {
        None | Some(Value::Null) => Ok(default),
        Some(x) => x
            .as_u64()
            .filter(|&o| o > 0 && o <= MAX_TOKENS)
            .ok_or_else(|| LineError::OutputLen(x.clone())),
    }
}

/// The text contents of a chat `messages` array, joined by "\n".
fn messages_text(m: &Value) -> Result<String, LineError> {
    let arr = m.as_array().ok_or(LineError::MessagesNotArray)?;
    if arr.is_empty() {
        return Err(LineError::NoMessages);
    }
    let mut parts = Vec::with_capacity(arr.len());
    for (i, msg) in arr.iter().enumerate() {
        let content = msg.get("content").ok_or(LineError::NoContent(i))?;
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
            _ => return Err(LineError::ContentNotText(i)),
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
        let e = positive(Some(&huge), 4).unwrap_err().to_string();
        assert!(
            e.contains("1000000000000000000") && e.contains("--output-len"),
            "{e}"
        );
        let most = serde_json::json!(MAX_TOKENS);
        assert_eq!(positive(Some(&most), 4).unwrap(), MAX_TOKENS);
        assert_eq!(positive(None, 4).unwrap(), 4);
    }

    /// Issue 25 §2: a rerank line's documents are 1 to 2,048 strings, or refused by name.
    #[test]
    fn issue_25_a_rerank_line_s_documents_are_strings() {
        use serde_json::json;
        let docs = documents(Some(&json!(["a", "b c"]))).unwrap();
        assert_eq!(docs, ["a", "b c"]);
        for bad in [json!([]), json!("a"), json!([1]), json!(vec!["x"; 2049])] {
            let e = documents(Some(&bad)).unwrap_err().to_string();
            assert!(e.contains("\"documents\""), "{bad}: {e}");
        }
        assert!(documents(None).is_err());
    }

    /// Issue 25 §4: a line's `model` is an adapter's name, or refused by name.
    #[test]
    fn issue_25_a_line_s_model_is_an_adapter_name() {
        use serde_json::json;
        assert_eq!(model(None).unwrap(), None);
        assert_eq!(model(Some(&json!("sql"))).unwrap().as_deref(), Some("sql"));
        for bad in [json!(""), json!("a b"), json!(3), json!(["a"])] {
            let e = model(Some(&bad)).unwrap_err().to_string();
            assert!(e.contains("\"model\""), "{bad}: {e}");
        }
    }
}
