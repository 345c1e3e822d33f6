//! The Pareto front of `servebench plan`'s steps (docs/metrics.md, "Pareto front"): each
//! configuration's steps as points of output tokens/s per user against per GPU (per server
//! when a step's `--gpus` is not known), and which lie on the front of all of them. Pure;
//! `results::capacity` gives it each step's figures and keeps the answer in its plan.

use crate::config::tags::MAX_GPUS;
use crate::results::pareto::{self, Basis};

/// What one step brings: its mean TPOT (ms), output throughput (tokens/s) and GPUs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepFigures {
    pub mean_tpot_ms: Option<f64>,
    pub output_throughput: f64,
    pub gpus: Option<u32>,
}

/// One step as a point; `None` figures: it cannot be placed (no mean TPOT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrontStep {
    pub per_user: Option<f64>,
    pub per_gpu: Option<f64>,
    pub on_front: bool,
}

/// Every configuration's steps, in the plan's order, and the axis' basis.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanFront {
    pub basis: Basis,
    /// Per configuration, per step (as the plan's `Configuration::steps`).
    pub steps: Vec<Vec<FrontStep>>,
}

/// The front of every step of every configuration.
pub fn front(configurations: &[Vec<StepFigures>]) -> PlanFront {
    let all = configurations.iter().flatten();
    let basis = match all
        .clone()
        .all(|s| s.gpus.is_some_and(|g| (1..=MAX_GPUS).contains(&g)))
    {
        true if all.clone().next().is_some() => Basis::PerGpu,
        _ => Basis::PerServer,
    };
    let placed = |s: &StepFigures| {
        let gpus = (basis == Basis::PerGpu).then_some(s.gpus).flatten();
        let per_user = pareto::per_user(s.mean_tpot_ms);
        let per_gpu = pareto::per_gpu(Some(s.output_throughput), gpus);
        (per_user, per_gpu)
    };
    // A step that cannot be placed is a NaN point: on no front, beating nothing.
    let xy: Vec<(f64, f64)> = (all.clone().map(placed))
        .map(|(u, g)| (g.unwrap_or(f64::NAN), u.unwrap_or(f64::NAN)))
        .collect();
    let mut on = pareto::front(&xy).into_iter();
    let steps = (configurations.iter())
        .map(|c| {
            (c.iter())
                .map(|s| {
                    let (per_user, per_gpu) = placed(s);
                    FrontStep {
                        per_user,
                        per_gpu,
                        on_front: on.next().unwrap_or(false),
                    }
                })
                .collect()
        })
        .collect();
    PlanFront { basis, steps }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(tpot: f64, tput: f64, gpus: Option<u32>) -> StepFigures {
        StepFigures {
            mean_tpot_ms: Some(tpot),
            output_throughput: tput,
            gpus,
        }
    }

    #[test]
    fn the_plan_s_front_spans_its_configurations() {
        // A on 2 GPUs, B on 1: per GPU, B's only step (150, 40) beats A's second (100, 25).
        let a = vec![step(20.0, 100.0, Some(2)), step(40.0, 200.0, Some(2))];
        let b = vec![step(25.0, 150.0, Some(1))];
        let f = front(&[a.clone(), b.clone()]);
        assert_eq!(f.basis, Basis::PerGpu);
        let on: Vec<Vec<bool>> = (f.steps.iter())
            .map(|c| c.iter().map(|s| s.on_front).collect())
            .collect();
        assert_eq!(on, [vec![true, false], vec![true]]);
        assert_eq!(f.steps[0][1].per_gpu, Some(100.0));
        // B's GPUs unknown: per server, where A's second step is not beaten.
        let b = vec![step(25.0, 150.0, None)];
        let f = front(&[a, b]);
        assert_eq!(f.basis, Basis::PerServer);
        assert!(f.steps.iter().flatten().all(|s| s.on_front));
        // A step without a mean TPOT is on no front.
        let f = front(&[vec![StepFigures {
            mean_tpot_ms: None,
            output_throughput: 1.0,
            gpus: Some(1),
        }]]);
        assert!(!f.steps[0][0].on_front);
    }
}
