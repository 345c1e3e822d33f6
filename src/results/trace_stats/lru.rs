//! A trace's blocks as prefixes, and the prefix cache they would meet.
//!
//! A block is known by its whole chain of ids (the ids up to and including it), as the
//! trace dataset's replay and a server's prefix cache know it: [`Chains`] numbers each
//! distinct chain once (a trie of (chain before, id), exact, no hash). [`hits`] replays the
//! requests in order against a cache of `capacity` blocks that evicts the least recently
//! used: a request's hit is the tokens of its leading blocks found in the cache, up to the
//! first block that is missing (or held shorter than the request needs); then every block of
//! the request is put in the cache as most recently used. With a capacity of at least the
//! distinct blocks nothing is evicted, and the hit is the designed reuse the replay reports.

use std::collections::{BTreeMap, HashMap};

/// Each request's blocks as chain numbers, and how many distinct chains there are.
pub struct Chains {
    /// Per request: each block's chain number and its tokens in that request.
    pub requests: Vec<Vec<(u32, u64)>>,
    pub distinct: u32,
}

impl Chains {
    /// The chains of `requests`' blocks (each block an id and its tokens), in order.
    pub fn new<'a>(requests: impl Iterator<Item = &'a [(u64, u64)]>) -> Chains {
        let mut trie: HashMap<(u32, u64), u32> = HashMap::new();
        let mut out = Vec::new();
        for blocks in requests {
            let mut parent = u32::MAX;
            let mut chains = Vec::with_capacity(blocks.len());
            for &(id, len) in blocks {
                let next = trie.len() as u32;
                let c = *trie.entry((parent, id)).or_insert(next);
                chains.push((c, len));
                parent = c;
            }
            out.push(chains);
        }
        Chains {
            requests: out,
            distinct: trie.len() as u32,
        }
    }
}

/// The tokens each request would find cached in a cache of `capacity` blocks (LRU), in the
/// order of `chains.requests`. `usize::MAX` (or any capacity of at least the distinct
/// chains): nothing is evicted.
pub fn hits(chains: &Chains, capacity: u64) -> Vec<u64> {
    let n = chains.distinct as usize;
    // Per chain: the most tokens of it held (0: not in the cache), and when it was last used.
    let mut held = vec![0u64; n];
    let mut used = vec![0u64; n];
    let mut order: BTreeMap<u64, u32> = BTreeMap::new();
    let mut clock = 0u64;
    let mut out = Vec::with_capacity(chains.requests.len());
    for blocks in &chains.requests {
        let mut hit = 0;
        for &(c, len) in blocks {
            let h = held[c as usize];
            hit += len.min(h);
            if h < len {
                break;
            }
        }
        out.push(hit);
        for &(c, len) in blocks {
            let c_ = c as usize;
            if held[c_] > 0 {
                order.remove(&used[c_]);
            }
            clock += 1;
            held[c_] = held[c_].max(len);
            used[c_] = clock;
            order.insert(clock, c);
            if order.len() as u64 > capacity {
                if let Some((_, old)) = order.pop_first() {
                    held[old as usize] = 0;
                }
            }
        }
    }
    out
}
