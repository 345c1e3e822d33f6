//! What is sent: the dataset and the lengths of its prompts ([`WorkloadSpec`]).

use serde::{Deserialize, Serialize};
use std::fmt;

use super::defaults;

/// Where prompts come from (`--dataset-name`; `workload::dataset` builds each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum DatasetKind {
    /// Random text of exact lengths.
    Random,
    /// Passages of a text file (`--dataset-path`).
    Book,
    /// ShareGPT conversations (a JSON file).
    Sharegpt,
    /// One prompt per line of a JSON Lines file.
    Jsonl,
    /// Groups of prompts sharing a prefix.
    Prefix,
    /// A JSONL trace replayed on its own schedule (Mooncake's format, or a generic one).
    Trace,
}

impl DatasetKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DatasetKind::Random => "random",
            DatasetKind::Book => "book",
            DatasetKind::Sharegpt => "sharegpt",
            DatasetKind::Jsonl => "jsonl",
            DatasetKind::Prefix => "prefix",
            DatasetKind::Trace => "trace",
        }
    }
}

impl fmt::Display for DatasetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    pub dataset: DatasetKind,
    /// The dataset file (`book`, `sharegpt`, `jsonl`).
    #[serde(default)]
    pub dataset_path: Option<std::path::PathBuf>,
    /// Prompt length, tokens (for `prefix`: the suffix after the shared prefix).
    pub input_len: u64,
    /// Max output tokens per request.
    pub output_len: u64,
    /// True when `output_len` was given explicitly (ShareGPT otherwise uses each answer's length).
    #[serde(default)]
    pub output_len_given: bool,
    /// Lengths uniform in [L(1−r), L(1+r)] (vLLM's range ratio).
    #[serde(default)]
    pub range_ratio: f64,
    /// `sharegpt`: every human turn of a conversation, sent as one conversation whose turns
    /// carry the history (`--multi-turn`); otherwise only its first turn.
    #[serde(default)]
    pub multi_turn: bool,
    /// `prefix`: tokens in each shared prefix, and how many prefixes.
    #[serde(default)]
    pub prefix_len: u64,
    #[serde(default = "one")]
    pub num_prefixes: u64,
    /// `trace`: tokens per `hash_ids` block, and how many times faster than its timestamps.
    #[serde(default = "defaults::trace_block_size")]
    pub trace_block_size: u64,
    #[serde(default = "defaults::trace_speedup")]
    pub trace_speedup: f64,
    /// The tokenizer that builds prompts and counts text (`tokenizer::Tokenizer::load` spec);
    /// `None`: whitespace-separated words, the built-in simulator's own counting.
    #[serde(default)]
    pub tokenizer: Option<String>,
}

fn one() -> u64 {
    1
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            dataset: DatasetKind::Random,
            dataset_path: None,
            input_len: 128,
            output_len: 128,
            output_len_given: false,
            range_ratio: 0.0,
            multi_turn: false,
            prefix_len: 0,
            num_prefixes: 1,
            trace_block_size: defaults::trace_block_size(),
            trace_speedup: defaults::trace_speedup(),
            tokenizer: None,
        }
    }
}
