//! What is sent: builds the run's [`RequestSpec`]s from the workload spec.
//!
//! With a tokenizer (`--tokenizer`), prompts come from `dataset` and have exactly the requested
//! length under it. Without one, only `random` is possible and it builds prompts of `input_len`
//! whitespace-separated words drawn (seeded) from common English words: that is exact under
//! the built-in simulator's own counting (one token per word), and only an approximation for
//! any real server, so the command line requires a tokenizer whenever `--base-url` is given.
//! The tokenizer is resolved once ([`PromptTokenizer`]) and passed to every run of a sweep or
//! search. Only `--tokenizer server` does HTTP (`server.rs`, through `measure::client`);
//! nothing here reads a clock.
//!
//! To add a dataset: a module under `dataset/` and a [`crate::config::DatasetKind`] variant.

pub mod batch;
pub mod dataset;
pub mod error;
pub mod server;

use std::path::PathBuf;

use rand::{RngExt, SeedableRng};

use crate::config::{DatasetKind, WorkloadSpec};
use crate::measure::client::{Client, RequestSpec};
use crate::tokenizer::{Tokenizer, TokenizerError};
use crate::workload::dataset::{DatasetError, DatasetSpec};
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
    match tokenizer {
        PromptTokenizer::Server => {
            server::build_requests(spec, client, base_url, model, n, seed, warmup)
                .await
                .map_err(WorkloadError::ServerTokenizer)
        }
        local => Ok(build_requests(spec, local.local(), n, 0, seed, warmup)?),
    }
}

/// The dataset spec for `spec`.
fn dataset_spec(spec: &WorkloadSpec) -> Result<DatasetSpec, DatasetError> {
    let path = || {
        spec.dataset_path
            .clone()
            .unwrap_or_else(|| PathBuf::from("-"))
    };
    let (input_len, output_len, range_ratio) = (spec.input_len, spec.output_len, spec.range_ratio);
    Ok(match spec.dataset {
        DatasetKind::Random => DatasetSpec::Random {
            input_len,
            output_len,
            range_ratio,
        },
        DatasetKind::Book => DatasetSpec::Book {
            path: path(),
            input_len,
            output_len,
            range_ratio,
        },
        DatasetKind::Sharegpt => DatasetSpec::ShareGpt {
            path: path(),
            output_len: spec.output_len_given.then_some(output_len),
            multi_turn: spec.multi_turn,
        },
        DatasetKind::Jsonl => DatasetSpec::Jsonl {
            path: path(),
            output_len,
        },
        DatasetKind::Prefix => DatasetSpec::Prefix {
            prefix_len: spec.prefix_len,
            input_len,
            output_len,
            num_prefixes: spec.num_prefixes,
        },
        DatasetKind::Trace => DatasetSpec::Trace {
            path: trace_path(spec),
            block: spec.trace_block_size,
            output_len,
        },
    })
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
    let prompts = match tokenizer {
        Some(tok) => crate::workload::dataset::build(&dataset_spec(spec)?, tok, n as usize, seed)?,
        None if spec.dataset == DatasetKind::Trace => {
            let vocab = dataset::trace::Vocab {
                draw: &|rng| rng.random_range(0..WORDS.len() as u32),
                render: &|units| {
                    units
                        .iter()
                        .map(|&u| format!(" {}", WORDS[u as usize]))
                        .collect()
                },
                count: &|text| text.split_whitespace().count(),
                name: "words".into(),
            };
            let (path, block) = (trace_path(spec), spec.trace_block_size);
            dataset::trace::build(&path, &vocab, block, spec.output_len, n as usize, seed)?
        }
        None => return Ok(build(spec, n, first_id, seed, warmup)),
    };
    // A trace's send times, in the server's time: `--trace-speedup` compresses them (or
    // stretches them, never past a week).
    let speedup = spec.trace_speedup.max(f64::MIN_POSITIVE);
    let last_s = (prompts.iter()).fold(0.0f64, |m, p| m.max(p.at_ms.unwrap_or(0.0) / 1e3));
    if last_s / speedup > crate::config::MAX_WAIT_S {
        return Err(DatasetError::InvalidSpec(format!(
            "--trace-speedup {}: the trace's last request would be sent {:.0} s after its first, more than a week",
            spec.trace_speedup,
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
            ..RequestSpec::default()
        })
        .collect())
}

fn trace_path(spec: &WorkloadSpec) -> PathBuf {
    spec.dataset_path
        .clone()
        .unwrap_or_else(|| PathBuf::from("-"))
}

const WORDS: &[&str] = &[
    "time",
    "year",
    "people",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "government",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
];

/// Builds `n` word prompts (ids from `first_id`), reproducible from `seed`.
fn build(spec: &WorkloadSpec, n: u64, first_id: u64, seed: u64, warmup: bool) -> Vec<RequestSpec> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5EED_0F50_4D50);
    (0..n)
        .map(|i| {
            let mut prompt = String::with_capacity(spec.input_len as usize * 7);
            for w in 0..spec.input_len {
                if w > 0 {
                    prompt.push(' ');
                }
                prompt.push_str(WORDS[rng.random_range(0..WORDS.len())]);
            }
            RequestSpec {
                id: first_id + i,
                prompt,
                messages: None,
                input_len: Some(spec.input_len),
                output_len: spec.output_len,
                warmup,
                ..Default::default()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_reproducible_and_have_the_requested_word_count() {
        let spec = WorkloadSpec {
            input_len: 12,
            ..WorkloadSpec::default()
        };
        let a = build(&spec, 3, 0, 1, false);
        assert_eq!(a.len(), 3);
        assert_eq!(a[0].prompt.split(' ').count(), 12);
        assert_eq!(a[2].id, 2);
        let b = build(&spec, 3, 0, 1, false);
        assert_eq!(a[1].prompt, b[1].prompt);
        assert_ne!(a[0].prompt, build(&spec, 1, 0, 2, false)[0].prompt);
    }
}
