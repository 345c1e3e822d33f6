//! Deterministic token text for the simulated server.
//!
//! Owns the fixed word list, the mapping from (seed, request number, token index) to a word,
//! and the rough prompt-length estimate. Nothing here touches the network or the client side.
//! To change what the simulated model "says", change [`WORDS`] (keep every entry free of
//! characters that need JSON escaping; a unit test checks this) or [`TokenGen::word_index`].

/// The vocabulary of the simulated model: each token is one of these words, with its leading
/// space. Token id = index in this list + [`TOKEN_ID_BASE`].
pub(crate) const WORDS: [&str; 64] = [
    " the", " of", " and", " to", " in", " is", " it", " you", " that", " he", " was", " for",
    " on", " are", " with", " as", " his", " they", " be", " at", " one", " have", " this",
    " from", " or", " had", " by", " not", " but", " what", " some", " we", " can", " out",
    " other", " were", " all", " there", " when", " up", " use", " your", " how", " said", " an",
    " each", " she", " which", " do", " their", " time", " if", " will", " way", " about", " many",
    " then", " them", " would", " like", " so", " these", " her", " long",
];

/// Offset added to a word's index in [`WORDS`] to form its token id.
pub(crate) const TOKEN_ID_BASE: u32 = 100;

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64 finaliser: a cheap, well-mixed 64-bit hash.
pub(crate) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Mixes the configured seed with a request number (the same mix the fault picker uses).
pub(crate) fn mix_seed(seed: u64, request: u64) -> u64 {
    seed ^ request.wrapping_mul(GOLDEN)
}

/// The token sequence of one request: a pure function of (seed, request number, index), so
/// any part of it can be regenerated without storing it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TokenGen {
    key: u64,
}

impl TokenGen {
    pub(crate) fn new(seed: u64, request: u64) -> Self {
        Self {
            key: splitmix64(mix_seed(seed, request)),
        }
    }

    /// Index into [`WORDS`] of token `i`.
    pub(crate) fn word_index(&self, i: u32) -> usize {
        // Top 6 bits of the hash: 0..64.
        (splitmix64(self.key.wrapping_add(u64::from(i))) >> 58) as usize
    }

    pub(crate) fn word(&self, i: u32) -> &'static str {
        WORDS[self.word_index(i) % WORDS.len()]
    }

    pub(crate) fn token_id(&self, i: u32) -> u32 {
        self.word_index(i) as u32 + TOKEN_ID_BASE
    }

    /// Appends the text of tokens `[start, end)` (already JSON-safe) to `out`.
    pub(crate) fn push_text(&self, out: &mut Vec<u8>, start: u32, end: u32) {
        for i in start..end {
            out.extend_from_slice(self.word(i).as_bytes());
        }
    }

    /// The text of tokens `[start, end)` as a `String`.
    pub(crate) fn text(&self, start: u32, end: u32) -> String {
        let mut s = String::with_capacity((end.saturating_sub(start) as usize) * 6);
        for i in start..end {
            s.push_str(self.word(i));
        }
        s
    }
}

/// Rough prompt length: the number of whitespace-separated words. An approximation until a
/// real tokenizer is wired in.
pub(crate) fn count_words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_need_no_json_escaping() {
        for w in WORDS {
            assert!(w.starts_with(' '));
            let json = serde_json::to_string(w).unwrap();
            assert_eq!(json, format!("\"{w}\""), "word {w:?} needs escaping");
        }
    }

    #[test]
    fn token_stream_is_deterministic_and_varied() {
        let a = TokenGen::new(7, 3);
        let b = TokenGen::new(7, 3);
        let c = TokenGen::new(8, 3);
        assert_eq!(a.text(0, 50), b.text(0, 50));
        assert_ne!(a.text(0, 50), c.text(0, 50));
        let distinct: std::collections::HashSet<_> = (0..500).map(|i| a.word_index(i)).collect();
        assert!(distinct.len() > 40);
        assert_eq!(a.token_id(5), a.word_index(5) as u32 + TOKEN_ID_BASE);
    }

    #[test]
    fn counts_words() {
        assert_eq!(count_words("  hello   world\nagain "), 3);
        assert_eq!(count_words(""), 0);
    }
}
