//! A prompt's tokens as block ids: the tokens cut into blocks of B (the last one may be
//! shorter), and each block named by the whole prefix that ends with it: the ids are numbered
//! 0, 1, 2, ... in the order their prefix first appears in the file. Two prompts with the same
//! leading blocks get the same leading ids, and differ from the first block that differs.
//!
//! Nothing of the text is in an id: an id is a count, not a hash of the text, so no dictionary
//! of candidate texts can be hashed to find one. To find a prefix seen before, the map is
//! keyed by a 128-bit SipHash of (the id of the prefix before the block, the block's tokens)
//! under two keys drawn at random for each invocation (`RandomState`); the keys and the map
//! are never written. Tokens in words (no `--tokenizer`) are each word's hash under a key of
//! the same kind, so no word is held longer than its line.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};

/// The id a block's prefix was given, and the next id, for one invocation.
pub struct BlockIds {
    keys: [RandomState; 2],
    ids: HashMap<u128, u64>,
    block: usize,
}

/// More distinct blocks than the bound asked for.
#[derive(Debug, PartialEq)]
pub struct Full;

impl BlockIds {
    /// Blocks of `block` tokens (at least 1), keys drawn at random.
    pub fn new(block: usize) -> BlockIds {
        BlockIds {
            keys: [RandomState::new(), RandomState::new()],
            ids: HashMap::new(),
            block: block.max(1),
        }
    }

    /// The distinct blocks named so far.
    pub fn distinct(&self) -> u64 {
        self.ids.len() as u64
    }

    /// The ids of `tokens`' blocks in order, naming at most `most` distinct blocks in all.
    pub fn ids(&mut self, tokens: &[u64], most: u64) -> Result<Vec<u64>, Full> {
        let mut out = Vec::with_capacity(tokens.len().div_ceil(self.block));
        let mut parent = u64::MAX;
        for chunk in tokens.chunks(self.block) {
            let key = self.key(parent, chunk);
            let next = self.ids.len() as u64;
            let id = match self.ids.get(&key) {
                Some(&id) => id,
                None if next >= most => return Err(Full),
                None => *self.ids.entry(key).or_insert(next),
            };
            out.push(id);
            parent = id;
        }
        Ok(out)
    }

    fn key(&self, parent: u64, chunk: &[u64]) -> u128 {
        let half = |k: &RandomState| {
            let mut h = k.build_hasher();
            parent.hash(&mut h);
            chunk.hash(&mut h);
            h.finish()
        };
        (u128::from(half(&self.keys[0])) << 64) | u128::from(half(&self.keys[1]))
    }
}

/// Whitespace-separated words as tokens: each word's keyed hash (`key`, one per invocation).
pub fn word_tokens(key: &RandomState, text: &str) -> Vec<u64> {
    text.split_whitespace().map(|w| key.hash_one(w)).collect()
}
