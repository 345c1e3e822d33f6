//! The validated, serializable run configuration, embedded in every result document.
//!
//! `cli` turns flags into a [`RunConfig`] (`run.rs`) and its plan makes it a
//! [`valid::ValidConfig`], the only way past `RunConfig::validate` (`rules.rs`), which holds
//! every rule on the resolved values (rules between flags that never reach the config, such as
//! a sweep with `--shard`, are the plan's: `cli::plan`). Nothing here knows clap but one
//! `ValueEnum` derive (`RampStrategy`), so `--ramp-up-strategy` lists its values
//! (`--dataset-name`'s are `cli::dataset`'s). Everything a result needs to be reproduced or
//! compared is here; secrets (API keys, header values) are not. Errors: [`error::ConfigError`]
//! (a rule broken), [`error::ValueError`] (text that is not a value), `limits::LimitError` (a
//! bound passed).
//!
//! This file only declares the modules and re-exports their common types; no module here
//! takes anything from it (each names the file it uses, `super::load::LoadSpec`), so no two
//! files import each other. To add an option: add the field to [`RunConfig`] with
//! `#[serde(default)]` (old result files must still load), validate it in `rules.rs`, and set
//! it in `cli`.

pub use self::backend::MAX_INPUTS_PER_REQUEST;
pub use self::backend::{
    AnswerShape, BackendInfo, BackendKind, MediaKinds, ServerKind, StructuredKinds, UnknownBackend,
};
pub use self::limits::{limit, MAX_PROMPTS, MAX_TOKENS, MAX_WAIT_S};
pub use self::load::{LoadSpec, RequestRate};
pub use self::metric::Metric;
pub use self::run::RunConfig;
pub use self::scrape::ScrapeSpec;
pub use self::slo::{JobSlo, Slo, SloMetric};
pub use self::workload::{Dataset, WorkloadSpec, DEFAULT_INPUT_LEN};

pub mod account_figure;
pub mod adaptive;
mod adaptive_rules;
pub mod audio;
pub mod autoscale;
mod backend;
pub mod buckets;
mod defaults;
pub mod error;
pub mod figure;
mod figure_label;
pub mod guided;
pub mod hooks;
pub mod job_figure;
pub mod limits;
pub mod load;
pub mod lora;
pub mod media;
pub mod metric;
pub mod mix;
pub mod mix_spec;
pub mod routing;
mod rules;
pub mod run;
pub mod run_figure;
pub mod scrape;
pub mod search;
pub mod shape;
pub mod shard;
pub mod slo;
pub mod source;
pub mod structured;
pub mod sweep;
pub mod tags;
pub mod threads;
pub mod unit;
pub mod url;
pub mod users;
pub mod valid;
pub mod workload;

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
