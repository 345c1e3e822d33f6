//! The 95% Wilson score interval of a fraction: goodput's and SLO attainment's interval, which
//! searches, capacity plans and the SLO controller judge by. A leaf: it imports nothing.

/// The two-sided 95% level's normal quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// 95% Wilson score interval for `good` successes out of `total`.
pub fn wilson95(good: u64, total: u64) -> Option<(f64, f64)> {
    wilson(good, total, Z95)
}

/// The Wilson score interval for `good` successes out of `total` at normal quantile `z`
/// (1.96 for 95%, 3.29 for 99.9%).
pub fn wilson(good: u64, total: u64, z: f64) -> Option<(f64, f64)> {
    if total == 0 {
        return None;
    }
    let (n, p) = (total as f64, good as f64 / total as f64);
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n) + z * z / (4.0 * n * n)).sqrt() / denom;
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_interval_matches_a_hand_computed_value() {
        // 90 of 100: Wilson 95% interval ≈ (0.8256, 0.9448).
        let (lo, hi) = wilson95(90, 100).unwrap();
        assert!(
            (lo - 0.8256).abs() < 1e-3 && (hi - 0.9448).abs() < 1e-3,
            "{lo} {hi}"
        );
        assert_eq!(wilson95(0, 0), None);
    }
}
