//! The SLO controller's hold on a running load (`run --adaptive`): the load the driver sends
//! at now (a rate its arrivals are drawn at, or a concurrency gate whose permits it moves),
//! and the segments of time the controller opened, each counting the requests sent in it
//! and how they ended.
//!
//! A request belongs to the segment that was open when the driver handed it to its task
//! (`spawned`, just before its send), by its id: the segments are consecutive ranges of
//! ids, so a record finishing after its segment closed is still counted in it. Shared by
//! the driver (`load.rs`), the record writer (`records.rs`) and the controller
//! (`adaptive.rs`); one lock per send and per finished request.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use rand::SeedableRng;
use rand_distr::{Distribution, Gamma};
use tokio::sync::Semaphore;

use crate::config::adaptive::AdaptiveOn;
use crate::config::Slo;
use crate::measure::record::RequestRecord;
use crate::results::stats::RequestMetrics;

/// What one segment's requests did so far.
#[derive(Clone, Debug, Default)]
pub struct Seg {
    /// The first request id sent in it.
    pub first_id: u64,
    pub start_ns: u64,
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    pub good: u64,
    pub ttfts_ms: Vec<f64>,
    pub e2el_sum_s: f64,
}

#[derive(Debug, Default)]
struct Segments {
    segs: Vec<Seg>,
    /// The id after the last one sent.
    next_id: u64,
    /// The first segment, open from the start (the driver may send before the controller
    /// opens its first window), was taken by the first [`Throttle::open`].
    claimed: bool,
}

/// How a request is judged good: as the summary judges it.
#[derive(Clone, Debug)]
pub struct Goodness {
    pub slos: Vec<Slo>,
    pub valid_output: bool,
    pub time_scale: f64,
}

/// The load the driver sends at, moved by the controller.
#[derive(Debug)]
pub struct Throttle {
    on: AdaptiveOn,
    rate_bits: AtomicU64,
    /// The concurrency gate (`AdaptiveOn::Concurrency`) and its current size.
    gate: Option<Arc<Semaphore>>,
    size: Mutex<u64>,
    done: AtomicBool,
    state: Mutex<Segments>,
    good: Goodness,
}

impl Throttle {
    pub fn new(on: AdaptiveOn, start: f64, good: Goodness) -> Arc<Throttle> {
        let c = start.max(1.0) as u64;
        Arc::new(Throttle {
            on,
            rate_bits: AtomicU64::new(start.to_bits()),
            gate: (on == AdaptiveOn::Concurrency).then(|| Arc::new(Semaphore::new(c as usize))),
            size: Mutex::new(c),
            done: AtomicBool::new(false),
            state: Mutex::new(Segments {
                segs: vec![Seg::default()],
                next_id: 0,
                claimed: false,
            }),
            good,
        })
    }

    /// The concurrency gate the driver takes its slots from (concurrency only).
    pub fn gate(&self) -> Option<Arc<Semaphore>> {
        self.gate.clone()
    }

    /// Sends from now on at `load`: a rate's next gap is drawn at it; a gate grows at once
    /// and shrinks as slots come free.
    pub fn set_load(self: &Arc<Self>, load: f64) {
        match (&self.gate, self.on) {
            (Some(g), AdaptiveOn::Concurrency) => {
                let want = load.max(1.0) as u64;
                let mut size = self.size.lock().unwrap_or_else(|e| e.into_inner());
                if want > *size {
                    g.add_permits((want - *size) as usize);
                } else if want < *size {
                    let less = (*size - want) as usize;
                    let gone = g.forget_permits(less);
                    if gone < less {
                        let (g, rest) = (g.clone(), (less - gone) as u32);
                        tokio::spawn(async move {
                            if let Ok(p) = g.acquire_many_owned(rest).await {
                                p.forget();
                            }
                        });
                    }
                }
                *size = want;
            }
            _ => self.rate_bits.store(load.to_bits(), Relaxed),
        }
    }

    fn rate(&self) -> f64 {
        f64::from_bits(self.rate_bits.load(Relaxed))
    }

    /// Ends the schedule: no arrival after this one.
    pub fn finish(&self) {
        self.done.store(true, Relaxed);
    }

    pub fn finished(&self) -> bool {
        self.done.load(Relaxed)
    }

    /// The arrivals, in the server's time (ns from the load's start): a rate's gaps drawn
    /// from Gamma(`burstiness`, 1/(rate · burstiness)) at the rate of the moment, a closed
    /// loop's all due at once (the gate holds them); none once [`Throttle::finish`]ed.
    pub fn offsets(
        self: Arc<Self>,
        seed: u64,
        burstiness: f64,
    ) -> Box<dyn Iterator<Item = u64> + Send> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut t_s = 0.0f64;
        let mut first = true;
        Box::new(std::iter::from_fn(move || {
            if self.finished() {
                return None;
            }
            if self.on == AdaptiveOn::Rate && !first {
                let r = self.rate();
                t_s += match Gamma::new(burstiness, 1.0 / (r * burstiness)) {
                    Ok(g) if r > 0.0 => g.sample(&mut rng),
                    _ => return None,
                };
            }
            first = false;
            Some((t_s * 1e9) as u64)
        }))
    }

    /// Opens a new segment at clock ns `now_ns`: the requests sent from now on are its.
    /// Returns its index.
    pub fn open(&self, now_ns: u64) -> usize {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !std::mem::replace(&mut s.claimed, true) {
            if let Some(first) = s.segs.first_mut() {
                first.start_ns = now_ns;
                return 0;
            }
        }
        let first_id = s.next_id;
        s.segs.push(Seg {
            first_id,
            start_ns: now_ns,
            ..Seg::default()
        });
        s.segs.len() - 1
    }

    /// The driver hands request `id` to its task now.
    pub fn spawned(&self, id: u64) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.next_id = s.next_id.max(id + 1);
        if let Some(last) = s.segs.last_mut() {
            last.sent += 1;
        }
    }

    /// A measured request ended: counted in the segment it was sent in.
    pub fn observe(&self, r: &RequestRecord) {
        if r.warmup {
            return;
        }
        let g = &self.good;
        let m = RequestMetrics::of(r).map(|m| m.scaled(g.time_scale));
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let i = s.segs.partition_point(|seg| seg.first_id <= r.id);
        let Some(seg) = i.checked_sub(1).and_then(|i| s.segs.get_mut(i)) else {
            return;
        };
        let Some(m) = m else {
            seg.failed += 1;
            return;
        };
        seg.completed += 1;
        let valid = (r.output_check.as_ref())
            .is_some_and(|c| c.verdict == crate::measure::output_check::Verdict::Valid);
        seg.good += u64::from(m.meets(&g.slos) && (valid || !g.valid_output));
        seg.ttfts_ms.push(m.ttft_ns as f64 / 1e6);
        seg.e2el_sum_s += m.e2el_ns as f64 / 1e9;
    }

    /// Segment `i` as it stands.
    pub fn seg(&self, i: usize) -> Seg {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.segs.get(i).cloned().unwrap_or_default()
    }

    /// Requests sent and not yet ended, over every segment.
    pub fn in_flight(&self) -> u64 {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (s.segs.iter())
            .map(|g| g.sent.saturating_sub(g.completed + g.failed))
            .sum()
    }
}
