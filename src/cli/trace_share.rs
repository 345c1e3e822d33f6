//! `servebench trace`'s subcommands and their flags: `anonymize IN OUT` (a trace with text
//! written as block ids: `workload::anonymize`) and `analyze FILE` (a trace's lengths, rate,
//! sessions, prefix reuse and LRU cache hit rates: `results::trace_stats`). `run`'s own
//! trace-related flags (request ids, OpenTelemetry spans) are `trace.rs`'s.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::config::workload::DEFAULT_TRACE_BLOCK_SIZE;
use crate::render::print::Format;

#[derive(Debug, Args)]
pub struct TraceShareArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Write a trace that carries text (jsonl dataset lines, or a trace's `prompt` lines) as a
    /// Mooncake-style trace of block ids that keeps lengths, times, sessions and shared
    /// prefixes and drops every word; `run --dataset-name trace` replays it.
    Anonymize(AnonymizeArgs),
    /// A trace's input and output lengths, arrival rate, sessions, prefix reuse and the hit
    /// rate an LRU prefix cache of given sizes would have.
    Analyze(AnalyzeArgs),
}

#[derive(Debug, Args)]
pub struct AnonymizeArgs {
    /// The trace with text: jsonl lines (`prompt`, `messages` or `turns`, with `output_len`)
    /// or trace lines (`prompt`, `output_length`, `session_id`), each with an optional
    /// `timestamp` in ms.
    pub input: PathBuf,
    /// The anonymized trace (JSONL: `timestamp`, `input_length`, `output_length`,
    /// `hash_ids`, `session_id`).
    pub output: PathBuf,
    /// Tokens per block: each block's id names everything up to and including it.
    #[arg(long, value_name = "TOKENS", default_value_t = DEFAULT_TRACE_BLOCK_SIZE)]
    pub trace_block_size: u64,
    /// The tokenizer prompts are cut with: a tokenizer.json (or a directory holding one), a
    /// GGUF file or a tiktoken encoding name; `words` (the default) counts
    /// whitespace-separated words, as servebench's simulator does.
    #[arg(long)]
    pub tokenizer: Option<String>,
    /// Replace OUTPUT if it exists.
    #[arg(long)]
    pub overwrite: bool,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// A trace `run --dataset-name trace` replays (Mooncake's, the generic one, or one
    /// `trace anonymize` wrote).
    pub file: PathBuf,
    /// Tokens per `hash_ids` block (Mooncake's is 512).
    #[arg(long, value_name = "TOKENS", default_value_t = DEFAULT_TRACE_BLOCK_SIZE)]
    pub trace_block_size: u64,
    /// LRU prefix cache sizes to simulate, in blocks, comma-separated (at most 16). Default:
    /// 1/8, 1/4, 1/2 and all of the trace's distinct blocks.
    #[arg(long, value_name = "N", value_delimiter = ',')]
    pub cache_blocks: Vec<u64>,
    /// Width of the arrival rate's windows, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    pub window_s: f64,
    /// Counts the tokens of a `prompt` line's text (as anonymize's --tokenizer); words by
    /// default.
    #[arg(long)]
    pub tokenizer: Option<String>,
    /// text or json.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}
