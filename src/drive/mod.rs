//! Driving a server: run phases, the arrival schedule, the start-at barrier and clock probe,
//! the client-side validity monitor, the metrics scraper, progress, sweeps and SLO search.
//!
//! Imports every layer below (`config`, `measure`, `workload`, `results`); nothing here
//! renders a report.

pub mod dashboard;
pub mod early_stop;
pub mod error;
pub mod history;
pub mod live;
pub mod load;
pub mod monitor;
pub mod progress;
pub mod run;
pub mod scrape;
pub mod search;
pub mod shard;
pub mod stages;
pub mod sweep;
