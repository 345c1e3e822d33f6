//! `--label`, `--metadata`, `--cost-per-hour`, `--gpus`: what the user says about a run
//! (`config::tags`).

use clap::Args;

use super::heading;

use super::error::PlanError;
use crate::config::tags::{parse_pair, Tags};

#[derive(Debug, Args)]
pub struct TagArgs {
    /// The run's name in the report, compare, plot and HTML (default: the file's name).
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_name = "NAME")]
    pub label: Option<String>,
    /// A fact about the run, KEY=VALUE (repeatable, each key once; not a key of the result
    /// such as label or completed), e.g. --metadata gpu=H100 --metadata tp=8.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_name = "KEY=VALUE", value_parser = parse_pair)]
    pub metadata: Vec<(String, String)>,
    /// What the server costs, USD per hour (a GPU-hour's price times the GPUs): adds $ per
    /// million output and total tokens to the report, every step, search and compare.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_name = "USD")]
    pub cost_per_hour: Option<f64>,
    /// How many accelerators (GPUs) serve the endpoint: output tokens/s per GPU in plot's
    /// Pareto front, compare and plan (default: unknown, figures per server).
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_name = "N")]
    pub gpus: Option<u32>,
}

impl TagArgs {
    /// A `--metadata` key given twice is refused (a map would keep only the last).
    pub fn check(&self) -> Result<(), PlanError> {
        for (i, (k, _)) in self.metadata.iter().enumerate() {
            if self.metadata[..i].iter().any(|(seen, _)| seen == k) {
                return Err(PlanError::MetadataTwice(k.clone()));
            }
        }
        Ok(())
    }

    pub fn tags(&self) -> Tags {
        Tags {
            label: self.label.clone(),
            metadata: self.metadata.iter().cloned().collect(),
            cost_per_hour: self.cost_per_hour,
            gpus: self.gpus,
        }
    }
}
