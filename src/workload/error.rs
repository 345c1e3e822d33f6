//! Why a workload could not be built: the tokenizer, the dataset, or the server's
//! `/tokenize` endpoint.

/// A workload could not be built.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error(transparent)]
    Tokenizer(#[from] crate::tokenizer::TokenizerError),
    #[error(transparent)]
    Dataset(#[from] crate::workload::dataset::DatasetError),
    #[error("--tokenizer server: {0}")]
    ServerTokenizer(String),
}
