//! Why a tokenizer or a chat template could not be loaded: [`TokenizerError`] (one line naming
//! the file or name) and [`FileFault`] (what is wrong inside a file; the caller's error names
//! the file).
//!
//! A leaf beside the files that fail: each of them may use it, and it imports only the lists
//! of known names (`names.rs`). A new way to fail is a variant here with its one-line message.

use std::path::PathBuf;

use super::names::{SUPPORTED_PRE, TIKTOKEN_NAMES};

/// What is wrong inside a tokenizer's or chat template's file (the caller's error names the
/// file).
#[derive(Debug, thiserror::Error)]
pub enum FileFault {
    #[error("missing {0}")]
    Missing(&'static str),
    #[error("{0} is not an array")]
    NotAnArray(&'static str),
    #[error("{0} holds a non-string")]
    NotAString(&'static str),
    #[error("too many tokens")]
    TooManyTokens,
    #[error("too many merges")]
    TooManyMerges,
    #[error("special tokens: {0}")]
    SpecialTokens(#[from] aho_corasick::BuildError),
    #[error("{0}")]
    Regex(#[from] regex::Error),
    #[error("cannot read it: {0}")]
    Unreadable(std::io::Error),
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("\"chat_template\" is a list without a template")]
    TemplateListWithout,
    #[error("\"chat_template\" is neither a string nor a list")]
    TemplateNotText,
}

/// Why a tokenizer could not be loaded. Each message is one line naming the file or name.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("tokenizer file not found: {0}")]
    NotFound(PathBuf),
    #[error("cannot read tokenizer file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("directory {0} has no tokenizer.json")]
    NoTokenizerJson(PathBuf),
    #[error("{path} is not a Hugging Face tokenizer.json: {reason}")]
    NotTokenizerJson { path: PathBuf, reason: String },
    #[error("{path} is a corrupt or truncated GGUF file: {reason}")]
    CorruptGguf { path: PathBuf, reason: String },
    #[error("GGUF file {0} has no tokenizer metadata (no tokenizer.ggml.model key)")]
    GgufNoTokenizer(PathBuf),
    #[error("GGUF file {path}: {reason}")]
    GgufBadTokenizer { path: PathBuf, reason: String },
    #[error(
        "GGUF file {path}: unsupported tokenizer model {model:?} (supported: \"gpt2\" byte-level BPE)"
    )]
    UnsupportedGgufModel { path: PathBuf, model: String },
    #[error(
        "GGUF file {path}: unsupported pre-tokenizer {pre:?} (supported: {})",
        SUPPORTED_PRE.join(", ")
    )]
    UnsupportedPreTokenizer { path: PathBuf, pre: String },
    #[error(
        "unknown tokenizer {name:?}: no such file, and not a tiktoken encoding (known: {})",
        TIKTOKEN_NAMES.join(", ")
    )]
    UnknownEncoding { name: String },
    #[error("cannot build tokenizer {name}: {reason}")]
    Build { name: String, reason: String },
}
