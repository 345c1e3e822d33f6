//! Rerank, answered whole: the Jina/Cohere-style `POST /v1/rerank` that vLLM serves
//! (`--backend rerank`; vLLM's benchmark calls it `vllm-rerank`) and Hugging Face TEI's
//! `POST /rerank` (`--backend tei-rerank`). Facts: `../shared/reference/FORMATS.md`, "Rerank".
//!
//! A request is one query and its documents: the request's prompt is the query, its batch the
//! documents (`workload::rerank` pairs them). The body carries them as `query` and `documents`
//! (Jina/Cohere) or `query` and `texts` (TEI); `top_n` (Jina/Cohere) goes in through
//! `--extra-body`. The answer is judged against the body as sent: one score per document
//! asked (`top_n` of them when asked), each index once and within the documents, each score a
//! finite number; anything else is a `malformed_answer` naming what was wrong. A request's
//! inputs are its documents.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::measure::client::api::{
    malformed_answer, server_error, text_only, unsendable, Answer, Answered, Api, BodySpec,
    Failure, Usage, Whole,
};
use crate::measure::client::usage::Reported;
use crate::measure::record::FailureKind;

/// Jina/Cohere-style `POST /v1/rerank` (vLLM, and servers that follow Jina's or Cohere's API).
pub struct Rerank;

/// Hugging Face TEI `POST /rerank`.
pub struct TeiRerank;

/// A rerank request's check before its body: text only, and documents to score (a jsonl
/// line without any is never sent).
fn sendable(spec: &BodySpec) -> Result<(), Failure> {
    text_only(spec)?;
    match spec.batch {
        [] => Err(unsendable("a query without documents")),
        _ => Ok(()),
    }
}

/// The documents of a body as sent: the list under `field`.
fn documents(body: &Value, field: &str) -> u64 {
    body.get(field)
        .and_then(Value::as_array)
        .map_or(0, |d| d.len() as u64)
}

/// A body's bytes with its query's once more for each document after the first: a
/// cross-encoder reads the query beside each document, and a server counts those tokens.
fn pair_bytes(body: &Value, field: &str, bytes: u64) -> u64 {
    let query = body
        .get("query")
        .and_then(Value::as_str)
        .map_or(0, str::len) as u64;
    let more = documents(body, field).saturating_sub(1);
    bytes.saturating_add(query.saturating_mul(more))
}

impl Api for Rerank {
    fn body(&self, spec: &BodySpec) -> Result<Value, Failure> {
        sendable(spec)?;
        Ok(json!({"model": spec.model, "query": spec.prompt, "documents": spec.batch}))
    }

    fn answer(&self) -> Answer<'_> {
        Answer::Whole(self)
    }

    /// A rerank generates nothing.
    fn max_tokens(&self, _body: &Value) -> Option<u64> {
        None
    }

    fn prompt_bytes(&self, body: &Value, bytes: u64) -> u64 {
        pair_bytes(body, "documents", bytes)
    }
}

impl Whole for Rerank {
    fn inputs(&self, body: &Value) -> Option<u64> {
        Some(documents(body, "documents"))
    }

    fn read(&self, answer: &[u8], body: &Value) -> Result<Answered, Failure> {
        let a: RerankAnswer =
            serde_json::from_slice(answer).map_err(|e| malformed_answer(answer, e))?;
        if let Some(err) = server_error(a.error.as_ref(), a.object.as_deref(), a.message.as_deref())
        {
            return Err(err);
        }
        let results = a
            .results
            .ok_or_else(|| bad("the answer has no `results` list".into()))?;
        let docs = documents(body, "documents");
        // `top_n` asks for the best n; a server answers all when it is absent or larger.
        let asked = match body.get("top_n").and_then(Value::as_u64) {
            Some(n) if n > 0 => n.min(docs),
            _ => docs,
        };
        let scores = results.iter().map(|r| (r.index, r.relevance_score));
        check_scores(scores, docs, asked)?;
        // vLLM's usage has `total_tokens` (the pairs' tokens; nothing is generated), some
        // servers `prompt_tokens` too.
        let prompt = a.usage.and_then(|u| u.prompt_tokens.or(u.total_tokens));
        Ok(Answered {
            content: String::new(),
            usage: prompt.map(|p| Usage {
                prompt_tokens: Some(p),
                completion_tokens: None,
                cached_tokens: None,
                reasoning_tokens: None,
            }),
        })
    }
}

impl Api for TeiRerank {
    fn body(&self, spec: &BodySpec) -> Result<Value, Failure> {
        sendable(spec)?;
        Ok(json!({"query": spec.prompt, "texts": spec.batch}))
    }

    fn answer(&self) -> Answer<'_> {
        Answer::Whole(self)
    }

    /// A rerank generates nothing.
    fn max_tokens(&self, _body: &Value) -> Option<u64> {
        None
    }

    fn prompt_bytes(&self, body: &Value, bytes: u64) -> u64 {
        pair_bytes(body, "texts", bytes)
    }
}

impl Whole for TeiRerank {
    fn inputs(&self, body: &Value) -> Option<u64> {
        Some(documents(body, "texts"))
    }

    /// TEI answers a list of `{index, score}`, one per text, and reports no usage; its error
    /// is `{"error": "...", "error_type": "..."}`.
    fn read(&self, answer: &[u8], body: &Value) -> Result<Answered, Failure> {
        let a: TeiAnswer =
            serde_json::from_slice(answer).map_err(|e| malformed_answer(answer, e))?;
        let results = match a {
            TeiAnswer::Scores(results) => results,
            TeiAnswer::Error { error } => {
                return Err(server_error(Some(&error), None, None).unwrap_or_else(|| {
                    bad("the answer is an error object without a message".into())
                }))
            }
        };
        let docs = documents(body, "texts");
        check_scores(results.iter().map(|r| (r.index, r.score)), docs, docs)?;
        Ok(Answered::default())
    }
}

fn bad(why: String) -> Failure {
    (FailureKind::MalformedAnswer, why)
}

/// The scores of an answer to `docs` documents, `asked` of them wanted: exactly `asked`
/// results, each index once and below `docs`, each score finite.
fn check_scores(
    scores: impl ExactSizeIterator<Item = (Option<u64>, Option<f64>)>,
    docs: u64,
    asked: u64,
) -> Result<(), Failure> {
    if scores.len() as u64 != asked {
        return Err(bad(format!(
            "the answer scores {} documents, {asked} asked of {docs}",
            scores.len()
        )));
    }
    let mut seen = vec![false; usize::try_from(docs).unwrap_or(0)];
    for (i, (index, score)) in scores.enumerate() {
        let Some(at) = index else {
            return Err(bad(format!("result {i} has no `index`")));
        };
        match usize::try_from(at).ok().and_then(|at| seen.get_mut(at)) {
            Some(slot) if !*slot => *slot = true,
            _ => {
                return Err(bad(format!(
                    "result {i} has index {at}, not one of 0..{docs} once"
                )))
            }
        }
        if !score.is_some_and(f64::is_finite) {
            return Err(bad(format!("result {i} has no finite score")));
        }
    }
    Ok(())
}

#[derive(Deserialize)]
struct RerankAnswer {
    results: Option<Vec<RerankResult>>,
    usage: Option<RerankUsage>,
    error: Option<Value>,
    object: Option<String>,
    message: Option<String>,
}

#[derive(Deserialize)]
struct RerankResult {
    index: Option<u64>,
    relevance_score: Option<f64>,
}

#[derive(Deserialize)]
struct RerankUsage {
    prompt_tokens: Option<Reported>,
    total_tokens: Option<Reported>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum TeiAnswer {
    Scores(Vec<TeiResult>),
    Error { error: Value },
}

#[derive(Deserialize)]
struct TeiResult {
    index: Option<u64>,
    score: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(api: &dyn Api, query: &str, docs: &[&str], extra: Value) -> Value {
        crate::measure::client::api::text_body(api, query, docs, &extra)
    }

    /// A rerank body carries its query and documents in each API's words, and
    /// its inputs are its documents.
    #[test]
    fn a_rerank_body_carries_its_query_and_documents() {
        let b = body(&Rerank, "q w", &["a", "b c"], json!({}));
        assert_eq!(
            b,
            json!({"model": "m", "query": "q w", "documents": ["a", "b c"]})
        );
        assert_eq!(Rerank.inputs(&b), Some(2));
        let t = body(&TeiRerank, "q", &["a", "b", "c"], json!({}));
        assert_eq!(t, json!({"query": "q", "texts": ["a", "b", "c"]}));
        assert_eq!(TeiRerank.inputs(&t), Some(3));
        // A query without documents is never sent: a failure of kind `prompt`, named.
        let lone = BodySpec {
            model: "m",
            prompt: "q",
            batch: &[],
            messages: None,
            parts: &[],
            max_tokens: 0,
            ignore_eos: false,
        };
        let (kind, why) = Rerank.body(&lone).unwrap_err();
        assert_eq!(kind, FailureKind::Prompt);
        assert!(why.contains("without documents"), "{why}");
        // The query is read beside each document: its bytes count once more per document.
        assert_eq!(Rerank.prompt_bytes(&b, 100), 100 + 3);
        assert_eq!(TeiRerank.prompt_bytes(&t, 100), 100 + 2);
    }

    /// A score per document (the `top_n` asked), each index once, each score
    /// finite; anything else is a `malformed_answer` naming what was wrong, and an error
    /// object is the server's error.
    #[test]
    fn a_rerank_answer_scores_every_document_or_fails_by_name() {
        let two = body(&Rerank, "q", &["a", "b"], json!({}));
        let ok = br#"{"id":"rerank-1","model":"m","usage":{"total_tokens":7},"results":[{"index":1,"document":{"text":"b"},"relevance_score":0.9},{"index":0,"relevance_score":0.1}]}"#;
        let a = Rerank.read(ok, &two).unwrap();
        assert_eq!(a.usage.unwrap().prompt_tokens, Some(Reported::Count(7)));
        let fails = |api: &dyn Whole, answer: &[u8], body: &Value, what: &str| {
            let (kind, why) = api.read(answer, body).unwrap_err();
            assert_eq!(kind, FailureKind::MalformedAnswer, "{why}");
            assert!(why.contains(what), "{what}: {why}");
        };
        fails(
            &Rerank,
            br#"{"results":[{"index":0,"relevance_score":1}]}"#,
            &two,
            "scores 1 documents, 2 asked",
        );
        fails(
            &Rerank,
            br#"{"results":[{"index":0,"relevance_score":1},{"index":0,"relevance_score":1}]}"#,
            &two,
            "index 0",
        );
        fails(
            &Rerank,
            br#"{"results":[{"index":0,"relevance_score":1},{"index":2,"relevance_score":1}]}"#,
            &two,
            "index 2",
        );
        fails(
            &Rerank,
            br#"{"results":[{"index":0,"relevance_score":1},{"index":1}]}"#,
            &two,
            "result 1 has no finite score",
        );
        fails(
            &Rerank,
            br#"{"results":[{"relevance_score":1},{"index":1,"relevance_score":1}]}"#,
            &two,
            "no `index`",
        );
        fails(&Rerank, br#"{"data":[]}"#, &two, "no `results`");
        fails(&Rerank, b"<html>", &two, "cannot read the answer");
        let top1 = body(&Rerank, "q", &["a", "b"], json!({"top_n": 1}));
        Rerank
            .read(br#"{"results":[{"index":1,"relevance_score":0.5}]}"#, &top1)
            .unwrap();
        fails(&Rerank, ok, &top1, "scores 2 documents, 1 asked of 2");
        let (kind, why) = Rerank
            .read(br#"{"object":"error","message":"no such model"}"#, &two)
            .unwrap_err();
        assert_eq!(kind, FailureKind::ServerError);
        assert!(why.contains("no such model"), "{why}");

        let tei = body(&TeiRerank, "q", &["a", "b"], json!({}));
        let a = TeiRerank
            .read(
                br#"[{"index":1,"score":0.7},{"index":0,"score":0.2}]"#,
                &tei,
            )
            .unwrap();
        assert_eq!(a, Answered::default());
        fails(
            &TeiRerank,
            br#"[{"index":1,"score":0.7}]"#,
            &tei,
            "scores 1 documents, 2 asked",
        );
        fails(&TeiRerank, br#"{"results":[]}"#, &tei, "cannot read");
        let (kind, why) = TeiRerank
            .read(
                br#"{"error":"Input validation error","error_type":"Validation"}"#,
                &tei,
            )
            .unwrap_err();
        assert_eq!(kind, FailureKind::ServerError);
        assert!(why.contains("Input validation"), "{why}");
    }
}
