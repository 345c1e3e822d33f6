//! One request in, one [`RequestRecord`](crate::measure::record::RequestRecord) out: HTTP over
//! a real socket, streaming, timestamps.
//!
//! [`Client::send`] never fails: whatever the server does (refuses, errors, stalls, cuts the
//! stream, sends garbage) ends up in the record's `outcome`. It does not aggregate, print,
//! or retry. The request shape lives in [`api`], each server API's wire format in a file of
//! `apis/` (whose `mod.rs` maps a backend to its API), the SSE framing in
//! `crate::measure::sse`. Measured requests to `http://` servers go over the lean HTTP/1.1
//! transport in `http1` (its connections; the bytes on the wire in `wire.rs`), others over
//! reqwest; both feed one body-reading loop (`Body`, `exchange.rs`), in the shape the API
//! answers in: events as they arrive, or one JSON answer read whole.
//!
//! Where things are: the inputs in `spec.rs` ([`RequestSpec`], [`Secrets`]), a request from
//! spec to record in `send.rs` (its body, its record's state, the exchange, the record
//! finished), the exchange in `exchange.rs`, request ids in `ids.rs`, the side channels
//! (`/tokenize`, `/sim/stats`, the clock probe's `Date`) in `side.rs`; this file holds the
//! [`Client`] and its setup. A child takes what it needs from a sibling leaf, never from
//! this file's re-exports.
//!
//! Timestamps: over the lean transport `sent_ns` is the user-space time just before the
//! request's first byte is written, after a new connection's TCP connect (timed on its own,
//! `connect_start_ns`..`connect_end_ns`); over reqwest (https), which does not say when its
//! pool connects, it is the time the request is handed to reqwest. Every output chunk's time
//! is the arrival of the read that completed it, so events read together share one timestamp
//! (a whole answer is one chunk, at the arrival of its last byte). Over the lean transport that arrival is the kernel's
//! receive stamp of the read's newest byte (`crate::measure::rxtime`; the read time where the kernel gave
//! none), so a busy or descheduled client does not delay it; over reqwest (HTTPS) it is the time
//! the read returned in user space.
//!
//! What the server reported about a request (its counts, timings) is judged against what the
//! client saw before the record believes it (`usage`; the bound of a prompt's media in
//! `media_bound`), and whatever the server sent that the record or a message keeps is cleared
//! of the user's secrets first (`scrub`).

pub mod api;
mod apis;
pub use apis::chat_template;
mod body;
mod exchange;
mod fast_event;
mod http1;
mod ids;
mod media_bound;
mod reasoning;
mod route;
mod scrub;
mod seen;
mod send;
mod server_forms;
mod side;
mod source;
mod spec;
mod stream;
mod upload;
pub mod usage;
mod wire;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};

use crate::config::structured::StructuredOutput;
use crate::config::url::{join_url, redact_url};
use crate::config::RunConfig;
use crate::measure::error::ClientError;
use crate::measure::output_check::Judge;
use crate::tokenizer::chat_template::ChatTemplate;
use crate::tokenizer::Tokenizer;
use api::Api;
pub use api::Part;
pub use body::read_at_most;
use ids::RequestIds;
pub use spec::{ClassTag, RequestSpec, Secrets, Written};

/// Installs the TLS crypto provider once (reqwest is built without one to avoid C toolchains).
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Sends requests to one server and records what happens.
pub struct Client {
    http: reqwest::Client,
    /// With `--source-addresses` over reqwest (HTTPS): one client bound to each address,
    /// taken in turn per measured request (`source.rs`); empty: `http` carries them.
    http_by_source: Vec<reqwest::Client>,
    /// Which of `http_by_source` is next.
    next_source: source::Sources,
    /// Where measured requests go: one target per endpoint (`--base-url` given more than
    /// once), the first the base URL's.
    targets: Vec<Target>,
    /// What every lane's client of the run shares: the prefill gate and the router (`route.rs`).
    shared: Arc<route::Shared>,
    /// `--session-header`: the response header a session's later requests send back.
    session_header: Option<String>,
    /// The server's base URL as given, for side channels (may hold credentials).
    base_url: String,
    /// `target` as shown: redacted.
    url: String,
    api: Box<dyn Api>,
    model: String,
    ignore_eos: bool,
    extra_body: Option<serde_json::Value>,
    timeout: Duration,
    save_text: bool,
    /// Counts every answer's text, next to the server's own count.
    tokenizer: Option<Tokenizer>,
    /// The model's chat template, for a conversation's history sent as a prompt.
    chat_template: Option<Arc<ChatTemplate>>,
    limits: Limits,
    /// The server's clock speed-up (`--time-scale`, an f64's bits): its timings are in its
    /// own time, judged against the client's span × this.
    time_scale: AtomicU64,
    /// The user's secrets, replaced in all the client stores or prints of what a server sent.
    scrub: scrub::Scrubber,
    /// The header each request's id goes in (`--request-id-header`), and the ids' prefix.
    ids: Option<RequestIds>,
    /// `--structured-output`: asked in every body, and every answer checked.
    structured: Option<StructuredOutput>,
    /// What every answer is checked against, compiled once (`measure::output_check`).
    judge: Option<Arc<Judge>>,
}

/// One endpoint's measured requests: their URL and connections.
struct Target {
    /// The lean transport when the URL is plain `http://` (`http1`); `None`: reqwest (HTTPS).
    lean: Option<http1::Endpoint>,
    /// Where measured requests go (may hold credentials: never shown).
    target: String,
}

/// The bounds on one exchange besides the request timeout (`LoadSpec`, `RunConfig`).
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// From the send to the first byte of the response body.
    first_byte: Duration,
    /// Between two reads of a body that has started.
    idle: Duration,
    /// Bytes of one SSE line or event.
    max_event: usize,
    /// Bytes of an error response's body read.
    max_error_body: usize,
    /// Bytes of generated text kept per request.
    max_text: usize,
    /// Bytes of a whole (non-streamed) answer read.
    max_answer: usize,
}

impl Client {
    /// A client for `cfg`'s server; `tokenizer` counts each answer's text, and
    /// `chat_template` (resolved once, by the run's plan: [`chat_template`]) renders a
    /// conversation's history sent as a prompt.
    pub fn new(
        cfg: &RunConfig,
        secrets: &Secrets,
        tokenizer: Option<Tokenizer>,
        chat_template: Option<Arc<ChatTemplate>>,
    ) -> Result<Arc<Client>, ClientError> {
        let shared = Arc::new(route::Shared::new(&cfg.routing, cfg.load.seed));
        Client::build(cfg, secrets, (tokenizer, chat_template), shared)
    }

    /// As [`Client::new`], sharing `first`'s prefill gate and router: another lane's client
    /// of the same run (`--client-threads`).
    pub fn new_beside(
        cfg: &RunConfig,
        secrets: &Secrets,
        tokenizer: Option<Tokenizer>,
        chat_template: Option<Arc<ChatTemplate>>,
        first: &Client,
    ) -> Result<Arc<Client>, ClientError> {
        Client::build(
            cfg,
            secrets,
            (tokenizer, chat_template),
            first.shared.clone(),
        )
    }

    fn build(
        cfg: &RunConfig,
        secrets: &Secrets,
        (tokenizer, chat_template): (Option<Tokenizer>, Option<Arc<ChatTemplate>>),
        shared: Arc<route::Shared>,
    ) -> Result<Arc<Client>, ClientError> {
        install_crypto_provider();
        // The API's own headers (the key's, `anthropic-version`), then the user's: a user's
        // header replaces a default of the same name, as in reqwest's default-header map.
        let user = |name: &str| (secrets.headers.iter()).any(|(k, _)| k.eq_ignore_ascii_case(name));
        let ids = (cfg.request_id_header.as_deref())
            .map(|name| RequestIds::new(name, cfg.propagate_trace));
        if let Some(ids) = &ids {
            if user(&ids.name) {
                return Err(ClientError::RequestIdHeader(ids.name.clone()));
            }
            HeaderName::from_bytes(ids.name.as_bytes())
                .map_err(|_| ClientError::HeaderName(ids.name.clone()))?;
        }
        let api = apis::for_backend(cfg.backend);
        let mut lean_headers: Vec<(String, String)> = (api.headers(secrets.api_key.as_deref()))
            .into_iter()
            .filter(|(k, _)| !user(k))
            .collect();
        lean_headers.extend(secrets.headers.iter().cloned());
        // A body that is not JSON (a transcription's form) says so, unless the user did.
        if let Some(ct) = api.content_type().filter(|_| !user("content-type")) {
            lean_headers.insert(0, ("content-type".into(), ct.into()));
        }
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (k, v) in &lean_headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| ClientError::HeaderName(k.clone()))?;
            // The value is never shown: it may be the API key.
            let value =
                HeaderValue::from_str(v).map_err(|_| ClientError::HeaderValue(k.clone()))?;
            headers.insert(name, value);
        }
        let http = reqwest_client(cfg, &headers, None)?;
        let sources = &cfg.load.source_addresses;
        let http_by_source = (sources.iter())
            .map(|&ip| reqwest_client(cfg, &headers, Some(ip)))
            .collect::<Result<Vec<_>, _>>()?;
        let base_url = secrets.base_url.clone().unwrap_or(cfg.base_url.clone());
        let endpoint = secrets.endpoint.as_deref().unwrap_or(&cfg.endpoint);
        let url = join_url(&base_url, endpoint);
        let more = (cfg.routing.more_base_urls.iter().enumerate())
            .map(|(i, saved)| secrets.more_base_urls.get(i).unwrap_or(saved));
        // The request id's header and the session's (`--session-header`), one per line.
        let id_name = ids.as_ref().map_or("", |i| i.name.as_str());
        let echo = match &cfg.routing.session_header {
            Some(session) => Some(format!("{id_name}\n{session}")),
            None => ids.as_ref().map(|i| i.name.clone()),
        };
        let targets = std::iter::once(base_url.as_str())
            .chain(more.map(String::as_str))
            .map(|base| {
                let target = join_url(base, endpoint);
                let lean = http1::Endpoint::new(&target, &lean_headers, cfg.load.connect_timeout())
                    .map(|e| e.echoing(echo.as_deref()).binding_to(sources));
                Target { lean, target }
            })
            .collect();
        Ok(Arc::new(Client {
            chat_template,
            http,
            http_by_source,
            next_source: source::Sources::new(sources),
            targets,
            shared,
            session_header: cfg.routing.session_header.clone(),
            ids,
            url: redact_url(&url),
            base_url,
            api,
            model: cfg.model.clone(),
            ignore_eos: cfg.ignore_eos,
            extra_body: cfg.extra_body.clone(),
            timeout: cfg.load.timeout(),
            save_text: cfg.save_generated_text,
            tokenizer,
            limits: Limits {
                first_byte: cfg.load.first_byte_timeout(),
                idle: cfg.load.idle_timeout(),
                max_event: usize::try_from(cfg.max_event_bytes).unwrap_or(usize::MAX),
                max_error_body: usize::try_from(cfg.max_error_body_bytes).unwrap_or(usize::MAX),
                max_text: usize::try_from(cfg.max_generated_text_bytes).unwrap_or(usize::MAX),
                max_answer: usize::try_from(cfg.max_answer_bytes()).unwrap_or(usize::MAX),
            },
            time_scale: AtomicU64::new(cfg.time_scale.to_bits()),
            structured: cfg.structured.clone(),
            judge: cfg.structured.as_ref().map(Judge::new),
            scrub: scrub::Scrubber::new(
                (secrets.api_key.iter().map(String::as_str))
                    .chain(secrets.headers.iter().map(|(_, v)| v.as_str())),
                [&secrets.base_url, &secrets.endpoint]
                    .into_iter()
                    .flatten()
                    .chain(&secrets.more_base_urls)
                    .map(String::as_str),
            ),
        }))
    }

    /// The reqwest client the next measured request goes through (HTTPS): the next source
    /// address's with `--source-addresses`.
    fn measured_http(&self) -> &reqwest::Client {
        match self.next_source.next_index() {
            Some(i) => &self.http_by_source[i],
            None => &self.http,
        }
    }

    /// The chat template a conversation's history is rendered with (an API that takes a
    /// prompt, and a tokenizer that carries one); `None`: the plain format.
    pub fn chat_template(&self) -> Option<&ChatTemplate> {
        self.chat_template.as_deref()
    }

    /// The run's tokenizer (`--tokenizer`), which counts answers; `None` in words.
    pub fn tokenizer(&self) -> Option<&Tokenizer> {
        self.tokenizer.as_ref()
    }

    /// Sets the server's clock speed-up when it is learnt after the client was made (an
    /// external `servebench sim --time-scale K`, from its `/sim/info`).
    pub fn set_time_scale(&self, k: f64) {
        if k.is_finite() && k > 0.0 {
            self.time_scale.store(k.to_bits(), Ordering::Relaxed);
        }
    }

    /// The URL requests go to, as shown (redacted).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The endpoints `--failover` stopped, by index, with when (clock ns); empty with one
    /// endpoint and no failover.
    pub fn stopped_endpoints(&self) -> Vec<Option<u64>> {
        match self.shared.router.len() > 1 || self.targets.len() > 1 {
            true => self.shared.router.stopped(),
            false => Vec::new(),
        }
    }

    /// The server's base URL as given (it may hold credentials: send to it, never show it),
    /// for the side channels' `base_url`: the first endpoint's.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}

/// A reqwest client with `headers` by default and `cfg`'s transport settings, its
/// connections bound to `local` where given.
fn reqwest_client(
    cfg: &RunConfig,
    headers: &HeaderMap,
    local: Option<std::net::IpAddr>,
) -> Result<reqwest::Client, ClientError> {
    reqwest::Client::builder()
        .default_headers(headers.clone())
        .no_proxy()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(usize::MAX)
        .connect_timeout(cfg.load.connect_timeout())
        .local_address(local)
        // A redirect is a failed request naming its target: following it would send the
        // API key and custom headers to wherever the server points.
        .redirect(reqwest::redirect::Policy::none())
        .tls_danger_accept_invalid_certs(cfg.insecure)
        .build()
        .map_err(|e| ClientError::Build(e.to_string()))
}

#[cfg(all(test, target_os = "linux"))]
mod ids_tests;
#[cfg(all(test, target_os = "linux"))]
mod tests;
