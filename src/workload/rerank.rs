//! Rerank requests (`--backend rerank`, `tei-rerank`): each is a query and N documents
//! (`--rerank-documents`, the inputs of `batch`). The documents are the workload's prompts,
//! each of its exact length (`--input-len`, D); the queries are built by the same dataset as
//! prompts of their own, of `--rerank-query-len` tokens (Q; `--input-len` unless given) where
//! the dataset takes a length, from a seed of their own. A request's prompt is its query and
//! its batch its documents; its built length is what a cross-encoder reads, the query beside
//! each document: N × Q + Σ D (docs/metrics.md, "Rerank"). A jsonl file gives real pairs
//! instead, each line its query and documents (`dataset::jsonl`), sent as they are.

use crate::config::{Dataset, RunConfig, WorkloadSpec};
use crate::measure::client::{Client, RequestSpec};
use crate::workload::error::WorkloadError;
use crate::workload::PromptTokenizer;

/// The queries of a run's rerank requests, built as its prompts are.
pub struct Queries<'a> {
    spec: WorkloadSpec,
    cfg: &'a RunConfig,
    tokenizer: &'a PromptTokenizer,
    client: &'a Client,
}

impl<'a> Queries<'a> {
    pub fn new(cfg: &'a RunConfig, tokenizer: &'a PromptTokenizer, client: &'a Client) -> Self {
        Queries {
            spec: queries(&cfg.workload, cfg.rerank_query_len),
            cfg,
            tokenizer,
            client,
        }
    }

    /// `documents` (grouped N to a request), each with a query built from [`query_seed`] of
    /// `seed` before them ([`pair`]).
    pub async fn before(
        &self,
        documents: Vec<RequestSpec>,
        seed: u64,
        warmup: bool,
    ) -> Result<Vec<RequestSpec>, WorkloadError> {
        // A jsonl file's lines are real pairs: each its own query and documents.
        if matches!(self.cfg.workload.dataset, Dataset::Jsonl { .. }) {
            return Ok(documents);
        }
        let (client, n) = (self.client, documents.len() as u64);
        let built = crate::workload::build_for(
            &self.spec,
            self.tokenizer,
            client,
            client.base_url(),
            &self.cfg.model,
            n,
            query_seed(seed),
            warmup,
        );
        Ok(pair(built.await?, documents))
    }
}

/// What the queries are built from: `spec` with its length set to `query_len` where the
/// dataset takes one (`random`, `book`, `prefix`), else as it is.
pub fn queries(spec: &WorkloadSpec, query_len: Option<u64>) -> WorkloadSpec {
    let mut q = spec.clone();
    if let Some(len) = query_len {
        match &mut q.dataset {
            Dataset::Random { input_len, .. }
            | Dataset::Book { input_len, .. }
            | Dataset::Prefix { input_len, .. } => *input_len = len,
            _ => {}
        }
    }
    q
}

/// The seed the queries are built from, beside the documents' `seed`.
pub fn query_seed(seed: u64) -> u64 {
    seed ^ 0x51E7_0C0F_FEE5_EED5
}

/// Each request of `documents` (already grouped N to a request: its prompt and batch) with its
/// query from `queries` (taken in order) before them: the query is the prompt, the documents
/// the batch, the length N × Q + Σ D.
pub fn pair(queries: Vec<RequestSpec>, documents: Vec<RequestSpec>) -> Vec<RequestSpec> {
    documents
        .into_iter()
        .zip(queries)
        .map(|(mut d, q)| {
            let docs = 1 + d.batch.len() as u64;
            let first = std::mem::replace(&mut d.prompt, q.prompt);
            d.batch.insert(0, first);
            d.input_len = (d.input_len)
                .zip(q.input_len)
                .map(|(docs_len, q_len)| docs_len + docs * q_len);
            d
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::batch::batch;

    #[test]
    fn each_request_is_its_query_and_its_documents() {
        let spec = |id: u64, text: &str, len: u64| RequestSpec {
            id,
            prompt: text.into(),
            input_len: Some(len),
            ..RequestSpec::default()
        };
        let docs: Vec<_> = (0..5).map(|i| spec(i, &format!("d{i}"), 10)).collect();
        let qs: Vec<_> = (0..2).map(|i| spec(i, &format!("q{i}"), 3)).collect();
        let r = pair(qs, batch(docs, 3));
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].id, r[0].prompt.as_str()), (0, "q0"));
        assert_eq!(r[0].batch, ["d0", "d1", "d2"]);
        assert_eq!(r[0].input_len, Some(3 * 3 + 30), "N × Q + Σ D");
        assert_eq!((r[1].id, r[1].prompt.as_str()), (1, "q1"));
        assert_eq!(r[1].batch, ["d3", "d4"]);
        assert_eq!(r[1].input_len, Some(2 * 3 + 20));
        let w = WorkloadSpec::random(16, 8);
        match queries(&w, Some(4)).dataset {
            Dataset::Random { input_len, .. } => assert_eq!(input_len, 4),
            d => panic!("{d:?}"),
        }
        assert_eq!(queries(&w, None), w);
    }
}
