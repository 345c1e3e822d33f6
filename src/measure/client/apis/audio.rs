//! OpenAI transcriptions, `POST /v1/audio/transcriptions` (`--backend openai-audio`, vLLM's
//! name; vLLM serving Whisper): a `multipart/form-data` body of the request's one WAV clip as
//! the `file` part and vLLM's fields as text parts (`model`, `language`,
//! `max_completion_tokens`, `stream`, `stream_include_usage`,
//! `stream_continuous_usage_stats`, `temperature`, the prompt as `prompt` when there is one),
//! its text streamed as chat-completion-like chunks (`choices[0].delta.content`, then
//! `usage`), read with the OpenAI event reading of `completions.rs`.
//!
//! The form's fields are built as a JSON object like every other body (so `--extra-body`
//! merges into them and the record keeps them), then encoded once, before the request's clock
//! starts ([`Api::encode`]): each field a text part (a string as written, anything else as its
//! JSON), the clip's bytes last. The boundary is fixed; a field name or value that holds it
//! or a line break, a request without exactly one audio clip, media of another kind and a
//! dataset's messages are refused (kind `prompt`, never sent). Hand-written: a few text parts
//! and one file part do not need the `multipart` or `mime` crates (README, "Dependencies").

use base64::Engine;
use serde_json::{json, Value};

use super::completions::OpenAiStream;
use crate::measure::client::api::{unsendable, Answer, Api, BodySpec, Failure, Part};

/// The form's boundary: long and odd enough that no field holds it by chance; a body part
/// that does is refused.
macro_rules! boundary {
    () => {
        "servebench-form-6c1f0e9a42d7b358a1"
    };
}
const BOUNDARY: &str = boundary!();

/// OpenAI `POST /v1/audio/transcriptions`, streamed.
pub struct OpenAiAudio;

impl Api for OpenAiAudio {
    fn body(&self, spec: &BodySpec) -> Result<Value, Failure> {
        clip(spec)?;
        let mut body = json!({
            "model": spec.model,
            "language": "en",
            "max_completion_tokens": spec.max_tokens,
            "stream": true,
            "stream_include_usage": true,
            "stream_continuous_usage_stats": true,
            "temperature": 0.0,
        });
        if !spec.prompt.is_empty() {
            body["prompt"] = json!(spec.prompt);
        }
        Ok(spec.with_ignore_eos(body))
    }
    fn answer(&self) -> Answer<'_> {
        Answer::Streamed(&OpenAiStream)
    }
    /// `max_completion_tokens` wins over `max_tokens` where both are set (as in vLLM).
    fn max_tokens(&self, body: &Value) -> Option<u64> {
        let limit = body.get("max_completion_tokens").filter(|v| !v.is_null());
        limit.or_else(|| body.get("max_tokens"))?.as_u64()
    }
    fn encode(&self, body: &Value, spec: &BodySpec) -> Result<Vec<u8>, Failure> {
        let data = clip(spec)?;
        let wav = (base64::engine::general_purpose::STANDARD.decode(data))
            .map_err(|e| unsendable(&format!("audio whose base64 cannot be read ({e})")))?;
        form(body, &wav)
    }
    fn content_type(&self) -> Option<&'static str> {
        Some(CONTENT_TYPE)
    }
}

/// The body's content type, with its boundary.
const CONTENT_TYPE: &str = concat!("multipart/form-data; boundary=", boundary!());

/// The request's one WAV clip (base64), or the refusal naming what it holds instead.
fn clip<'a>(spec: &BodySpec<'a>) -> Result<&'a str, Failure> {
    if spec.messages.is_some() {
        return Err(unsendable("a dataset's chat messages"));
    }
    let mut clips = spec.parts.iter().map(|p| match p {
        Part::Audio { data, format, .. } if format == "wav" => Ok(data.as_str()),
        other => Err(other),
    });
    match (clips.next(), clips.next()) {
        (Some(Ok(data)), None) => Ok(data),
        (None, _) => Err(unsendable(
            "no audio clip (a transcription sends one WAV file)",
        )),
        (Some(Err(p)), _) | (Some(Ok(_)), Some(Err(p))) => Err(unsendable(p.kind())),
        (Some(Ok(_)), Some(Ok(_))) => Err(unsendable(
            "several audio clips (a transcription sends one WAV file)",
        )),
    }
}

/// The form: each field of `fields` a text part, then `wav` as the `file` part.
fn form(fields: &Value, wav: &[u8]) -> Result<Vec<u8>, Failure> {
    let Some(fields) = fields.as_object() else {
        return Err(unsendable("form fields that are not an object"));
    };
    let mut out = Vec::with_capacity(wav.len() + 96 * (fields.len() + 2));
    for (name, value) in fields {
        let text = match value {
            Value::Null => continue,
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if !plain(name) || text.contains(BOUNDARY) {
            return Err(unsendable(&format!(
                "the form field {:?}, whose name or value cannot be a form part",
                name.chars().take(40).collect::<String>()
            )));
        }
        out.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        let head = format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n");
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if wav
        .windows(BOUNDARY.len())
        .any(|w| w == BOUNDARY.as_bytes())
    {
        return Err(unsendable("an audio file that holds the form's boundary"));
    }
    out.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
    out.extend_from_slice(
        b"Content-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\nContent-Type: audio/wav\r\n\r\n",
    );
    out.extend_from_slice(wav);
    out.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    Ok(out)
}

/// A field name a part's header can carry as written: visible ASCII without a quote or a
/// backslash.
fn plain(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::client::api::merge_json;
    use crate::measure::record::FailureKind;
    use std::time::Duration;

    fn spec<'a>(prompt: &'a str, parts: &'a [Part]) -> BodySpec<'a> {
        BodySpec {
            model: "whisper",
            prompt,
            batch: &[],
            messages: None,
            parts,
            max_tokens: 7,
            ignore_eos: false,
        }
    }

    fn audio(bytes: &[u8]) -> Part {
        Part::Audio {
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            format: "wav".into(),
            duration: Duration::from_secs(1),
        }
    }

    /// A transcription is a multipart form of vLLM's fields and the clip's
    /// bytes as the `file` part, `--extra-body` merged into the fields.
    #[test]
    fn a_transcription_is_a_multipart_form_with_its_clip() {
        let parts = [audio(b"RIFF....WAVEdata")];
        let s = spec("names: Ada", &parts);
        let mut body = OpenAiAudio.body(&s).unwrap();
        merge_json(&mut body, &json!({"language": "de", "top_p": 0.5}));
        assert_eq!(OpenAiAudio.max_tokens(&body), Some(7));
        let bytes = OpenAiAudio.encode(&body, &s).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let field = |name: &str, value: &str| {
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
        };
        for (name, value) in [
            ("model", "whisper"),
            ("language", "de"),
            ("max_completion_tokens", "7"),
            ("stream", "true"),
            ("stream_include_usage", "true"),
            ("prompt", "names: Ada"),
            ("top_p", "0.5"),
        ] {
            assert!(text.contains(&field(name, value)), "{name}: {text}");
        }
        let file = format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF....WAVEdata\r\n--{BOUNDARY}--\r\n"
        );
        assert!(text.ends_with(&file), "{text}");
        assert_eq!(
            OpenAiAudio.content_type().unwrap(),
            format!("multipart/form-data; boundary={BOUNDARY}")
        );
        let no_prompt = OpenAiAudio.body(&spec("", &parts)).unwrap();
        assert!(no_prompt.get("prompt").is_none());
    }

    /// What a transcription cannot carry is a failure of kind `prompt` naming
    /// it, never sent.
    #[test]
    fn a_transcription_without_one_clip_is_refused() {
        let image = Part::Image {
            url: "data:image/png;base64,iVBO".into(),
        };
        let clip = audio(b"RIFF");
        let twice = [clip.clone(), clip.clone()];
        let mixed = [clip.clone(), image];
        for (parts, says) in [
            (&[][..], "no audio clip"),
            (&twice[..], "several audio clips"),
            (&mixed[..], "an image"),
        ] {
            let (kind, why) = OpenAiAudio.body(&spec("p", parts)).unwrap_err();
            assert_eq!(kind, FailureKind::Prompt);
            assert!(why.contains(says), "{why}");
        }
        let one = [clip];
        let s = spec("p", &one);
        let mut body = OpenAiAudio.body(&s).unwrap();
        body["bad\"name"] = json!(1);
        assert!(OpenAiAudio.encode(&body, &s).is_err());
        let mut body = OpenAiAudio.body(&s).unwrap();
        body["prompt"] = json!(format!("x{BOUNDARY}"));
        assert!(OpenAiAudio.encode(&body, &s).is_err());
    }
}
