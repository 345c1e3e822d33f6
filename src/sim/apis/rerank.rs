//! Rerank: the Jina/Cohere-style `POST /v1/rerank` and `/v2/rerank` (as vLLM serves a
//! cross-encoder: `query`, `documents`, `top_n` → `{"id","model","usage":{"prompt_tokens",
//! "total_tokens"},"results":[{"index","document":{"text"},"relevance_score"}]}`, best first)
//! and Hugging Face TEI's `POST /rerank` (`query`, `texts` → `[{"index","score"}]`, best
//! first). `/rerank` answers in the shape it is asked in: `texts` is TEI's, `documents`
//! vLLM's (vLLM serves its own shape at `/rerank` too).
//!
//! # Latency
//! Prefill only, as embeddings: a cross-encoder reads the query beside each document, so the
//! request's prompt is its pairs, N × (query tokens) + Σ (document tokens), counted as every
//! prompt is (`common::count_prompt`); that is also the usage it reports. In exact mode the
//! answer comes `t0 + ttft` after the request arrives, whatever its size; with an engine
//! preset the pairs are prefilled as one prompt, batched and queued with the others.
//!
//! # Values
//! Scores are deterministic from (seed, request number, document index), in [0, 1): the
//! simulator checks the client's timing and accounting, not meaning.
//!
//! # What it must not touch
//! Timing, faults and statistics (`stream/`, `common.rs`); other APIs' formats.

use axum::body::Bytes;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{json, Value};

use super::common::{adapter, count_prompt, resolve, wait_for_adapter, whole_answer, AppState};
use super::reject::{parse_large, Answer, Reject};
use crate::sim::http1::Arrival;
use crate::sim::text::{mix_seed, splitmix64};

/// The most documents one rerank request may carry (HTTP 400 beyond): vLLM takes any number,
/// TEI defaults to a batch of at most 1,024 texts; one answer stays small.
pub(crate) const MAX_DOCUMENTS: usize = 4096;

#[derive(Deserialize)]
struct RerankRequest {
    query: Option<Value>,
    documents: Option<Value>,
    texts: Option<Value>,
    top_n: Option<u64>,
}

/// Which API's answer a request gets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Jina/Cohere (vLLM): `documents` in, `results` with `relevance_score` out.
    Jina,
    /// TEI: `texts` in, a list of `{index, score}` out.
    Tei,
}

/// `POST /v1/rerank`, `/v2/rerank`: the Jina/Cohere shape.
pub(crate) async fn rerank_v1(state: AppState, arrival: Arrival, body: Bytes) -> Answer {
    rerank(state, arrival, body, Some(Shape::Jina)).await
}

/// `POST /rerank`: TEI's shape for `texts`, vLLM's for `documents`.
pub(crate) async fn rerank_any(state: AppState, arrival: Arrival, body: Bytes) -> Answer {
    rerank(state, arrival, body, None).await
}

/// The query and the documents of a request, each a non-empty string; anything else is
/// refused by name.
fn texts<'a>(field: &str, v: &'a Value) -> Result<Vec<&'a Value>, Reject> {
    let bad = |why: String| Err(Reject::BadRequest(why));
    let Value::Array(items) = v else {
        return bad(format!("`{field}` must be a list of strings"));
    };
    if items.is_empty() || items.len() > MAX_DOCUMENTS {
        let n = items.len();
        return bad(format!(
            "`{field}` holds {n} documents: give 1 to {MAX_DOCUMENTS}"
        ));
    }
    match items
        .iter()
        .all(|d| d.as_str().is_some_and(|s| !s.trim().is_empty()))
    {
        true => Ok(items.iter().collect()),
        false => bad(format!("`{field}` must be a list of non-empty strings")),
    }
}

async fn rerank(
    State(shared): AppState,
    Arrival(t0): Arrival,
    body: Bytes,
    fixed: Option<Shape>,
) -> Answer {
    let req: RerankRequest = parse_large(&body).await?;
    let lora = adapter(&shared, &body)?;
    let (shape, field, docs) = match (fixed, &req.documents, &req.texts) {
        (_, Some(d), _) => (Shape::Jina, "documents", d),
        (None, None, Some(t)) => (Shape::Tei, "texts", t),
        (Some(_), None, _) => return Err(Reject::BadRequest("`documents` is required".into())),
        (None, None, None) => {
            let why = "`texts` (TEI) or `documents` is required".into();
            return Err(Reject::BadRequest(why));
        }
    };
    let docs = texts(field, docs)?;
    let query = match &req.query {
        Some(q) if q.as_str().is_some_and(|s| !s.trim().is_empty()) => q,
        _ => {
            return Err(Reject::BadRequest(
                "`query` must be a non-empty string".into(),
            ))
        }
    };
    let count = docs.len() as u64;
    let top_n = match (shape, req.top_n) {
        (Shape::Jina, Some(n)) if n > 0 => n.min(count),
        _ => count,
    };
    // A cross-encoder reads the query with each document: the pairs are the prompt.
    let pairs = count * count_prompt(query) + docs.iter().copied().map(count_prompt).sum::<u64>();
    let mut r = resolve(&shared, t0, pairs, 1, true)?;
    wait_for_adapter(&shared, &mut r, lora.as_deref());
    let (seed, n) = (shared.config.seed, r.n);
    let model = shared.config.model.clone();
    let documents: Vec<String> = match shape {
        Shape::Jina => (docs
            .iter()
            .map(|d| d.as_str().unwrap_or_default().to_string()))
        .collect(),
        Shape::Tei => Vec::new(),
    };
    whole_answer(shared.clone(), &r, move |_| {
        let ranked = ranked(seed, n, count);
        answer(
            shape,
            &model,
            n,
            &ranked[..top_n as usize],
            &documents,
            pairs,
        )
    })
    .await
}

/// The documents' indices with their scores, best first.
fn ranked(seed: u64, n: u64, count: u64) -> Vec<(u64, f64)> {
    let mut scored: Vec<(u64, f64)> = (0..count)
        .map(|i| {
            let h = splitmix64(mix_seed(seed, n) ^ splitmix64(i));
            (i, (h >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
}

/// The whole answer in `shape`'s words: `ranked` (best first), with each document's text in
/// the Jina/Cohere shape.
fn answer(
    shape: Shape,
    model: &str,
    n: u64,
    ranked: &[(u64, f64)],
    documents: &[String],
    pairs: u64,
) -> String {
    let doc = |i: u64| documents.get(i as usize).map_or("", String::as_str);
    let answer = match shape {
        Shape::Tei => {
            let list: Vec<Value> = (ranked.iter())
                .map(|&(index, score)| json!({"index": index, "score": score}))
                .collect();
            Value::Array(list)
        }
        Shape::Jina => {
            let results: Vec<Value> = (ranked.iter())
                .map(|&(index, score)| {
                    json!({"index": index, "document": {"text": doc(index)}, "relevance_score": score})
                })
                .collect();
            json!({
                "id": format!("rerank-{n}"),
                "model": model,
                "usage": {"prompt_tokens": pairs, "total_tokens": pairs},
                "results": results,
            })
        }
    };
    answer.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_ranks_every_document_best_first_in_each_shape() {
        let ranked = ranked(3, 9, 5);
        assert_eq!(ranked.len(), 5);
        assert!(ranked.windows(2).all(|w| w[0].1 >= w[1].1));
        let mut indices: Vec<u64> = ranked.iter().map(|r| r.0).collect();
        indices.sort_unstable();
        assert_eq!(indices, [0, 1, 2, 3, 4]);
        let docs: Vec<String> = (0..5).map(|i| format!("d{i}")).collect();
        let jina: Value =
            serde_json::from_str(&answer(Shape::Jina, "m", 9, &ranked[..2], &docs, 40)).unwrap();
        assert_eq!(jina["results"].as_array().unwrap().len(), 2);
        let first = &jina["results"][0];
        assert_eq!(
            first["document"]["text"],
            format!("d{}", first["index"].as_u64().unwrap())
        );
        assert_eq!(jina["usage"]["prompt_tokens"], 40);
        let tei: Value =
            serde_json::from_str(&answer(Shape::Tei, "m", 9, &ranked, &[], 40)).unwrap();
        assert_eq!(tei.as_array().unwrap().len(), 5);
        assert!(tei[0]["score"].as_f64().unwrap() < 1.0);
    }

    #[test]
    fn documents_are_non_empty_strings_within_the_limit() {
        assert_eq!(texts("texts", &json!(["a", "b c"])).unwrap().len(), 2);
        let many = Value::Array(vec![json!("a"); MAX_DOCUMENTS + 1]);
        for bad in [json!([]), json!(["a", ""]), json!("a"), json!([1]), many] {
            match texts("documents", &bad) {
                Err(Reject::BadRequest(why)) => assert!(why.contains("`documents`"), "{why}"),
                _ => panic!("{bad} accepted"),
            }
        }
    }
}
