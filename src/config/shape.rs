//! The shape of a run's load in time: a run bounded by time (`--duration`), a rate
//! that ramps (`--ramp-up-strategy`, vLLM's flags and semantics), constant-rate stages
//! (`--stages`), and the limits that stop a failing run early (`--max-errors`,
//! `--max-error-rate`). `drive::load` turns it into send times; this file only holds and
//! validates the values.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::{ConfigError, ValueError};
use super::limits::{
    check_rate, check_span, LimitError, MAX_HISTORY_BYTES, MAX_HISTORY_TOKENS, MAX_TOKENS,
    MAX_TURNS, MAX_WAIT_S,
};

/// How the request rate changes over a ramped run (vLLM's `--ramp-up-strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RampStrategy {
    /// `start + (end − start) · p`.
    Linear,
    /// `start · (end / start)^p`.
    Exponential,
}

/// A rate ramp from `start_rps` to `end_rps`, over the run's duration when it has one (p = the
/// send time over the duration), else over its requests (p = i / (N − 1), as vLLM steps it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ramp {
    pub strategy: RampStrategy,
    pub start_rps: f64,
    pub end_rps: f64,
}

impl Ramp {
    /// The rate at progress `p` in [0, 1].
    pub fn rate(&self, p: f64) -> f64 {
        let p = p.clamp(0.0, 1.0);
        match self.strategy {
            RampStrategy::Linear => self.start_rps + (self.end_rps - self.start_rps) * p,
            RampStrategy::Exponential => self.start_rps * (self.end_rps / self.start_rps).powf(p),
        }
    }
}

/// One constant-rate stage of `--stages RATE:SECONDS,...`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// Requests per second (Poisson, or gamma with `--burstiness`).
    pub rate: f64,
    pub seconds: f64,
}

impl FromStr for Stage {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Stage, ValueError> {
        let (rate, seconds) = (s.split_once(':')).ok_or_else(|| ValueError::Stage(s.into()))?;
        let positive = |v: &str| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
        };
        let stage = match (positive(rate), positive(seconds)) {
            (Some(rate), Some(seconds)) => Stage { rate, seconds },
            _ => return Err(ValueError::StageNotPositive(s.into())),
        };
        stage
            .check()
            .map_err(|(part, why)| ValueError::StageBound {
                stage: s.into(),
                part,
                why,
            })?;
        Ok(stage)
    }
}

impl Stage {
    /// Its rate at least one request a week, its time at most a week; on error, which of the
    /// two (`rate`, `seconds`) and why.
    fn check(&self) -> Result<(), (&'static str, LimitError)> {
        check_rate(self.rate).map_err(|why| ("rate", why))?;
        check_span(self.seconds, false).map_err(|why| ("seconds", why))
    }
}

/// The load's shape in time; the default is vLLM's: a count of requests at one rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadShape {
    /// Send until this many seconds (server time) have passed, then drain (or cancel) what is
    /// in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// At the end of `duration_s` (or of the last stage), cancel in-flight requests instead
    /// of letting them finish within the grace period.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub duration_cancel: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Ramp>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
    /// Stop sending once this many measured requests failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_errors: Option<u64>,
    /// Stop sending once the failed fraction of the last [`ERROR_WINDOW`] finished requests
    /// exceeds this (judged from [`ERROR_WINDOW_MIN`] finished requests on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_rate: Option<f64>,
    /// Multi-turn conversations of this many turns (`--turns`): each scheduled arrival starts
    /// a conversation, turn k + 1 is sent once turn k has finished, with the history and the
    /// server's reply before it; the concurrency cap counts conversations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
    /// Seconds between a turn's end and the next turn's send (server time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time_s: Option<f64>,
    /// A conversation's history limits (`--max-history-bytes`, `--max-history-tokens`): the
    /// turn whose history would pass one fails (`prompt`) and ends its conversation; `None`:
    /// the default ([`LoadShape::history_limits`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_history_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_history_tokens: Option<u64>,
    /// `--users N`: N closed-loop users, each sending its next unit (a request, a
    /// conversation, a job) `user_gap_s` after its previous one ended (`config::users`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<u32>,
    /// `--user-gap`: seconds (server time) from a user's unit's end to its next unit's send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_gap_s: Option<f64>,
    /// `--load-shape`: the rate over time (`autoscale.rs`), instead of `--request-rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<super::autoscale::RateCurve>,
}

/// The most a conversation's history (the text of its messages) may hold when a turn is
/// built: bytes, and tokens (each user text's built length and each reply's output count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistoryLimits {
    pub bytes: u64,
    pub tokens: u64,
}

/// The largest `--max-history-bytes`: a turn's request body repeats the history.
const MAX_HISTORY_BYTES_FLAG: u64 = 1 << 30;

/// The sliding window of `--max-error-rate`, in finished requests.
pub const ERROR_WINDOW: usize = 100;
/// Finished requests before `--max-error-rate` is judged (a run of fewer than
/// [`ERROR_WINDOW`] requests is judged over all it has once it has this many).
pub const ERROR_WINDOW_MIN: usize = 10;

impl LoadShape {
    pub fn is_default(&self) -> bool {
        *self == LoadShape::default()
    }

    /// Whether the shape sets when requests are sent: a time window, a ramp, stages, turns, a
    /// think time or users. The early-stop limits, `--duration-cancel` and the history limits
    /// do not.
    pub fn sets_schedule(&self) -> bool {
        self.users.is_some()
            || self.duration_s.is_some()
            || self.ramp.is_some()
            || !self.stages.is_empty()
            || self.turns.is_some()
            || self.think_time_s.is_some()
            || self.curve.is_some()
    }

    /// The history limits, defaults filled in.
    pub fn history_limits(&self) -> HistoryLimits {
        HistoryLimits {
            bytes: (self.max_history_bytes).unwrap_or(MAX_HISTORY_BYTES),
            tokens: (self.max_history_tokens).unwrap_or(MAX_HISTORY_TOKENS),
        }
    }

    /// Requests per scheduled arrival: the turns of a conversation, else 1.
    pub fn turns(&self) -> u32 {
        self.turns.unwrap_or(1).max(1)
    }

    /// The time sends may be scheduled in, seconds (server time): the duration, or the
    /// stages' total, or a load shape's points' end; `None` for a run bounded by its request
    /// count.
    pub fn window_s(&self) -> Option<f64> {
        if self.stages.is_empty() {
            (self.duration_s).or_else(|| self.curve.as_ref().and_then(|c| c.end_s()))
        } else {
            Some(self.stages.iter().map(|s| s.seconds).sum())
        }
    }

    /// The stage holding send offset `t_s` and the time it ends; `None` past the last one.
    pub fn stage_at(&self, t_s: f64) -> Option<(usize, f64)> {
        let mut end = 0.0;
        for (i, s) in self.stages.iter().enumerate() {
            end += s.seconds;
            if t_s < end {
                return Some((i, end));
            }
        }
        None
    }

    /// The most requests any one second asks for: the highest rate the shape reaches, or
    /// `rate` (`--request-rate`; `None`: `inf`); `None` for an unbounded rate.
    pub fn peak_rate(&self, rate: Option<f64>) -> Option<f64> {
        if let Some(c) = &self.curve {
            return Some(c.peak());
        }
        if let Some(r) = &self.ramp {
            return Some(r.start_rps.max(r.end_rps));
        }
        if !self.stages.is_empty() {
            return self.stages.iter().map(|s| s.rate).reduce(f64::max);
        }
        rate
    }

    /// Checks the values and how they combine with `--request-rate` (`finite_rate`: it was
    /// given a number).
    pub fn validate(&self, finite_rate: bool) -> Result<(), ConfigError> {
        let bad = |flag: &str, why: String| Err(ConfigError::invalid(flag, why));
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if let Some(d) = self.duration_s {
            check_span(d, false).map_err(|why| ConfigError::limit("--duration", why))?;
        }
        if self.duration_cancel && self.window_s().is_none() {
            return bad(
                "--duration-cancel",
                "needs --duration or --stages (it says what happens at their end)".into(),
            );
        }
        if let Some(r) = &self.ramp {
            if finite_rate {
                return bad(
                    "--ramp-up-strategy",
                    "the ramp sets the rate: leave --request-rate out".into(),
                );
            }
            if !(r.start_rps.is_finite() && r.start_rps >= 0.0 && positive(r.end_rps)) {
                return bad(
                    "--ramp-up-start-rps",
                    "start must be 0 or more and end positive".into(),
                );
            }
            if r.start_rps > r.end_rps {
                return bad(
                    "--ramp-up-start-rps",
                    "must be at most --ramp-up-end-rps".into(),
                );
            }
            if r.strategy == RampStrategy::Exponential && r.start_rps <= 0.0 {
                return bad(
                    "--ramp-up-start-rps",
                    "an exponential ramp needs a positive start".into(),
                );
            }
            check_rate(r.end_rps).map_err(|why| ConfigError::limit("--ramp-up-end-rps", why))?;
            if r.start_rps > 0.0 {
                (check_rate(r.start_rps))
                    .map_err(|why| ConfigError::limit("--ramp-up-start-rps", why))?;
            }
        }
        if !self.stages.is_empty() {
            if finite_rate || self.ramp.is_some() || self.duration_s.is_some() {
                return bad(
                    "--stages",
                    "stages set the rate and the duration: leave --request-rate, --ramp-up-* and --duration out".into(),
                );
            }
            if self.stages.len() > 1000 {
                return bad("--stages", "at most 1000 stages".into());
            }
            for (i, stage) in self.stages.iter().enumerate() {
                if let Err((part, why)) = stage.check() {
                    return bad("--stages", format!("stage {}: {part} {why}", i + 1));
                }
            }
            let total: f64 = self.stages.iter().map(|s| s.seconds).sum();
            if total > MAX_WAIT_S {
                return bad(
                    "--stages",
                    format!("the stages last {total} s in all, longer than a week ({MAX_WAIT_S:.0} s), the longest time span"),
                );
            }
        }
        self.validate_curve(finite_rate)?;
        if let Some(f) = self.max_error_rate.filter(|f| !(*f > 0.0 && *f <= 1.0)) {
            return bad("--max-error-rate", format!("{f} is not in (0, 1]"));
        }
        if self.max_errors == Some(0) {
            return bad("--max-errors", "must be at least 1".into());
        }
        if let Some(t) = self.turns.filter(|t| !(1..=MAX_TURNS).contains(t)) {
            return bad(
                "--turns",
                format!("{t} is not in 1..={MAX_TURNS} (each turn resends the whole history)"),
            );
        }
        if self.turns() > 1 && self.window_s().is_some() {
            return bad(
                "--turns",
                "conversations run to their last turn: not with --duration or --stages".into(),
            );
        }
        if let Some(t) = self.think_time_s {
            check_span(t, true).map_err(|why| ConfigError::limit("--think-time", why))?;
        }
        let history = [
            (
                "--max-history-bytes",
                self.max_history_bytes,
                MAX_HISTORY_BYTES_FLAG,
            ),
            ("--max-history-tokens", self.max_history_tokens, MAX_TOKENS),
        ];
        for (flag, value, max) in history {
            if let Some(v) = value.filter(|v| !(1..=max).contains(v)) {
                return bad(flag, format!("{v} is not in 1..={max}"));
            }
        }
        Ok(())
    }
}

impl LoadShape {
    /// `--load-shape`: its own rules, and no other flag that sets the rate; a sine or bursts
    /// need `--duration` (a file's points end where the last one is).
    fn validate_curve(&self, finite_rate: bool) -> Result<(), ConfigError> {
        let Some(curve) = &self.curve else {
            return Ok(());
        };
        curve.check()?;
        let others = [
            ("--request-rate", finite_rate),
            ("--ramp-up-strategy", self.ramp.is_some()),
            ("--stages", !self.stages.is_empty()),
            ("--users", self.users.is_some()),
            ("--turns", self.turns() > 1),
        ];
        if let Some((flag, _)) = others.iter().find(|(_, given)| *given) {
            return Err(ConfigError::invalid(
                "--load-shape",
                format!("the shape sets the rate over time: leave {flag} out"),
            ));
        }
        if self.window_s().is_none() {
            return Err(ConfigError::invalid(
                "--load-shape",
                "a sine or bursts go on for ever: give --duration",
            ));
        }
        Ok(())
    }
}

/// What was in flight when a time-bounded run's window ended, and what became of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowEnd {
    pub in_flight: u64,
    /// Finished after the window's end (within the grace period).
    pub drained: u64,
    /// Cancelled: at once with `--duration-cancel`, else when the grace period ran out.
    pub cancelled: u64,
    /// `--duration-cancel` was given.
    pub cancel_mode: bool,
}

/// Checks a trace replay's settings: `shaped` when `--request-rate` or a load shape was
/// given (a trace brings its own schedule), then `(block size, speedup)`.
pub fn validate_trace(shaped: bool, (block, speedup): (u64, f64)) -> Result<(), ConfigError> {
    if shaped {
        return Err(ConfigError::invalid(
            "--dataset-name",
            "a trace is replayed on its own timestamps: leave --request-rate, --duration, --ramp-up-*, --stages, --turns and --think-time out (--trace-speedup scales it)",
        ));
    }
    if block == 0 || block > 1 << 20 {
        return Err(ConfigError::invalid(
            "--trace-block-size",
            format!("{block} is not in 1..=1048576 tokens"),
        ));
    }
    if !(speedup.is_finite() && speedup > 0.0) {
        return Err(ConfigError::invalid(
            "--trace-speedup",
            format!("{speedup} is not a positive number"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramps_follow_vllms_formulas() {
        let lin = Ramp {
            strategy: RampStrategy::Linear,
            start_rps: 1.0,
            end_rps: 21.0,
        };
        assert_eq!(
            (lin.rate(0.0), lin.rate(0.5), lin.rate(1.0)),
            (1.0, 11.0, 21.0)
        );
        let exp = Ramp {
            strategy: RampStrategy::Exponential,
            start_rps: 1.0,
            end_rps: 16.0,
        };
        assert!((exp.rate(0.5) - 4.0).abs() < 1e-12);
    }

    #[test]
    fn stages_parse_and_bad_ones_are_named() {
        assert_eq!(
            "5:30".parse::<Stage>(),
            Ok(Stage {
                rate: 5.0,
                seconds: 30.0
            })
        );
        for bad in ["5", "0:3", "x:3", "5:-1"] {
            let e = bad.parse::<Stage>().unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
        let shape = LoadShape {
            stages: vec!["5:5".parse().unwrap(), "20:5".parse().unwrap()],
            ..LoadShape::default()
        };
        assert_eq!(shape.window_s(), Some(10.0));
        assert_eq!(shape.stage_at(4.9), Some((0, 5.0)));
        assert_eq!(shape.stage_at(5.0), Some((1, 10.0)));
        assert_eq!(shape.stage_at(10.0), None);
        assert!(shape
            .validate(true)
            .unwrap_err()
            .to_string()
            .contains("leave --request-rate"));
        // Conversations run to their last turn: not inside a time window.
        let talk = |turns, duration_s| LoadShape {
            turns: Some(turns),
            duration_s,
            ..LoadShape::default()
        };
        assert_eq!(
            talk(0, None).validate(false).unwrap_err().option(),
            "--turns"
        );
        assert_eq!(
            talk(4, Some(5.0)).validate(false).unwrap_err().option(),
            "--turns"
        );
        assert!(talk(4, None).validate(true).is_ok());
    }

    #[test]
    fn every_time_span_is_at_most_a_week_and_every_rate_one_a_week() {
        let refused = |shape: LoadShape, flag: &str| {
            let err = shape.validate(false).unwrap_err();
            let (f, why) = (err.option(), err.to_string());
            assert_eq!(f, flag, "{why}");
            assert!(!why.contains('\n'), "{why}");
        };
        let d = |duration_s| LoadShape {
            duration_s: Some(duration_s),
            ..LoadShape::default()
        };
        refused(d(1e300), "--duration");
        refused(d(f64::INFINITY), "--duration");
        assert!(d(MAX_WAIT_S).validate(false).is_ok());
        // 1e300 s of think time became 0 (a saturating cast, then a wrapping add).
        for t in [1e300, f64::NAN, -1.0, MAX_WAIT_S + 1.0] {
            let think = LoadShape {
                turns: Some(2),
                think_time_s: Some(t),
                ..LoadShape::default()
            };
            refused(think, "--think-time");
        }
        assert!("5:1e300"
            .parse::<Stage>()
            .unwrap_err()
            .to_string()
            .contains("week"));
        assert!("1e-300:5"
            .parse::<Stage>()
            .unwrap_err()
            .to_string()
            .contains("week"));
        let stages = |v: &[&str]| LoadShape {
            stages: v.iter().map(|s| s.parse().unwrap()).collect(),
            ..LoadShape::default()
        };
        refused(stages(&["5:400000", "5:400000"]), "--stages");
        // A stage made by hand (a saved document), not parsed.
        let mut s = stages(&["5:10"]);
        s.stages[0].seconds = 1e300;
        refused(s, "--stages");
        let ramp = |start_rps, end_rps| LoadShape {
            ramp: Some(Ramp {
                strategy: RampStrategy::Linear,
                start_rps,
                end_rps,
            }),
            ..LoadShape::default()
        };
        refused(ramp(0.0, 1e-300), "--ramp-up-end-rps");
        refused(ramp(1e-300, 1.0), "--ramp-up-start-rps");
        assert!(ramp(0.0, 1.0).validate(false).is_ok());
        let talk = |turns| LoadShape {
            turns: Some(turns),
            ..LoadShape::default()
        };
        refused(talk(MAX_TURNS + 1), "--turns");
        assert!(talk(MAX_TURNS).validate(false).is_ok());
    }

    #[test]
    fn history_limits_have_defaults_and_bounds() {
        let shape = LoadShape::default();
        assert_eq!(
            shape.history_limits(),
            HistoryLimits {
                bytes: 16 << 20,
                tokens: 1_000_000
            }
        );
        // They are not a schedule: a trace may take them.
        let history = LoadShape {
            max_history_bytes: Some(1024),
            ..LoadShape::default()
        };
        assert!(!history.sets_schedule() && history.validate(false).is_ok());
        // Nor are the early-stop limits: a trace replay may stop early (it was refused with a
        // message naming neither flag).
        let early = LoadShape {
            max_errors: Some(3),
            max_error_rate: Some(0.5),
            ..LoadShape::default()
        };
        assert!(!early.sets_schedule());
        assert_eq!(history.history_limits().bytes, 1024);
        for (shape, flag) in [
            (
                LoadShape {
                    max_history_bytes: Some(0),
                    ..LoadShape::default()
                },
                "--max-history-bytes",
            ),
            (
                LoadShape {
                    max_history_tokens: Some(MAX_TOKENS + 1),
                    ..LoadShape::default()
                },
                "--max-history-tokens",
            ),
        ] {
            assert_eq!(shape.validate(false).unwrap_err().option(), flag);
        }
    }
}
