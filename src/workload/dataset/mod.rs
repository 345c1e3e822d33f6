//! What is asked: builds benchmark prompts whose token counts are exact under the served
//! model's tokenizer.
//!
//! [`build`] turns a [`Dataset`] into `n` [`Prompt`]s, seeded and reproducible. Every
//! `input_len` is the tokenizer's count of the prompt text (`Tokenizer::count`, no BOS or chat
//! template); for the synthetic datasets (`random`, `book`, `prefix`) it is also exactly the
//! length that was asked for: each prompt is re-tokenized and fixed up until it is (see
//! `fit_exact`), or the build fails with an error; it never returns an inexact prompt.
//!
//! This module reads dataset files and runs the tokenizer; it does no HTTP and reads no clock.
//! A new dataset is a [`Dataset`] variant (`config/workload.rs`), a submodule here with a
//! `build(..) -> Result<Vec<Prompt>, DatasetError>`, its arm in [`build`], and a test that
//! every prompt re-tokenizes to its `input_len` (docs/architecture.md has the whole recipe).
//! What the datasets share is in the leaves beside them, `common.rs` (the [`Prompt`], lengths,
//! seeded streams, `fit_exact`, the file read) and `error.rs` (the errors): a dataset imports
//! those, never this file, which only dispatches and re-exports.

pub mod agentic;
mod book;
mod common;
mod error;
pub mod graph;
mod graph_line;
mod jsonl;
mod sharegpt;
mod synthetic;
pub mod trace;

use rand::RngExt;

use crate::config::Dataset;
use crate::tokenizer::Tokenizer;

pub(crate) use common::LengthSampler;
pub use common::{Prompt, MAX_LEN};
pub use error::{DatasetError, GraphLineError, JsonlLineError, TraceLineError, MAX_ID_BYTES};
pub use jsonl::one_clip_per_line;
pub use sharegpt::{SHAREGPT_MAX_PROMPT_LEN, SHAREGPT_MAX_TOTAL_LEN, SHAREGPT_MIN_LEN};

/// Builds `n` prompts of `dataset` under `tok`, seeded by `seed` (the jobs' datasets: `n`
/// jobs, each of its calls one prompt).
pub fn build(
    dataset: &Dataset,
    tok: &Tokenizer,
    n: usize,
    seed: u64,
) -> Result<Vec<Prompt>, DatasetError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let output_len = dataset.output_len();
    match dataset {
        Dataset::Random {
            input_len,
            range_ratio,
            ..
        }
        | Dataset::RandomMm {
            input_len,
            range_ratio,
            ..
        } => {
            let lens = LengthSampler::new(*input_len, output_len, *range_ratio)?;
            synthetic::random(tok, &lens, n, seed)
        }
        Dataset::Book {
            path,
            input_len,
            range_ratio,
            ..
        } => {
            let lens = LengthSampler::new(*input_len, output_len, *range_ratio)?;
            book::build(path, tok, &lens, n, seed)
        }
        Dataset::ShareGpt {
            path,
            output_len,
            multi_turn,
        } => sharegpt::build(path, tok, *output_len, *multi_turn, n, seed),
        Dataset::Jsonl { path, .. } => jsonl::build(path, tok, output_len, n),
        Dataset::Prefix {
            prefix_len,
            num_prefixes,
            input_len,
            ..
        } => synthetic::prefix(
            tok,
            *prefix_len,
            *input_len,
            output_len,
            *num_prefixes,
            n,
            seed,
        ),
        Dataset::Trace {
            path, block_size, ..
        } => {
            let words = synthetic::usable_words(tok)?;
            let vocab = trace::Vocab {
                draw: &|rng| words.spaced[rng.random_range(0..words.spaced.len())],
                render: &|ids| tok.decode(ids),
                count: &|text| tok.count(text),
                name: tok.name().to_string(),
            };
            trace::build(path, &vocab, *block_size, output_len, n, seed)
        }
        Dataset::Agentic {
            input_len, shape, ..
        } => {
            let lens = LengthSampler::new(*input_len, output_len, 0.0)?;
            let calls = agentic::places(shape).len();
            let mut prompts = synthetic::random(tok, &lens, n.saturating_mul(calls), seed)?;
            agentic::assign(&mut prompts, shape, |p, c| p.call = Some(c));
            Ok(prompts)
        }
        Dataset::Graph { path, .. } => {
            let text = graph::Text {
                make: &|len, rng| synthetic::exact_text(tok, len, rng),
                count: &|text| tok.count(text),
            };
            graph::build(path, &text, output_len, n, seed)
        }
    }
}

#[cfg(test)]
mod tests;
