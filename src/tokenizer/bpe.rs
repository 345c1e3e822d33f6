//! A fast byte-level BPE for GGUF `gpt2` vocabularies with the `gpt-2` and `smollm`
//! pre-tokenizers: the same result as llama.cpp's `llm_tokenizer_bpe`, about ten times the
//! speed of the general `tokenizers` pipeline (which `from_gguf` still builds for the other
//! supported pre-tokenizers).
//!
//! Steps, as llama.cpp does them: (1) control and user-defined token texts are matched in the
//! text (leftmost-longest) and become their ids; (2) for `smollm`, every `\p{N}` character is a
//! piece of its own; (3) the rest is split by the GPT-2 regex
//! `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`, run here without the
//! look-ahead (`…|\s+` on the `regex` crate) and then corrected: a whitespace run of two or
//! more characters that is followed by text gives up its last character, which starts the
//! next piece; (4) each piece's bytes are merged by BPE, lowest merge rank first and leftmost
//! on ties. Token texts use GPT-2's byte-to-character mapping; ids and bytes are kept raw.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;

use super::error::FileFault;

/// GPT-2's regex without its look-ahead (see the module docs for the correction).
const GPT2_NO_LOOKAHEAD: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+";

/// Pieces up to this many bytes are merged by rescanning a small rank array; longer ones
/// (long runs of letters or spaces) use a heap, so the cost stays O(n log n).
const SHORT_PIECE: usize = 64;

/// A small, fast, non-cryptographic hasher for the merge table (keys are not attacker-chosen
/// in a way that matters: the vocabulary comes from the model file).
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type MergeMap = HashMap<(u32, u32), (u32, u32), BuildHasherDefault<FxHasher>>;

/// Which llama.cpp pre-tokenizer to reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pre {
    /// The GPT-2 regex alone.
    Gpt2,
    /// Each `\p{N}` alone, then the GPT-2 regex.
    DigitsThenGpt2,
}

pub struct ByteBpe {
    pre: Pre,
    piece_re: Regex,
    digit_re: Regex,
    specials: Option<(AhoCorasick, Vec<u32>)>,
    /// Indexed by id: a control/user-defined token.
    added: Vec<bool>,
    /// The id of each single-byte token (None when the vocabulary lacks it).
    byte_token: [Option<u32>; 256],
    /// (left id, right id) → (merge rank, merged id).
    merges: MergeMap,
    /// Raw bytes of every id, for decoding.
    token_bytes: Vec<Vec<u8>>,
}

/// GPT-2's byte → printable character table.
pub fn byte_to_char() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut extra = 0u32;
    for b in 0u32..256 {
        let printable =
            (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
        let cp = if printable {
            b
        } else {
            extra += 1;
            255 + extra
        };
        table[b as usize] = char::from_u32(cp).unwrap_or('\0');
    }
    table
}

impl ByteBpe {
    /// `tokens`: the vocabulary in id order (GPT-2 byte-level texts); `special`: for each id,
    /// whether it is a control/user-defined token matched as raw text; `merges`: "a b" pairs
    /// in rank order. Merges naming unknown tokens are skipped (they can never apply).
    pub fn new(
        pre: Pre,
        tokens: &[String],
        special: &[bool],
        merges: &[(String, String)],
    ) -> Result<ByteBpe, FileFault> {
        let piece_re = Regex::new(GPT2_NO_LOOKAHEAD)?;
        let digit_re = Regex::new(r"\p{N}")?;
        let mut char_to_byte: HashMap<char, u8> = HashMap::with_capacity(256);
        for (b, c) in byte_to_char().iter().enumerate() {
            char_to_byte.insert(*c, b as u8);
        }
        let mut ids: HashMap<&str, u32> = HashMap::with_capacity(tokens.len());
        let mut token_bytes = Vec::with_capacity(tokens.len());
        let mut special_texts = Vec::new();
        let mut special_ids = Vec::new();
        for (i, t) in tokens.iter().enumerate() {
            let id = u32::try_from(i).map_err(|_| FileFault::TooManyTokens)?;
            ids.insert(t.as_str(), id);
            if special.get(i).copied().unwrap_or(false) {
                token_bytes.push(t.as_bytes().to_vec());
                special_texts.push(t.clone());
                special_ids.push(id);
            } else {
                let mut bytes = Vec::with_capacity(t.len());
                for c in t.chars() {
                    match char_to_byte.get(&c) {
                        Some(b) => bytes.push(*b),
                        None => {
                            let mut buf = [0u8; 4];
                            bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        }
                    }
                }
                token_bytes.push(bytes);
            }
        }
        let table = byte_to_char();
        let mut byte_token = [None; 256];
        for (b, slot) in byte_token.iter_mut().enumerate() {
            *slot = ids.get(table[b].to_string().as_str()).copied();
        }
        let mut merge_map = MergeMap::with_capacity_and_hasher(merges.len(), Default::default());
        for (rank, (a, b)) in merges.iter().enumerate() {
            let (Some(&ia), Some(&ib)) = (ids.get(a.as_str()), ids.get(b.as_str())) else {
                continue;
            };
            let Some(&merged) = ids.get(format!("{a}{b}").as_str()) else {
                continue;
            };
            let rank = u32::try_from(rank).map_err(|_| FileFault::TooManyMerges)?;
            merge_map.entry((ia, ib)).or_insert((rank, merged));
        }
        let specials = if special_texts.is_empty() {
            None
        } else {
            let ac = AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&special_texts)?;
            Some((ac, special_ids))
        };
        Ok(ByteBpe {
            added: (0..tokens.len())
                .map(|i| special.get(i).copied().unwrap_or(false))
                .collect(),
            pre,
            piece_re,
            digit_re,
            specials,
            byte_token,
            merges: merge_map,
            token_bytes,
        })
    }

    /// True for control and user-defined tokens.
    pub fn is_added(&self, id: u32) -> bool {
        self.added.get(id as usize).copied().unwrap_or(false)
    }

    pub fn vocab_size(&self) -> usize {
        self.token_bytes.len()
    }

    /// Ids with, for each, the byte range of `text` it encodes (not yet snapped to chars).
    pub fn encode_spans(&self, text: &str, mut sink: impl FnMut(u32, usize, usize)) {
        let normal = |seg_start: usize, seg_end: usize, sink: &mut dyn FnMut(u32, usize, usize)| {
            self.encode_segment(text, seg_start, seg_end, sink)
        };
        match &self.specials {
            None => normal(0, text.len(), &mut sink),
            Some((ac, ids)) => {
                let mut pos = 0;
                for m in ac.find_iter(text) {
                    if m.start() > pos {
                        normal(pos, m.start(), &mut sink);
                    }
                    sink(ids[m.pattern().as_usize()], m.start(), m.end());
                    pos = m.end();
                }
                if pos < text.len() {
                    normal(pos, text.len(), &mut sink);
                }
            }
        }
    }

    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        self.encode_spans(text, |id, _, _| out.push(id));
        out
    }

    pub fn decode_bytes(&self, ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            if let Some(b) = self.token_bytes.get(id as usize) {
                out.extend_from_slice(b);
            }
        }
        out
    }

    fn encode_segment(
        &self,
        text: &str,
        start: usize,
        end: usize,
        sink: &mut dyn FnMut(u32, usize, usize),
    ) {
        match self.pre {
            Pre::Gpt2 => self.gpt2_split(text, start, end, sink),
            Pre::DigitsThenGpt2 => {
                let mut pos = start;
                for m in self.digit_re.find_iter(&text[start..end]) {
                    let (s, e) = (start + m.start(), start + m.end());
                    if s > pos {
                        self.gpt2_split(text, pos, s, sink);
                    }
                    self.bpe(text, s, e, sink);
                    pos = e;
                }
                if pos < end {
                    self.gpt2_split(text, pos, end, sink);
                }
            }
        }
    }

    /// Splits `text[start..end]` into GPT-2 pieces and BPE-encodes each.
    fn gpt2_split(
        &self,
        text: &str,
        start: usize,
        end: usize,
        sink: &mut dyn FnMut(u32, usize, usize),
    ) {
        let seg = &text[start..end];
        let mut pos = 0;
        while pos < seg.len() {
            let Some(m) = self.piece_re.find_at(seg, pos) else {
                self.bpe(text, start + pos, end, sink);
                break;
            };
            if m.start() > pos {
                self.bpe(text, start + pos, start + m.start(), sink);
            }
            let mut e = m.end();
            let piece = m.as_str();
            // `\s+(?!\S)`: a whitespace run followed by text leaves its last character to the
            // next piece, unless it is a single character.
            if e < seg.len() && piece.chars().all(char::is_whitespace) {
                if let Some((last, _)) = piece.char_indices().next_back() {
                    if last > 0 {
                        e = m.start() + last;
                    }
                }
            }
            self.bpe(text, start + m.start(), start + e, sink);
            pos = e;
        }
    }

    /// BPE over the bytes of `text[start..end]`.
    fn bpe(&self, text: &str, start: usize, end: usize, sink: &mut dyn FnMut(u32, usize, usize)) {
        let bytes = &text.as_bytes()[start..end];
        if bytes.is_empty() {
            return;
        }
        if bytes.len() <= SHORT_PIECE {
            return self.bpe_short(bytes, start, sink);
        }
        // Symbols: (id, byte start, byte end, prev, next); dead symbols have start == end.
        let mut syms: Vec<(u32, usize, usize, usize, usize)> = Vec::with_capacity(bytes.len());
        for (i, b) in bytes.iter().enumerate() {
            if let Some(id) = self.byte_token[*b as usize] {
                let n = syms.len();
                syms.push((id, start + i, start + i + 1, n.wrapping_sub(1), n + 1));
            }
        }
        let n = syms.len();
        if n == 0 {
            return;
        }
        if n > 1 {
            let mut heap = BinaryHeap::new();
            for i in 0..n - 1 {
                if let Some(&(rank, merged)) = self.merges.get(&(syms[i].0, syms[i + 1].0)) {
                    heap.push(Reverse((rank, i, i + 1, merged, syms[i].0, syms[i + 1].0)));
                }
            }
            while let Some(Reverse((_, l, r, merged, lid, rid))) = heap.pop() {
                let (ls, rs) = (syms[l], syms[r]);
                // Stale entries: a side was merged away or changed since this was queued.
                if ls.1 == ls.2 || rs.1 == rs.2 || ls.4 != r || ls.0 != lid || rs.0 != rid {
                    continue;
                }
                syms[l] = (merged, ls.1, rs.2, ls.3, rs.4);
                syms[r].2 = syms[r].1; // dead
                if rs.4 < n {
                    syms[rs.4].3 = l;
                }
                if ls.3 < n {
                    let p = ls.3;
                    if let Some(&(rank, m2)) = self.merges.get(&(syms[p].0, merged)) {
                        heap.push(Reverse((rank, p, l, m2, syms[p].0, merged)));
                    }
                }
                if rs.4 < n {
                    let q = rs.4;
                    if let Some(&(rank, m2)) = self.merges.get(&(merged, syms[q].0)) {
                        heap.push(Reverse((rank, l, q, m2, merged, syms[q].0)));
                    }
                }
            }
        }
        for s in &syms {
            if s.1 != s.2 {
                sink(s.0, s.1, s.2);
            }
        }
    }

    /// The same merges for a short piece: keep the rank of each adjacent pair in an array,
    /// merge the leftmost lowest, and look up only the two pairs the merge changed.
    fn bpe_short(&self, bytes: &[u8], start: usize, sink: &mut dyn FnMut(u32, usize, usize)) {
        // (id, byte start, byte end)
        let mut syms: Vec<(u32, usize, usize)> = Vec::with_capacity(bytes.len());
        for (i, b) in bytes.iter().enumerate() {
            if let Some(id) = self.byte_token[*b as usize] {
                syms.push((id, start + i, start + i + 1));
            }
        }
        let pair = |a: u32, b: u32| self.merges.get(&(a, b)).copied();
        // ranks[i]: the merge of syms[i] and syms[i + 1], if any.
        let mut ranks: Vec<Option<(u32, u32)>> =
            syms.windows(2).map(|w| pair(w[0].0, w[1].0)).collect();
        loop {
            let mut best: Option<(usize, u32, u32)> = None;
            for (i, r) in ranks.iter().enumerate() {
                if let Some((rank, merged)) = *r {
                    if best.is_none_or(|b| rank < b.1) {
                        best = Some((i, rank, merged));
                    }
                }
            }
            let Some((i, _, merged)) = best else {
                break;
            };
            syms[i] = (merged, syms[i].1, syms[i + 1].2);
            syms.remove(i + 1);
            ranks.remove(i);
            if i + 1 < syms.len() {
                ranks[i] = pair(merged, syms[i + 1].0);
            }
            if i > 0 {
                ranks[i - 1] = pair(syms[i - 1].0, merged);
            }
        }
        for s in syms {
            sink(s.0, s.1, s.2);
        }
    }
}
