//! `servebench history`'s flags: many saved results of one configuration over time
//! (`views::history`), printed by `render::history`.

use std::path::PathBuf;

use clap::Args;

use super::parse::{parse_gate, Gate};
use crate::config::figure::FigureKey;
use crate::render::print::Format;

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Directories of saved results (read three levels deep), or result files.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The configuration: `label` (the default: the run's --label, else its server and model)
    /// or any of model, backend, dataset and --metadata's keys, each a column to group by;
    /// KEY=VALUE keeps only the results that have it (e.g. --key gpu=h100).
    #[arg(long, num_args = 1.., value_name = "KEY[=VALUE]")]
    pub key: Vec<String>,
    /// The newest run is judged against each of the K runs before it.
    #[arg(long, value_name = "K", default_value_t = 5,
          value_parser = clap::value_parser!(u16).range(1..=100))]
    pub window: u16,
    /// text, markdown, csv (a row per run and figure), json or html (a chart per figure).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Only these figures (vLLM key names, comma-separated); default: the headline figures.
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<FigureKey>,
    /// Exit 1 when the newest run is significantly worse than each of the K before it on
    /// METRIC by more than PCT percent (e.g. p99_ttft_ms:10, output_throughput:5); repeatable.
    /// A run without an interval for METRIC is an error (exit 2), never a pass.
    #[arg(long, value_parser = parse_gate)]
    pub fail_if_worse: Vec<Gate>,
}
