//! servebench: benchmark streaming LLM inference servers with one consistent set of metrics.
//!
//! The crate is a stack of layers; each imports only the layers below it (the rule is
//! checked by `tests/suite/layers.rs`, and written down in `docs/architecture.md`):
//!
//! ```text
//! commands                 one file per subcommand: call the library, print, choose the exit code
//! cli                      clap types; the plan (flags → one RunPlan, every rule between flags)
//! render                   text report, compare, plot, HTML: read documents, compute nothing
//! views                    open any saved or imported document into one view model
//! drive                    the session (every mode of a plan), run phases, arrival schedule,
//!                          monitor, scraper, sweep, stages, search
//! results                  statistics, the result document and everything it saves, merge
//! workload                 datasets and exact-length prompts → request specs
//! measure                  clock, kernel timestamps, SSE, HTTP client → request records
//! config                   pure values and the rules on them (RunConfig → ValidConfig)
//! tokenizer                the model's tokenizer (standalone: imports nothing of the crate)
//! sim                      the simulated server (standalone but for `measure::rxtime`)
//! ```
//!
//! Every figure is defined in `docs/metrics.md`.

pub mod cli;
pub mod commands;
pub mod config;
pub mod drive;
pub mod measure;
pub mod render;
pub mod results;
pub mod sim;
pub mod tokenizer;
pub mod views;
pub mod workload;
