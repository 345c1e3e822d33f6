//! Driving a server: the session (`session.rs`) that runs a plan (`plan.rs`: the mode, the
//! resolved text, the files) in every mode, run phases, the arrival schedule, the start-at
//! barrier and clock probe, the client-side validity monitor, the metrics scraper, sweeps,
//! stages and SLO search, each told to the session's one observer (`observer.rs`). What a
//! run shows on the terminal while it lasts is `ui/`.
//!
//! Imports every layer below (`config`, `measure`, `workload`, `results`). What a run sends
//! is built by `workload` (`workload::requests`, in one call); drive schedules it, sends it
//! and records what came back. Nothing here renders a report; only `ui/` draws (on stderr,
//! while a run lasts).

pub mod adaptive;
pub mod arrivals;
pub mod early_stop;
pub mod error;
mod facts;
pub mod history;
pub mod hooks;
mod job;
pub mod lanes;
pub mod load;
pub mod mix;
pub mod mix_alone;
pub mod monitor;
pub mod observer;
pub mod otel;
pub mod plan;
mod pool;
mod preflight;
pub mod records;
pub mod replicas;
pub mod run;
pub mod scrape;
pub mod search;
pub mod session;
pub mod shard;
pub mod stages;
pub mod sweep;
mod talk;
pub mod throttle;
pub mod ui;
pub mod users;
mod warm;
