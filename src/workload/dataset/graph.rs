//! The `graph` dataset: agentic jobs from a JSON Lines file, one job (a graph of calls) per
//! line (docs/datasets.md, "Jobs").

use std::path::Path;

use super::common::Prompt;
use super::error::DatasetError;
use crate::tokenizer::Tokenizer;

/// The calls of the file's first `n` jobs, each job's calls in an order where every call comes
/// after the calls it waits for.
pub(super) fn build(
    path: &Path,
    _tok: &Tokenizer,
    _output_len: u64,
    _n: usize,
) -> Result<Vec<Prompt>, DatasetError> {
    Err(DatasetError::InvalidSpec(format!(
        "{}: graph files are not read yet",
        path.display()
    )))
}
