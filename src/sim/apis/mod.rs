//! The HTTP APIs the simulated server speaks, each in its real server's wire format:
//! OpenAI/vLLM completions and chat completions (`openai.rs`), Hugging Face TGI
//! (`/generate_stream`, `/generate`, `/info`; `tgi.rs`) and llama.cpp's native `/completion`
//! (`llama.rs`), Anthropic Messages and OpenAI Responses (`typed.rs`), plus the endpoints that generate nothing: `/v1/models`, `/health`,
//! `/sim/stats`, `/sim/info`, `/metrics`, `/tokenize` (`info.rs`).
//!
//! Each API has a lenient request struct (only the fields the simulator uses; unknown fields
//! are ignored), a handler, and a `Framer` (`stream/machine.rs`) that writes its stream events
//! from pieces formatted once per request. What every generation API shares (rejections, the
//! token budget, numbering and faults, admission to the engine, the answer on either source) is
//! `common.rs`. The timing, faults and statistics are `stream/`'s job.
//!
//! # Layout (each file imports only those listed before it)
//! `common.rs` → `openai.rs`, `tgi.rs`, `llama.rs`, `typed.rs`, `info.rs` (which do not import each other;
//! `ChatMessage`, used by chat and by `/tokenize`, is in `common.rs`). This file only
//! re-exports the handlers for `sim/mod.rs`'s route table.
//!
//! # What it must not touch
//! Nothing here may use servebench's client code, nor write to a socket (`http1.rs` does), nor
//! pace a stream (`stream/` does).
//!
//! # To add an API
//! 1. A new file here: a request struct (lenient serde: optional fields, unknown fields
//!    ignored) and a handler returning `common::Answer` that takes `State`, `Arrival` and the
//!    body, parses it with `parse_body`, resolves the token budget with `token_budget` and the
//!    request with `resolve` (numbering, fault draw, 500/429 answers, output length).
//! 2. A `Framer` for the API's wire format: `preamble` (bytes at `t0`), `content` (one content
//!    chunk) and `trailer` (terminators written with the last chunk), built from pre-formatted
//!    pieces (no JSON tree per chunk); answer with `stream_answer`, or `whole_answer` for a
//!    non-streamed variant.
//! 3. Re-export the handler below, add its route in `sim/mod.rs`'s `build_router`, and a test
//!    in `sim/tests.rs` that checks the exact event structure.

mod common;
mod info;
mod llama;
mod openai;
mod tgi;
mod typed;

pub(crate) use info::{health, metrics, models, not_found, sim_info, stats, tokenize};
pub(crate) use llama::llama_completion;
pub(crate) use openai::{chat_completions, completions};
pub(crate) use tgi::{tgi_generate, tgi_generate_stream, tgi_info};
pub(crate) use typed::{messages, responses};
