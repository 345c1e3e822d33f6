//! The built-in simulated LLM server: exact mode and engine presets.
//!
//! A real HTTP server (its own HTTP/1.1 layer, connections in `http1.rs` and the wire format
//! in `wire.rs`, over axum's router, on a real socket) that streams the way vLLM, Hugging
//! Face TGI and llama.cpp do. Two modes, picked by [`SimConfig::engine`] (usually via a [`Preset`]):
//! - **exact mode** (`Preset::Exact`, [`SimConfig::default`]): a deterministic and exactly
//!   known schedule, so it can serve as ground truth when measuring the benchmark client's
//!   accuracy (the tests in `tests/suite/run_sim.rs`; "The schedule" below);
//! - **engine mode** (every other preset): a model of a continuous-batching inference engine
//!   (`engine.rs`) that saturates, queues, preempts and stalls like vLLM, TGI or llama.cpp
//!   ("The engine presets" below).
//!
//! # What it owns
//! - [`SimConfig`] / [`FaultConfig`]: the schedule, the simulated model and the fault rates
//!   (a setting that breaks a rule is a [`SimConfigError`] naming it);
//!   [`HttpLimits`]: what the HTTP layer bounds against slow or hostile clients (connections,
//!   head and body time, head, body, chunk extension and trailer bytes), with defaults.
//! - [`router`] / [`spawn`] / [`SimServer`]: the HTTP surface and its lifecycle; `http1.rs`
//!   serves it, and `sched.rs`'s threads (one per runtime worker) write every exact-mode stream.
//! - [`SimStats`]: what the server did, including whether it kept its own schedule.
//!
//! # What it must not touch
//! Nothing in here may use servebench's client side (the SSE parser, the HTTP client, the
//! records or the metrics). The simulator is an independent check of that code, so it writes
//! its wire formats itself with its own types and `serde_json` only.
//!
//! # The schedule
//! Let `t0` be the request's arrival: when the kernel received the packet that completed it
//! (`SO_TIMESTAMPNS`, `rxtime.rs`), so a request that waited in the simulator's intake
//! (accept, read, parse, route: one thread for thousands of connections) keeps its schedule,
//! or has its first chunk counted late if that instant has passed. Without a stamp (not
//! Linux; the kernel's first packets after stamping was turned on; a paused tokio clock in
//! tests, where `precise_timing` is off) `t0` is when the server finished reading the
//! request. The delay between the two is counted in [`SimStats::late_intakes`]. `N` is the
//! request's token budget (`max_tokens`, also `max_completion_tokens` for chat; `parameters.max_new_tokens`
//! for TGI; `n_predict` for llama.cpp; otherwise [`SimConfig::output_tokens`]). The simulator
//! always produces exactly `N` tokens, as if `ignore_eos` were set. With
//! `k = tokens_per_chunk`, content chunk `c` carries tokens `[c*k, min((c+1)*k, N))` and is
//! handed to the body at exactly `t0 + ttft + c*itl` (absolute deadlines via
//! `tokio::time::sleep_until`, so no drift accumulates). Hence the truth for every request is
//! TTFT = `ttft`, gaps between content chunks = `itl`, and E2E = `ttft + (ceil(N/k)-1)*itl`.
//! With speculative decoding ([`SimConfig::spec`], `spec.rs`) chunk 0 carries one token and
//! chunk `c ≥ 1` one step's accepted draft tokens and one more, on the same deadlines: E2E =
//! `ttft + (chunks-1)*itl` with `chunks` from the acceptance pattern.
//! With LoRA adapters configured ([`LoraConfig`]), a request whose `model` is an adapter that
//! is not resident (or still loading) first waits for its load, so its TTFT is `ttft` plus
//! that wait; a `model` the server does not serve is answered 404.
//! Everything else (finish chunk, usage chunk, `[DONE]`, llama.cpp's stop event) goes out in
//! the same write as the last content chunk. The chat role-only chunk goes out at once, on
//! purpose: a client that counts it as a token reports a wrong TTFT.
//!
//! Token text is deterministic from (seed, request number): each token is a word with a
//! leading space from a fixed list of 64 common English words, token id = list index + 100.
//! Prompt token counts (`usage.prompt_tokens`, TGI `input_length`, llama.cpp
//! `tokens_evaluated`) are an approximation: the number of whitespace-separated words in the
//! prompt (for chat, over all message contents; a prompt given as token ids counts its ids).
//!
//! Requests that reach a generation endpoint with a valid body are numbered in arrival order
//! from 0; the number picks the fault (see [`FaultConfig`]) and the token text, and appears in
//! the response id (`cmpl-<n>`, `chatcmpl-<n>`).
//!
//! # The engine presets
//! One engine task owns every request's state and runs the step loop (see `engine.rs` for the
//! scheduling rules, `cost.rs` for the parameters and the step's cost). Step time =
//! `step_overhead + prefill_per_token·P + decode_per_seq·D +
//! prefill_attention_per_pair·(new token × earlier context token pairs) +
//! decode_attention_per_token·(context held by the decoding sequences)`. A request reaches the
//! engine `frontend_latency` after it arrives (HTTP, tokenization). Tokens are written to the
//! stream when the step that produced them ends; a request answers headers once it is first
//! scheduled, or HTTP 503 when it waited longer than `queue_timeout`.
//!
//! | preset | scheduler | max_num_seqs | step budget | KV tokens | overhead | prefill/token | decode/seq | attention pair / ctx token | front-end | mean output |
//! |---|---|---|---|---|---|---|---|---|---|---|
//! | `tgi-llama-405b` | prefill-first (20 steps, ratio 1.2) | 768 | 45,000 | 300,000 | 48 ms | 0.34 ms | 0.58 ms | 70 ns / 600 ns | 53 ms | 57 |
//! | `vllm-llama-405b` | chunked prefill | 256 | 512 | 300,000 | 48 ms | 0.85 ms | 0.85 ms | 71 ns / 600 ns | 200 ms | 59 |
//! | `vllm-llama-8b-rtx4090` | chunked prefill | 256 | 2,048 | 90,000 | 12 ms | 0.08 ms | 0.08 ms | 3 ns / 140 ns | 5 ms | 256 |
//! | `llamacpp-llama-8b-rtx4090` | chunked prefill | 4 (slots) | 2,048 | 16,384 | 7 ms | 0.12 ms | 0.30 ms | 3 ns / 140 ns | 1 ms | 256 |
//!
//! The 405B presets are fitted to the seeds (001: TGI, 002: vLLM; calibration in
//! `docs/performance.md`). The RTX 4090 presets are estimates from the card's figures
//! (≈1 TB/s, ≈165 dense FP16 TFLOP/s, 24 GB): vLLM with FP8 weights (≈8.5 GB read per step,
//! ≈12 GB of FP16 KV cache at 128 KiB per token), and llama.cpp with Q4_K_M weights (≈4.9 GB),
//! 4 slots of 4,096 tokens; they are not calibrated against measurements.
//!
//! Output length: a request that sets `ignore_eos` (OpenAI, llama.cpp) gets exactly its token
//! budget. Otherwise an engine preset models a natural end of sequence: the length is drawn
//! from (seed, request number), uniform over `[mean/2, 3·mean/2]`, capped by the budget;
//! shorter than the budget it ends with `stop` (TGI `eos_token`, llama.cpp `eos`). TGI's API
//! has no `ignore_eos`. Exact mode always generates the budget.
//!
//! `time_scale` k: every simulated duration (schedule, steps, front-end latency, stalls, queue
//! timeout) is divided by k in real time; `/metrics` reports simulated seconds and
//! `GET /sim/info` reports the preset, its parameters and k, so a client can convert back.
//!
//! Metrics (`GET /metrics`, Prometheus text): vLLM's names (`vllm:num_requests_running`,
//! `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc` and the older
//! `vllm:gpu_cache_usage_perc`, `vllm:num_preemptions_total`, `vllm:prompt_tokens_total`,
//! `vllm:generation_tokens_total`, `vllm:request_success_total`, and the
//! `vllm:time_to_first_token_seconds` / `vllm:time_per_output_token_seconds` histograms) for
//! every preset but `llamacpp-*`, which serves llama.cpp's (`llamacpp:requests_processing`,
//! `llamacpp:requests_deferred`, `llamacpp:kv_cache_usage_ratio`, `llamacpp:kv_cache_tokens`,
//! `llamacpp:prompt_tokens_total`, `llamacpp:tokens_predicted_total`); [`SimConfig::metrics_flavor`]
//! overrides. One flavour per server, as a real server has one. In exact mode, running =
//! streams in progress, waiting and KV usage are 0, and the histograms get the schedule.
//! `POST /tokenize` takes llama.cpp's `{"content"}` or vLLM's `{"prompt"}`/`{"messages"}` and
//! returns one id per counted prompt token (a hash of the word), the same count as
//! `usage.prompt_tokens`. TGI's `/info` reports the engine's limits.
//!
//! # Layers inside the simulator
//! Each module imports only modules on a lower line (the test `tests/suite/sim_layers.rs` checks it;
//! there is no import circle). `mod.rs` itself only wires them: it defines no type a module
//! below uses.
//!
//! | layer | module | owns | imports |
//! |---|---|---|---|
//! | 11 | `mod.rs` | [`router`], [`spawn`], [`SimServer`], re-exports | everything below |
//! | 10 | `apis/` | the route table, the handlers and framers of each API, one file per API named as the client's (`completions`, `chat`, `tgi`, `llamacpp`, `anthropic`, `responses`, `embeddings`, `rerank`, `audio`, `info`, `replicas`: the autoscaler's gauge, Prometheus' query API and `/sim/replicas`), and what they share (`common`, `reject`, `trace`, `openai`, `events`, `media`, `form`) | `http1` (`Arrival`), `stream`, `state`, `config`, `cost`, `engine`, `faults`, `metrics`, `spans`, `spec`, `structured`, `text`, `time`, `error` |
//! | 9 | `http1.rs` | the HTTP/1.1 server's connections: accepting them and their limits, reading requests, writing responses to the socket | `sched`, `stream`, `state`, `config`, `time`, `wire` |
//! | 8 | `sched.rs` | the exact-mode scheduler threads (one per runtime worker) | `stream`, `state` |
//! | 7 | `stream/` | the stream state machine (`machine`), responses (`body`), the two paces (`exact`, `engine`) | `state`, `engine` (`Event`), `faults`, `metrics`, `slots`, `spec`, `time` |
//! | 6 | `state.rs` | [`SimStats`], `Counters`, `Shutdown`, `Shared` | `config`, `engine`, `metrics`, `spans` |
//! | 5 | `config.rs` | [`SimConfig`], [`HttpLimits`] and their validation | `presets`, `cost`, `faults`, `metrics`, `spec`, `error` |
//! | 4 | `presets.rs` | [`Preset`] | `cost`, `metrics`, `error` |
//! | 3 | `engine.rs` | the engine model's scheduler: its step loop and its task | `cost`, `metrics`, `time` |
//! | 2 | `cost.rs`, `faults.rs`, `time.rs`, `structured.rs`, `autoscale.rs` | the engine's parameters and cost model ([`EngineConfig`], [`SchedulerKind`]) and the natural output length; [`FaultConfig`] and the draw; `offset`, `mul`, `sleep_until`; structured answers (a schema's JSON, a tool call, a regex's match, a choice) and their invalid share; the autoscaler over exact mode's slots ([`AutoscaleConfig`], its replica log) | `text`, `error`; `precise`; `slots` |
//! | 1 | `precise.rs`, `text.rs`, `metrics.rs`, `prefix_cache.rs`, `slots.rs`, `spans.rs` | the precise timer; token text and hashing; `/metrics`; the prefix cache; exact mode's slots and their queue; each request's span (`/sim/otlp`) | `error`; `metrics`: `spec` |
//! | 0 | `error.rs` | the simulator's errors: [`SimConfigError`] (a setting or name that breaks a rule) and the typed errors of what a request may send wrong (guided decoding, media, forms, transcriptions) | nothing of `sim` |
//! | 0 | `wire.rs` | the HTTP/1.1 wire format: parsing a request head and its framing, writing a response head, a chunk and the server's own 4xx/503 answers | nothing of `sim` |
//! | 0 | `spec.rs` | speculative decoding: [`SpecDecode`], how a stream's tokens are cut into chunks, vLLM's `spec_decode` counters | nothing of `sim` |
//!
//! A new module takes the lowest line whose modules it needs; a piece two modules on the same
//! line both need moves down (as `time.rs` did for `engine.rs` and `stream/`).
//!
//! # Extending it
//! - An API: see `apis/mod.rs` ("To add an API").
//! - A wire format or a source of tokens: `stream/mod.rs`.
//! - A fault: `faults.rs`; a metric: `metrics.rs`; a preset: `presets.rs`; a scheduler:
//!   `engine.rs`; a cost term of the engine: `cost.rs`; a counter: `state.rs`; a setting:
//!   `config.rs`; a framing rule of HTTP/1.1: `wire.rs`.

mod apis;
mod autoscale;
mod config;
mod cost;
mod engine;
mod error;
mod faults;
mod http1;
mod metrics;
mod precise;
mod prefix_cache;
mod presets;
mod sched;
mod slots;
mod spans;
mod spec;
mod state;
mod stream;
mod structured;
mod text;
mod time;
mod timings;
mod wire;

#[cfg(test)]
mod tests;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::Router;
use tokio::task::JoinHandle;

use state::Shared;

pub use autoscale::{AutoscaleConfig, REPLICAS_GAUGE};
pub use config::{HttpLimits, LoraConfig, SimConfig, TimingsShape, MAX_TOKENS_LIMIT};
pub use cost::{EngineConfig, SchedulerKind};
pub use error::SimConfigError;
pub use faults::FaultConfig;
pub use metrics::MetricsFlavor;
pub use presets::Preset;
pub use spec::{SpecDecode, MAX_DRAFT_TOKENS, MAX_PATTERN};
pub use state::{ControlLog, SimStats};
/// The simulator's routes, ready to serve. Invalid values in `config` are clamped (call
/// [`SimConfig::validate`] first to report them).
pub fn router(config: SimConfig) -> Router {
    build_router(Arc::new(Shared::new(config)))
}

fn build_router(shared: Arc<Shared>) -> Router {
    let session =
        axum::middleware::from_fn_with_state(shared.clone(), apis::session::with_session_header);
    apis::routes()
        .route_layer(session)
        .layer(DefaultBodyLimit::max(shared.config.limits.max_body_bytes))
        .with_state(shared)
}

/// A running simulated server (see [`spawn`]). Dropping it signals shutdown without waiting;
/// call [`SimServer::shutdown`] to wait for the server to stop.
pub struct SimServer {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    task: Option<JoinHandle<std::io::Result<()>>>,
    /// The server's own runtime, when it has one ([`spawn_on_own_runtime`]).
    runtime: Option<tokio::runtime::Runtime>,
}

impl SimServer {
    /// The address the server is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `http://HOST:PORT`, with a loopback host when bound to an unspecified address.
    pub fn base_url(&self) -> String {
        let mut addr = self.local_addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            });
        }
        format!("http://{addr}")
    }

    /// A snapshot of the server's counters.
    pub fn stats(&self) -> SimStats {
        self.shared.stats.snapshot()
    }

    /// Stops accepting connections, ends open streams (cut, since they cannot finish on
    /// schedule) and waits for the server task to finish.
    pub async fn shutdown(mut self) {
        self.shared.shutdown.trigger();
        if let Some(task) = self.task.take() {
            // A server error or a panicked task has nothing left to clean up.
            let _ = task.await;
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.shared.shutdown.trigger();
        if let Some(runtime) = self.runtime.take() {
            // Never blocks: allowed inside the caller's runtime, where this usually runs.
            runtime.shutdown_background();
        }
    }
}

/// As [`spawn`], on a runtime of its own (one worker thread per CPU), so that the server's
/// schedule does not wait for whatever else the calling runtime runs: `servebench run`
/// drives its load from a one-thread runtime, which the built-in simulator must not share.
pub async fn spawn_on_own_runtime(
    config: SimConfig,
    addr: SocketAddr,
) -> std::io::Result<SimServer> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("servebench-sim")
        .enable_all()
        .build()?;
    let mut server = runtime.spawn(spawn(config, addr)).await.map_err(|e| {
        std::io::Error::other(format!("the simulator's runtime failed to start: {e}"))
    })??;
    server.runtime = Some(runtime);
    Ok(server)
}

/// Validates `config`, binds `addr` (port 0 picks a free port) and serves in a tokio task.
/// Accepted connections get `TCP_NODELAY`. The listen backlog is 4096 (tokio's default is
/// 1024): a sweep's 1,024 simultaneous connects would otherwise overflow it and a few would
/// wait a second for the kernel's SYN retry, a delay no real server's benchmark should show
/// (uvicorn, behind vLLM and SGLang, listens with 2048; the kernel caps it at `somaxconn`).
pub async fn spawn(config: SimConfig, addr: SocketAddr) -> std::io::Result<SimServer> {
    config
        .validate()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let shared = Arc::new(Shared::new(config));
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    let listener = socket.listen(4096)?;
    let local_addr = listener.local_addr()?;
    let app = build_router(shared.clone());
    let task = tokio::spawn(http1::serve(listener, shared.clone(), app));
    if let Some(scaler) = shared.autoscaler.clone() {
        let s = shared.clone();
        tokio::spawn(scaler.run(async move { s.shutdown.wait().await }));
    }
    Ok(SimServer {
        local_addr,
        shared,
        task: Some(task),
        runtime: None,
    })
}
