//! servebench: benchmark streaming LLM inference servers with one consistent set of metrics.
//!
//! Data flows one way: `cli` → `config` → `workload` + `load` → `client` (+ `sse`) →
//! `record` → `stats` → `results` → `report`; `run` glues one benchmark run together.
//! `view` reads results, sweeps and `import`ed files of other tools into one shape that
//! `compare`, `plot` and `html` render.
//! The simulated server in `sim` shares no code with the client side, so it is an independent
//! check of the parser and the timing. Every figure is defined in `docs/metrics.md`.

pub mod cli;
pub mod client;
pub mod clock;
pub mod compare;
pub mod config;
pub mod dataset;
pub mod error;
pub mod html;
pub mod import;
pub mod load;
pub mod merge;
pub mod monitor;
pub mod plot;
pub mod progress;
pub mod record;
pub mod report;
pub mod results;
pub mod run;
pub mod rxtime;
pub mod scrape;
pub mod search;
pub mod shard;
pub mod sim;
pub mod sse;
pub mod stats;
pub mod sweep;
pub mod tokenizer;
pub mod view;
pub mod workload;
