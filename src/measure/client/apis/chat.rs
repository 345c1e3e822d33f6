//! OpenAI chat completions, `POST /v1/chat/completions`: the dataset's messages (or one user
//! turn of the prompt, with its media parts as OpenAI content parts: `image_url`,
//! `video_url` (vLLM's extension), `input_audio`), read with the OpenAI event reading of `completions.rs`; structured output
//! asked as `response_format` or `tools`.

use serde_json::{json, Value};

use super::completions::{stream_options, OpenAiCompletions, OpenAiStream};
use crate::config::structured::{StructuredOutput, Tool};
use crate::measure::client::api::{messages, Answer, Api, BodySpec, Failure, Part};

/// A media part as an OpenAI content part.
fn openai_part(p: &Part) -> Option<Value> {
    Some(match p {
        Part::Image { url } => json!({"type": "image_url", "image_url": {"url": url}}),
        Part::Video { url, .. } => json!({"type": "video_url", "video_url": {"url": url}}),
        Part::Audio { data, format, .. } => {
            json!({"type": "input_audio", "input_audio": {"data": data, "format": format}})
        }
    })
}

/// OpenAI `POST /v1/chat/completions`. `max_tokens` is sent (not `max_completion_tokens`):
/// every self-hosted server accepts it.
pub struct OpenAiChat;

impl Api for OpenAiChat {
    fn body(&self, spec: &BodySpec) -> Result<Value, Failure> {
        let text = |t: &str| json!({"type": "text", "text": t});
        let messages = messages(spec, text, openai_part)?;
        let mut body =
            json!({"model": spec.model, "messages": messages, "max_tokens": spec.max_tokens});
        stream_options(&mut body, spec);
        Ok(body)
    }
    fn answer(&self) -> Answer<'_> {
        Answer::Streamed(&OpenAiStream)
    }
    /// `max_completion_tokens` wins over `max_tokens` where both are set (as in vLLM).
    fn max_tokens(&self, body: &Value) -> Option<u64> {
        let limit = body.get("max_completion_tokens").filter(|v| !v.is_null());
        limit.or_else(|| body.get("max_tokens"))?.as_u64()
    }
    fn takes_messages(&self) -> bool {
        true
    }
    /// Tools as `tools` with `tool_choice: "required"`, so every answer is a call; the rest
    /// as completions sends it (a schema as `response_format`, a regex, choice or grammar in
    /// vLLM's `structured_outputs` field or its older `guided_*` field).
    fn structured(&self, body: &mut Value, s: &StructuredOutput) -> Result<(), Failure> {
        if let StructuredOutput::Tools { tools } = s {
            body["tools"] = tools.iter().map(Tool::openai).collect();
            body["tool_choice"] = json!("required");
            return Ok(());
        }
        OpenAiCompletions.structured(body, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prompt with an image and audio goes out as one user message of OpenAI
    /// content parts, the text first.
    #[test]
    fn media_parts_are_openai_content_parts() {
        let parts = [
            Part::Image {
                url: "data:image/png;base64,iVBO".into(),
            },
            Part::Audio {
                data: "UklG".into(),
                format: "wav".into(),
                duration: std::time::Duration::ZERO,
            },
        ];
        let body = OpenAiChat
            .body(&BodySpec {
                model: "m",
                prompt: "describe",
                batch: &[],
                messages: None,
                parts: &parts,
                max_tokens: 4,
                ignore_eos: false,
            })
            .unwrap();
        let content = &body["messages"][0]["content"];
        assert_eq!(content[0], json!({"type": "text", "text": "describe"}));
        assert_eq!(content[1]["image_url"]["url"], "data:image/png;base64,iVBO");
        assert_eq!(content[2]["input_audio"]["format"], "wav");
        assert_eq!(body["stream"], true);
    }
}
