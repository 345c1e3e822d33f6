//! What is sent: builds the run's [`RequestSpec`]s from the workload spec.
//!
//! With a tokenizer (`--tokenizer`), prompts come from `dataset` and have exactly the requested
//! length under it. Without one, `random` builds prompts of `input_len` whitespace-separated
//! words drawn (seeded) from common English words (a trace's and the jobs' random texts are
//! made the same way, a graph file's own texts counted in words): that is exact under
//! the built-in simulator's own counting (one token per word), and only an approximation for
//! any real server, so the command line requires a tokenizer whenever `--base-url` is given
//! (`words.rs`).
//! The tokenizer is resolved once ([`PromptTokenizer`]) and passed to every run of a sweep or
//! search. Only `--tokenizer server` does HTTP (`server.rs`, through `measure::client`);
//! nothing here reads a clock.
//!
//! A new dataset is a [`crate::config::Dataset`] variant and a module under `dataset/`
//! (docs/architecture.md has the recipe: the compiler names the rest).

pub mod anonymize;
pub mod audio;
pub mod batch;
pub mod dataset;
pub mod error;
pub mod lora;
pub mod media;
pub mod media_file;
pub mod mix;
pub mod requests;
pub mod rerank;
pub mod server;
pub mod wav;
pub mod words;

use rand::RngExt;

use crate::config::{Dataset, WorkloadSpec};
use crate::measure::client::{Client, RequestSpec};
use crate::tokenizer::{Tokenizer, TokenizerError};
use crate::workload::dataset::DatasetError;
use crate::workload::error::WorkloadError;

/// How prompts are built and output text is counted: `--tokenizer`, resolved once (a sweep or
/// search resolves it before its first step and reuses it).
#[derive(Clone)]
pub enum PromptTokenizer {
    /// Whitespace-separated words, the built-in simulator's own counting (no `--tokenizer`,
    /// or `words`).
    Words,
    /// The served model's tokenizer (a tokenizer.json, a GGUF file, a tiktoken encoding).
    Local(Tokenizer),
    /// `--tokenizer server`: the server's own `/tokenize` and `/detokenize` ([`server`]).
    Server,
}

impl PromptTokenizer {
    /// The `--tokenizer` value that selects [`PromptTokenizer::Server`].
    pub const SERVER: &'static str = "server";

    /// Resolves a workload's `tokenizer` spec, loading a local tokenizer.
    pub fn resolve(spec: Option<&str>) -> Result<PromptTokenizer, TokenizerError> {
        Ok(match spec {
            None | Some("words") => PromptTokenizer::Words,
            Some(Self::SERVER) => PromptTokenizer::Server,
            Some(path_or_name) => PromptTokenizer::Local(Tokenizer::load(path_or_name)?),
        })
    }

    /// The local tokenizer, which also counts the output text of every request.
    pub fn local(&self) -> Option<&Tokenizer> {
        match self {
            PromptTokenizer::Local(t) => Some(t),
            _ => None,
        }
    }
}

/// The `n` requests of a run (warm-ups when `warmup`), reproducible from `seed`, built the way
/// `tokenizer` says: locally, or with the server's tokenizer through `client`.
#[allow(clippy::too_many_arguments)]
pub async fn build_for(
    spec: &WorkloadSpec,
    tokenizer: &PromptTokenizer,
    client: &Client,
    base_url: &str,
    model: &str,
    n: u64,
    seed: u64,
    warmup: bool,
) -> Result<Vec<RequestSpec>, WorkloadError> {
    let mut requests = match tokenizer {
        PromptTokenizer::Server => {
            server::build_requests(spec, client, base_url, model, n, seed, warmup).await?
        }
        local => build_requests(spec, local.local(), n, 0, seed, warmup)?,
    };
    // random-mm: the images and videos beside each request's text, made before the load.
    if let Dataset::RandomMm { mm, .. } = &spec.dataset {
        media::attach(&mut requests, mm, seed)?;
    }
    Ok(requests)
}

/// Builds `n` requests (ids from `first_id`), reproducible from `seed`.
pub fn build_requests(
    spec: &WorkloadSpec,
    tokenizer: Option<&Tokenizer>,
    n: u64,
    first_id: u64,
    seed: u64,
    warmup: bool,
) -> Result<Vec<RequestSpec>, DatasetError> {
    let d = &spec.dataset;
    let prompts = match (tokenizer, d) {
        (Some(tok), _) => dataset::build(d, tok, n as usize, seed)?,
        (
            None,
            Dataset::Trace {
                path, block_size, ..
            },
        ) => {
            let vocab = dataset::trace::Vocab {
                draw: &|rng| rng.random_range(0..words::WORDS.len() as u32),
                render: &|units| {
                    units
                        .iter()
                        .map(|&u| format!(" {}", words::WORDS[u as usize]))
                        .collect()
                },
                count: &|text| text.split_whitespace().count(),
                name: "words".into(),
            };
            let output_len = d.output_len();
            dataset::trace::build(path, &vocab, *block_size, output_len, n as usize, seed)?
        }
        (
            None,
            Dataset::Agentic {
                input_len, shape, ..
            },
        ) => {
            let calls = dataset::agentic::places(shape).len() as u64;
            let n = n.saturating_mul(calls);
            let mut reqs = words::prompts(*input_len, d.output_len(), n, first_id, seed, warmup);
            dataset::agentic::assign(&mut reqs, shape, |r, c| r.call = Some(c));
            return Ok(reqs);
        }
        (None, Dataset::Graph { path, .. }) => {
            let text = dataset::graph::Text {
                make: &|len, rng| Ok(words::text(len, rng)),
                count: &|text| text.split_whitespace().count(),
            };
            dataset::graph::build(path, &text, d.output_len(), n as usize, seed)?
        }
        (
            None,
            Dataset::Random {
                input_len,
                range_ratio,
                ..
            }
            | Dataset::RandomMm {
                input_len,
                range_ratio,
                ..
            },
        ) => {
            let mut reqs = words::prompts(*input_len, d.output_len(), n, first_id, seed, warmup);
            if *range_ratio > 0.0 {
                // Each prompt's lengths drawn as with a local tokenizer (they were all
                // `--input-len` here: `--range-ratio` was ignored without one).
                let lens = dataset::LengthSampler::new(*input_len, d.output_len(), *range_ratio)?;
                words::vary(&mut reqs, |rng| lens.draw(rng), seed);
            }
            return Ok(reqs);
        }
        (
            None,
            Dataset::Book { .. }
            | Dataset::ShareGpt { .. }
            | Dataset::Jsonl { .. }
            | Dataset::Prefix { .. },
        ) => return Err(DatasetError::NeedsTokenizer(d.name())),
    };
    // A trace's send times, in the server's time: `--trace-speedup` compresses them (or
    // stretches them, never past a week).
    let given = d.own_schedule().unwrap_or(1.0);
    let speedup = given.max(f64::MIN_POSITIVE);
    let last_s = (prompts.iter()).fold(0.0f64, |m, p| m.max(p.at_ms.unwrap_or(0.0) / 1e3));
    if last_s / speedup > crate::config::MAX_WAIT_S {
        return Err(DatasetError::InvalidSpec(format!(
            "--trace-speedup {given}: the trace's last request would be sent {:.0} s after its first, more than a week",
            last_s / speedup
        )));
    }
    Ok(prompts
        .into_iter()
        .enumerate()
        .map(|(i, p)| RequestSpec {
            id: first_id + i as u64,
            prompt: p.text,
            messages: p.messages,
            input_len: Some(p.input_len),
            output_len: p.output_len,
            warmup,
            offset_ns: p.at_ms.map(|ms| (ms * 1e6 / speedup) as u64),
            designed_cached: p.designed_cached,
            turn: p.turn,
            model: p.model,
            batch: p.documents,
            parts: p.parts,
            call: p.call,
            ..RequestSpec::default()
        })
        .collect())
}
