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
//! `n` is larger than the number of lines they are used again from the start. Only the first
//! `n` non-blank lines are read (and their files); a media file named on several lines is read
//! once, and the media the lines hold are bounded by [`MAX_MM_BYTES`] as each file is added,
//! before the lines are used again. A media file must be a regular file (a FIFO or a device
//! is refused by name, never waited on).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::common::{read_file, Prompt};
use super::error::{DatasetError, JsonlLineError as LineError};
use crate::config::media::{MAX_IMAGE_FILE_BYTES, MAX_MM_BYTES};
use crate::config::MAX_TOKENS;
use crate::measure::client::Part;
use crate::tokenizer::Tokenizer;
use crate::workload::media::image_file_url;
use crate::workload::wav::wav_file;

pub(super) fn build(
    path: &Path,
    tok: &Tokenizer,
    output_len: u64,
    n: usize,
) -> Result<Vec<Prompt>, DatasetError> {
    let body = read_file(path)?;
    let mut media = Media::default();
    let mut prompts = Vec::new();
    for (i, line) in body.lines().enumerate() {
        // A line past the ones the run sends is not read (nor its files).
        if prompts.len() == n {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let read = line_prompts(line, path, tok, output_len, &mut media);
        prompts.push(read.map_err(|reason| DatasetError::BadJsonlLine {
            path: path.to_path_buf(),
            line: i + 1,
            reason,
        })?);
    }
    if prompts.is_empty() {
        return Err(DatasetError::Empty(path.to_path_buf()));
    }
    let have = prompts.len();
    // Every request holds its media: the run's are bounded before the lines are used again.
    let bytes = |p: &Vec<Prompt>| -> u64 { p.iter().flat_map(|p| &p.parts).map(Part::bytes).sum() };
    let total: u64 = (0..n).map(|i| bytes(&prompts[i % have])).sum();
    if total > MAX_MM_BYTES {
        return Err(DatasetError::BadFile {
            path: path.to_path_buf(),
            reason: format!("the images and clips of {n} requests would hold {total} bytes in memory, more than {MAX_MM_BYTES}; ask for fewer requests or smaller files"),
        });
    }
    drop(media);
    // Lines used again are copies; the last use of each line is the line itself.
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        match i + have < n {
            true => out.extend(prompts[i % have].iter().cloned()),
            false => out.append(&mut prompts[i % have]),
        }
    }
    Ok(out)
}

/// The media files a build has read, each read once by its path (a file named on many lines
/// is one read), and the bytes the build's lines hold of them, bounded by [`MAX_MM_BYTES`]
/// as each is added.
#[derive(Default)]
struct Media {
    read: HashMap<PathBuf, Part>,
    held: u64,
}

impl Media {
    /// The part of the file at `path`, read by `read` the first time; refused once the lines'
    /// media would hold more than [`MAX_MM_BYTES`].
    fn part(
        &mut self,
        path: PathBuf,
        read: impl FnOnce(&Path) -> Result<Part, LineError>,
    ) -> Result<Part, LineError> {
        let part = match self.read.get(&path) {
            Some(p) => p.clone(),
            None => {
                let p = read(&path)?;
                self.read.insert(path, p.clone());
                p
            }
        };
        self.held = self.held.saturating_add(part.bytes());
        if self.held > MAX_MM_BYTES {
            return Err(LineError::MediaTooLarge(MAX_MM_BYTES));
        }
        Ok(part)
    }
}

/// One non-blank line of the file at `path`: a conversation's turns, a rerank pair, or one
/// prompt (with its images and clips), in the order they are sent.
fn line_prompts(
    line: &str,
    path: &Path,
    tok: &Tokenizer,
    output_len: u64,
    media: &mut Media,
) -> Result<Vec<Prompt>, LineError> {
    let v: Value = serde_json::from_str(line).map_err(LineError::NotJson)?;
    let obj = v.as_object().ok_or(LineError::NotAnObject)?;
    let out = positive(obj.get("output_len"), output_len)?;
    let model = model(obj.get("model"))?;
    if let Some(turns) = obj.get("turns") {
        return conversation(turns, out, model, tok);
    }
    if let Some(q) = obj.get("query") {
        let query = q.as_str().ok_or(LineError::QueryNotText)?;
        let docs = documents(obj.get("documents"))?;
        // What a cross-encoder reads: the query beside each document.
        let q_len = tok.count(query) as u64;
        let d_len: u64 = docs.iter().map(|d| tok.count(d) as u64).sum();
        return Ok(vec![Prompt {
            text: query.to_string(),
            input_len: d_len + q_len * docs.len() as u64,
            output_len: out,
            model,
            documents: docs,
            ..Default::default()
        }]);
    }
    let (text, messages) = if let Some(p) = obj.get("prompt") {
        let p = p.as_str().ok_or(LineError::PromptNotText)?;
        (p.to_string(), None)
    } else if let Some(m) = obj.get("messages") {
        (messages_text(m)?, Some(m.clone()))
    } else if obj.contains_key("audio") {
        // A clip alone (a transcription's file, no prompt field).
        (String::new(), None)
    } else {
        return Err(LineError::NoPrompt);
    };
    let mut parts = match obj.get("image_files") {
        None => Vec::new(),
        Some(_) if messages.is_some() => return Err(LineError::ImageFiles),
        Some(files) => images(files, path, media)?,
    };
    match obj.get("audio") {
        None => {}
        Some(_) if messages.is_some() => return Err(LineError::AudioFiles),
        Some(files) => parts.extend(clips(files, path, media)?),
    }
    let input_len = tok.count(&text) as u64;
    Ok(vec![Prompt {
        text,
        input_len,
        output_len: out,
        messages,
        model,
        parts,
        ..Default::default()
    }])
}

/// A line's `"turns"`: a conversation's prompts, turns 0, 1, ... in order, each asking for
/// its own `output_len` or the line's (`out`).
fn conversation(
    turns: &Value,
    out: u64,
    model: Option<String>,
    tok: &Tokenizer,
) -> Result<Vec<Prompt>, LineError> {
    let turns = (turns.as_array())
        .filter(|t| !t.is_empty())
        .ok_or(LineError::NoTurns)?;
    let mut conversation = Vec::with_capacity(turns.len());
    for (k, t) in turns.iter().enumerate() {
        let (text, turn_out) = match t {
            Value::String(s) => (s.as_str(), out),
            Value::Object(o) => (
                (o.get("prompt").and_then(Value::as_str)).ok_or(LineError::TurnWithoutPrompt(k))?,
                positive(o.get("output_len"), out).map_err(|why| LineError::Turn {
                    turn: k,
                    why: Box::new(why),
                })?,
            ),
            _ => return Err(LineError::TurnNotText(k)),
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
    Ok(conversation)
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
fn clips(files: &Value, jsonl: &Path, media: &mut Media) -> Result<Vec<Part>, LineError> {
    let names: Vec<&Value> = match files {
        Value::Array(a) => a.iter().collect(),
        one => vec![one],
    };
    let dir = jsonl.parent().unwrap_or(Path::new("."));
    let mut parts = Vec::with_capacity(names.len());
    for f in names {
        let name = f.as_str().ok_or(LineError::AudioFiles)?;
        let read = |file: &Path| {
            let (data, duration) =
                wav_file(file, MAX_IMAGE_FILE_BYTES).map_err(|why| LineError::AudioFile {
                    file: name.to_string(),
                    why,
                })?;
            Ok(Part::Audio {
                data,
                format: "wav".into(),
                duration,
            })
        };
        parts.push(media.part(dir.join(name), read)?);
    }
    Ok(parts)
}

/// A line's `image_files`: each file read (relative to the jsonl file's folder) as a data URL.
fn images(files: &Value, jsonl: &Path, media: &mut Media) -> Result<Vec<Part>, LineError> {
    let files = files.as_array().ok_or(LineError::ImageFiles)?;
    let dir = jsonl.parent().unwrap_or(Path::new("."));
    let mut parts = Vec::with_capacity(files.len());
    for f in files {
        let name = f.as_str().ok_or(LineError::ImageFiles)?;
        let read = |file: &Path| {
            let url =
                image_file_url(file, MAX_IMAGE_FILE_BYTES).map_err(|why| LineError::ImageFile {
                    file: name.to_string(),
                    why,
                })?;
            Ok(Part::Image { url })
        };
        parts.push(media.part(dir.join(name), read)?);
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
    fn an_output_len_is_capped_like_the_flag() {
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

    /// A rerank line's documents are 1 to 2,048 strings, or refused by name.
    #[test]
    fn a_rerank_line_s_documents_are_strings() {
        use serde_json::json;
        let docs = documents(Some(&json!(["a", "b c"]))).unwrap();
        assert_eq!(docs, ["a", "b c"]);
        for bad in [json!([]), json!("a"), json!([1]), json!(vec!["x"; 2049])] {
            let e = documents(Some(&bad)).unwrap_err().to_string();
            assert!(e.contains("\"documents\""), "{bad}: {e}");
        }
        assert!(documents(None).is_err());
    }

    /// A line's `model` is an adapter's name, or refused by name.
    #[test]
    fn a_line_s_model_is_an_adapter_name() {
        use serde_json::json;
        assert_eq!(model(None).unwrap(), None);
        assert_eq!(model(Some(&json!("sql"))).unwrap().as_deref(), Some("sql"));
        for bad in [json!(""), json!("a b"), json!(3), json!(["a"])] {
            let e = model(Some(&bad)).unwrap_err().to_string();
            assert!(e.contains("\"model\""), "{bad}: {e}");
        }
    }
}
