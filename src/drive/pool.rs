//! The conversations a run's driver sends (`load.rs`), taken by their place in the
//! schedule: [`conversations`] groups the built requests (`--turns`, or a conversation
//! dataset's own turns), and [`Pool`] hands schedule position `id` its conversation with its
//! requests numbered, once, or again for a time-bounded run that outgrows its pool. The
//! lanes (`lanes.rs`) split a pool by the same grouping.

use crate::config::LoadSpec;
use crate::measure::client::RequestSpec;

/// The conversations a run sends, taken by their place in the schedule.
pub(super) struct Pool {
    /// Each conversation, until its first send moves it out.
    slots: Vec<Option<Vec<RequestSpec>>>,
    /// A copy of each conversation sent, kept only by a run that may send its pool again.
    copies: Vec<Option<Vec<RequestSpec>>>,
    /// Only a time-bounded run may send a prompt twice.
    may_reuse: bool,
    /// Conversation `slot`'s turns are numbered from `first_id[slot]`; a reused pool
    /// continues after the last id of its previous pass (`pass_len` ids on).
    first_id: Vec<u64>,
    pass_len: u64,
    /// Each conversation's turns.
    pub(super) sizes: Vec<u64>,
    /// The requests each conversation starts with: its first turn, or a job's calls that
    /// wait for nothing.
    pub(super) firsts: Vec<u64>,
    /// Whether its conversations are agentic jobs.
    pub(super) jobs: bool,
}

impl Pool {
    /// `pool` grouped into conversations (a scheduled arrival sends one: one request, or its
    /// turns in order), and a trace's send times when its requests carry them.
    pub(super) fn new(pool: Vec<RequestSpec>, spec: &LoadSpec) -> (Pool, Option<Vec<u64>>) {
        let pool = conversations(pool, spec.shape.turns());
        let first_id: Vec<u64> = (pool.iter())
            .scan(0, |next, c| {
                let id = *next;
                *next += c.len() as u64;
                Some(id)
            })
            .collect();
        let sizes: Vec<u64> = pool.iter().map(|c| c.len() as u64).collect();
        let firsts: Vec<u64> = (pool.iter())
            .map(|c| match c.first().is_some_and(|r| r.call.is_some()) {
                true => (c.iter())
                    .filter(|r| r.call.as_ref().is_some_and(|p| p.after.is_empty()))
                    .count() as u64,
                false => 1,
            })
            .collect();
        let jobs = (pool.iter()).any(|c| c.first().is_some_and(|r| r.call.is_some()));
        let trace: Option<Vec<u64>> = (pool.iter())
            .map(|c| c.first()?.offset_ns)
            .collect::<Option<Vec<u64>>>()
            .filter(|t| !t.is_empty());
        let may_reuse = spec.shape.window_s().is_some() || spec.adaptive.is_some();
        let pool = Pool {
            copies: vec![None; if may_reuse { pool.len() } else { 0 }],
            slots: pool.into_iter().map(Some).collect(),
            may_reuse,
            first_id,
            pass_len: sizes.iter().sum(),
            sizes,
            firsts,
            jobs,
        };
        (pool, trace)
    }

    /// The turns a count-bounded run plans: each of its first `count` conversations that it
    /// `owns` once, every turn.
    pub(super) fn planned(&self, count: u64, owns: impl Fn(u64) -> bool) -> u64 {
        (0..count)
            .filter(|&id| owns(id))
            .filter_map(|id| self.sizes.get(usize::try_from(id).ok()?))
            .sum()
    }

    /// The arrivals a count-bounded run plans: of its first `count`, those it `owns` that
    /// the pool has.
    pub(super) fn arrivals(&self, count: u64, owns: impl Fn(u64) -> bool) -> u64 {
        let n = self.sizes.len() as u64;
        (0..count.min(n)).filter(|&id| owns(id)).count() as u64
    }

    /// Whether the pool has nothing for schedule position `id`: it is empty, or `id` is past
    /// its end and it may not be sent again.
    pub(super) fn exhausted(&self, id: u64) -> bool {
        self.slots.is_empty() || (!self.may_reuse && id >= self.slots.len() as u64)
    }

    /// The conversation schedule position `id` sends, its requests numbered: moved out of
    /// the pool the first time, a copy when it is sent again.
    pub(super) fn take(&mut self, id: u64) -> Option<Vec<RequestSpec>> {
        let n = self.slots.len() as u64;
        let slot = (id % n) as usize;
        let mut reqs =
            (self.slots[slot].take()).or_else(|| self.copies.get(slot).cloned().flatten())?;
        if self.may_reuse && self.copies[slot].is_none() {
            self.copies[slot] = Some(reqs.clone());
        }
        let base = id / n * self.pass_len + self.first_id[slot];
        for (k, r) in reqs.iter_mut().enumerate() {
            r.id = base + k as u64;
        }
        Some(reqs)
    }
}

/// Groups the pool into conversations: with `--turns N` every N requests, as turns 0..N;
/// otherwise by the requests' own `turn` (a conversation dataset's) or `call` (a job's calls
/// are one group, its call 0 first), each request without either alone.
pub(super) fn conversations(pool: Vec<RequestSpec>, turns: u32) -> Vec<Vec<RequestSpec>> {
    let mut out: Vec<Vec<RequestSpec>> = Vec::new();
    for (i, mut r) in pool.into_iter().enumerate() {
        if turns > 1 {
            r.turn = Some(i as u32 % turns);
        }
        match out.last_mut() {
            Some(c)
                if r.turn.is_some_and(|t| t > 0) || r.call.as_ref().is_some_and(|p| p.call > 0) =>
            {
                c.push(r)
            }
            _ => out.push(vec![r]),
        }
    }
    out
}
