//! The running server's shared state: the counters behind [`SimStats`], the shutdown signal,
//! and [`Shared`], what every handler, stream and connection holds.
//!
//! # What it owns
//! - [`SimStats`] (a snapshot, served at `GET /sim/stats`) and [`Counters`] (the live atomics);
//! - [`Shutdown`]: one flag and one watch channel for the server loop and every stream;
//! - [`ControlLog`]: what the control endpoints did (`GET /sim/control`);
//! - [`Shared`]: the sanitized [`SimConfig`], the counters, the request numbering, the server
//!   metrics, the engine handle (engine mode), the real-time durations and the resident LoRA
//!   adapters (`Shared::adapter_wait`).
//!
//! # What it must not touch
//! HTTP, wire formats and stream pacing (`http1.rs`, `apis/`, `stream/`) use this state;
//! nothing here may use them.
//!
//! # Adding a counter
//! Add the field to [`SimStats`] (with `#[serde(default)]`, so older snapshots still read) and
//! to [`Counters`], copy it in [`Counters::snapshot`], and bump it where it happens with
//! [`Counters::bump`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::config::SimConfig;
use super::prefix_cache::PrefixCache;
use super::{autoscale, engine, metrics, slots, spans};

/// Counters of what the server did (a snapshot). Also served as JSON at `GET /sim/stats`.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct SimStats {
    /// Generation requests with a valid body (each gets a number and a fault draw).
    pub requests: u64,
    /// Requests answered completely without any fault.
    pub ok: u64,
    /// Requests answered with a simulated HTTP 500.
    pub http_500: u64,
    /// Requests answered with a simulated HTTP 429.
    pub http_429: u64,
    /// Streams cut on purpose.
    pub disconnected: u64,
    /// Streams that stalled on purpose.
    pub stalled: u64,
    /// Streams that got a broken event on purpose.
    pub malformed: u64,
    /// Content chunks handed to the body more than 1 ms after their scheduled time.
    pub late_chunks: u64,
    /// Largest lateness of any content chunk, in microseconds.
    pub max_lateness_us: u64,
    /// Content chunks handed to the body (the denominator of `late_chunks`).
    #[serde(default)]
    pub chunks: u64,
    /// Sum of every content chunk's lateness, in microseconds (mean = this / `chunks`).
    #[serde(default)]
    pub total_lateness_us: u64,
    /// Requests answered HTTP 503 because they waited longer than the queue timeout.
    #[serde(default)]
    pub queue_timeouts: u64,
    /// Requests the server finished reading more than 1 ms after the kernel received their
    /// last byte (they waited in the simulator's intake; their schedule still starts at the
    /// arrival, see "The schedule"). Only requests the kernel stamped are counted.
    #[serde(default)]
    pub late_intakes: u64,
    /// Largest such intake delay (read − arrival), in microseconds.
    #[serde(default)]
    pub max_intake_us: u64,
    /// Connections answered 503 and closed at once because `limits.max_connections` were
    /// open (see `HttpLimits`).
    #[serde(default)]
    pub refused_connections: u64,
    /// Requests the HTTP layer answered itself and closed the connection for, before any
    /// route saw them: malformed (400), too slow (408: `limits.head_timeout`,
    /// `limits.body_timeout`), too large (413, 431) or over the chunk extension limit (400).
    #[serde(default)]
    pub rejected_requests: u64,
    /// LoRA adapter loads: requests to an adapter that was not resident (`SimConfig::lora`).
    #[serde(default)]
    pub lora_loads: u64,
    /// The distinct IP addresses connections came from, in the order first seen, at most
    /// [`MAX_PEERS`] (a client's `--source-addresses` show here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peer_addresses: Vec<std::net::IpAddr>,
    /// `--session-header`: tokens minted, tokens sent back that this server minted, and
    /// tokens sent back that it did not (`apis/session.rs`).
    #[serde(default)]
    pub sessions_minted: u64,
    #[serde(default)]
    pub sessions_echoed: u64,
    #[serde(default)]
    pub sessions_unknown: u64,
}

/// The most distinct peer addresses [`SimStats::peer_addresses`] keeps.
pub const MAX_PEERS: usize = 16;

/// Live counters behind [`SimStats`].
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) requests: AtomicU64,
    pub(crate) ok: AtomicU64,
    pub(crate) http_500: AtomicU64,
    pub(crate) http_429: AtomicU64,
    pub(crate) disconnected: AtomicU64,
    pub(crate) stalled: AtomicU64,
    pub(crate) malformed: AtomicU64,
    pub(crate) late_chunks: AtomicU64,
    pub(crate) max_lateness_us: AtomicU64,
    pub(crate) chunks: AtomicU64,
    pub(crate) total_lateness_us: AtomicU64,
    pub(crate) queue_timeouts: AtomicU64,
    pub(crate) late_intakes: AtomicU64,
    pub(crate) max_intake_us: AtomicU64,
    pub(crate) refused_connections: AtomicU64,
    pub(crate) rejected_requests: AtomicU64,
    pub(crate) lora_loads: AtomicU64,
    pub(crate) peers: Mutex<Vec<std::net::IpAddr>>,
    pub(crate) sessions_minted: AtomicU64,
    pub(crate) sessions_echoed: AtomicU64,
    pub(crate) sessions_unknown: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> SimStats {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        SimStats {
            requests: r(&self.requests),
            ok: r(&self.ok),
            http_500: r(&self.http_500),
            http_429: r(&self.http_429),
            disconnected: r(&self.disconnected),
            stalled: r(&self.stalled),
            malformed: r(&self.malformed),
            late_chunks: r(&self.late_chunks),
            max_lateness_us: r(&self.max_lateness_us),
            chunks: r(&self.chunks),
            total_lateness_us: r(&self.total_lateness_us),
            queue_timeouts: r(&self.queue_timeouts),
            late_intakes: r(&self.late_intakes),
            max_intake_us: r(&self.max_intake_us),
            refused_connections: r(&self.refused_connections),
            rejected_requests: r(&self.rejected_requests),
            lora_loads: r(&self.lora_loads),
            peer_addresses: self.peers.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            sessions_minted: r(&self.sessions_minted),
            sessions_echoed: r(&self.sessions_echoed),
            sessions_unknown: r(&self.sessions_unknown),
        }
    }

    /// Notes the address a connection came from (once per connection, not per chunk).
    pub(crate) fn record_peer(&self, ip: std::net::IpAddr) {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        if peers.len() < MAX_PEERS && !peers.contains(&ip) {
            peers.push(ip);
        }
    }

    /// Records how late a chunk was handed over relative to its deadline.
    pub(crate) fn record_lateness(&self, late: Duration) {
        let us = u64::try_from(late.as_micros()).unwrap_or(u64::MAX);
        self.chunks.fetch_add(1, Ordering::Relaxed);
        self.total_lateness_us.fetch_add(us, Ordering::Relaxed);
        if us > 1000 {
            self.late_chunks.fetch_add(1, Ordering::Relaxed);
        }
        if us > self.max_lateness_us.load(Ordering::Relaxed) {
            self.max_lateness_us.fetch_max(us, Ordering::Relaxed);
        }
    }

    /// Records how long a request waited between its arrival and the end of its parsing.
    pub(crate) fn record_intake(&self, delay: Duration) {
        let us = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        if us > 1000 {
            self.late_intakes.fetch_add(1, Ordering::Relaxed);
        }
        self.max_intake_us.fetch_max(us, Ordering::Relaxed);
    }

    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Shutdown signal shared by the server loop and every stream.
pub(crate) struct Shutdown {
    flag: AtomicBool,
    tx: watch::Sender<bool>,
}

impl Shutdown {
    fn new() -> Self {
        Self {
            flag: AtomicBool::new(false),
            tx: watch::channel(false).0,
        }
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.tx.subscribe()
    }

    pub(crate) fn trigger(&self) {
        self.flag.store(true, Ordering::Release);
        self.tx.send_replace(true);
    }

    /// Cheap check, used on the per-chunk path.
    pub(crate) fn is_triggered(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// Resolves once shutdown was triggered.
    pub(crate) async fn wait(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives as long as `self`, so this only ends on a real trigger.
        if rx.wait_for(|v| *v).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// State shared by all handlers.
pub(crate) struct Shared {
    pub(crate) config: SimConfig,
    /// The model name as a JSON string literal (quotes included, escaped).
    pub(crate) model_json: String,
    pub(crate) stats: Counters,
    pub(crate) next_request: AtomicU64,
    pub(crate) shutdown: Shutdown,
    /// What `GET /metrics` serves; the engine (or, in exact mode, the streams) updates it.
    pub(crate) metrics: Arc<Mutex<metrics::ServerMetrics>>,
    /// The engine, unless in exact mode.
    pub(crate) engine: Option<engine::EngineHandle>,
    /// Real-time durations: the configured ones divided by the time scale.
    pub(crate) real: RealDurations,
    /// The prefix cache: the engine's KV capacity, or a million tokens in exact mode.
    pub(crate) prefix_cache: Mutex<PrefixCache>,
    /// The resident LoRA adapters (`SimConfig::lora`), least recently used first, each with
    /// when its load is done.
    pub(crate) resident: Mutex<std::collections::VecDeque<(String, tokio::time::Instant)>>,
    /// Exact mode's slots and their queue (`SimConfig::slots`); `None`: no limit.
    pub(crate) slots: Option<Arc<slots::Slots>>,
    /// The autoscaler over the slots (`SimConfig::autoscale`).
    pub(crate) autoscaler: Option<Arc<autoscale::Autoscaler>>,
    /// The newest finished requests' spans (`GET /sim/otlp`).
    pub(crate) spans: spans::SpanLog,
    /// What the control endpoints were asked (`apis/control.rs`, `GET /sim/control`).
    pub(crate) control: Mutex<ControlLog>,
}

/// What the control endpoints did, served at `GET /sim/control`: the cache resets and the
/// profiler's starts and stops, each stop and start with the generation requests received
/// (`SimStats::requests`) when the last came.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct ControlLog {
    pub cache_resets: u64,
    pub profile_starts: u64,
    pub profile_stops: u64,
    pub requests_at_profile_start: Option<u64>,
    pub requests_at_profile_stop: Option<u64>,
}

impl Shared {
    /// How long a request for `adapter` arriving at `t0` waits for it to be loaded: nothing
    /// when it is resident and loaded, the rest of its load when it is loading, the load time
    /// when it is not resident (it is loaded then, and the least recently used adapter past
    /// `max_resident` evicted). Nothing without adapters configured or for the base model.
    pub(crate) fn adapter_wait(&self, t0: tokio::time::Instant, adapter: &str) -> Duration {
        let Some(lora) = &self.config.lora else {
            return Duration::ZERO;
        };
        if adapter == self.config.model {
            return Duration::ZERO;
        }
        let Ok(mut resident) = self.resident.lock() else {
            return Duration::ZERO;
        };
        if let Some(at) = resident.iter().position(|(name, _)| name == adapter) {
            if let Some(slot) = resident.remove(at) {
                let wait = slot.1.saturating_duration_since(t0);
                resident.push_back(slot);
                return wait;
            }
        }
        let load = self.real.lora_load;
        resident.push_back((adapter.to_string(), t0 + load));
        while resident.len() > lora.max_resident {
            resident.pop_front();
        }
        Counters::bump(&self.stats.lora_loads);
        load
    }
}

/// Simulated durations converted to real time (divided by `time_scale`).
pub(crate) struct RealDurations {
    pub(crate) ttft: Duration,
    pub(crate) itl: Duration,
    pub(crate) stall: Duration,
    pub(crate) frontend: Duration,
    /// A LoRA adapter's load time (`SimConfig::lora`).
    pub(crate) lora_load: Duration,
}

impl Shared {
    pub(crate) fn new(config: SimConfig) -> Self {
        let config = config.sanitized();
        let model_json =
            serde_json::to_string(&config.model).unwrap_or_else(|_| "\"servebench-sim\"".into());
        let shutdown = Shutdown::new();
        let mut server_metrics = metrics::ServerMetrics::default();
        // A speculating server exposes its counters from the start, at 0 (as vLLM does).
        if let Some(spec) = &config.spec {
            server_metrics.spec.per_position = vec![0; spec.draft_tokens as usize];
        }
        let metrics = Arc::new(Mutex::new(server_metrics));
        let k = config.time_scale;
        let real = RealDurations {
            ttft: config.ttft.div_f64(k),
            itl: config.itl.div_f64(k),
            stall: config.faults.stall.div_f64(k),
            frontend: config
                .engine
                .as_ref()
                .map_or(Duration::ZERO, |e| e.frontend_latency.div_f64(k)),
            lora_load: (config.lora.as_ref()).map_or(Duration::ZERO, |l| l.load_time.div_f64(k)),
        };
        let engine = config.engine.clone().map(|e| {
            engine::EngineHandle::new(
                e,
                config.tokens_per_chunk,
                k,
                config.precise_timing,
                metrics.clone(),
                shutdown.subscribe(),
            )
        });
        let capacity = config
            .engine
            .as_ref()
            .map_or(1_000_000, |e| e.kv_capacity_tokens);
        let per_replica = (config.engine.is_none()).then_some(config.slots).flatten();
        let replicas = config.autoscale.map_or(1, |a| a.min as usize);
        let slots = per_replica
            .map(|n| slots::Slots::new(n as usize * replicas, config.priority_scheduling));
        let autoscaler =
            (config.autoscale)
                .zip(per_replica.zip(slots.clone()))
                .map(|(a, (n, s))| {
                    Arc::new(autoscale::Autoscaler::new(
                        a,
                        n as usize,
                        s,
                        config.time_scale,
                    ))
                });
        Self {
            slots,
            autoscaler,
            prefix_cache: Mutex::new(PrefixCache::new(capacity)),
            resident: Mutex::new(std::collections::VecDeque::new()),
            config,
            model_json,
            stats: Counters::default(),
            next_request: AtomicU64::new(0),
            shutdown,
            metrics,
            engine,
            real,
            spans: spans::SpanLog::default(),
            control: Mutex::new(ControlLog::default()),
        }
    }
}
