//! What is sent: the dataset with the settings that belong to it ([`Dataset`]), and the
//! tokenizer that builds and counts prompts ([`WorkloadSpec`]).
//!
//! Each dataset is one variant carrying its own settings, and every question about a dataset
//! (the file it reads, the prompts it builds itself, whether words count it exactly, whether
//! it brings its own schedule or conversations) is a method with an exhaustive match: a new
//! dataset is a compile error at each place that must answer for it.
//!
//! Saved documents keep the flat keys they always had (`dataset`, `dataset_path`,
//! `input_len`, ..., `tokenizer`): [`WorkloadSpec`] is written and read through the flat mirror
//! [`Saved`], which fills the settings a dataset does not have with their defaults, and reads
//! every result file written since the first one (a missing key takes its default).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

use super::error::ConfigError;
use super::limits::MAX_TOKENS;
use super::media::MmSpec;
use saved::{Name, Saved};

/// `--input-len` when not given.
pub const DEFAULT_INPUT_LEN: u64 = 128;
/// `--output-len` when not given (ShareGPT then asks for each answer's own length).
pub const DEFAULT_OUTPUT_LEN: u64 = 128;
/// `--trace-block-size` when not given: Mooncake's blocks.
pub const DEFAULT_TRACE_BLOCK_SIZE: u64 = 512;
/// `--trace-speedup` when not given: the trace's own times.
pub const DEFAULT_TRACE_SPEEDUP: f64 = 1.0;

/// Where prompts come from (`--dataset-name`), with the settings of that dataset
/// (`workload::dataset` builds each). `output_len` is `--output-len` as given: `None` is
/// [`DEFAULT_OUTPUT_LEN`] (ShareGPT: each answer's length); a file's own lengths win over it.
#[derive(Clone, Debug, PartialEq)]
pub enum Dataset {
    /// Random text of exact lengths, uniform in [L(1−r), L(1+r)] (vLLM's range ratio, r in
    /// [0, 1)), input and output alike.
    Random {
        input_len: u64,
        output_len: Option<u64>,
        range_ratio: f64,
    },
    /// `random`'s text with synthetic images beside it (vLLM's `random-mm`): each request's
    /// item count and sizes drawn from `mm`, sent as content parts of its user message.
    RandomMm {
        input_len: u64,
        output_len: Option<u64>,
        range_ratio: f64,
        mm: MmSpec,
    },
    /// Passages of a text file, each at a seeded offset; lengths as `Random`.
    Book {
        path: PathBuf,
        input_len: u64,
        output_len: Option<u64>,
        range_ratio: f64,
    },
    /// ShareGPT conversations (a JSON file); `output_len` overrides each answer's length;
    /// `multi_turn`: every human turn of a conversation, sent as one conversation whose turns
    /// carry the history (`--multi-turn`), otherwise only its first turn.
    ShareGpt {
        path: PathBuf,
        output_len: Option<u64>,
        multi_turn: bool,
    },
    /// One prompt, chat or conversation per line of a JSON Lines file; `output_len` where a
    /// line gives none.
    Jsonl {
        path: PathBuf,
        output_len: Option<u64>,
    },
    /// `num_prefixes` shared prefixes of `prefix_len` tokens, each prompt one of them followed
    /// by its own random suffix of `input_len` tokens.
    Prefix {
        prefix_len: u64,
        num_prefixes: u64,
        input_len: u64,
        output_len: Option<u64>,
    },
    /// A JSONL trace replayed on its own schedule (Mooncake's format, or a generic one):
    /// `block_size` tokens per `hash_ids` block, `speedup` times faster than its timestamps;
    /// `output_len` where a line gives none.
    Trace {
        path: PathBuf,
        output_len: Option<u64>,
        block_size: u64,
        speedup: f64,
    },
    /// Agentic jobs from a JSON Lines file, one job (a graph of calls) per line (docs/workloads.md,
    /// "Jobs (agentic workloads)"); `output_len` for a call that gives none.
    Graph {
        path: PathBuf,
        output_len: Option<u64>,
    },
    /// Seeded agentic jobs of `shape`'s levels of parallel calls, each call's own text of
    /// `input_len` tokens (exact under the tokenizer) and its answer of `output_len`.
    Agentic {
        input_len: u64,
        output_len: Option<u64>,
        shape: AgenticShape,
    },
}

/// The shape of a generated agentic job: `depth` levels of `fanout` parallel calls; level
/// k + 1 is sent `gap_ms` after the last call of level k ended, and each of its calls carries
/// all `fanout` replies of level k (a fan-in then a fan-out). `fanout` 1 is a tool loop,
/// `depth` 1 a pure fan-out.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgenticShape {
    pub fanout: u32,
    pub depth: u32,
    pub gap_ms: f64,
}

impl Default for AgenticShape {
    fn default() -> Self {
        AgenticShape {
            fanout: 1,
            depth: 1,
            gap_ms: 0.0,
        }
    }
}

impl Dataset {
    /// The name `--dataset-name` takes and documents save.
    pub fn name(&self) -> &'static str {
        self.saved_name().as_str()
    }

    fn saved_name(&self) -> Name {
        match self {
            Dataset::Random { .. } => Name::Random,
            Dataset::RandomMm { .. } => Name::RandomMm,
            Dataset::Book { .. } => Name::Book,
            Dataset::ShareGpt { .. } => Name::Sharegpt,
            Dataset::Jsonl { .. } => Name::Jsonl,
            Dataset::Prefix { .. } => Name::Prefix,
            Dataset::Trace { .. } => Name::Trace,
            Dataset::Graph { .. } => Name::Graph,
            Dataset::Agentic { .. } => Name::Agentic,
        }
    }

    /// The file it reads (`--dataset-path`); `None`: it makes its text itself.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Dataset::Book { path, .. }
            | Dataset::ShareGpt { path, .. }
            | Dataset::Jsonl { path, .. }
            | Dataset::Trace { path, .. }
            | Dataset::Graph { path, .. } => Some(path),
            Dataset::Random { .. }
            | Dataset::RandomMm { .. }
            | Dataset::Prefix { .. }
            | Dataset::Agentic { .. } => None,
        }
    }

    /// `--input-len`, for the datasets that build prompts of a length asked for (`prefix`: the
    /// suffix after the shared prefix); `None`: the prompts' lengths come from the file.
    pub fn input_len(&self) -> Option<u64> {
        match self {
            Dataset::Random { input_len, .. }
            | Dataset::RandomMm { input_len, .. }
            | Dataset::Book { input_len, .. }
            | Dataset::Prefix { input_len, .. }
            | Dataset::Agentic { input_len, .. } => Some(*input_len),
            Dataset::ShareGpt { .. }
            | Dataset::Jsonl { .. }
            | Dataset::Trace { .. }
            | Dataset::Graph { .. } => None,
        }
    }

    /// `--output-len` as given (`None`: not given).
    pub fn output_len_given(&self) -> Option<u64> {
        match self {
            Dataset::Random { output_len, .. }
            | Dataset::RandomMm { output_len, .. }
            | Dataset::Book { output_len, .. }
            | Dataset::ShareGpt { output_len, .. }
            | Dataset::Jsonl { output_len, .. }
            | Dataset::Prefix { output_len, .. }
            | Dataset::Trace { output_len, .. }
            | Dataset::Graph { output_len, .. }
            | Dataset::Agentic { output_len, .. } => *output_len,
        }
    }

    /// The output tokens asked of a request whose data gives none: `--output-len`, or
    /// [`DEFAULT_OUTPUT_LEN`].
    pub fn output_len(&self) -> u64 {
        self.output_len_given().unwrap_or(DEFAULT_OUTPUT_LEN)
    }

    /// The range ratio of the drawn lengths (`random`, `book`); 0 for the others.
    pub fn range_ratio(&self) -> f64 {
        match self {
            Dataset::Random { range_ratio, .. }
            | Dataset::RandomMm { range_ratio, .. }
            | Dataset::Book { range_ratio, .. } => *range_ratio,
            Dataset::ShareGpt { .. }
            | Dataset::Jsonl { .. }
            | Dataset::Prefix { .. }
            | Dataset::Trace { .. }
            | Dataset::Graph { .. }
            | Dataset::Agentic { .. } => 0.0,
        }
    }

    /// The tokens of the longest prompt it builds itself before a run starts (the synthetic
    /// datasets, whose size the flags set); `None`: its prompts are as large as its file (a
    /// trace's are bounded as it is read).
    pub fn longest_built_prompt(&self) -> Option<u64> {
        let drawn = |input_len: u64, r: f64| (input_len as f64 * (1.0 + r)).ceil() as u64;
        match self {
            Dataset::Random {
                input_len,
                range_ratio,
                ..
            }
            | Dataset::RandomMm {
                input_len,
                range_ratio,
                ..
            }
            | Dataset::Book {
                input_len,
                range_ratio,
                ..
            } => Some(drawn(*input_len, *range_ratio)),
            Dataset::Prefix {
                prefix_len,
                input_len,
                ..
            } => Some(input_len.saturating_add(*prefix_len)),
            // A call's own text; the replies it splices are the server's, added when sent.
            Dataset::Agentic { input_len, .. } => Some(*input_len),
            Dataset::ShareGpt { .. }
            | Dataset::Jsonl { .. }
            | Dataset::Trace { .. }
            | Dataset::Graph { .. } => None,
        }
    }

    /// Whether it can be built without the served model's tokenizer, counted in
    /// whitespace-separated words (the built-in simulator's own counting): its text is made of
    /// words it draws itself (a graph file's own texts are counted in words). Another file's
    /// prompts, a book's passages and a prefix's exact lengths need the tokenizer.
    pub fn builds_with_words(&self) -> bool {
        match self {
            Dataset::Random { .. }
            | Dataset::RandomMm { .. }
            | Dataset::Trace { .. }
            | Dataset::Agentic { .. }
            | Dataset::Graph { .. } => true,
            Dataset::Book { .. }
            | Dataset::ShareGpt { .. }
            | Dataset::Jsonl { .. }
            | Dataset::Prefix { .. } => false,
        }
    }

    /// Its own schedule: how many times faster than its timestamps it is replayed (a trace);
    /// `None`: the load's schedule sends it.
    pub fn own_schedule(&self) -> Option<f64> {
        match self {
            Dataset::Trace { speedup, .. } => Some(*speedup),
            Dataset::Graph { .. } | Dataset::Agentic { .. } => None,
            Dataset::Random { .. }
            | Dataset::RandomMm { .. }
            | Dataset::Book { .. }
            | Dataset::ShareGpt { .. }
            | Dataset::Jsonl { .. }
            | Dataset::Prefix { .. } => None,
        }
    }

    /// Whether its file gives whole conversations (`--multi-turn` ShareGPT, jsonl "turns"
    /// lines) whose later turns an API that takes a prompt gets through the chat template of
    /// `--tokenizer`. A trace's sessions go out in the plain history format.
    pub fn templates_conversations(&self) -> bool {
        match self {
            Dataset::ShareGpt { multi_turn, .. } => *multi_turn,
            Dataset::Jsonl { .. } | Dataset::Graph { .. } | Dataset::Agentic { .. } => true,
            Dataset::Random { .. }
            | Dataset::RandomMm { .. }
            | Dataset::Book { .. }
            | Dataset::Prefix { .. }
            | Dataset::Trace { .. } => false,
        }
    }

    /// Whether it sends ShareGPT's whole conversations (`--multi-turn`).
    pub fn multi_turn(&self) -> bool {
        match self {
            Dataset::ShareGpt { multi_turn, .. } => *multi_turn,
            Dataset::Random { .. }
            | Dataset::RandomMm { .. }
            | Dataset::Book { .. }
            | Dataset::Jsonl { .. }
            | Dataset::Prefix { .. }
            | Dataset::Trace { .. }
            | Dataset::Graph { .. }
            | Dataset::Agentic { .. } => false,
        }
    }

    /// Whether it sends agentic jobs (graphs of calls) rather than requests or conversations.
    pub fn jobs(&self) -> bool {
        matches!(self, Dataset::Graph { .. } | Dataset::Agentic { .. })
    }

    /// Checks its own settings (the rules between it and the load are
    /// `RunConfig::validate`'s); the error names the flag.
    pub fn check(&self) -> Result<(), ConfigError> {
        let bad = |option: &str, why: String| {
            Err(ConfigError::Invalid {
                option: option.to_string(),
                why,
            })
        };
        let lengths = [
            ("--output-len", self.output_len_given()),
            ("--input-len", self.input_len()),
        ];
        for (flag, len) in lengths {
            match len {
                Some(0) => return bad(flag, "must be at least 1".into()),
                Some(len) if len > MAX_TOKENS => {
                    return bad(flag, format!("must be at most {MAX_TOKENS} tokens"))
                }
                _ => {}
            }
        }
        match self {
            Dataset::Random { range_ratio, .. } | Dataset::Book { range_ratio, .. } => {
                if !(0.0..1.0).contains(range_ratio) {
                    return bad("--range-ratio", "must be in [0, 1)".into());
                }
            }
            Dataset::RandomMm {
                range_ratio, mm, ..
            } => {
                if !(0.0..1.0).contains(range_ratio) {
                    return bad("--range-ratio", "must be in [0, 1)".into());
                }
                mm.check()?;
            }
            Dataset::Prefix {
                prefix_len,
                input_len,
                ..
            } => {
                if *prefix_len > MAX_TOKENS - input_len {
                    return bad(
                        "--prefix-len",
                        format!("with --input-len must be at most {MAX_TOKENS} tokens"),
                    );
                }
            }
            Dataset::Agentic { shape, .. } => {
                let calls = u64::from(shape.fanout) * u64::from(shape.depth);
                if shape.fanout == 0 {
                    return bad("--agentic-fanout", "must be at least 1".into());
                }
                if shape.depth == 0 {
                    return bad("--agentic-depth", "must be at least 1".into());
                }
                let max = super::limits::MAX_CALLS_PER_JOB as u64;
                if calls > max {
                    return bad(
                        "--agentic-depth",
                        format!(
                            "with --agentic-fanout makes {calls} calls per job, more than {max}"
                        ),
                    );
                }
                let max_gap = super::limits::MAX_GAP_MS;
                if !(0.0..=max_gap).contains(&shape.gap_ms) {
                    return bad(
                        "--agentic-gap-ms",
                        format!("must be a number of ms in [0, {max_gap}] (a week)"),
                    );
                }
            }
            Dataset::ShareGpt { .. }
            | Dataset::Jsonl { .. }
            | Dataset::Trace { .. }
            | Dataset::Graph { .. } => {}
        }
        Ok(())
    }
}

impl fmt::Display for Dataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What is sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "Saved", try_from = "Saved")]
pub struct WorkloadSpec {
    pub dataset: Dataset,
    /// The tokenizer that builds prompts and counts text (`tokenizer::Tokenizer::load` spec);
    /// `None`: whitespace-separated words, the built-in simulator's own counting.
    pub tokenizer: Option<String>,
}

impl WorkloadSpec {
    /// Random prompts of `input_len` words or tokens, asking for `output_len` tokens each
    /// (counted in words: no tokenizer).
    pub fn random(input_len: u64, output_len: u64) -> WorkloadSpec {
        WorkloadSpec {
            dataset: Dataset::Random {
                input_len,
                output_len: Some(output_len),
                range_ratio: 0.0,
            },
            tokenizer: None,
        }
    }
}

impl Default for WorkloadSpec {
    /// `random`, every flag at its default, counted in words.
    fn default() -> Self {
        WorkloadSpec {
            dataset: Dataset::Random {
                input_len: DEFAULT_INPUT_LEN,
                output_len: None,
                range_ratio: 0.0,
            },
            tokenizer: None,
        }
    }
}

#[path = "workload_saved.rs"]
mod saved;

#[cfg(test)]
#[path = "workload_tests.rs"]
mod tests;
