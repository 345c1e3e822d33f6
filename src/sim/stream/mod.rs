//! The streaming side of the simulated server: turns a [`Framer`] (one per wire format) and a
//! source of tokens into a streamed response body, injects in-stream faults and accounts for
//! lateness. Two sources:
//! - exact mode: a [`Plan`], whose every content chunk is handed over at its exact absolute
//!   deadline ([`sse_response`], [`non_stream_response`]; `exact.rs`);
//! - engine mode: the request's channel from the engine task (`sim/engine.rs`); chunks are
//!   written as soon as the engine has produced their tokens ([`engine_sse_response`],
//!   [`engine_non_stream_response`]; `engine.rs`).
//!
//! Both sources drive one state machine (`machine.rs`: `Machine`, with a `Pace` per source):
//! chunk boundaries, the in-stream fault and the trailer are written once. A machine never
//! blocks; it is driven either as an async response body, or (exact mode with the real clock,
//! under `http1.rs`) by a scheduler thread (`sched.rs`), which takes it out of the response
//! through the [`Handoff`] extension (`body.rs`).
//!
//! # Layout (each file imports only those listed before it)
//! `machine.rs` (the state machine, `Framer`, `Pace`, `Drive`) → `body.rs` (responses, the
//! handoff, non-streamed answers) → `exact.rs` and `engine.rs` (the two paces). This file
//! only re-exports.
//!
//! # What it must not touch
//! It knows nothing about any API's JSON; the framers in `apis/` do. It must not use any of
//! servebench's client code, nor `apis/`, `http1.rs` or `sched.rs` (they use it).
//!
//! # Adding one more
//! To support a new wire format, implement [`Framer`]; the schedule, faults and statistics come
//! for free. A new source of tokens is a `Pace` in a file of its own beside `exact.rs`.

mod body;
mod engine;
mod exact;
mod machine;

pub(crate) use crate::sim::timings::ServerTimes;
pub(crate) use body::{json_response, Handoff};
pub(crate) use engine::{engine_non_stream_response, engine_sse_response, EngineJob};
pub(crate) use exact::{non_stream_response, sse_response, Active, Plan};
pub(crate) use machine::{Drive, Framer, Step, Wait};
