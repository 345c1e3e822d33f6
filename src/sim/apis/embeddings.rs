//! OpenAI embeddings, `POST /v1/embeddings` (as vLLM serves a pooling model): `input` a
//! string, a list of strings, a list of token ids or a list of such lists; `dimensions` and
//! `encoding_format` (`float`, `base64`) optional. A whole JSON answer, one vector per input,
//! in vLLM's shape (`{"id":"embd-N","object":"list",...,"data":[{"index","object":
//! "embedding","embedding"}],"usage":{"prompt_tokens","total_tokens",...}}`).
//!
//! # Latency
//! Prefill only: the request's inputs are one prompt of their tokens together (counted as
//! every prompt is, `common::count_prompt`), answered when its prefill is done. In exact mode
//! that is `t0 + ttft` for every request, whatever its size; with an engine preset the
//! request is batched and queued with the others and answered at the end of the step that
//! finishes its prefill (the engine's one token of it: `/metrics` counts one generation token
//! per embeddings request, and the prefix cache is not used). Faults apply as to any
//! non-streamed answer.
//!
//! # Values
//! Deterministic from (seed, request number, input, dimension), uniform in [-1, 1): the
//! simulator checks the client's timing and accounting, not meaning. A vector has
//! [`DIMENSIONS`] values unless the request asks `dimensions`.
//!
//! # What it must not touch
//! Timing, faults and statistics (`stream/`, `common.rs`); other APIs' formats.

use axum::body::Bytes;
use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;

use super::common::{
    adapter, count_prompt, resolve, unix_now, wait_for_adapter, whole_answer, AppState, ByteSink,
};
use super::reject::{parse_large, Answer, Reject};
use crate::sim::http1::Arrival;
use crate::sim::text::{mix_seed, splitmix64};

/// A vector's length when the request does not ask one.
pub(crate) const DIMENSIONS: u64 = 64;
/// The most values a vector may have (`dimensions`).
pub(crate) const MAX_DIMENSIONS: u64 = 8192;
/// The most values one answer may hold (inputs × dimensions), so an answer stays tens of MB.
pub(crate) const MAX_VALUES: u64 = 1 << 22;

#[derive(Deserialize)]
struct EmbeddingsRequest {
    input: Option<Value>,
    dimensions: Option<u64>,
    encoding_format: Option<String>,
}

/// The request's inputs: one string or list of token ids, or a list of those; an empty one
/// or any other value is refused by name.
fn inputs(input: &Value) -> Result<Vec<&Value>, Reject> {
    let one = |v: &Value| match v {
        Value::String(s) if !s.trim().is_empty() => true,
        Value::Array(ids) => !ids.is_empty() && ids.iter().all(Value::is_u64),
        _ => false,
    };
    let bad = |why: &str| Err(Reject::BadRequest(format!("`input` {why}")));
    match input {
        Value::Array(items) if items.first().is_some_and(Value::is_number) => match one(input) {
            true => Ok(vec![input]),
            false => bad("must be token ids (non-negative integers)"),
        },
        Value::Array(items) if items.is_empty() => bad("must not be an empty list"),
        Value::Array(items) => match items.iter().all(one) {
            true => Ok(items.iter().collect()),
            false => bad("must be a list of non-empty strings or of token-id lists"),
        },
        v if one(v) => Ok(vec![v]),
        _ => bad("must be a non-empty string, a list of them, or token ids"),
    }
}

pub(crate) async fn embeddings(
    State(shared): AppState,
    Arrival(t0): Arrival,
    body: Bytes,
) -> Answer {
    let req: EmbeddingsRequest = parse_large(&body).await?;
    let lora = adapter(&shared, &body)?;
    let input = req
        .input
        .ok_or_else(|| Reject::BadRequest("`input` is required".into()))?;
    let inputs = inputs(&input)?;
    let dims = match req.dimensions {
        None => DIMENSIONS,
        Some(d) if (1..=MAX_DIMENSIONS).contains(&d) => d,
        Some(d) => {
            let why = format!("`dimensions` must be 1 to {MAX_DIMENSIONS}, got {d}");
            return Err(Reject::BadRequest(why));
        }
    };
    let base64 = match req.encoding_format.as_deref() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            let why = format!("`encoding_format` must be float or base64, got {other:?}");
            return Err(Reject::BadRequest(why));
        }
    };
    let values = dims.saturating_mul(inputs.len() as u64);
    if values > MAX_VALUES {
        let why = format!(
            "the answer would hold {values} values (inputs × dimensions), more than {MAX_VALUES}"
        );
        return Err(Reject::BadRequest(why));
    }
    let prompt_tokens: u64 = inputs.iter().copied().map(count_prompt).sum();
    // Prefill only: answered with the step that ends the prompt's prefill.
    let mut r = resolve(&shared, t0, prompt_tokens, 1, true)?;
    wait_for_adapter(&shared, &mut r, lora.as_deref());
    let (seed, n, count) = (shared.config.seed, r.n, inputs.len() as u64);
    let model = shared.model_json.clone();
    let created = unix_now();
    whole_answer(shared.clone(), &r, move |_| {
        answer(
            &model,
            (seed, n, created),
            (count, dims, base64),
            prompt_tokens,
        )
    })
    .await
}

/// The whole answer: `count` vectors of `dims` values of request `n`, floats or base64.
fn answer(
    model: &str,
    (seed, n, created): (u64, u64, u64),
    (count, dims, base64): (u64, u64, bool),
    prompt_tokens: u64,
) -> String {
    use std::fmt::Write as _;
    let mut out = Vec::with_capacity((count * dims * if base64 { 6 } else { 12 }) as usize + 256);
    let mut w = ByteSink(&mut out);
    let _ = write!(
        w,
        r#"{{"id":"embd-{n}","object":"list","created":{created},"model":{model},"data":["#
    );
    for i in 0..count {
        let _ = write!(
            w,
            r#"{}{{"index":{i},"object":"embedding","embedding":"#,
            if i > 0 { "," } else { "" }
        );
        let value = |j: u64| {
            let h = splitmix64(mix_seed(seed, n) ^ splitmix64(i << 32 | j));
            ((h >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        };
        if base64 {
            let bytes: Vec<u8> = (0..dims).flat_map(|j| value(j).to_le_bytes()).collect();
            let _ = write!(w, "\"{}\"}}", encode_base64(&bytes));
        } else {
            let _ = w.write_str("[");
            for j in 0..dims {
                let _ = write!(w, "{}{}", if j > 0 { "," } else { "" }, value(j));
            }
            let _ = w.write_str("]}");
        }
    }
    let _ = write!(
        w,
        r#"],"usage":{{"prompt_tokens":{prompt_tokens},"total_tokens":{prompt_tokens},"completion_tokens":0,"prompt_tokens_details":null}}}}"#
    );
    String::from_utf8(out).unwrap_or_default()
}

/// Standard base64, padded.
fn encode_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_standard_and_padded() {
        assert_eq!(encode_base64(b""), "");
        assert_eq!(encode_base64(b"f"), "Zg==");
        assert_eq!(encode_base64(b"fo"), "Zm8=");
        assert_eq!(encode_base64(b"foo"), "Zm9v");
        let floats: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(encode_base64(&floats), "AACAPwAAAEA=");
    }

    #[test]
    fn an_answer_holds_one_vector_per_input_of_its_dimensions() {
        let text = answer("\"m\"", (1, 7, 0), (3, 5, false), 12);
        let v: Value = serde_json::from_str(&text).unwrap();
        let data = v["data"].as_array().unwrap();
        assert_eq!(data.len(), 3);
        for (i, d) in data.iter().enumerate() {
            assert_eq!(d["index"], i as u64);
            let e = d["embedding"].as_array().unwrap();
            assert_eq!(e.len(), 5);
            assert!(e.iter().all(|x| (-1.0..1.0).contains(&x.as_f64().unwrap())));
        }
        assert_eq!(v["usage"]["prompt_tokens"], 12);
        assert_eq!(v["id"], "embd-7");
        let b64: Value =
            serde_json::from_str(&answer("\"m\"", (1, 7, 0), (2, 4, true), 3)).unwrap();
        assert_eq!(b64["data"][1]["embedding"].as_str().unwrap().len(), 24);
        assert_eq!(
            text,
            answer("\"m\"", (1, 7, 0), (3, 5, false), 12),
            "deterministic"
        );
    }

    #[test]
    fn inputs_are_strings_or_token_ids_and_anything_else_is_named() {
        use serde_json::json;
        assert_eq!(inputs(&json!("a b")).unwrap().len(), 1);
        assert_eq!(inputs(&json!(["a", "b c"])).unwrap().len(), 2);
        assert_eq!(inputs(&json!([1, 2, 3])).unwrap().len(), 1);
        assert_eq!(inputs(&json!([[1], [2, 3]])).unwrap().len(), 2);
        for bad in [
            json!(""),
            json!([]),
            json!(["a", ""]),
            json!([1, -2]),
            json!({"a": 1}),
            json!(5),
            json!(["a", 1]),
        ] {
            match inputs(&bad) {
                Err(Reject::BadRequest(why)) => assert!(why.contains("`input`"), "{why}"),
                _ => panic!("{bad} accepted"),
            }
        }
    }
}
