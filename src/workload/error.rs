//! Why a workload could not be built: the tokenizer, the dataset, or the server's
//! `/tokenize` endpoint.

use std::path::PathBuf;

use crate::workload::dataset::DatasetError;

/// A workload could not be built.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error(transparent)]
    Tokenizer(#[from] crate::tokenizer::TokenizerError),
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    #[error("--tokenizer server: {0}")]
    ServerTokenizer(#[from] ServerTokenizerError),
    #[error(transparent)]
    Media(#[from] crate::workload::media::MediaError),
    #[error(transparent)]
    Audio(#[from] crate::workload::audio::AudioError),
}

/// Why the server's tokenizer could not build the prompts.
#[derive(Debug, thiserror::Error)]
pub enum ServerTokenizerError {
    /// The request itself failed.
    #[error("{0}")]
    Request(crate::measure::error::SideChannelError),
    #[error("the /tokenize answer has no `tokens`")]
    NoTokensField,
    #[error("the /tokenize answer has no tokens for a text of {0} bytes")]
    NoTokens(usize),
    #[error("the /tokenize answer has a token that is not an id")]
    NotAnId,
    #[error("the /detokenize answer has no `content` or `prompt`")]
    NoText,
    #[error("cannot build a prompt of {target} tokens from {source_tokens} source tokens")]
    NoSource { target: usize, source_tokens: usize },
    #[error("could not make a prompt of exactly {0} tokens with the server's tokenizer")]
    NotExact(usize),
    #[error("--tokenizer server builds random and book prompts, not {0}")]
    Unsupported(&'static str),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the book has {tokens} tokens, fewer than the {target} asked for")]
    BookTooShort { tokens: usize, target: usize },
    #[error(transparent)]
    Lengths(#[from] DatasetError),
}
