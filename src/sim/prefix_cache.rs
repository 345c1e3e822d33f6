//! The simulator's prefix cache: an LRU over blocks of [`BLOCK`] prompt words,
//! keyed by the chain of every block before them (a block is reused only after the same
//! prefix, as vLLM's and SGLang's caches do). A request's cached tokens are the words of its
//! leading blocks already held; then all its whole blocks are held, the least recently used
//! evicted past the capacity. The answer reports them (`prompt_tokens_details.cached_tokens`,
//! llama.cpp's `cache_n`), and the engine presets prefill only the rest.

use std::collections::{BTreeMap, HashMap};

/// Words per block (vLLM's default block size is 16 tokens).
pub(crate) const BLOCK: usize = 16;

#[derive(Debug)]
pub(crate) struct PrefixCache {
    capacity: usize,
    /// Chain hash → last use, and last use → chain hash (the LRU order).
    used: HashMap<u64, u64>,
    order: BTreeMap<u64, u64>,
    tick: u64,
}

impl PrefixCache {
    /// A cache of `capacity_tokens` (whole blocks of it).
    pub(crate) fn new(capacity_tokens: u64) -> PrefixCache {
        PrefixCache {
            capacity: usize::try_from(capacity_tokens / BLOCK as u64).unwrap_or(usize::MAX),
            used: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
        }
    }

    /// The words of `prompt`'s leading blocks already cached; then caches its whole blocks.
    pub(crate) fn lookup_and_insert(&mut self, prompt: &str) -> u64 {
        let words: Vec<&str> = prompt.split_whitespace().collect();
        let mut chain = 0xcbf2_9ce4_8422_2325u64;
        let mut cached = 0u64;
        let mut hit = true;
        for block in words.chunks_exact(BLOCK) {
            for w in block {
                for b in w.bytes().chain([b' ']) {
                    chain = (chain ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                }
            }
            hit &= self.used.contains_key(&chain);
            if hit {
                cached += BLOCK as u64;
            }
            self.touch(chain);
        }
        cached
    }

    /// Forgets every block (`POST /reset_prefix_cache`, `/flush_cache`).
    pub(crate) fn clear(&mut self) {
        self.used.clear();
        self.order.clear();
    }

    fn touch(&mut self, chain: u64) {
        if self.capacity == 0 {
            return;
        }
        self.tick += 1;
        if let Some(old) = self.used.insert(chain, self.tick) {
            self.order.remove(&old);
        }
        self.order.insert(self.tick, chain);
        while self.used.len() > self.capacity {
            let Some((_, victim)) = self.order.pop_first() else {
                break;
            };
            self.used.remove(&victim);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: usize, tag: &str) -> String {
        (0..n).map(|i| format!("{tag}{i} ")).collect()
    }

    #[test]
    fn shared_prefixes_hit_block_by_block_and_the_lru_evicts() {
        let mut c = PrefixCache::new(2 * BLOCK as u64);
        let a = words(40, "a");
        assert_eq!(c.lookup_and_insert(&a), 0);
        // The same 40 words: its two whole blocks are held (the last 8 words are no block).
        assert_eq!(c.lookup_and_insert(&a), 32);
        // A prompt sharing the first block only.
        let b = format!("{}{}", words(16, "a"), words(30, "b"));
        assert_eq!(c.lookup_and_insert(&b), 16);
        // Capacity 2 blocks: b's second block pushed out a's, the least recently used.
        assert_eq!(c.lookup_and_insert(&a), 16);
        c.clear();
        assert_eq!(c.lookup_and_insert(&a), 0);
    }
}
