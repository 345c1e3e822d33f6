//! The names of the tokenizers servebench knows: the tiktoken encodings `Tokenizer::load`
//! takes by name and the GGUF pre-tokenizers `from_gguf` rebuilds. Listed here, apart from the
//! code that uses them, so that the error messages (`error.rs`) can name them without importing
//! that code. A leaf: it imports nothing.

/// The tiktoken encoding names [`Tokenizer::load`](super::Tokenizer::load) knows (`gpt2` is r50k_base).
pub const TIKTOKEN_NAMES: &[&str] = &[
    "cl100k_base",
    "o200k_base",
    "p50k_base",
    "r50k_base",
    "gpt2",
];

/// `tokenizer.ggml.pre` values `from_gguf` supports (a missing key means `default`): keep it
/// in step with `from_gguf::pre_regexes`, which holds each one's regex list.
pub const SUPPORTED_PRE: &[&str] = &[
    "smollm",
    "starcoder",
    "refact",
    "command-r",
    "codeshell",
    "exaone",
    "minerva-7b",
    "gpt-2",
    "gpt2",
    "phi-2",
    "mpt",
    "olmo",
    "jais",
    "default",
];
