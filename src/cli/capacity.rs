//! `servebench plan`'s flags: the sweeps and searches (one per server configuration), the
//! SLOs they must have been measured under, the good fraction a sustained load needs, how the
//! hour's cost is split between input and output tokens, and the demand to size replicas for
//! (`results::capacity::CapacitySpec`). Each number's own range is checked as it is parsed, in one
//! line naming the flag.

use std::path::PathBuf;

use clap::Args;

use super::error::{FlagError, MAX_DEMAND};
use crate::config::Slo;
use crate::render::print::Format;
use crate::results::capacity::{CapacitySpec, Demand};

#[derive(Debug, Args)]
pub struct CapacityArgs {
    /// Saved sweeps (.sweep.json) or searches (.search.json), one per server configuration,
    /// each run with --cost-per-hour and the same --goodput SLOs, model and dataset.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The SLOs, e.g. `--goodput ttft:500 tpot:50`: every input must have been run with these.
    #[arg(long, num_args = 1.., required = true)]
    pub goodput: Vec<Slo>,
    /// Fraction of requests that must meet every SLO for a load to be sustained.
    #[arg(long, default_value_t = 0.9, value_parser = parse_target)]
    pub target: f64,
    /// Part of the hour's cost charged to input (prefill) tokens, 0 to 1: a disaggregated
    /// deployment's prefill pool's price ÷ the whole price. Default: each load's mean TTFT ÷
    /// mean E2EL.
    #[arg(long, value_name = "FRACTION", value_parser = parse_share)]
    pub input_share: Option<f64>,
    /// Size each configuration's replicas for this many requests per second.
    #[arg(long, value_name = "REQ_PER_S", value_parser = parse_demand,
          conflicts_with = "demand_output_throughput")]
    pub demand_request_rate: Option<f64>,
    /// Size each configuration's replicas for this many output tokens per second.
    #[arg(long, value_name = "TOK_PER_S", value_parser = parse_demand)]
    pub demand_output_throughput: Option<f64>,
    /// text, csv (a row per step, its configuration's answer on each) or html (the tables and
    /// the chart in one page).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Also write the chart of $ per 1M output tokens against load, with the SLO frontier, as
    /// SVG to this file.
    #[arg(long, value_name = "OUT.svg")]
    pub chart: Option<PathBuf>,
}

impl CapacityArgs {
    /// What the plan is asked.
    pub fn spec(&self) -> CapacitySpec {
        let demand = (self.demand_request_rate.map(Demand::RequestRate))
            .or(self.demand_output_throughput.map(Demand::OutputThroughput));
        CapacitySpec {
            slos: self.goodput.clone(),
            target: self.target,
            input_share: self.input_share,
            demand,
        }
    }
}

fn number(s: &str) -> Result<f64, FlagError> {
    (s.parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .ok_or_else(|| FlagError::Number(s.to_string()))
}

fn parse_target(s: &str) -> Result<f64, FlagError> {
    let v = number(s)?;
    (v > 0.0 && v <= 1.0)
        .then_some(v)
        .ok_or(FlagError::Target(v))
}

fn parse_share(s: &str) -> Result<f64, FlagError> {
    let v = number(s)?;
    (0.0..=1.0)
        .contains(&v)
        .then_some(v)
        .ok_or(FlagError::Share(v))
}

fn parse_demand(s: &str) -> Result<f64, FlagError> {
    let v = number(s)?;
    if v > MAX_DEMAND {
        return Err(FlagError::AbsurdDemand(v));
    }
    (v > 0.0).then_some(v).ok_or(FlagError::Demand(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_and_rates_are_checked() {
        assert_eq!(parse_target("0.95"), Ok(0.95));
        assert!(parse_target("0").is_err() && parse_target("1.5").is_err());
        assert_eq!(parse_share("0"), Ok(0.0));
        assert!(parse_share("-0.1")
            .unwrap_err()
            .to_string()
            .contains("[0, 1]"));
        assert!(parse_demand("inf")
            .unwrap_err()
            .to_string()
            .contains("not a number"));
        assert!(parse_demand("0").is_err());
        // A demand past any service's is refused, not priced as u64::MAX replicas.
        assert_eq!(parse_demand("1e9"), Ok(1e9));
        let absurd = parse_demand("1e308").unwrap_err().to_string();
        assert_eq!(
            absurd,
            "1e308 per second is more than any service's demand (at most 1e9)"
        );
    }
}
