//! OpenAI embeddings, `POST /v1/embeddings` (vLLM, llama.cpp with `--embedding`, TEI, ...;
//! vLLM's benchmark calls this backend `openai-embeddings`): a whole JSON answer, one vector per
//! input. Facts: `../shared/reference/FORMATS.md`, "Embeddings".
//!
//! The body carries the request's inputs as `input` (a string for one, a list for a batch);
//! `dimensions` and `encoding_format` go in through `--extra-body`, and the answer is judged
//! against the body as sent: one embedding per input, each index once, every vector of one
//! length (the `dimensions` asked, when asked), as floats or as base64 of little-endian f32
//! (`encoding_format: base64`). Vectors are checked as they are parsed, never kept.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::measure::client::api::{
    malformed_answer, server_error, text_only, Answer, Answered, Api, BodySpec, Failure, Usage,
    Whole,
};
use crate::measure::client::usage::Reported;
use crate::measure::record::FailureKind;

/// OpenAI `POST /v1/embeddings`.
pub struct OpenAiEmbeddings;

impl Api for OpenAiEmbeddings {
    fn body(&self, spec: &BodySpec) -> Result<Value, Failure> {
        text_only(spec)?;
        let input = match spec.batch {
            [] => json!(spec.prompt),
            _ => json!(spec.inputs().collect::<Vec<_>>()),
        };
        Ok(json!({"model": spec.model, "input": input}))
    }

    fn answer(&self) -> Answer<'_> {
        Answer::Whole(self)
    }

    /// An embedding generates nothing.
    fn max_tokens(&self, _body: &Value) -> Option<u64> {
        None
    }
}

/// The inputs of an embeddings body: a string (or a list of token ids) is one, a list of
/// strings (or of token-id lists) one each.
fn input_count(body: &Value) -> u64 {
    match body.get("input") {
        Some(Value::Array(items)) if !items.first().is_some_and(Value::is_number) => {
            items.len() as u64
        }
        _ => 1,
    }
}

impl Whole for OpenAiEmbeddings {
    fn inputs(&self, body: &Value) -> Option<u64> {
        Some(input_count(body))
    }

    fn read(&self, answer: &[u8], body: &Value) -> Result<Answered, Failure> {
        let a: EmbeddingsAnswer =
            serde_json::from_slice(answer).map_err(|e| malformed_answer(answer, e))?;
        if let Some(err) = server_error(a.error.as_ref(), a.object.as_deref(), a.message.as_deref())
        {
            return Err(err);
        }
        let bad = |why: String| (FailureKind::MalformedAnswer, why);
        let data = a
            .data
            .ok_or_else(|| bad("the answer has no `data` list".into()))?;
        let inputs = input_count(body);
        if data.len() as u64 != inputs {
            return Err(bad(format!(
                "the answer holds {} embeddings for {inputs} inputs",
                data.len()
            )));
        }
        let base64 = body.get("encoding_format").and_then(Value::as_str) == Some("base64");
        let asked = body.get("dimensions").and_then(Value::as_u64);
        let mut seen = vec![false; data.len()];
        let mut length = None;
        for (i, item) in data.iter().enumerate() {
            let at = item.index.unwrap_or(i as u64);
            match usize::try_from(at).ok().and_then(|at| seen.get_mut(at)) {
                Some(slot) if !*slot => *slot = true,
                _ => {
                    return Err(bad(format!(
                        "embedding {i} has index {at}, not one of 0..{inputs} once"
                    )))
                }
            }
            let dims = match (&item.embedding, base64) {
                (Vector::Floats(n), false) => *n,
                (Vector::Base64(bytes), true) if bytes % 4 == 0 => bytes / 4,
                (Vector::Base64(bytes), true) => {
                    return Err(bad(format!(
                    "embedding {i} decodes to {bytes} bytes, not a whole number of 4-byte floats"
                )))
                }
                (Vector::Floats(_), true) => {
                    return Err(bad(format!(
                        "embedding {i} is a list of numbers, base64 asked (`encoding_format`)"
                    )))
                }
                (Vector::Base64(_), false) => {
                    return Err(bad(format!(
                        "embedding {i} is a base64 string, floats asked"
                    )))
                }
            };
            if dims == 0 || asked.is_some_and(|d| d != dims) {
                let want =
                    asked.map_or_else(String::new, |d| format!(", {d} asked (`dimensions`)"));
                return Err(bad(format!("embedding {i} has {dims} dimensions{want}")));
            }
            if let Some(first) = length.filter(|&l| l != dims) {
                return Err(bad(format!(
                    "embedding {i} has {dims} dimensions, embedding 0 {first}"
                )));
            }
            length = Some(dims);
        }
        Ok(Answered {
            content: String::new(),
            usage: a.usage.map(|u| Usage {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: None,
                cached_tokens: None,
                reasoning_tokens: None,
            }),
        })
    }
}

#[derive(Deserialize)]
struct EmbeddingsAnswer {
    data: Option<Vec<Item>>,
    usage: Option<EmbeddingsUsage>,
    error: Option<Value>,
    object: Option<String>,
    message: Option<String>,
}

#[derive(Deserialize)]
struct Item {
    index: Option<u64>,
    embedding: Vector,
}

#[derive(Deserialize)]
struct EmbeddingsUsage {
    prompt_tokens: Option<Reported>,
}

/// An embedding as read: the number of its floats, or the bytes its base64 decodes to.
enum Vector {
    Floats(u64),
    Base64(u64),
}

impl<'de> Deserialize<'de> for Vector {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(VectorVisitor)
    }
}

struct VectorVisitor;

impl<'de> Visitor<'de> for VectorVisitor {
    type Value = Vector;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of finite numbers or a base64 string")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vector, A::Error> {
        let mut n = 0u64;
        while let Some(x) = seq.next_element::<f64>()? {
            if !x.is_finite() {
                return Err(de::Error::custom(
                    "an embedding holds a number that is not finite",
                ));
            }
            n += 1;
        }
        Ok(Vector::Floats(n))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Vector, E> {
        let not_base64 = || E::custom("an embedding string that is not base64");
        let bytes = base64_len(s.as_bytes()).ok_or_else(not_base64)?;
        // A whole number of floats is checked as a float list is; any other length is named
        // where the vector is judged.
        if bytes % 4 == 0 && !base64_floats_finite(s.as_bytes()).ok_or_else(not_base64)? {
            return Err(E::custom("an embedding holds a number that is not finite"));
        }
        Ok(Vector::Base64(bytes))
    }
}

/// Whether every little-endian f32 that standard base64 `s` (its length checked by
/// [`base64_len`]) decodes to is finite; `None` when it does not decode. Decoded a piece at a
/// time (16 characters are 3 floats), never whole.
fn base64_floats_finite(s: &[u8]) -> Option<bool> {
    use base64::Engine;
    const PIECE: usize = 16 * 256;
    let mut buf = [0u8; PIECE / 4 * 3];
    for piece in s.chunks(PIECE) {
        let n = (base64::engine::general_purpose::STANDARD)
            .decode_slice(piece, &mut buf)
            .ok()?;
        let finite = (buf[..n].chunks_exact(4))
            .all(|f| f32::from_le_bytes([f[0], f[1], f[2], f[3]]).is_finite());
        if !finite {
            return Some(false);
        }
    }
    Some(true)
}

/// The bytes standard base64 (padded) decodes to; `None` when it is not base64.
fn base64_len(s: &[u8]) -> Option<u64> {
    if s.len() % 4 != 0 {
        return None;
    }
    let pad = s.iter().rev().take_while(|&&c| c == b'=').count();
    let body = &s[..s.len() - pad];
    let alphabet = |c: &u8| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/';
    (pad <= 2 && body.iter().all(alphabet)).then(|| (s.len() / 4 * 3 - pad) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(inputs: &[&str], extra: Value) -> Value {
        crate::measure::client::api::text_body(&OpenAiEmbeddings, inputs[0], &inputs[1..], &extra)
    }

    #[test]
    fn an_embeddings_body_carries_its_inputs() {
        let one = body(&["a b"], json!({}));
        assert_eq!(one, json!({"model": "m", "input": "a b"}));
        assert_eq!(OpenAiEmbeddings.inputs(&one), Some(1));
        let three = body(&["a", "b c", "d"], json!({"dimensions": 8}));
        assert_eq!(three["input"], json!(["a", "b c", "d"]));
        assert_eq!(OpenAiEmbeddings.inputs(&three), Some(3));
        assert_eq!(
            OpenAiEmbeddings.inputs(&json!({"input": [1, 2, 3]})),
            Some(1)
        );
        assert_eq!(
            OpenAiEmbeddings.inputs(&json!({"input": [[1], [2]]})),
            Some(2)
        );
    }

    /// One vector per input, each index once, of one length (the one asked), in the
    /// format asked; anything else is a `malformed_answer` naming what was wrong, and an
    /// error object is the server's error.
    #[test]
    fn an_embeddings_answer_answers_every_input_or_fails_by_name() {
        let two = body(&["a", "b"], json!({}));
        let ok = br#"{"object":"list","data":[{"object":"embedding","index":1,"embedding":[0.5,-1,2e-3]},{"index":0,"embedding":[1,2,3]}],"model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}"#;
        let a = OpenAiEmbeddings.read(ok, &two).unwrap();
        assert_eq!(a.usage.unwrap().prompt_tokens, Some(Reported::Count(2)));
        assert!(a.content.is_empty());
        let fails = |answer: &[u8], body: &Value, what: &str| {
            let (kind, why) = OpenAiEmbeddings.read(answer, body).unwrap_err();
            assert_eq!(kind, FailureKind::MalformedAnswer, "{why}");
            assert!(why.contains(what), "{what}: {why}");
        };
        fails(
            br#"{"data":[{"embedding":[1]}]}"#,
            &two,
            "1 embeddings for 2 inputs",
        );
        fails(
            br#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#,
            &two,
            "index 0",
        );
        fails(
            br#"{"data":[{"embedding":[1,2]},{"embedding":[1]}]}"#,
            &two,
            "embedding 1 has 1 dimensions, embedding 0 2",
        );
        fails(
            br#"{"data":[{"embedding":[]},{"embedding":[]}]}"#,
            &two,
            "0 dimensions",
        );
        fails(
            br#"{"data":[{"embedding":["x"]},{"embedding":[1]}]}"#,
            &two,
            "cannot read the answer",
        );
        fails(br#"{"data": 5}"#, &two, "cannot read");
        fails(b"<html>", &two, "cannot read the answer");
        fails(br#"{"object":"list"}"#, &two, "no `data`");
        let sized = body(&["a"], json!({"dimensions": 3}));
        fails(
            br#"{"data":[{"embedding":[1,2]}]}"#,
            &sized,
            "2 dimensions, 3 asked",
        );
        // base64 of little-endian f32 (1.0, 2.0): 8 bytes are 2 floats.
        let b64 = body(
            &["a"],
            json!({"encoding_format": "base64", "dimensions": 2}),
        );
        let two_floats = br#"{"data":[{"embedding":"AACAPwAAAEA="}]}"#;
        OpenAiEmbeddings.read(two_floats, &b64).unwrap();
        let any = body(&["a"], json!({"encoding_format": "base64"}));
        OpenAiEmbeddings.read(two_floats, &any).unwrap();
        fails(
            br#"{"data":[{"embedding":"AACAPwAAAEA"}]}"#,
            &b64,
            "not base64",
        );
        fails(
            br#"{"data":[{"embedding":"AACAPwAAAEA*"}]}"#,
            &b64,
            "not base64",
        );
        fails(
            br#"{"data":[{"embedding":"AACAPwAAAEAAAIA/"}]}"#,
            &b64,
            "3 dimensions, 2 asked",
        );
        fails(br#"{"data":[{"embedding":"AACA"}]}"#, &any, "3 bytes");
        fails(
            br#"{"data":[{"embedding":[1.0,2.0]}]}"#,
            &any,
            "base64 asked",
        );
        fails(two_floats, &body(&["a"], json!({})), "floats asked");
        assert_eq!(base64_len(b"AACAPwAAAEA="), Some(8));
        // (1.0, 2.0) is finite; (1.0, NaN) and (+inf, 2.0) are not; a long vector is
        // decoded in pieces, its NaN found in the last.
        assert_eq!(base64_floats_finite(b"AACAPwAAAEA="), Some(true));
        assert_eq!(base64_floats_finite(b"AACAPwAAwH8="), Some(false));
        assert_eq!(base64_floats_finite(b"AACAfwAAAEA="), Some(false));
        let long = "AACAPwAAAEAAAIA/".repeat(1000) + "AACAPwAAwH8=";
        assert_eq!(base64_floats_finite(long.as_bytes()), Some(false));
        assert_eq!(
            base64_floats_finite(long.replace("wH8=", "AEA=").as_bytes()),
            Some(true)
        );
        assert_eq!(base64_len(b"AACAPwAAAEAAAIA/"), Some(12));
        assert_eq!(base64_len(b"A==="), None);
        let (kind, why) = OpenAiEmbeddings
            .read(
                br#"{"error":{"message":"Pooling type 'none' is not OAI compatible","code":400}}"#,
                &two,
            )
            .unwrap_err();
        assert_eq!(kind, FailureKind::ServerError);
        assert!(why.contains("Pooling type"), "{why}");
    }
}
