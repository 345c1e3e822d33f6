//! The Pareto front of every step of several views (docs/metrics.md, "Pareto front"): each
//! step a point of output tokens/s per user against output tokens/s per GPU, the front the
//! steps no other step beats on both ([`front`]). `plot`, `compare` and the HTML report read
//! it; the figures and the front itself are `results::pareto`'s.
//!
//! Per GPU needs every step's GPU count (`--gpus`): when a step does not know it, the whole
//! front is per server ([`Basis::PerServer`]), as one axis cannot mix the two, and says so.

use crate::config::figure::RunFigure;
use crate::config::metric::{MetricKey, Stat};
use crate::config::tags::MAX_GPUS;
use crate::config::Metric;
use crate::results::pareto;
pub use crate::results::pareto::Basis;
use crate::views::model::{fmt_load, Step, View};

/// One step as a point.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Indices of the view, its series and the step.
    pub view: usize,
    pub series: usize,
    pub step: usize,
    /// The step's load as `max_concurrency=8` (`?` when not stated).
    pub load: String,
    /// Output tokens/s per user (1000 ÷ mean TPOT).
    pub per_user: f64,
    /// Output tokens/s per GPU (or per server: [`Front::basis`]).
    pub per_gpu: f64,
    pub on_front: bool,
}

/// Every step with both figures, and which lie on the front.
#[derive(Clone, Debug, PartialEq)]
pub struct Front {
    pub basis: Basis,
    /// In view, series and step order.
    pub points: Vec<Point>,
    /// Steps left out: neither figure can be computed (no mean TPOT, no output throughput).
    pub left_out: usize,
}

impl Front {
    /// The points on the front, by descending per-GPU throughput.
    pub fn on_front(&self) -> Vec<&Point> {
        let mut on: Vec<&Point> = self.points.iter().filter(|p| p.on_front).collect();
        on.sort_by(|a, b| b.per_gpu.total_cmp(&a.per_gpu));
        on
    }
}

/// A step on the front, named: what `compare` and the HTML report list.
#[derive(Clone, Debug, PartialEq)]
pub struct Named {
    /// The input (view) it is from: `compare`'s A, B, ...
    pub view: usize,
    /// The view's label, and its series' name when the view has several: outside text.
    pub configuration: String,
    /// The step's load, `max_concurrency=8`.
    pub step: String,
    pub per_user: f64,
    pub per_gpu: f64,
}

/// The front of several views as `compare` prints it.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub basis: Basis,
    /// Steps with both figures.
    pub points: usize,
    /// Steps without them.
    pub left_out: usize,
    /// The steps on the front, by descending per-GPU throughput.
    pub front: Vec<Named>,
}

/// The configuration point `p` belongs to: its view's label, with its series' name when the
/// view has several.
pub fn configuration(views: &[View], p: &Point) -> String {
    let v = &views[p.view];
    match v.series.len() {
        1 => v.label.clone(),
        _ => format!("{} · {}", v.label, v.series[p.series].name),
    }
}

/// The front of `views`, its steps named.
pub fn summary(views: &[View]) -> Summary {
    let f = front(views);
    Summary {
        basis: f.basis,
        points: f.points.len(),
        left_out: f.left_out,
        front: (f.on_front().into_iter())
            .map(|p| Named {
                view: p.view,
                configuration: configuration(views, p),
                step: p.load.clone(),
                per_user: p.per_user,
                per_gpu: p.per_gpu,
            })
            .collect(),
    }
}

/// The step's GPUs when plausible (a saved or imported count outside 1..=`MAX_GPUS` is not).
fn gpus(st: &Step) -> Option<u32> {
    st.gpus.filter(|g| (1..=MAX_GPUS).contains(g))
}

/// The front of every step of `views`.
pub fn front(views: &[View]) -> Front {
    let steps: Vec<(usize, usize, usize, &Step, String)> = (views.iter().enumerate())
        .flat_map(|(vi, v)| {
            (v.series.iter().enumerate()).flat_map(move |(si, s)| {
                (s.steps.iter().enumerate()).map(move |(ti, st)| {
                    let load = st.load_value(s.parameter).map_or("?".into(), fmt_load);
                    (vi, si, ti, st, format!("{}={load}", s.parameter.as_str()))
                })
            })
        })
        .collect();
    let basis = match steps.iter().all(|(.., st, _)| gpus(st).is_some()) {
        true if !steps.is_empty() => Basis::PerGpu,
        _ => Basis::PerServer,
    };
    let tpot = MetricKey::new(Stat::Mean, Metric::Tpot);
    let mut points = Vec::new();
    for (view, series, step, st, load) in &steps {
        let per_user = pareto::per_user(st.metric(tpot));
        let count = (basis == Basis::PerGpu).then(|| gpus(st)).flatten();
        let per_gpu = pareto::per_gpu(st.metric(RunFigure::OutputThroughput), count);
        if let (Some(per_user), Some(per_gpu)) = (per_user, per_gpu) {
            points.push(Point {
                view: *view,
                series: *series,
                step: *step,
                load: load.clone(),
                per_user,
                per_gpu,
                on_front: false,
            });
        }
    }
    let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.per_gpu, p.per_user)).collect();
    for (p, on) in points.iter_mut().zip(pareto::front(&xy)) {
        p.on_front = on;
    }
    Front {
        basis,
        left_out: steps.len() - points.len(),
        points,
    }
}

/// A sweep of one series for tests (of the front here, and of its chart): each step its
/// concurrency, output throughput and mean TPOT, every one on `gpus` accelerators.
#[cfg(test)]
pub(crate) fn test_sweep(label: &str, gpus: Option<u32>, steps: &[(u64, f64, f64)]) -> View {
    let tpot = crate::config::metric::MetricKey::new(
        crate::config::metric::Stat::Mean,
        crate::config::Metric::Tpot,
    );
    View {
        label: label.into(),
        origin: crate::views::model::Origin::Sweep,
        format: "test".into(),
        path: std::path::PathBuf::from(label),
        series: vec![crate::views::model::Series {
            name: "s".into(),
            parameter: crate::config::sweep::LoadParameter::MaxConcurrency,
            steps: (steps.iter())
                .map(|&(c, tput, t)| crate::views::model::Step {
                    load: crate::views::model::Load {
                        max_concurrency: Some(c),
                        ..Default::default()
                    },
                    metrics: std::collections::BTreeMap::from([
                        (
                            crate::config::figure::RunFigure::OutputThroughput.into(),
                            tput,
                        ),
                        (tpot.into(), t),
                    ]),
                    gpus,
                    ..Default::default()
                })
                .collect(),
        }],
        notes: vec![],
        llmperf_requests: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A view of one concurrency sweep: (concurrency, output tokens/s, mean TPOT ms) per step.
    fn view(label: &str, gpus: Option<u32>, steps: &[(u64, f64, f64)]) -> View {
        super::test_sweep(label, gpus, steps)
    }

    #[test]
    fn per_gpu_when_every_step_knows_its_gpus() {
        // A: 2 GPUs; B: 1 GPU. Per GPU, B's 150 tokens/s at 40 tokens/s per user beats
        // A's 200/2 = 100 at 25 (A's step 2); A's step 1 (50 per GPU at 50 per user) is
        // the fastest per user, so stays on the front.
        let a = view("a", Some(2), &[(1, 100.0, 20.0), (2, 200.0, 40.0)]);
        let b = view("b", Some(1), &[(1, 150.0, 25.0)]);
        let f = front(&[a.clone(), b.clone()]);
        assert_eq!(f.basis, Basis::PerGpu);
        let got: Vec<(usize, f64, f64, bool)> = (f.points.iter())
            .map(|p| (p.view, p.per_gpu, p.per_user, p.on_front))
            .collect();
        assert_eq!(
            got,
            [
                (0, 50.0, 50.0, true),
                (0, 100.0, 25.0, false),
                (1, 150.0, 40.0, true)
            ]
        );
        assert_eq!(f.on_front()[0].load, "max_concurrency=1");
        assert_eq!(f.on_front()[0].view, 1);
        // Without B's GPU count, the whole front is per server: A's step 2 is back on it.
        let b = view("b", None, &[(1, 150.0, 25.0)]);
        let f = front(&[a, b]);
        assert_eq!(f.basis, Basis::PerServer);
        assert!(f.points.iter().all(|p| p.on_front));
    }

    #[test]
    fn steps_without_the_figures_are_left_out_and_implausible_gpus_are_unknown() {
        let mut v = view("a", Some(4), &[(1, 100.0, 0.0), (2, 100.0, 10.0)]);
        let f = front(std::slice::from_ref(&v));
        assert_eq!((f.points.len(), f.left_out), (1, 1));
        assert_eq!(f.points[0].per_gpu, 25.0);
        v.series[0].steps[1].gpus = Some(0);
        let f = front(&[v]);
        assert_eq!(f.basis, Basis::PerServer);
        assert_eq!(f.points[0].per_gpu, 100.0);
        assert_eq!(front(&[]).basis, Basis::PerServer);
    }
}
