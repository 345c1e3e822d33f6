//! OpenAI / vLLM transcriptions: `POST /v1/audio/transcriptions`, a `multipart/form-data`
//! body (`form.rs`) of one WAV `file` and text fields, streamed as vLLM streams it
//! (`transcription.chunk` events of `choices[0].delta.content`, the usage event when
//! `stream_include_usage`, `data: [DONE]`) on the same schedule as chat, or answered whole
//! (`{"text": ..., "usage": ...}`).
//!
//! The clip's tokens follow the audio rule of `media.rs` (`ceil(seconds · 25) + 2`), with the
//! `prompt` field's words beside them: together the request's `usage.prompt_tokens`,
//! prefilled by an engine preset like any prompt. A body that is not a form, a form without a
//! `file` part, a file that is not a whole WAV, and a field that does not read (a
//! `max_completion_tokens` that is not a count) are answered 400 naming what is wrong.
//!
//! # What it must not touch
//! Timing, faults and statistics (`stream/`, `common.rs`); other APIs' formats; the form's
//! reading (`form.rs`) and the clip's (`media.rs`).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use serde_json::{json, Value};

use super::common::{
    resolve_media_prompt, stream_answer, token_budget, whole_answer, AppState, Gen,
};
use super::form::{boundary, parts};
#[cfg(test)]
use super::media::tests::wav;
use super::media::{audio_tokens, wav_clip};
use super::reject::Answer;
use crate::sim::error::TranscriptionError;
use crate::sim::http1::Arrival;
use crate::sim::state::Shared;
use crate::sim::stream::{Framer, ServerTimes};
use crate::sim::text::TokenGen;

/// The fields the simulator reads, as the form gave them.
#[derive(Default)]
struct Fields {
    prompt: Option<String>,
    max_tokens: Option<u64>,
    stream: bool,
    include_usage: bool,
    ignore_eos: bool,
    priority: Option<i64>,
}

/// A form field's boolean, as Python's `str(True)` or JSON writes it.
fn truthy(v: &str) -> bool {
    matches!(v.trim(), "true" | "True" | "1")
}

/// The form's clip (its frames and rate) and fields; an error names what is wrong.
fn read(headers: &HeaderMap, body: &[u8]) -> Result<((u64, u64), Fields), TranscriptionError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let b = boundary(ct)?;
    let mut clip = None;
    let mut f = Fields::default();
    for p in parts(body, &b)? {
        if p.name == "file" {
            let clip_of = wav_clip(p.bytes).map_err(TranscriptionError::File)?;
            clip = Some(clip_of);
            continue;
        }
        let text = || {
            std::str::from_utf8(p.bytes).map_err(|_| TranscriptionError::NotUtf8 {
                field: p.name.clone(),
            })
        };
        let count = |field: &str| -> Result<u64, TranscriptionError> {
            let t = text()?;
            t.trim().parse().map_err(|_| TranscriptionError::NotCount {
                field: field.to_string(),
                shown: t.chars().take(20).collect(),
            })
        };
        match p.name.as_str() {
            "prompt" => f.prompt = Some(text()?.to_string()),
            "max_completion_tokens" => f.max_tokens = Some(count("max_completion_tokens")?),
            "max_tokens" if f.max_tokens.is_none() => f.max_tokens = Some(count("max_tokens")?),
            "stream" => f.stream = truthy(text()?),
            "stream_include_usage" => f.include_usage = truthy(text()?),
            "ignore_eos" => f.ignore_eos = truthy(text()?),
            "priority" => f.priority = text()?.trim().parse().ok(),
            _ => {}
        }
    }
    let clip = clip.ok_or(TranscriptionError::NoFile)?;
    Ok((clip, f))
}

struct TranscriptionFramer {
    /// Everything of an event up to the delta object.
    head: String,
    gen: TokenGen,
    /// The usage event's start, when asked for (its usage object written).
    usage: Option<String>,
    finish: &'static str,
}

const TAIL: &[u8] = br#","finish_reason":null,"stop_reason":null}]}"#;

impl Framer for TranscriptionFramer {
    fn content(&mut self, out: &mut Vec<u8>, _chunk: u32, start: u32, end: u32, _last: bool) {
        out.extend_from_slice(self.head.as_bytes());
        out.extend_from_slice(br#"{"content":""#);
        self.gen.push_text(out, start, end);
        out.extend_from_slice(br#""}"#);
        out.extend_from_slice(TAIL);
        out.extend_from_slice(b"\n\n");
    }

    fn trailer(&mut self, out: &mut Vec<u8>, _times: &ServerTimes) {
        out.extend_from_slice(self.head.as_bytes());
        out.extend_from_slice(br#"{},"finish_reason":""#);
        out.extend_from_slice(self.finish.as_bytes());
        out.extend_from_slice(br#"","stop_reason":null}]}"#);
        out.extend_from_slice(b"\n\n");
        if let Some(usage) = &self.usage {
            out.extend_from_slice(usage.as_bytes());
            out.extend_from_slice(b"}\n\n");
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
    }
}

fn usage(prompt: u64, completion: u32) -> Value {
    let completion = u64::from(completion);
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    })
}

pub(crate) async fn transcriptions(
    State(shared): AppState,
    Arrival(t0): Arrival,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let ((frames, rate), f) = read(&headers, &body)?;
    let budget = token_budget(&shared, "max_completion_tokens", f.max_tokens)?;
    let media = audio_tokens(frames, rate);
    let prompt = f.prompt.map(Value::String);
    let mut r = resolve_media_prompt(&shared, t0, prompt.iter(), media, budget, f.ignore_eos)?;
    r.priority = f.priority.unwrap_or(0);
    answer(shared, r, f.stream, f.include_usage).await
}

async fn answer(
    shared: std::sync::Arc<Shared>,
    r: Gen,
    stream: bool,
    include_usage: bool,
) -> Answer {
    let (prompt_tokens, tokens) = (r.prompt_tokens, r.tokens);
    let gen = TokenGen::new(shared.config.seed, r.n);
    let id = format!("trsc-{}", r.n);
    let model = shared.model_json.as_str();
    let created = r.created;
    let finish = r.finish.openai();
    if stream {
        let head = format!(
            "data: {{\"id\":\"{id}\",\"object\":\"transcription.chunk\",\"created\":{created},\"model\":{model},\"choices\":[{{\"delta\":"
        );
        let usage = (shared.config.usage && include_usage).then(|| {
            format!(
                "data: {{\"id\":\"{id}\",\"object\":\"transcription.chunk\",\"created\":{created},\"model\":{model},\"choices\":[],\"usage\":{}",
                usage(prompt_tokens, tokens)
            )
        });
        let framer = TranscriptionFramer {
            head,
            gen,
            usage,
            finish,
        };
        return stream_answer(shared, &r, framer).await;
    }
    let usage = shared.config.usage.then(|| usage(prompt_tokens, tokens));
    whole_answer(shared.clone(), &r, move |_| {
        json!({"text": gen.text(0, tokens), "usage": usage}).to_string()
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(fields: &[(&str, &[u8])]) -> (HeaderMap, Vec<u8>) {
        let mut h = HeaderMap::new();
        let ct = "multipart/form-data; boundary=B0";
        h.insert(header::CONTENT_TYPE, ct.parse().unwrap());
        let mut body = Vec::new();
        for (name, bytes) in fields {
            let file = if *name == "file" {
                "; filename=\"a.wav\""
            } else {
                ""
            };
            body.extend_from_slice(
                format!("--B0\r\nContent-Disposition: form-data; name=\"{name}\"{file}\r\n\r\n")
                    .as_bytes(),
            );
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(b"--B0--\r\n");
        (h, body)
    }

    /// The clip's frames and rate and the fields read from the form; a form
    /// without a whole WAV file is refused naming it.
    #[test]
    fn a_transcription_form_is_read_or_refused_by_name() {
        let clip = wav(24_000, 16_000);
        let (h, body) = form(&[
            ("model", &b"m"[..]),
            ("max_completion_tokens", &b"9"[..]),
            ("stream", &b"True"[..]),
            ("stream_include_usage", &b"true"[..]),
            ("prompt", &b"two words"[..]),
            ("file", &clip[..]),
        ]);
        let (c, f) = read(&h, &body).unwrap();
        assert_eq!(c, (24_000, 16_000));
        assert_eq!(audio_tokens(c.0, c.1), 40);
        assert_eq!(
            (f.max_tokens, f.stream, f.include_usage),
            (Some(9), true, true)
        );
        assert_eq!(f.prompt.as_deref(), Some("two words"));
        let mut cut = clip.clone();
        cut.truncate(cut.len() - 10);
        for (fields, says) in [
            (vec![("model", &b"m"[..])], "no file part"),
            (
                vec![("file", &b"ID3 mp3"[..])],
                "the file part: the audio is not a WAV",
            ),
            (vec![("file", &cut[..])], "cut short"),
            (
                vec![("file", &clip[..]), ("max_completion_tokens", &b"many"[..])],
                "max_completion_tokens must be a whole number",
            ),
        ] {
            let (h, body) = form(&fields);
            let e = read(&h, &body).err().unwrap().to_string();
            assert!(e.contains(says), "{e}");
        }
        let e = read(&HeaderMap::new(), b"{}").err().unwrap().to_string();
        assert!(e.contains("content type"), "{e}");
    }
}
