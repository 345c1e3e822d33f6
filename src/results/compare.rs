//! The statistics of comparing two runs on one figure (docs/metrics.md, "Comparing two
//! runs"): B/A, its 95% interval from each run's own interval, the verdict ([`judge`]), the
//! better of several values ([`best`]), and how much worse B is ([`Judged::worse_by`]).
//!
//! Pure functions of numbers and a figure's direction (`config::figure::Better`): they know
//! no document and no view (`views::compare` pairs the inputs' steps and calls them; `render`
//! writes the result). To change a rule, change it here and in docs/metrics.md together.

use serde::Serialize;

use crate::config::figure::Better;
use crate::results::stats::ci::Z95;

/// The smallest difference called significant: 1%. Each run's interval covers only its own
/// requests' spread, not what changes from one run to the next (the machine, the network, the
/// server's state), which is about this size on a quiet machine; `--repeat` measures it.
pub const MIN_EFFECT: f64 = 0.01;

/// What B/A's interval says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    /// The interval reaches within [`MIN_EFFECT`] of equality.
    NoSignificantDifference,
    /// An input has no interval for this figure (an import without per-request samples, or
    /// too few samples for a percentile's interval).
    NoInterval,
    /// The figure has no better direction (token totals).
    NotJudged,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::NoInterval => "no interval",
            Verdict::NotJudged => "",
        }
    }
}

/// One input against the baseline on one figure: B/A, its 95% interval, and the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Judged {
    pub ratio: f64,
    pub ci95: Option<[f64; 2]>,
    pub verdict: Verdict,
}

impl Judged {
    /// How much worse B is than A, as a fraction (negative when better), for a figure that is
    /// better `better`.
    pub fn worse_by(&self, better: Better) -> f64 {
        match better {
            Better::Higher => 1.0 - self.ratio,
            Better::Lower => self.ratio - 1.0,
        }
    }
}

/// B against A on a figure that is better `better` (values `a`, `b`; intervals `ia`, `ib`);
/// `None` unless both values are positive and finite. Each interval is read as a normal
/// interval on the log scale, and the two runs as independent: the ratio's interval is
/// B/A · exp(±1.96 · √(σ²_A + σ²_B)), with σ = (ln high − ln low) / (2 · 1.96).
pub fn judge(
    better: Option<Better>,
    a: f64,
    b: f64,
    ia: Option<[f64; 2]>,
    ib: Option<[f64; 2]>,
) -> Option<Judged> {
    if !(a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite()) {
        return None;
    }
    let ratio = b / a;
    let sigma = |ci: Option<[f64; 2]>| {
        let [lo, hi] = ci?;
        (lo > 0.0 && hi >= lo).then(|| (hi.ln() - lo.ln()) / (2.0 * Z95))
    };
    let ci95 = sigma(ia).zip(sigma(ib)).map(|(sa, sb)| {
        let half = Z95 * (sa * sa + sb * sb).sqrt();
        [ratio * (-half).exp(), ratio * half.exp()]
    });
    let verdict = match (better, ci95) {
        (None, _) => Verdict::NotJudged,
        (_, None) => Verdict::NoInterval,
        (Some(better), Some([lo, hi])) => {
            let (above, below) = match better {
                Better::Higher => (Verdict::Better, Verdict::Worse),
                Better::Lower => (Verdict::Worse, Verdict::Better),
            };
            if lo > 1.0 + MIN_EFFECT {
                above
            } else if hi < 1.0 - MIN_EFFECT {
                below
            } else {
                Verdict::NoSignificantDifference
            }
        }
    };
    Some(Judged {
        ratio,
        ci95,
        verdict,
    })
}

/// B/A, where A is not zero.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (a != 0.0).then(|| b / a)
}

/// The index of the better of `values` on a figure that is better `better`: `None` without a
/// direction, with fewer than two values, or when the best value is tied.
pub fn best(better: Option<Better>, values: &[Option<f64>]) -> Option<usize> {
    let higher = better? == Better::Higher;
    let present: Vec<(usize, f64)> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i, v)))
        .collect();
    if present.len() < 2 {
        return None;
    }
    let pick = present.iter().copied().reduce(|a, b| {
        let b_better = if higher { b.1 > a.1 } else { b.1 < a.1 };
        if b_better {
            b
        } else {
            a
        }
    })?;
    let ties = present.iter().filter(|(_, v)| *v == pick.1).count();
    (ties == 1).then_some(pick.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_combine_on_the_log_scale() {
        // Each input ±10% at 95%: σ = ln(1.1/0.9)/(2·1.96) each, √2 of it for the ratio.
        let j = judge(
            Some(Better::Lower),
            100.0,
            150.0,
            Some([90.0, 110.0]),
            Some([135.0, 165.0]),
        )
        .unwrap();
        let sigma = (1.1f64 / 0.9).ln() / (2.0 * Z95);
        let half = Z95 * (2.0 * sigma * sigma).sqrt();
        assert!((j.ratio - 1.5).abs() < 1e-12);
        let [lo, hi] = j.ci95.unwrap();
        assert!((lo - 1.5 * (-half).exp()).abs() < 1e-12, "{lo}");
        assert!((hi - 1.5 * half.exp()).abs() < 1e-12, "{hi}");
        assert_eq!(j.verdict, Verdict::Worse);
        assert!((j.worse_by(Better::Lower) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn verdicts_follow_the_direction_and_the_floor() {
        let tight = Some([99.99, 100.01]);
        let at = |better, b: f64| {
            let ib = Some([b * 0.9999, b * 1.0001]);
            judge(better, 100.0, b, tight, ib).map(|j| j.verdict)
        };
        assert_eq!(at(Some(Better::Higher), 120.0), Some(Verdict::Better));
        assert_eq!(at(Some(Better::Lower), 120.0), Some(Verdict::Worse));
        assert_eq!(at(Some(Better::Lower), 80.0), Some(Verdict::Better));
        // Within 1% of equality: no significant difference, however tight the intervals.
        assert_eq!(
            at(Some(Better::Lower), 100.5),
            Some(Verdict::NoSignificantDifference)
        );
        assert_eq!(at(None, 120.0), Some(Verdict::NotJudged));
        assert_eq!(
            judge(Some(Better::Lower), 1.0, 2.0, None, tight).map(|j| j.verdict),
            Some(Verdict::NoInterval)
        );
        assert_eq!(judge(Some(Better::Lower), 0.0, 2.0, tight, tight), None);
        assert_eq!(
            judge(Some(Better::Lower), 1.0, f64::INFINITY, None, None),
            None
        );
    }

    #[test]
    fn the_best_value_is_unique_or_none() {
        let v = [Some(3.0), None, Some(1.0), Some(2.0)];
        assert_eq!(best(Some(Better::Lower), &v), Some(2));
        assert_eq!(best(Some(Better::Higher), &v), Some(0));
        assert_eq!(best(None, &v), None);
        assert_eq!(best(Some(Better::Lower), &[Some(1.0), Some(1.0)]), None);
        assert_eq!(best(Some(Better::Lower), &[Some(1.0), None]), None);
        assert_eq!(ratio(2.0, 1.0), Some(0.5));
        assert_eq!(ratio(0.0, 1.0), None);
    }
}
