//! What a run saves and what it computes from its records: statistics (pure and mergeable),
//! the versioned result document and every type it saves, the exact merge of shards, and the
//! statistics of comparing two runs (`compare`), and an agentic run's figures over its jobs
//! (`job`: one job's, `jobs`: the run's), and the Pareto front of load steps (`pareto`).
//!
//! Imports `config`, `measure` (the records) and nothing above. Nothing here sends a request
//! or prints.

pub mod adaptive;
pub mod autoscale;
pub mod capacity;
pub mod capacity_front;
pub mod compare;
pub mod document;
pub mod endpoints;
pub mod error;
pub mod hooks;
pub mod job;
pub mod jobs;
pub mod join;
pub mod merge;
pub mod otlp_export;
pub mod pareto;
pub mod read;
pub mod records_parquet;
pub mod rejudge;
pub mod rejudged;
pub mod repeat;
pub mod saturated;
pub mod search;
pub mod server_metrics;
pub mod shard;
pub mod slices;
pub mod stats;
pub mod sweep;
pub mod trace_stats;
pub mod validity;
pub mod vllm_keys;
pub mod wilson;
