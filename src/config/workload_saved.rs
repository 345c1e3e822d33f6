//! The saved form of a [`WorkloadSpec`]: the flat keys every result document has had
//! (`dataset`, `dataset_path`, `input_len`, ..., `tokenizer`), written from a spec and read
//! back into one, a missing key taking its default.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use super::{
    AgenticShape, Dataset, WorkloadSpec, DEFAULT_INPUT_LEN, DEFAULT_OUTPUT_LEN,
    DEFAULT_TRACE_BLOCK_SIZE, DEFAULT_TRACE_SPEEDUP,
};
use crate::config::error::ConfigError;
use crate::config::media::MmSpec;

/// A dataset's name as saved.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Name {
    Random,
    Book,
    Sharegpt,
    Jsonl,
    Prefix,
    Trace,
    #[serde(rename = "random-mm")]
    RandomMm,
    Graph,
    Agentic,
}

impl Name {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Name::Random => "random",
            Name::Book => "book",
            Name::Sharegpt => "sharegpt",
            Name::Jsonl => "jsonl",
            Name::Prefix => "prefix",
            Name::Trace => "trace",
            Name::RandomMm => "random-mm",
            Name::Graph => "graph",
            Name::Agentic => "agentic",
        }
    }
}

/// The saved form of a [`WorkloadSpec`]: one flat object with a key for every dataset's
/// settings (a dataset that lacks one saves its default), in the order documents have always
/// had them.
#[derive(Serialize, Deserialize)]
pub(super) struct Saved {
    dataset: Name,
    /// The dataset file (`book`, `sharegpt`, `jsonl`, `trace`).
    #[serde(default)]
    dataset_path: Option<PathBuf>,
    input_len: u64,
    output_len: u64,
    /// True when `output_len` was given explicitly.
    #[serde(default)]
    output_len_given: bool,
    #[serde(default)]
    range_ratio: f64,
    #[serde(default)]
    multi_turn: bool,
    #[serde(default)]
    prefix_len: u64,
    #[serde(default = "one")]
    num_prefixes: u64,
    #[serde(default = "trace_block_size")]
    trace_block_size: u64,
    #[serde(default = "trace_speedup")]
    trace_speedup: f64,
    #[serde(default)]
    tokenizer: Option<String>,
    /// `random-mm`'s media settings; absent for every other dataset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    random_mm: Option<MmSpec>,
    /// `agentic`'s job shape; absent for every other dataset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agentic: Option<AgenticShape>,
}

fn one() -> u64 {
    1
}
fn trace_block_size() -> u64 {
    DEFAULT_TRACE_BLOCK_SIZE
}
fn trace_speedup() -> f64 {
    DEFAULT_TRACE_SPEEDUP
}

impl From<WorkloadSpec> for Saved {
    fn from(w: WorkloadSpec) -> Saved {
        let d = &w.dataset;
        let (prefix_len, num_prefixes) = match *d {
            Dataset::Prefix {
                prefix_len,
                num_prefixes,
                ..
            } => (prefix_len, num_prefixes),
            _ => (0, 1),
        };
        let (trace_block_size, trace_speedup) = match *d {
            Dataset::Trace {
                block_size,
                speedup,
                ..
            } => (block_size, speedup),
            _ => (DEFAULT_TRACE_BLOCK_SIZE, DEFAULT_TRACE_SPEEDUP),
        };
        Saved {
            dataset: d.saved_name(),
            dataset_path: d.path().map(Path::to_path_buf),
            input_len: d.input_len().unwrap_or(DEFAULT_INPUT_LEN),
            output_len: d.output_len(),
            output_len_given: d.output_len_given().is_some(),
            range_ratio: d.range_ratio(),
            multi_turn: d.multi_turn(),
            prefix_len,
            num_prefixes,
            trace_block_size,
            trace_speedup,
            tokenizer: w.tokenizer,
            random_mm: match &w.dataset {
                Dataset::RandomMm { mm, .. } => Some(mm.clone()),
                _ => None,
            },
            agentic: match &w.dataset {
                Dataset::Agentic { shape, .. } => Some(*shape),
                _ => None,
            },
        }
    }
}

impl TryFrom<Saved> for WorkloadSpec {
    type Error = ConfigError;
    /// The dataset's own settings; the others' keys are not read.
    fn try_from(s: Saved) -> Result<WorkloadSpec, ConfigError> {
        let name = s.dataset;
        let path = || {
            s.dataset_path.clone().ok_or_else(|| ConfigError::Invalid {
                option: "dataset_path".into(),
                why: format!("the {} dataset needs a file", name.as_str()),
            })
        };
        // Documents older than `output_len_given` saved only the length they asked for.
        let output_len =
            (s.output_len_given || s.output_len != DEFAULT_OUTPUT_LEN).then_some(s.output_len);
        let (input_len, range_ratio) = (s.input_len, s.range_ratio);
        let dataset = match name {
            Name::Random => Dataset::Random {
                input_len,
                output_len,
                range_ratio,
            },
            Name::Book => Dataset::Book {
                path: path()?,
                input_len,
                output_len,
                range_ratio,
            },
            Name::Sharegpt => Dataset::ShareGpt {
                path: path()?,
                output_len: s.output_len_given.then_some(s.output_len),
                multi_turn: s.multi_turn,
            },
            Name::Jsonl => Dataset::Jsonl {
                path: path()?,
                output_len,
            },
            Name::Prefix => Dataset::Prefix {
                prefix_len: s.prefix_len,
                num_prefixes: s.num_prefixes,
                input_len,
                output_len,
            },
            Name::Trace => Dataset::Trace {
                path: path()?,
                output_len,
                block_size: s.trace_block_size,
                speedup: s.trace_speedup,
            },
            Name::RandomMm => Dataset::RandomMm {
                input_len,
                output_len,
                range_ratio,
                mm: s.random_mm.clone().unwrap_or_default(),
            },
            Name::Graph => Dataset::Graph {
                path: path()?,
                output_len,
            },
            Name::Agentic => Dataset::Agentic {
                input_len,
                output_len,
                shape: s.agentic.unwrap_or_default(),
            },
        };
        Ok(WorkloadSpec {
            dataset,
            tokenizer: s.tokenizer,
        })
    }
}
