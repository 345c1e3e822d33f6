//! The arrival processes: [`arrival_offsets`] turns a [`LoadSpec`] (its rate, burstiness,
//! ramp, stages and time window) into send offsets, a pure function seeded by `--seed`, so a
//! run's schedule is reproducible. A trace's requests carry their own offsets instead.
//!
//! Every arrival process goes through the one driver (`load.rs`): to add one, add a case
//! here.

use rand::SeedableRng;
use rand_distr::{Distribution, Gamma};

use crate::config::{LoadSpec, RequestRate};

/// Send offsets in nanoseconds from the start of the run, non-decreasing: `n` of them, or,
/// when the load's shape has a time window (`--duration`, `--stages`), every offset inside it
/// (endless for an unbounded rate: the driver stops at the window's end).
///
/// `inf` rate: all at offset 0 (as vLLM's default). A finite rate λ: inter-arrival gaps drawn
/// from Gamma(shape = burstiness, scale = 1 / (λ · burstiness)), so the mean rate is λ and
/// burstiness 1 is a Poisson process. The first request goes at offset 0. Gaps are not
/// rescaled to land the last request at N/λ (newer vLLM does that); each gap is independent.
/// A ramp draws each gap at the rate its progress gives (by time over the duration, else by
/// request index, as vLLM); stages draw at their stage's rate, and a gap that would cross into
/// the next stage is redrawn from the boundary at the next stage's rate (exact for Poisson
/// arrivals, which forget their past).
pub fn arrival_offsets(spec: &LoadSpec, n: u64) -> impl Iterator<Item = u64> {
    let shape = spec.shape.clone();
    let (rate, b) = (spec.request_rate, spec.burstiness);
    let window = shape.window_s();
    let mut rng = rand::rngs::StdRng::seed_from_u64(spec.seed);
    let mut draw = move |r: f64| match Gamma::new(b, 1.0 / (r * b)) {
        Ok(g) if r > 0.0 => g.sample(&mut rng),
        _ => f64::INFINITY,
    };
    let mut t_s = 0.0f64;
    (0u64..).map_while(move |i| {
        if window.is_none() && i >= n {
            return None;
        }
        if i > 0 {
            if let Some(ramp) = &shape.ramp {
                let p = match shape.duration_s {
                    Some(d) => t_s / d,
                    None => i as f64 / n.saturating_sub(1).max(1) as f64,
                };
                t_s += draw(ramp.rate(p));
            } else if !shape.stages.is_empty() {
                loop {
                    let (k, end) = shape.stage_at(t_s)?;
                    let next = t_s + draw(shape.stages[k].rate);
                    if next < end {
                        t_s = next;
                        break;
                    }
                    t_s = end;
                }
            } else if let RequestRate::PerSecond(r) = rate {
                t_s += draw(r);
            }
        }
        if window.is_some_and(|w| t_s >= w) {
            return None;
        }
        Some((t_s * 1e9) as u64)
    })
}
