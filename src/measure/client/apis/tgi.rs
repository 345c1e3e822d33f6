//! Hugging Face TGI, `POST /generate_stream`: one event per token, the last with
//! `generated_text` and (asked for) `details.generated_tokens`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::measure::client::api::{
    malformed, server_error, text_only, Answer, Api, BodySpec, Failure, Parsed, Streamed, Usage,
};
use crate::measure::client::usage::Reported;
use crate::measure::record::FailureKind;

#[derive(Deserialize)]
struct TgiEvent<'a> {
    #[serde(borrow)]
    token: Option<TgiToken<'a>>,
    generated_text: Option<Value>,
    details: Option<TgiDetails>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct TgiToken<'a> {
    #[serde(borrow)]
    text: Cow<'a, str>,
    #[serde(default)]
    special: bool,
}

#[derive(Deserialize)]
struct TgiDetails {
    generated_tokens: Option<Reported>,
}

/// Hugging Face TGI `POST /generate_stream`: one event per token; the last carries
/// `generated_text` and, when asked for, `details.generated_tokens`. TGI has no ignore-EOS
/// parameter, so `--ignore-eos` does not change its body.
pub struct Tgi;

impl Api for Tgi {
    fn body(&self, spec: &BodySpec) -> Result<Value, Failure> {
        text_only(spec)?;
        Ok(json!({
            "inputs": spec.prompt,
            "parameters": {"max_new_tokens": spec.max_tokens, "details": true, "do_sample": false},
        }))
    }
    fn answer(&self) -> Answer<'_> {
        Answer::Streamed(self)
    }
    fn max_tokens(&self, body: &Value) -> Option<u64> {
        body.get("parameters")?.get("max_new_tokens")?.as_u64()
    }
}

impl Streamed for Tgi {
    fn parse<'a>(&self, event: Option<&str>, data: &'a str) -> Result<Parsed<'a>, Failure> {
        let ev: TgiEvent<'a> = serde_json::from_str(data).map_err(|e| malformed(data, e))?;
        if event == Some("error") || ev.error.is_some() {
            return Err(server_error(ev.error.as_ref(), Some("error"), Some(data))
                .unwrap_or((FailureKind::ServerError, data.to_string())));
        }
        let mut parsed = Parsed::default();
        if let Some(token) = ev.token.filter(|t| !t.special) {
            parsed.content = token.text;
            parsed.tokens = Some(1);
        }
        if ev.generated_text.is_some_and(|g| !g.is_null()) {
            parsed.done = true;
        }
        if let Some(n) = ev.details.and_then(|d| d.generated_tokens) {
            parsed.usage = Some(Usage {
                prompt_tokens: None,
                completion_tokens: Some(n),
                cached_tokens: None,
                reasoning_tokens: None,
            });
        }
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tgi_tokens_and_details() {
        let p = Tgi.parse(None, r#"{"index":1,"token":{"id":5,"text":" a","logprob":-0.1,"special":false},"generated_text":null,"details":null}"#).unwrap();
        assert_eq!(
            (p.content.as_ref(), p.tokens, p.done),
            (" a", Some(1), false)
        );
        let last = Tgi.parse(None, r#"{"index":2,"token":{"id":6,"text":" b","special":false},"generated_text":" a b","details":{"finish_reason":"length","generated_tokens":2,"seed":null}}"#).unwrap();
        assert!(last.done);
        assert_eq!(
            last.usage.unwrap().completion_tokens,
            Some(Reported::Count(2))
        );
        let (k, _) = Tgi
            .parse(None, r#"{"error":"overloaded","error_type":"overloaded"}"#)
            .unwrap_err();
        assert_eq!(k, FailureKind::ServerError);
    }

    #[test]
    fn extra_body_merges_into_tgi_parameters() {
        let mut body = Tgi
            .body(&BodySpec {
                model: "m",
                prompt: "p",
                batch: &[],
                messages: None,
                parts: &[],
                max_tokens: 3,
                ignore_eos: false,
            })
            .unwrap();
        crate::measure::client::api::merge_json(
            &mut body,
            &json!({"parameters": {"top_k": 5}, "x": 1}),
        );
        assert_eq!(body["parameters"]["max_new_tokens"], 3);
        assert_eq!(body["parameters"]["top_k"], 5);
        assert_eq!(body["x"], 1);
    }
}
