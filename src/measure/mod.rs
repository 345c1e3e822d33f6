//! Measuring one request: the clock, kernel receive timestamps, the SSE parser, the HTTP
//! client and its backends, and the raw per-request record they produce.
//!
//! Imports only `config` and `tokenizer` (the client counts output tokens with the model's
//! tokenizer). Nothing here decides when a request is sent (`drive`) or what a run's figures
//! are (`results`).

pub mod ahead;
pub mod answer_regex;
pub mod answer_schema;
pub mod checker_pool;
pub mod client;
pub mod clock;
pub mod count_pool;
pub mod error;
pub mod fds;
pub mod job;
pub mod lines;
pub mod media_made;
pub mod outcome;
pub mod output_check;
pub mod prom;
pub mod record;
pub mod rxtime;
pub mod sse;
pub mod timer;
pub mod traceid;
pub mod workers;
