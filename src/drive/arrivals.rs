//! The arrival processes: [`arrival_offsets`] turns a [`LoadSpec`] (its rate, burstiness,
//! ramp, stages and time window) into send offsets, a pure function seeded by `--seed`, so a
//! run's schedule is reproducible. A trace's requests carry their own offsets instead.
//! A load shape over time (`--load-shape`) is a Poisson process of a varying rate, drawn by
//! thinning (Lewis and Shedler): candidates at the curve's peak rate, each kept with
//! probability rate(t) / peak, from a second generator seeded from the same seed.
//!
//! Every arrival process goes through the one driver (`load.rs`): to add one, add a case
//! here.

use rand::{RngExt, SeedableRng};
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
    // The thinning's own draws, so that the gaps' generator is the one of every other shape.
    let mut keep = rand::rngs::StdRng::seed_from_u64(spec.seed ^ 0x5eed_cafe_f00d_0001);
    (0u64..).map_while(move |i| {
        if window.is_none() && i >= n {
            return None;
        }
        if let Some(curve) = &shape.curve {
            // Every arrival drawn, the first too (the rate at 0 may be 0).
            let peak = curve.peak();
            loop {
                t_s += draw(peak);
                if !t_s.is_finite() || window.is_some_and(|w| t_s >= w) {
                    return None;
                }
                if keep.random::<f64>() * peak < curve.rate_at(t_s) {
                    break;
                }
            }
        } else if i > 0 {
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
