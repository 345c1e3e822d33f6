//! `book`: prompts cut from a plain-text file.
//!
//! The whole text is encoded once, keeping each token's byte range in the text. Prompt i
//! starts at a seeded token offset (never the same as prompt i−1's) and is the verbatim text
//! from that token to the token `k` later, wrapping to the start of the book when it runs
//! past the end. Cutting at token boundaries almost always re-encodes to `k` tokens; when it
//! does not (a cut that changes how the first or last word splits), `fit_exact` moves the end
//! until the count is exact, and if no end works the start moves on by one token.

use std::path::Path;

use rand::RngExt;

use super::common::{fit_exact, read_file, rngs, LengthSampler, Prompt};
use super::error::DatasetError;
use crate::tokenizer::Tokenizer;

/// Start offsets tried for one prompt before giving up.
const STARTS: usize = 32;

struct Book {
    text: String,
    /// Byte range of each token in `text`.
    offsets: Vec<(usize, usize)>,
}

impl Book {
    fn tokens(&self) -> usize {
        self.offsets.len()
    }

    /// The text of tokens `start .. start + k`, wrapping past the end (k ≤ tokens).
    fn slice(&self, start: usize, k: usize) -> Option<String> {
        let n = self.tokens();
        if k == 0 || k > n || start >= n {
            return None;
        }
        let from = self.offsets[start].0;
        let last = start + k - 1;
        if last < n {
            let to = self.offsets[last].1.max(from);
            return self.text.get(from..to).map(str::to_string);
        }
        let to = self.offsets[last - n].1;
        let mut s = String::with_capacity(self.text.len() - from + to);
        s.push_str(self.text.get(from..)?);
        s.push_str(self.text.get(..to)?);
        Some(s)
    }
}

pub(super) fn build(
    path: &Path,
    tok: &Tokenizer,
    lens: &LengthSampler,
    n: usize,
    seed: u64,
) -> Result<Vec<Prompt>, DatasetError> {
    let text = read_file(path)?;
    if text.trim().is_empty() {
        return Err(DatasetError::Empty(path.to_path_buf()));
    }
    let (_, offsets) = tok.encode_with_offsets(&text);
    let book = Book { text, offsets };
    let tokens = book.tokens();
    if (tokens as u64) < lens.max_input() {
        return Err(DatasetError::BookTooShort {
            path: path.to_path_buf(),
            tokens,
            needed: lens.max_input(),
            tokenizer: tok.name().to_string(),
        });
    }

    let (mut len_rng, mut pos_rng) = rngs(seed);
    let mut prev_start = usize::MAX;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let (input_len, output_len) = lens.draw(&mut len_rng);
        let target = input_len as usize; // ≤ tokens, checked above
        let mut start = pos_rng.random_range(0..tokens);
        if start == prev_start && tokens > 1 {
            start = (start + 1) % tokens;
        }
        prev_start = start;
        let mut found = None;
        for shift in 0..STARTS.min(tokens) {
            let s = (start + shift) % tokens;
            found = fit_exact(tok, target, target, tokens, |k| book.slice(s, k));
            if found.is_some() {
                break;
            }
        }
        let text = found.ok_or_else(|| DatasetError::NotExact {
            target: input_len,
            tokenizer: tok.name().to_string(),
            reason: format!(
                "no cut of {} near token {start} re-tokenizes to that length",
                path.display()
            ),
        })?;
        out.push(Prompt {
            text,
            input_len,
            output_len,
            messages: None,
            ..Default::default()
        });
    }
    Ok(out)
}
