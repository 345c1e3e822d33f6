//! llama.cpp's native `POST /completion`: `content` per event, `tokens` (ids) when the server
//! sends them, and a final `stop: true` event with its counts and `timings`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::measure::client::api::{
    malformed, server_error, text_only, Answer, Api, BodySpec, Failure, Parsed, Streamed, Usage,
};
use crate::measure::client::usage::Reported;

#[derive(Deserialize)]
struct LlamaEvent<'a> {
    #[serde(default, borrow)]
    content: Cow<'a, str>,
    tokens: Option<Vec<Value>>,
    #[serde(default)]
    stop: bool,
    tokens_predicted: Option<Reported>,
    tokens_evaluated: Option<Reported>,
    timings: Option<Value>,
    error: Option<Value>,
}

/// llama.cpp native `POST /completion`: `content` per event, `tokens` (ids) when the server
/// sends them, and a final `stop: true` event with counts and `timings`.
pub struct LlamaCpp;

impl Api for LlamaCpp {
    fn body(&self, spec: &BodySpec) -> Result<Value, Failure> {
        text_only(spec)?;
        let body = json!({"prompt": spec.prompt, "n_predict": spec.max_tokens, "stream": true, "temperature": 0.0});
        Ok(spec.with_ignore_eos(body))
    }
    fn answer(&self) -> Answer<'_> {
        Answer::Streamed(self)
    }
    /// `n_predict`; a negative one (unlimited) sets no limit.
    fn max_tokens(&self, body: &Value) -> Option<u64> {
        body.get("n_predict")?.as_u64()
    }
}

impl Streamed for LlamaCpp {
    fn parse<'a>(&self, _event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, Failure> {
        let ev: LlamaEvent<'a> = serde_json::from_str(data).map_err(|e| malformed(data, e))?;
        if let Some(err) = server_error(ev.error.as_ref(), None, None) {
            return Err(err);
        }
        let mut parsed = Parsed {
            content: ev.content,
            timings: ev.timings,
            done: ev.stop,
            ..Parsed::default()
        };
        if !parsed.content.is_empty() {
            parsed.tokens = ev.tokens.map(|t| t.len() as u32).filter(|&n| n > 0);
        }
        if ev.stop {
            parsed.usage = Some(Usage {
                prompt_tokens: ev.tokens_evaluated,
                completion_tokens: ev.tokens_predicted,
                cached_tokens: None,
                reasoning_tokens: None,
            });
        }
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::super::completions::OpenAiStream;
    use super::*;

    #[test]
    fn llamacpp_native_events() {
        let p = LlamaCpp
            .parse(None, r#"{"content":"日本","tokens":[1,2],"stop":false}"#)
            .unwrap();
        assert_eq!((p.content.as_ref(), p.tokens), ("日本", Some(2)));
        let last = LlamaCpp.parse(None, r#"{"content":"","tokens":[],"stop":true,"tokens_predicted":9,"tokens_evaluated":4,"timings":{"predicted_per_token_ms":7.5}}"#).unwrap();
        assert!(last.done && !last.has_output());
        assert_eq!(
            last.usage,
            Some(Usage {
                prompt_tokens: Some(Reported::Count(4)),
                completion_tokens: Some(Reported::Count(9)),
                cached_tokens: None,
                reasoning_tokens: None,
            })
        );
        assert!(last.timings.is_some());
    }

    /// llama.cpp's `timings` is read on every API. Lines as the real server sends them.
    #[test]
    fn llamacpp_timings_are_read_on_every_api() {
        // /v1/completions: in the chunk that carries `finish_reason` (and usage).
        let completion = r#"{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"object":"text_completion","usage":{"completion_tokens":4,"prompt_tokens":2,"total_tokens":6,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"cache_n":0,"prompt_n":2,"prompt_ms":22.236,"predicted_n":4,"predicted_ms":35.651,"predicted_per_token_ms":11.883666666666668}}"#;
        let usage = OpenAiStream.parse(None, completion).unwrap().usage.unwrap();
        assert_eq!(usage.cached_tokens, Some(Reported::Count(0)));
        // /v1/chat/completions: in the usage-only chunk after the finish chunk.
        let chat = r#"{"choices":[],"object":"chat.completion.chunk","usage":{"completion_tokens":3,"prompt_tokens":31,"total_tokens":34},"timings":{"cache_n":0,"prompt_n":31,"prompt_ms":244.785,"predicted_n":3,"predicted_ms":24.991,"predicted_per_token_ms":12.4955}}"#;
        // /completion (native): in the `stop: true` event.
        let native = r#"{"index":0,"content":"","tokens":[],"stop":true,"tokens_predicted":3,"tokens_evaluated":1,"timings":{"cache_n":0,"prompt_n":1,"prompt_ms":18.259,"predicted_n":3,"predicted_ms":33.023,"predicted_per_token_ms":16.5115}}"#;
        for (api, data, per_token) in [
            (
                &OpenAiStream as &dyn Streamed,
                completion,
                11.883666666666668,
            ),
            (&OpenAiStream, chat, 12.4955),
            (&LlamaCpp, native, 16.5115),
        ] {
            let p = api.parse(None, data).unwrap();
            let t = p.timings.as_ref().expect("timings read");
            assert_eq!(t["predicted_per_token_ms"], per_token, "{data}");
            assert!(!p.has_output());
            assert!(p.usage.is_some());
        }
    }
}
