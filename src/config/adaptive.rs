//! `run --adaptive`: the SLO controller's settings (pure values) and their rules against the
//! rest of the run. The controller itself is `drive::adaptive`; its figures are
//! `results::adaptive`; what each verdict means is docs/metrics.md, "The SLO controller".

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// What the controller varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdaptiveOn {
    /// The request rate (Poisson, or gamma with `--burstiness`), requests per second.
    Rate,
    /// The requests in flight (a closed loop).
    Concurrency,
}

impl AdaptiveOn {
    pub fn as_str(self) -> &'static str {
        match self {
            AdaptiveOn::Rate => "rate",
            AdaptiveOn::Concurrency => "concurrency",
        }
    }

    /// Whether its loads are counts (concurrency): rounded, bisected to one step.
    pub fn counts(self) -> bool {
        self == AdaptiveOn::Concurrency
    }
}

/// The most windows one controller runs (escalation, bisection, extensions, holds): a bound
/// on a run that never converges.
pub const MAX_WINDOWS: usize = 200;

/// The SLO controller's settings (docs/metrics.md, "The SLO controller").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveSpec {
    pub on: AdaptiveOn,
    /// The fraction of a window's requests that must be good (every `--goodput` SLO met).
    pub target: f64,
    /// The first window's load.
    pub start: f64,
    /// Each passing escalation window's load times this is the next one's.
    pub factor: f64,
    /// The highest load escalated to.
    pub max: f64,
    /// A window's length, seconds (the simulator's time with `--time-scale`).
    pub step_s: f64,
    /// Bisection stops when (first fail − last pass) / first fail ≤ this (rate), or at one
    /// step (concurrency).
    pub resolution: f64,
    /// The confirming hold at the highest passing load, seconds.
    pub hold_s: f64,
    /// Whether the saturation detector stops escalation (`--stop-saturated`).
    pub stop_saturated: bool,
}

impl AdaptiveSpec {
    /// Its own values, each named by its flag.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |flag: &str, why: &str| Err(ConfigError::invalid(flag, why));
        let open01 = |v: f64| v.is_finite() && v > 0.0 && v < 1.0;
        if !open01(self.target) {
            return bad("--adaptive-target", "must lie strictly between 0 and 1");
        }
        if !(self.start.is_finite() && self.start > 0.0) {
            return bad("--adaptive-start", "must be a positive number");
        }
        if self.on.counts() && self.start.fract() != 0.0 {
            return bad("--adaptive-start", "a concurrency is a whole number");
        }
        if !(self.factor.is_finite() && self.factor > 1.0 && self.factor <= 100.0) {
            return bad("--adaptive-factor", "must be above 1 (and at most 100)");
        }
        if !(self.max.is_finite() && self.max >= self.start && self.max <= 1e6) {
            return bad(
                "--adaptive-max",
                "must be at least --adaptive-start (and at most 1000000)",
            );
        }
        let span = |v: f64| v.is_finite() && v > 0.0 && v <= super::limits::MAX_WAIT_S;
        if !span(self.step_s) {
            return bad("--adaptive-step", "must be a positive number of seconds");
        }
        if !open01(self.resolution) {
            return bad("--adaptive-resolution", "must lie strictly between 0 and 1");
        }
        if !span(self.hold_s) {
            return bad("--hold", "must be a positive number of seconds");
        }
        Ok(())
    }
}
