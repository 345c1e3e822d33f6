//! Rebuilds a GGUF model's tokenizer, as llama.cpp builds it, on the `tokenizers` crate.
//!
//! Supported: `tokenizer.ggml.model == "gpt2"` (byte-level BPE). The vocabulary comes from
//! `tokenizer.ggml.tokens`, the merges from `tokenizer.ggml.merges`, and control (3) and
//! user-defined (4) entries of `tokenizer.ggml.token_type` become added tokens, matched in
//! the text before pre-tokenization (llama.cpp's `/tokenize` parses special tokens too).
//!
//! The pre-tokenizer follows llama.cpp's `llm_tokenizer_bpe` for `tokenizer.ggml.pre`: a list
//! of regexes applied one after another, each splitting every piece so far into matches and
//! the text between them (`Split` with `Isolated`), then the GPT-2 byte-to-char mapping
//! (`ByteLevel` without its own regex and without a prefix space). For `smollm` (and the
//! types llama.cpp groups with it) that is `\p{N}` (each digit alone) then the GPT-2 regex;
//! for `gpt-2` (and its group) the GPT-2 regex alone; for `default` (also used when the key is
//! missing) punctuation runs, the GPT-2 regex, `\p{N}+` and `[0-9][0-9][0-9]`.
//!
//! When the regex list is GPT-2's alone, or `\p{N}` then GPT-2's, [`load`] returns the fast
//! byte-level BPE of `bpe.rs` (same ids, ~10× faster); otherwise the `tokenizers` pipeline
//! built here. `load_general` always builds the latter, so tests can compare the two.
//!
//! To support another pre-tokenizer, add its name and llama.cpp's regex list to `pre_regexes`
//! (check that llama.cpp sets no other flag for it, such as `ignore_merges`), then verify
//! against a real server with `scripts/gen_tokenize_fixture.py`. SentencePiece (`llama`)
//! GGUF vocabularies are not supported yet.

use std::path::Path;

use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, SplitDelimiterBehavior};

use super::bpe::{ByteBpe, Pre};
use super::error::{FileFault, TokenizerError};
use super::gguf::{self, GgufError, GgufMetadata, GgufValue};

/// GPT-2's pre-tokenizer regex (as llama.cpp writes it).
const GPT2_REGEX: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";

/// llama.cpp's regex list for a pre-tokenizer name, or None when unsupported.
fn pre_regexes(pre: &str) -> Option<Vec<&'static str>> {
    Some(match pre {
        "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" | "minerva-7b" => {
            vec![r"\p{N}", GPT2_REGEX]
        }
        "gpt-2" | "gpt2" | "phi-2" | "mpt" | "olmo" | "jais" => vec![GPT2_REGEX],
        "default" | "" => vec![
            r"[\p{P}\$\+<=>\^~\|]+",
            GPT2_REGEX,
            r"\p{N}+",
            "[0-9][0-9][0-9]",
        ],
        _ => return None,
    })
}

/// GGUF token types (llama.cpp's `llama_token_type`).
const TOKEN_TYPE_CONTROL: i64 = 3;
const TOKEN_TYPE_USER_DEFINED: i64 = 4;

/// A tokenizer built from GGUF metadata.
pub enum Built {
    /// The fast byte-level BPE (`bpe.rs`), for `gpt-2` and `smollm`-style pre-tokenizers.
    Fast(Box<ByteBpe>),
    /// The general `tokenizers` pipeline, for the other supported pre-tokenizers.
    Hf(Box<tokenizers::Tokenizer>),
}

/// Reads the GGUF file at `path` and builds its tokenizer (the fast one when it applies).
pub fn load(path: &Path) -> Result<Built, TokenizerError> {
    let parsed = parse(path, &read(path)?)?;
    if let Some(pre) = fast_pre(&parsed.pre) {
        let special: Vec<bool> = parsed.types.iter().map(|t| is_added(*t)).collect();
        let bpe = ByteBpe::new(pre, &parsed.texts, &special, &parsed.merges).map_err(|fault| {
            TokenizerError::GgufBadTokenizer {
                path: path.to_path_buf(),
                reason: fault.to_string(),
            }
        })?;
        return Ok(Built::Fast(Box::new(bpe)));
    }
    build_hf(path, &parsed).map(|t| Built::Hf(Box::new(t)))
}

/// Builds the GGUF file's tokenizer on the general `tokenizers` pipeline, whatever the
/// pre-tokenizer (tests check the fast path against it).
pub fn load_general(path: &Path) -> Result<tokenizers::Tokenizer, TokenizerError> {
    build_hf(path, &parse(path, &read(path)?)?)
}

fn read(path: &Path) -> Result<GgufMetadata, TokenizerError> {
    gguf::read_metadata(path).map_err(|e| match e {
        GgufError::Io(source) => TokenizerError::Io {
            path: path.to_path_buf(),
            source,
        },
        other => TokenizerError::CorruptGguf {
            path: path.to_path_buf(),
            reason: other.to_string(),
        },
    })
}

fn fast_pre(pre: &str) -> Option<Pre> {
    match pre_regexes(pre)?.as_slice() {
        [GPT2_REGEX] => Some(Pre::Gpt2),
        [r"\p{N}", GPT2_REGEX] => Some(Pre::DigitsThenGpt2),
        _ => None,
    }
}

fn is_added(token_type: i64) -> bool {
    token_type == TOKEN_TYPE_CONTROL || token_type == TOKEN_TYPE_USER_DEFINED
}

/// The tokenizer metadata of a GGUF file, checked.
struct Parsed {
    pre: String,
    regexes: Vec<&'static str>,
    /// Token texts in id order (empty ones replaced as llama.cpp does).
    texts: Vec<String>,
    types: Vec<i64>,
    merges: Vec<(String, String)>,
}

fn parse(path: &Path, meta: &GgufMetadata) -> Result<Parsed, TokenizerError> {
    let bad = |reason: String| TokenizerError::GgufBadTokenizer {
        path: path.to_path_buf(),
        reason,
    };
    let model = meta
        .get_str("tokenizer.ggml.model")
        .ok_or_else(|| TokenizerError::GgufNoTokenizer(path.to_path_buf()))?;
    if model != "gpt2" {
        return Err(TokenizerError::UnsupportedGgufModel {
            path: path.to_path_buf(),
            model: model.to_string(),
        });
    }
    let pre = meta.get_str("tokenizer.ggml.pre").unwrap_or("default");
    let regexes = pre_regexes(pre).ok_or_else(|| TokenizerError::UnsupportedPreTokenizer {
        path: path.to_path_buf(),
        pre: pre.to_string(),
    })?;

    let tokens = string_array(meta, "tokenizer.ggml.tokens").map_err(|f| bad(f.to_string()))?;
    if tokens.is_empty() {
        return Err(bad("tokenizer.ggml.tokens is empty".into()));
    }
    if u32::try_from(tokens.len()).is_err() {
        return Err(bad("too many tokens".into()));
    }
    let merges_raw = string_array(meta, "tokenizer.ggml.merges").map_err(|f| bad(f.to_string()))?;
    let types: Vec<i64> = match meta.get("tokenizer.ggml.token_type") {
        None => vec![1; tokens.len()],
        Some(v) => {
            let arr = v
                .as_array()
                .ok_or_else(|| bad("tokenizer.ggml.token_type is not an array".into()))?;
            arr.iter()
                .map(|x| {
                    x.as_i64()
                        .ok_or_else(|| bad("tokenizer.ggml.token_type holds a non-integer".into()))
                })
                .collect::<Result<_, _>>()?
        }
    };
    if types.len() != tokens.len() {
        return Err(bad(format!(
            "tokenizer.ggml.token_type has {} entries for {} tokens",
            types.len(),
            tokens.len()
        )));
    }
    // Like llama.cpp: an empty token gets a placeholder text.
    let texts: Vec<String> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if t.is_empty() {
                format!("[EMPTY_{i}]")
            } else {
                (*t).to_string()
            }
        })
        .collect();
    let mut merges = Vec::with_capacity(merges_raw.len());
    for (i, m) in merges_raw.iter().enumerate() {
        let (a, b) = m
            .split_once(' ')
            .ok_or_else(|| bad(format!("merge {i} ({m:?}) has no space")))?;
        merges.push((a.to_string(), b.to_string()));
    }
    Ok(Parsed {
        pre: pre.to_string(),
        regexes,
        texts,
        types,
        merges,
    })
}

fn build_hf(path: &Path, parsed: &Parsed) -> Result<tokenizers::Tokenizer, TokenizerError> {
    let bad = |reason: String| TokenizerError::GgufBadTokenizer {
        path: path.to_path_buf(),
        reason,
    };
    // A repeated text maps to its last id, as in llama.cpp.
    let mut vocab = Vocab::default();
    for (i, t) in parsed.texts.iter().enumerate() {
        vocab.insert(t.clone(), i as u32);
    }
    // A merge whose parts or result are not in the vocabulary can never apply; the
    // `tokenizers` BPE refuses such merges, so they are left out.
    let merges: Vec<(String, String)> = parsed
        .merges
        .iter()
        .filter(|(a, b)| {
            vocab.contains_key(a) && vocab.contains_key(b) && vocab.contains_key(&format!("{a}{b}"))
        })
        .cloned()
        .collect();

    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(|e| bad(format!("cannot build BPE: {e}")))?;
    let mut tok = tokenizers::Tokenizer::new(bpe);

    let mut steps: Vec<PreTokenizerWrapper> = Vec::with_capacity(parsed.regexes.len() + 1);
    for re in &parsed.regexes {
        let split = Split::new(
            SplitPattern::Regex(re.to_string()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(|e| bad(format!("pre-tokenizer regex {re:?}: {e}")))?;
        steps.push(split.into());
    }
    steps.push(ByteLevel::new(false, true, false).into());
    tok.with_pre_tokenizer(Some(Sequence::new(steps)));
    tok.with_decoder(Some(ByteLevelDecoder::default()));

    let added = |wanted: i64, special: bool| -> Vec<AddedToken> {
        parsed
            .texts
            .iter()
            .zip(&parsed.types)
            .filter(|(_, ty)| **ty == wanted)
            .map(|(t, _)| AddedToken::from(t.clone(), special).normalized(false))
            .collect()
    };
    tok.add_special_tokens(&added(TOKEN_TYPE_CONTROL, true));
    tok.add_tokens(&added(TOKEN_TYPE_USER_DEFINED, false));
    Ok(tok)
}

fn string_array<'a>(meta: &'a GgufMetadata, key: &'static str) -> Result<Vec<&'a str>, FileFault> {
    let arr = (meta.get(key).ok_or(FileFault::Missing(key))?)
        .as_array()
        .ok_or(FileFault::NotAnArray(key))?;
    arr.iter()
        .map(|v| match v {
            GgufValue::String(s) => Ok(s.as_str()),
            _ => Err(FileFault::NotAString(key)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// The names the error message lists as supported are the names that have regexes.
    #[test]
    fn every_supported_pre_tokenizer_has_its_regexes() {
        for name in super::super::names::SUPPORTED_PRE {
            assert!(super::pre_regexes(name).is_some(), "{name}");
        }
        assert!(super::pre_regexes("llama-bpe").is_none());
    }
}
