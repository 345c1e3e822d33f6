//! The Pareto front of load steps (docs/metrics.md, "Pareto front"): each step is a point of
//! output tokens/s per user (1000 ÷ mean TPOT in ms) and output tokens/s per GPU (output
//! throughput ÷ `--gpus`, or per server when the GPU count is not known), and the front is
//! the steps no other step beats on both, higher being better on each.
//!
//! [`front`] is the one definition, used by `plot`, `compare`, `plan` and the HTML report;
//! [`per_user`] and [`per_gpu`] are the two figures, so every caller computes them alike.
//! Pure: no I/O.

/// What the throughput axis is divided by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// Every step knows its GPUs: output tokens/s per GPU.
    PerGpu,
    /// Some step does not: output tokens/s per server.
    PerServer,
}

impl Basis {
    /// The throughput axis' name, with its unit.
    pub fn axis(self) -> &'static str {
        match self {
            Basis::PerGpu => "output tokens/s per GPU",
            Basis::PerServer => "output tokens/s per server (GPU count unknown)",
        }
    }
}

/// Output tokens/s per user: 1000 ÷ mean TPOT (ms), the decode rate one stream sees. `None`
/// when the mean TPOT is unknown, not positive or not finite.
pub fn per_user(mean_tpot_ms: Option<f64>) -> Option<f64> {
    let t = mean_tpot_ms.filter(|t| t.is_finite() && *t > 0.0)?;
    Some(1000.0 / t).filter(|v| v.is_finite())
}

/// Output tokens/s per GPU: output throughput ÷ `gpus`; per server (the throughput itself)
/// when `gpus` is `None`. `None` when the throughput is unknown, negative or not finite, or
/// `gpus` is zero.
pub fn per_gpu(output_throughput: Option<f64>, gpus: Option<u32>) -> Option<f64> {
    let t = output_throughput.filter(|t| t.is_finite() && *t >= 0.0)?;
    match gpus {
        Some(0) => None,
        Some(g) => Some(t / f64::from(g)),
        None => Some(t),
    }
}

/// True when `a` dominates `b`: at least as high on both axes and higher on one.
pub fn dominates(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 >= b.0 && a.1 >= b.1 && (a.0 > b.0 || a.1 > b.1)
}

/// Which of `points` (x, y; higher is better on both) lie on the Pareto front: those no
/// other point dominates. A point with a coordinate that is not finite (NaN, ±∞) is neither
/// on the front nor dominates any other. Equal points are all on the front or all off it
/// (neither dominates the other). Quadratic in the points: a sweep has tens of steps.
pub fn front(points: &[(f64, f64)]) -> Vec<bool> {
    let finite = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
    (points.iter())
        .map(|p| finite(p) && !points.iter().any(|q| finite(q) && dominates(*q, *p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_front_keeps_what_nothing_beats_on_both() {
        // A sweep's shape: per-GPU throughput rises as per-user speed falls, with one step
        // (index 2) beaten by index 3 on both.
        let p = [(100.0, 50.0), (180.0, 40.0), (200.0, 20.0), (210.0, 30.0)];
        assert_eq!(front(&p), [true, true, false, true]);
    }

    #[test]
    fn ties_and_non_finite_points() {
        // Equal points are both on the front; a point equal on one axis and lower on the
        // other is dominated.
        let p = [(1.0, 1.0), (1.0, 1.0), (1.0, 0.5), (0.5, 1.0)];
        assert_eq!(front(&p), [true, true, false, false]);
        // NaN and infinities are left out and beat nothing.
        let p = [
            (f64::NAN, 9.0),
            (f64::INFINITY, 9.0),
            (1.0, 1.0),
            (2.0, f64::NAN),
        ];
        assert_eq!(front(&p), [false, false, true, false]);
        assert!(front(&[]).is_empty());
    }

    #[test]
    fn the_two_figures() {
        assert_eq!(per_user(Some(20.0)), Some(50.0));
        for bad in [
            None,
            Some(0.0),
            Some(-1.0),
            Some(f64::NAN),
            Some(f64::INFINITY),
        ] {
            assert_eq!(per_user(bad), None, "{bad:?}");
        }
        assert_eq!(per_user(Some(1e-320)), None);
        assert_eq!(per_gpu(Some(800.0), Some(8)), Some(100.0));
        assert_eq!(per_gpu(Some(800.0), None), Some(800.0));
        assert_eq!(per_gpu(Some(800.0), Some(0)), None);
        assert_eq!(per_gpu(Some(f64::NAN), Some(1)), None);
        assert_eq!(per_gpu(Some(-1.0), Some(1)), None);
    }

    fn coordinate() -> impl Strategy<Value = f64> {
        // Few distinct values, so ties are common; now and then a NaN or an infinity.
        prop_oneof![
            8 => (0u8..6).prop_map(f64::from),
            1 => Just(f64::NAN),
            1 => Just(f64::INFINITY),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn no_front_point_is_dominated_and_every_other_point_is(
            points in proptest::collection::vec((coordinate(), coordinate()), 0..24)
        ) {
            let on = front(&points);
            let finite = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
            for (i, p) in points.iter().enumerate() {
                if on[i] {
                    prop_assert!(finite(p));
                    prop_assert!(!points.iter().any(|q| finite(q) && dominates(*q, *p)));
                } else if finite(p) {
                    // Dominated by a point of the front itself (domination is transitive).
                    prop_assert!(
                        (points.iter().zip(&on)).any(|(q, f)| *f && dominates(*q, *p))
                    );
                }
            }
            // A non-empty set of finite points always has a front.
            if points.iter().any(finite) {
                prop_assert!(on.iter().any(|f| *f));
            }
        }
    }
}
