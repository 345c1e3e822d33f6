//! Driving a server: the session (`session.rs`) that runs a plan (`plan.rs`: the mode, the
//! resolved text, the files) in every mode, run phases, the arrival schedule, the start-at
//! barrier and clock probe, the client-side validity monitor, the metrics scraper, progress
//! and the live dashboard, sweeps, stages and SLO search.
//!
//! Imports every layer below (`config`, `measure`, `workload`, `results`); nothing here
//! renders a report. Only progress and the dashboard draw (on stderr, while a run lasts).

pub mod dashboard;
pub mod early_stop;
pub mod error;
pub mod history;
pub mod lanes;
pub mod live;
pub mod load;
pub mod mix;
pub mod mix_alone;
pub mod monitor;
pub mod otel;
pub mod plan;
mod preflight;
pub mod progress;
pub mod run;
pub mod scrape;
pub mod search;
pub mod session;
pub mod shard;
pub mod stages;
pub mod sweep;
