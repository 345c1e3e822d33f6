//! The HTTP APIs the simulated server speaks, each in its real server's wire format, one file
//! per API named as the client's (`measure/client/apis/`): OpenAI/vLLM completions
//! (`completions.rs`) and chat completions (`chat.rs`), Hugging Face TGI (`/generate_stream`,
//! `/generate`, `/info`; `tgi.rs`), llama.cpp's native `/completion` (`llamacpp.rs`),
//! Anthropic Messages (`anthropic.rs`), OpenAI Responses (`responses.rs`), OpenAI embeddings
//! (`embeddings.rs`, a whole answer per request, prefill only), rerank in vLLM's and TEI's
//! shapes (`rerank.rs`, the same), OpenAI transcriptions (`/v1/audio/transcriptions`, a
//! multipart form read by `form.rs`; `audio.rs`), plus the endpoints that generate nothing:
//! `/v1/models`, `/health`, `/sim/stats`, `/sim/info`, `/metrics`, `/tokenize`, `/sim/otlp`
//! (`info.rs`), and the control endpoints `/reset_prefix_cache`, `/flush_cache`,
//! `/start_profile`, `/stop_profile`, `/sim/control` (`control.rs`). Every route takes a request's `x-request-id` and returns it
//! (`trace::with_request_id`).
//!
//! Each API has a lenient request struct (only the fields the simulator uses; unknown fields
//! are ignored), a handler, and a `Framer` (`stream/machine.rs`) that writes its stream events
//! from pieces formatted once per request. What every generation API shares (the token budget,
//! numbering and faults, admission to the engine, the answer on either source) is `common.rs`;
//! answering without generating and reading a body, `reject.rs`; request ids and spans,
//! `trace.rs`. The timing, faults and statistics are `stream/`'s job.
//!
//! # Layout (each file imports only files on a lower line)
//! 0. `reject.rs`, `trace.rs`, `session.rs` (a router's session token, `--session-header`), `media.rs` (a chat request's images, video and audio: their
//!    tokens, or their refusal), `form.rs` (a multipart body's parts), `events.rs` (the typed
//!    SSE events of Messages and Responses);
//! 1. `common.rs` (the request life cycle; `ChatMessage`, used by chat, Messages and
//!    `/tokenize`);
//! 2. `openai.rs` (what completions and chat share: usage, `stream_options`, guided text);
//! 3. `completions.rs`, `chat.rs`, `tgi.rs`, `llamacpp.rs`, `anthropic.rs`, `responses.rs`,
//!    `embeddings.rs`, `rerank.rs`, `info.rs`, `audio.rs`, `control.rs`, which do not import
//!    each other;
//! 4. this file, the server's route table ([`routes`]).
//!
//! A piece two API files both need moves down to a leaf file of its own (as `events.rs` did
//! for Messages and Responses, and `openai.rs` for completions and chat).
//!
//! # What it must not touch
//! Nothing here may use servebench's client code, nor write to a socket (`http1.rs` does), nor
//! pace a stream (`stream/` does).
//!
//! # To add an API
//! 1. A new file here, named as the client's file for the API: a request struct (lenient
//!    serde: optional fields, unknown fields ignored) and a handler returning
//!    `reject::Answer` that takes `State`, `Arrival` and the body, parses it with
//!    `parse_large` (off the serving threads when large), resolves the token budget with
//!    `token_budget` and the request with `resolve` (numbering, fault draw, 500/429 answers,
//!    output length).
//! 2. A streamed answer: a `Framer` for the API's wire format: `preamble` (bytes at `t0`),
//!    `content` (one content chunk) and `trailer` (terminators written with the last chunk),
//!    built from pre-formatted pieces (no JSON tree per chunk); answer with `stream_answer`.
//!    A whole answer (a non-streamed variant, embeddings): `whole_answer`, with the body
//!    written once the generation (or the prefill) is done.
//! 3. Its `mod` line and its route in [`routes`] below, its line in `tests/suite/sim_layers.rs`'s
//!    table, and a test in `sim/tests/wire.rs` that checks the exact event structure.

mod anthropic;
mod audio;
mod chat;
mod common;
mod completions;
mod control;
mod embeddings;
mod events;
mod form;
mod info;
mod llamacpp;
mod media;
mod openai;
mod reject;
mod replicas;
mod rerank;
mod responses;
pub(crate) mod session;
mod tgi;
mod trace;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;

use crate::sim::state::Shared;

/// Every route of the simulated server (the caller adds the body limit and the state).
pub(crate) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/v1/completions", post(completions::completions))
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/generate_stream", post(tgi::tgi_generate_stream))
        .route("/generate", post(tgi::tgi_generate))
        .route("/info", get(tgi::tgi_info))
        .route("/completion", post(llamacpp::llama_completion))
        .route("/v1/messages", post(anthropic::messages))
        .route("/v1/responses", post(responses::responses))
        .route("/v1/embeddings", post(embeddings::embeddings))
        .route("/v1/rerank", post(rerank::rerank_v1))
        .route("/v2/rerank", post(rerank::rerank_v1))
        .route("/rerank", post(rerank::rerank_any))
        .route("/v1/audio/transcriptions", post(audio::transcriptions))
        .route("/v1/models", get(info::models))
        .route("/health", get(info::health))
        .route("/sim/stats", get(info::stats))
        .route("/sim/info", get(info::sim_info))
        .route("/metrics", get(info::metrics))
        .route("/api/v1/query", get(replicas::query))
        .route("/sim/replicas", get(replicas::log))
        .route("/tokenize", post(info::tokenize))
        .route("/sim/otlp", get(info::otlp))
        .route("/reset_prefix_cache", post(control::reset_prefix_cache))
        .route(
            "/flush_cache",
            post(control::flush_cache).get(control::flush_cache),
        )
        .route("/start_profile", post(control::start_profile))
        .route("/stop_profile", post(control::stop_profile))
        .route("/sim/control", get(control::control_log))
        .route_layer(axum::middleware::from_fn(trace::with_request_id))
        .fallback(info::not_found)
}
