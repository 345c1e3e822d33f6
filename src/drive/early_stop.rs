//! `--max-errors N` and `--max-error-rate F`: watches the measured requests as they
//! finish and says when the run should stop sending, and why. The reason is saved in the result
//! (`stopped_early`) and printed; what was measured is kept.

use std::collections::VecDeque;

use crate::config::shape::{LoadShape, ERROR_WINDOW, ERROR_WINDOW_MIN};
use crate::measure::record::RequestRecord;

/// The failures seen so far and over the last [`ERROR_WINDOW`] finished requests.
#[derive(Debug)]
pub struct ErrorWatch {
    max_errors: Option<u64>,
    max_rate: Option<f64>,
    failed: u64,
    window: VecDeque<bool>,
    window_failed: usize,
}

impl ErrorWatch {
    pub fn new(shape: &LoadShape) -> ErrorWatch {
        ErrorWatch {
            max_errors: shape.max_errors,
            max_rate: shape.max_error_rate,
            failed: 0,
            window: VecDeque::with_capacity(ERROR_WINDOW),
            window_failed: 0,
        }
    }

    /// Adds a finished request; `Some(reason)` the first time a limit is crossed (and on every
    /// later request while it stays crossed: the caller keeps the first).
    pub fn add(&mut self, r: &RequestRecord) -> Option<String> {
        if r.warmup || (self.max_errors.is_none() && self.max_rate.is_none()) {
            return None;
        }
        let failed = !r.is_ok();
        self.failed += u64::from(failed);
        self.window.push_back(failed);
        self.window_failed += usize::from(failed);
        if self.window.len() > ERROR_WINDOW {
            self.window_failed -= usize::from(self.window.pop_front() == Some(true));
        }
        if let Some(n) = self.max_errors.filter(|&n| self.failed >= n) {
            return Some(format!(
                "max_errors: {} requests failed (limit {n})",
                self.failed
            ));
        }
        let seen = self.window.len();
        let rate = self.window_failed as f64 / seen as f64;
        match self.max_rate {
            Some(f) if seen >= ERROR_WINDOW_MIN && rate > f => Some(format!(
                "max_error_rate: {} of the last {seen} finished requests failed ({:.0}% > {:.0}%)",
                self.window_failed,
                rate * 100.0,
                f * 100.0
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::{FailureKind, Outcome};

    fn rec(ok: bool) -> RequestRecord {
        let mut r = RequestRecord {
            chunk_ns: vec![1],
            ..RequestRecord::default()
        };
        if !ok {
            r.outcome = Outcome::Failed {
                kind: FailureKind::HttpStatus,
                message: "HTTP 500".into(),
            };
        }
        r
    }

    #[test]
    fn max_errors_stops_at_the_nth_failure() {
        let mut w = ErrorWatch::new(&LoadShape {
            max_errors: Some(3),
            ..LoadShape::default()
        });
        let seq = [true, false, true, false, true];
        assert!(seq.iter().all(|&ok| w.add(&rec(ok)).is_none()));
        let why = w.add(&rec(false)).unwrap();
        assert!(why.starts_with("max_errors: 3 requests failed"), "{why}");
    }

    #[test]
    fn error_rate_is_judged_over_the_last_hundred() {
        let mut w = ErrorWatch::new(&LoadShape {
            max_error_rate: Some(0.5),
            ..LoadShape::default()
        });
        // 9 failures: under the 10 needed to judge.
        assert!((0..9).all(|_| w.add(&rec(false)).is_none()));
        assert!(w.add(&rec(false)).is_some());
        // Alternating: exactly half of the last 100, never more; one more failure tips it.
        let mut w = ErrorWatch::new(&LoadShape {
            max_error_rate: Some(0.5),
            ..LoadShape::default()
        });
        for i in 0..200 {
            assert!(w.add(&rec(i % 2 == 0)).is_none());
        }
        let why = w.add(&rec(false)).unwrap();
        assert!(why.contains("51 of the last 100"), "{why}");
    }
}
