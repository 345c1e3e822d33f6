//! `servebench run --adaptive` (the SLO controller inside one run) and `--stop-saturated`
//! (the saturation stop of sweeps, searches and the controller): their flags, the rules
//! between them and the session's mode, and the values they set (`config::adaptive`,
//! `RunPlan::stop_saturated`).

use clap::Args;

use super::error::PlanError;
use super::heading;

use crate::config::adaptive::{AdaptiveOn, AdaptiveSpec};
use crate::config::RunConfig;

/// `--stop-saturated on|off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Debug, Args)]
pub struct AdaptiveArgs {
    /// An SLO controller inside one run: the load rises in windows of --adaptive-step
    /// seconds while each window's goodput (its 95% interval) meets --adaptive-target, then
    /// bisects between the last pass and the first fail, and holds the highest passing load
    /// for --hold seconds to confirm it. Needs --goodput.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long)]
    pub adaptive: bool,
    /// What --adaptive varies: the request rate or the concurrency.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "rate|concurrency", value_parser = ["rate", "concurrency"])]
    pub adaptive_on: Option<String>,
    /// --adaptive: the fraction of a window's requests that must meet every --goodput SLO,
    /// in (0, 1). Default 0.9.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "FRACTION")]
    pub adaptive_target: Option<f64>,
    /// --adaptive: the first window's load (requests/s, or requests in flight). Default 1.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "LOAD")]
    pub adaptive_start: Option<f64>,
    /// --adaptive: each passing window's load times this is the next one's (above 1).
    /// Default 2.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "F")]
    pub adaptive_factor: Option<f64>,
    /// --adaptive: the highest load escalated to. Default 4096.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "LOAD")]
    pub adaptive_max: Option<f64>,
    /// --adaptive: a window's length, seconds (the simulator's time with --time-scale).
    /// Default 30.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "S")]
    pub adaptive_step: Option<f64>,
    /// --adaptive: bisection stops when the bracket is within this fraction of its upper
    /// end (rate), or one step (concurrency). Default 0.05.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "FRACTION")]
    pub adaptive_resolution: Option<f64>,
    /// --adaptive: seconds to hold the highest passing load to confirm it. Default: two
    /// windows.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "S")]
    pub hold: Option<f64>,
    /// Stop escalating once the server is saturated (throughput no longer rising while
    /// median TTFT or in flight grows, or errors rising); the steps above are saved as
    /// skipped. Default: off for sweeps and searches (every step runs, as before), on for
    /// --adaptive.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_enum)]
    pub stop_saturated: Option<OnOff>,
}

impl AdaptiveArgs {
    /// Refuses a controller flag without `--adaptive`, and `--adaptive` in a session of
    /// several runs (`single`: the session is one run; `search`: it is a search).
    pub fn check(&self, single: bool, search: bool) -> Result<(), PlanError> {
        if !self.adaptive {
            let given = [
                ("--adaptive-on", self.adaptive_on.is_some()),
                ("--adaptive-target", self.adaptive_target.is_some()),
                ("--adaptive-start", self.adaptive_start.is_some()),
                ("--adaptive-factor", self.adaptive_factor.is_some()),
                ("--adaptive-max", self.adaptive_max.is_some()),
                ("--adaptive-step", self.adaptive_step.is_some()),
                ("--adaptive-resolution", self.adaptive_resolution.is_some()),
                ("--hold", self.hold.is_some()),
            ];
            if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
                return Err(PlanError::AdaptiveFlagAlone(flag));
            }
            return Ok(());
        }
        if search || !single {
            return Err(PlanError::AdaptiveNotARun);
        }
        Ok(())
    }

    /// Whether sweeps and searches stop at saturation (off unless asked).
    pub fn stop_saturated(&self) -> bool {
        self.stop_saturated == Some(OnOff::On)
    }

    /// `cfg` with the controller's settings (checked by `RunConfig::validate`).
    pub fn apply(&self, mut cfg: RunConfig) -> RunConfig {
        if !self.adaptive {
            return cfg;
        }
        let on = match self.adaptive_on.as_deref() {
            Some("concurrency") => AdaptiveOn::Concurrency,
            _ => AdaptiveOn::Rate,
        };
        let step_s = self.adaptive_step.unwrap_or(30.0);
        cfg.load.adaptive = Some(AdaptiveSpec {
            on,
            target: self.adaptive_target.unwrap_or(0.9),
            start: self.adaptive_start.unwrap_or(1.0),
            factor: self.adaptive_factor.unwrap_or(2.0),
            max: self.adaptive_max.unwrap_or(4096.0),
            step_s,
            resolution: self.adaptive_resolution.unwrap_or(0.05),
            hold_s: self.hold.unwrap_or(2.0 * step_s),
            stop_saturated: self.stop_saturated != Some(OnOff::Off),
        });
        cfg
    }
}
