//! The served model's tokenizer: every token count servebench reports comes from here.
//!
//! [`Tokenizer::load`] accepts a tiktoken encoding name (embedded in `tiktoken-rs`), a Hugging
//! Face `tokenizer.json` (or a directory holding one), or a GGUF model file, from which the
//! tokenizer is rebuilt out of the `tokenizer.ggml.*` metadata the way llama.cpp builds it
//! (`gguf` reads the metadata, `from_gguf` checks it, `bpe` is the fast byte-level BPE used
//! for `gpt-2`/`smollm`-style vocabularies, and the `tokenizers` crate runs the others). A
//! loaded [`Tokenizer`] is an `Arc` inside: load it once, clone it freely, share it between
//! threads.
//!
//! Encoding never adds BOS/EOS or any other template token: `encode` maps plain text to ids.
//! Text that spells a special token (e.g. `<|im_start|>`) is matched as that token by Hugging
//! Face and GGUF tokenizers, as llama.cpp's `/tokenize` does; tiktoken encodes it as plain text.
//!
//! This module does no HTTP and reads no clock; it reads files only in `load`. Its errors are
//! in `error.rs` and the names it knows (tiktoken encodings, GGUF pre-tokenizers) in
//! `names.rs`: leaves its files import instead of this one.
//! To add a tokenizer source: add a `Backend` variant, detect it in `load`, and implement the
//! match arms of `encode`, `encode_with_offsets`, `decode` and `count`.

pub mod bpe;
pub mod chat_template;
mod error;
pub mod from_gguf;
pub mod gguf;
mod names;

pub use error::{FileFault, TokenizerError};
pub use names::TIKTOKEN_NAMES;

use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use tiktoken_rs::CoreBPE;

enum Backend {
    Tiktoken(Box<CoreBPE>),
    Hf(Box<tokenizers::Tokenizer>),
    Bpe(Box<bpe::ByteBpe>),
}

struct Inner {
    name: String,
    backend: Backend,
    vocab_size: usize,
    /// Indexed by id: true for special/control/added tokens (never sampled, see `word_tokens`).
    special: Vec<bool>,
    words: OnceLock<WordTokens>,
}

/// A loaded tokenizer: cheap to clone (Arc inside), Send + Sync, loaded once and shared.
#[derive(Clone)]
pub struct Tokenizer {
    inner: Arc<Inner>,
}

impl fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokenizer")
            .field("name", &self.inner.name)
            .field("vocab_size", &self.inner.vocab_size)
            .finish()
    }
}

/// Ordinary vocabulary tokens whose concatenation re-encodes to exactly the same ids.
///
/// `spaced`: tokens whose text is one space followed by letters (` house`); `leading`: tokens
/// whose text is letters only (`The`). Each was checked to encode alone to itself. Because
/// every pre-tokenizer servebench supports starts a new piece at a space before letters, any
/// sequence `leading? spaced*` encodes to exactly its ids (the dataset builder still verifies).
#[derive(Clone, Debug, Default)]
pub struct WordTokens {
    pub leading: Vec<u32>,
    pub spaced: Vec<u32>,
}

impl Tokenizer {
    /// `spec`: a tiktoken encoding name (cl100k_base, o200k_base, p50k_base, r50k_base, gpt2);
    /// a path to a Hugging Face tokenizer.json; a directory containing tokenizer.json;
    /// a GGUF model file (detected by its 4-byte magic "GGUF", or by a `.gguf` extension).
    pub fn load(spec: &str) -> Result<Tokenizer, TokenizerError> {
        let path = Path::new(spec);
        if path.exists() {
            return Self::load_path(path);
        }
        if let Some(t) = Self::load_tiktoken(spec)? {
            return Ok(t);
        }
        let looks_like_path = spec.contains(std::path::MAIN_SEPARATOR)
            || spec.contains('/')
            || spec.ends_with(".json")
            || spec.ends_with(".gguf");
        if looks_like_path {
            Err(TokenizerError::NotFound(path.to_path_buf()))
        } else {
            Err(TokenizerError::UnknownEncoding {
                name: spec.to_string(),
            })
        }
    }

    fn load_tiktoken(name: &str) -> Result<Option<Tokenizer>, TokenizerError> {
        let (canonical, built) = match name {
            "cl100k_base" => ("cl100k_base", tiktoken_rs::cl100k_base()),
            "o200k_base" => ("o200k_base", tiktoken_rs::o200k_base()),
            "p50k_base" => ("p50k_base", tiktoken_rs::p50k_base()),
            "r50k_base" | "gpt2" => ("r50k_base", tiktoken_rs::r50k_base()),
            _ => return Ok(None),
        };
        let full_name = format!("tiktoken:{canonical}");
        let bpe = built.map_err(|e| TokenizerError::Build {
            name: full_name.clone(),
            reason: e.to_string(),
        })?;
        // The largest id any current encoding uses is below 201,000; probe a little beyond.
        let mut vocab_size = 0usize;
        for id in 0..260_000u32 {
            if bpe.decode_bytes(&[id]).is_ok() {
                vocab_size = id as usize + 1;
            }
        }
        let mut special = vec![false; vocab_size];
        for s in bpe.special_tokens() {
            for id in bpe.encode_with_special_tokens(s) {
                if let Some(flag) = special.get_mut(id as usize) {
                    *flag = true;
                }
            }
        }
        Ok(Some(Self::from_backend(
            full_name,
            Backend::Tiktoken(Box::new(bpe)),
            vocab_size,
            special,
        )))
    }

    fn load_path(path: &Path) -> Result<Tokenizer, TokenizerError> {
        if path.is_dir() {
            let file = path.join("tokenizer.json");
            if !file.is_file() {
                return Err(TokenizerError::NoTokenizerJson(path.to_path_buf()));
            }
            return Self::load_json(&file);
        }
        let is_gguf = gguf::has_gguf_magic(path).map_err(|source| TokenizerError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let gguf_ext = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
        if is_gguf || gguf_ext {
            let name = format!("gguf:{}", path.display());
            return Ok(match from_gguf::load(path)? {
                from_gguf::Built::Fast(b) => Self::from_bpe(name, b),
                from_gguf::Built::Hf(t) => Self::from_hf(name, *t),
            });
        }
        Self::load_json(path)
    }

    fn load_json(path: &Path) -> Result<Tokenizer, TokenizerError> {
        let bytes = std::fs::read(path).map_err(|source| TokenizerError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let tok = tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| {
            TokenizerError::NotTokenizerJson {
                path: path.to_path_buf(),
                reason: one_line(&e.to_string()),
            }
        })?;
        Ok(Self::from_hf(format!("hf:{}", path.display()), tok))
    }

    fn from_hf(name: String, tok: tokenizers::Tokenizer) -> Tokenizer {
        let vocab_size = tok.get_vocab_size(true);
        let mut special = vec![false; vocab_size];
        for id in tok.get_added_tokens_decoder().keys() {
            if let Some(flag) = special.get_mut(*id as usize) {
                *flag = true;
            }
        }
        Self::from_backend(name, Backend::Hf(Box::new(tok)), vocab_size, special)
    }

    fn from_bpe(name: String, b: Box<bpe::ByteBpe>) -> Tokenizer {
        let vocab_size = b.vocab_size();
        let special = (0..vocab_size as u32).map(|id| b.is_added(id)).collect();
        Self::from_backend(name, Backend::Bpe(b), vocab_size, special)
    }

    /// A GGUF file's tokenizer on the general `tokenizers` pipeline, bypassing the fast
    /// byte-level BPE (for checking one against the other).
    pub fn load_gguf_general(path: &Path) -> Result<Tokenizer, TokenizerError> {
        let tok = from_gguf::load_general(path)?;
        Ok(Self::from_hf(
            format!("gguf-general:{}", path.display()),
            tok,
        ))
    }

    fn from_backend(
        name: String,
        backend: Backend,
        vocab_size: usize,
        special: Vec<bool>,
    ) -> Tokenizer {
        Tokenizer {
            inner: Arc::new(Inner {
                name,
                backend,
                vocab_size,
                special,
                words: OnceLock::new(),
            }),
        }
    }

    /// e.g. "tiktoken:cl100k_base", "hf:/path/tokenizer.json", "gguf:/path/model.gguf".
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Plain text → ids. No special tokens are added (no BOS).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        match &self.inner.backend {
            Backend::Tiktoken(bpe) => bpe.encode_ordinary(text),
            Backend::Bpe(b) => b.encode(text),
            // Without truncation or padding configured, encoding cannot fail for a byte-level
            // or otherwise complete vocabulary; an error (never seen) yields no ids.
            Backend::Hf(tok) => tok
                .encode_fast(text, false)
                .map(|e| e.get_ids().to_vec())
                .unwrap_or_default(),
        }
    }

    /// Ids plus, for each id, the byte range of `text` it came from. Ranges always lie on
    /// char boundaries; a character split over several tokens is in each of their ranges.
    pub fn encode_with_offsets(&self, text: &str) -> (Vec<u32>, Vec<(usize, usize)>) {
        match &self.inner.backend {
            Backend::Tiktoken(bpe) => {
                let ids = bpe.encode_ordinary(text);
                let mut offsets = Vec::with_capacity(ids.len());
                let mut pos = 0usize;
                for &id in &ids {
                    let len = bpe.decode_bytes(&[id]).map(|b| b.len()).unwrap_or(0);
                    let start = floor_boundary(text, pos);
                    pos = (pos + len).min(text.len());
                    offsets.push((start, ceil_boundary(text, pos)));
                }
                (ids, offsets)
            }
            Backend::Bpe(b) => {
                let mut ids = Vec::with_capacity(text.len() / 3 + 1);
                let mut offsets = Vec::with_capacity(text.len() / 3 + 1);
                b.encode_spans(text, |id, s, e| {
                    ids.push(id);
                    offsets.push((floor_boundary(text, s), ceil_boundary(text, e)));
                });
                (ids, offsets)
            }
            Backend::Hf(tok) => match tok.encode(text, false) {
                Ok(enc) => {
                    let offsets = enc
                        .get_offsets()
                        .iter()
                        .map(|&(s, e)| {
                            (
                                floor_boundary(text, s.min(text.len())),
                                ceil_boundary(text, e.min(text.len())),
                            )
                        })
                        .collect();
                    (enc.get_ids().to_vec(), offsets)
                }
                Err(_) => (Vec::new(), Vec::new()),
            },
        }
    }

    /// Ids → text (special tokens are kept as their text; invalid UTF-8 becomes U+FFFD;
    /// unknown ids are skipped).
    pub fn decode(&self, ids: &[u32]) -> String {
        match &self.inner.backend {
            Backend::Tiktoken(bpe) => {
                let bytes = match bpe.decode_bytes(ids) {
                    Ok(b) => b,
                    Err(_) => ids
                        .iter()
                        .filter_map(|&id| bpe.decode_bytes(&[id]).ok())
                        .flatten()
                        .collect(),
                };
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Backend::Bpe(b) => String::from_utf8_lossy(&b.decode_bytes(ids)).into_owned(),
            Backend::Hf(tok) => {
                let known: Vec<u32> = ids
                    .iter()
                    .copied()
                    .filter(|&id| (id as usize) < self.inner.vocab_size)
                    .collect();
                tok.decode(&known, false).unwrap_or_default()
            }
        }
    }

    /// The number of tokens `encode(text)` gives.
    pub fn count(&self, text: &str) -> usize {
        match &self.inner.backend {
            Backend::Tiktoken(bpe) => bpe.encode_ordinary(text).len(),
            Backend::Bpe(b) => {
                let mut n = 0;
                b.encode_spans(text, |_, _, _| n += 1);
                n
            }
            Backend::Hf(_) => self.encode(text).len(),
        }
    }

    /// From now on, a Hugging Face tokenizer's work stays on the thread that asks for it:
    /// the `tokenizers` crate otherwise hands pieces of one encode to its pool of threads at
    /// normal priority, which took the core from the thread that reads streams (the counting
    /// threads, `measure::count_pool`, call this before they start: at 512 streams, mean
    /// TTFT +3.1 ms with its pool, +0.04 ms without; docs/performance.md).
    pub fn keep_work_on_its_thread() {
        tokenizers::utils::parallelism::set_parallelism(false);
    }

    /// [`Tokenizer::count`] of a server's answer: the same count. Answers are counted only
    /// through it, so a test can make their counts slow without slowing the workload's
    /// building: `SERVEBENCH_TEST_COUNT_DELAY_MS=D` keeps each call busy D ms longer (at most
    /// 100), which shows whether any answer is counted on a thread that reads streams
    /// (tests/suite/run_sim.rs, `a_slow_tokenizer_does_not_move_ttft_or_itl`).
    pub fn count_output(&self, text: &str) -> usize {
        static DELAY: OnceLock<Option<std::time::Duration>> = OnceLock::new();
        let delay = DELAY.get_or_init(|| {
            let ms: f64 = std::env::var("SERVEBENCH_TEST_COUNT_DELAY_MS")
                .ok()?
                .parse()
                .ok()?;
            (ms.is_finite() && ms > 0.0)
                .then(|| std::time::Duration::from_secs_f64(ms.min(100.0) / 1e3))
        });
        if let Some(d) = delay {
            let began = std::time::Instant::now();
            while began.elapsed() < *d {
                std::hint::spin_loop();
            }
        }
        self.count(text)
    }

    /// The number of ids (largest id + 1, added tokens included).
    pub fn vocab_size(&self) -> usize {
        self.inner.vocab_size
    }

    /// True for special, control and added tokens.
    pub fn is_special(&self, id: u32) -> bool {
        self.inner
            .special
            .get(id as usize)
            .copied()
            .unwrap_or(false)
    }

    /// The ordinary word tokens random prompts are made of (computed once, on first use).
    pub fn word_tokens(&self) -> &WordTokens {
        self.inner.words.get_or_init(|| self.compute_word_tokens())
    }

    fn compute_word_tokens(&self) -> WordTokens {
        // Candidates by their text (a space and ASCII letters, or ASCII letters); then only
        // those that encode back to exactly themselves are kept.
        let mut candidates: Vec<(u32, String, bool)> = Vec::new();
        for id in 0..self.inner.vocab_size as u32 {
            if self.is_special(id) {
                continue;
            }
            let text = self.decode(&[id]);
            let (spaced, letters) = match text.strip_prefix(' ') {
                Some(rest) => (true, rest),
                None => (false, text.as_str()),
            };
            if !letters.is_empty() && letters.chars().all(|c| c.is_ascii_alphabetic()) {
                candidates.push((id, text, spaced));
            }
        }
        let mut words = WordTokens::default();
        // Spaced candidates are checked in chunks: a chunk whose concatenation encodes to
        // exactly its ids is kept whole (the usual case); otherwise each is checked alone.
        let spaced: Vec<&(u32, String, bool)> = candidates.iter().filter(|c| c.2).collect();
        for chunk in spaced.chunks(256) {
            let joined: String = chunk.iter().map(|c| c.1.as_str()).collect();
            let want: Vec<u32> = chunk.iter().map(|c| c.0).collect();
            if self.encode(&joined) == want {
                words.spaced.extend(want);
            } else {
                for (id, text, _) in chunk.iter().copied() {
                    if self.encode(text) == [*id] {
                        words.spaced.push(*id);
                    }
                }
            }
        }
        for (id, text, spaced) in &candidates {
            if !*spaced && self.encode(text) == [*id] {
                words.leading.push(*id);
            }
        }
        words
    }
}

/// The largest char boundary ≤ `i`.
fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary ≥ `i`.
fn ceil_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testutil;
