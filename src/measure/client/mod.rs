//! One request in, one [`RequestRecord`] out: HTTP over a real socket, streaming, timestamps.
//!
//! [`Client::send`] never fails: whatever the server does (refuses, errors, stalls, cuts the
//! stream, sends garbage) ends up in the record's `outcome`. It does not aggregate, print,
//! or retry. The request shape lives in [`api`], each server API's wire format in a file of
//! `apis/` (whose `mod.rs` maps a backend to its API), the SSE framing in
//! `crate::measure::sse`. Measured requests to `http://` servers go over the lean HTTP/1.1
//! transport in `http1`, others over reqwest; both feed one body-reading loop (`Body`,
//! `exchange.rs`), in the shape the API answers in: events as they arrive, or one JSON
//! answer read whole.
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
//! client saw before the record believes it (`usage`), and whatever the server sent that the
//! record or a message keeps is cleared of the user's secrets first (`scrub`).

pub mod api;
mod apis;
pub use apis::chat_template;
mod body;
mod exchange;
mod fast_event;
mod http1;
mod reasoning;
mod scrub;
mod stream;
mod upload;
pub mod usage;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use tokio_util::sync::CancellationToken;

use crate::config::structured::StructuredOutput;
use crate::config::url::{join_url, redact_url};
use crate::config::RunConfig;
use crate::measure::clock::Clock;
use crate::measure::error::{describe, ClientError, SideChannelError};
use crate::measure::output_check::Checker;
use crate::measure::record::{FailureKind, Outcome, RequestRecord};
use crate::tokenizer::chat_template::ChatTemplate;
use crate::tokenizer::Tokenizer;
pub use api::Part;
use api::{Answer, Api, BodySpec};
pub use body::read_at_most;
use stream::{Bounds, Stream};

/// One request to send, as built by the workload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestSpec {
    pub id: u64,
    pub prompt: String,
    /// Chat messages, when the dataset gave them (chat API only; others send `prompt`).
    pub messages: Option<serde_json::Value>,
    /// Further inputs sent with `prompt` in this one request, for an API that takes a list
    /// (an embeddings batch of `--embedding-batch-size`); empty for every other request.
    pub batch: Vec<String>,
    /// Media sent beside `prompt` as content parts of its user message (images, audio), for
    /// the APIs that take them; a request holding one for another API fails unsent.
    pub parts: Vec<Part>,
    /// Prompt length under servebench's tokenizer (or as requested), when known; a batch's
    /// inputs together.
    pub input_len: Option<u64>,
    pub output_len: u64,
    pub warmup: bool,
    /// A trace's send time, ns from the run's start (server time); `None`: the load's
    /// arrival process decides.
    pub offset_ns: Option<u64>,
    /// Prompt tokens that repeat a prefix already sent earlier in the workload (an unbounded
    /// cache would hold them), where the dataset designs reuse (`prefix`, `trace`).
    pub designed_cached: Option<u64>,
    /// The turn of a conversation this request is (0 starts one; the driver sends a
    /// conversation's turns in order, each with the history); `None`: a single request.
    pub turn: Option<u32>,
    /// The model (a LoRA adapter, `--lora-modules` or a jsonl line's `model`) this request is
    /// sent to instead of the run's `--model`; kept in its record.
    pub model: Option<String>,
    /// The `--mix` class this request belongs to, and what the class sends with it.
    pub class: Option<ClassTag>,
}

/// A request's class of a workload mix (`--mix`): its number in the mix, vLLM's `priority`
/// field put in the body, and the tenant header sent with it (checked as a header name and
/// value by `config::mix`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassTag {
    pub index: u32,
    pub priority: Option<i32>,
    pub header: Option<(String, String)>,
}

/// Told when a request's first byte is about to be written ([`Client::send_within`]).
pub type Written<'a> = Option<&'a (dyn Fn() + Sync)>;

/// Options that are not in the saved config because they can hold secrets.
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    pub api_key: Option<String>,
    /// Extra headers, `(name, value)`.
    pub headers: Vec<(String, String)>,
    /// `--base-url` and `--endpoint` as given, when they differ from the config's redacted
    /// forms (userinfo, query parameters): requests go here, nothing shows it.
    pub base_url: Option<String>,
    pub endpoint: Option<String>,
}

/// Installs the TLS crypto provider once (reqwest is built without one to avoid C toolchains).
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Sends requests to one server and records what happens.
pub struct Client {
    http: reqwest::Client,
    /// The lean transport for measured requests when the URL is plain `http://` (`http1`);
    /// `None`: they go through reqwest (HTTPS).
    lean: Option<http1::Endpoint>,
    /// Where measured requests go (may hold credentials: never shown).
    target: String,
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
}

/// Each request's id: the run's tag and the request's number (`w` before a warm-up's), sent in
/// the header `name` (lowercase).
struct RequestIds {
    name: String,
    tag: String,
    /// Each request's `traceparent` is sent too (`RunConfig::propagate_trace`).
    propagate: bool,
}

impl RequestIds {
    /// A tag for this client's ids: `sb` and 12 hex digits from the time and the process, so
    /// the ids of two runs (or two shards) sent to one server do not meet.
    fn new(name: &str, propagate: bool) -> RequestIds {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mixed = nanos ^ u64::from(std::process::id()).rotate_left(40);
        RequestIds {
            name: name.to_ascii_lowercase(),
            tag: format!("sb{:012x}", mixed & 0xffff_ffff_ffff),
            propagate,
        }
    }

    /// The request's own header lines, each ending in CRLF: its id, and its `traceparent`
    /// when asked for.
    fn head_lines(&self, id: &str) -> String {
        let mut lines = format!("{}: {id}\r\n", self.name);
        if self.propagate {
            lines.push_str("traceparent: ");
            lines.push_str(&crate::measure::traceid::traceparent(id));
            lines.push_str("\r\n");
        }
        lines
    }

    fn id(&self, spec: &RequestSpec) -> String {
        let w = if spec.warmup { "w" } else { "" };
        format!("{}-{w}{}", self.tag, spec.id)
    }
}

/// The longest server request id a record keeps.
const MAX_SERVER_ID: usize = 128;

/// A request id the server sent, when it is plausible: 1 to [`MAX_SERVER_ID`] visible ASCII
/// characters (anything else is not kept: it cannot be a request id, and it would reach a
/// terminal or a spreadsheet).
fn server_id(value: &str) -> Option<String> {
    let plausible = !value.is_empty()
        && value.len() <= MAX_SERVER_ID
        && value.bytes().all(|b| b.is_ascii_graphic());
    plausible.then(|| value.to_string())
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
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .no_proxy()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(usize::MAX)
            .connect_timeout(cfg.load.connect_timeout())
            // A redirect is a failed request naming its target: following it would send the
            // API key and custom headers to wherever the server points (issue 14).
            .redirect(reqwest::redirect::Policy::none())
            .tls_danger_accept_invalid_certs(cfg.insecure)
            .build()
            .map_err(|e| ClientError::Build(e.to_string()))?;
        let base_url = secrets.base_url.clone().unwrap_or(cfg.base_url.clone());
        let url = join_url(
            &base_url,
            secrets.endpoint.as_deref().unwrap_or(&cfg.endpoint),
        );
        Ok(Arc::new(Client {
            chat_template,
            http,
            lean: http1::Endpoint::new(&url, &lean_headers, cfg.load.connect_timeout())
                .map(|e| e.echoing(ids.as_ref().map(|i| i.name.as_str()))),
            ids,
            url: redact_url(&url),
            target: url,
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
            scrub: scrub::Scrubber::new(
                (secrets.api_key.iter().map(String::as_str))
                    .chain(secrets.headers.iter().map(|(_, v)| v.as_str())),
                [&secrets.base_url, &secrets.endpoint]
                    .into_iter()
                    .flatten()
                    .map(String::as_str),
            ),
        }))
    }

    /// The chat template a conversation's history is rendered with (an API that takes a
    /// prompt, and a tokenizer that carries one); `None`: the plain format.
    pub fn chat_template(&self) -> Option<&ChatTemplate> {
        self.chat_template.as_deref()
    }

    /// GETs `path` on the server's base URL and parses JSON; `None` on any failure. Used for
    /// optional side channels (the simulator's `/sim/stats`), never for measured requests.
    pub async fn get_json(&self, base_url: &str, path: &str) -> Option<serde_json::Value> {
        let resp = self.get(&join_url(base_url, path)).await?;
        if !resp.status().is_success() {
            return None;
        }
        let (bytes, over) = read_at_most(resp, SIDE_ANSWER_MAX).await.ok()?;
        if over {
            return None;
        }
        let mut answer = serde_json::from_slice(&bytes).ok()?;
        self.scrub.json(&mut answer);
        Some(answer)
    }

    /// The `Date` header of `GET base_url` (any status), for the clock-offset probe (`shard`).
    pub async fn get_date(&self, base_url: &str) -> Option<std::time::SystemTime> {
        let resp = self.get(base_url).await?;
        let date = resp.headers().get(reqwest::header::DATE)?.to_str().ok()?;
        httpdate::parse_http_date(date).ok()
    }

    /// A side-channel GET with a 2 s limit (any status); `None` when it failed.
    async fn get(&self, url: &str) -> Option<reqwest::Response> {
        let req = self.http.get(url).timeout(Duration::from_secs(2));
        req.send().await.ok()
    }

    /// POSTs a JSON body to `path` on the server's base URL and parses the JSON answer. Used
    /// for side channels (the server's `/tokenize`), never for measured requests.
    pub async fn post_json(
        &self,
        base_url: &str,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, SideChannelError> {
        let url = join_url(base_url, path);
        let shown = redact_url(&url);
        let failed = |e: reqwest::Error| SideChannelError::Send {
            url: shown.clone(),
            why: describe(&e.without_url()),
        };
        // A `Value` always serializes.
        let body = serde_json::to_vec(body).unwrap_or_default();
        let body_len = body.len();
        let req = self.http.post(&url).body(body);
        let resp = (req.timeout(Duration::from_secs(60)).send().await).map_err(failed)?;
        let status = resp.status();
        // An answer is proportional to what was asked (a token id per prompt byte at most).
        let max = SIDE_ANSWER_MAX.max(body_len.saturating_mul(64));
        let (bytes, over) = read_at_most(resp, max).await.map_err(failed)?;
        if over && status.is_success() {
            return Err(SideChannelError::TooLong { url: shown, max });
        }
        if !status.is_success() {
            // Secrets out before the excerpt is cut, so none is left half-hidden.
            let text = String::from_utf8_lossy(&bytes);
            return Err(SideChannelError::Status {
                url: shown,
                status: status.to_string(),
                excerpt: self.scrub.text(&text).chars().take(200).collect(),
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| SideChannelError::NotJson {
            url: shown,
            why: e.to_string(),
        })
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

    /// The server's base URL as given (it may hold credentials: send to it, never show it),
    /// for the side channels' `base_url`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Sends one request, streams the answer, and returns its record. `scheduled_ns` is when
    /// the load schedule wanted it sent. Cancelling `cancel` ends it as `cancelled`.
    pub async fn send(
        &self,
        spec: &RequestSpec,
        scheduled_ns: u64,
        clock: &Clock,
        cancel: &CancellationToken,
    ) -> RequestRecord {
        (self.send_within(spec, scheduled_ns, clock, cancel, None, None)).await
    }

    /// As [`Client::send`], with `limit` in place of the request timeout where given (the
    /// pre-flight request's shorter one), calling `written` when the request's first byte is
    /// about to be written (over reqwest: handed to it): again for a request resent on a new
    /// connection, never for a failed connect (the driver's live `sent` counter).
    pub async fn send_within(
        &self,
        spec: &RequestSpec,
        scheduled_ns: u64,
        clock: &Clock,
        cancel: &CancellationToken,
        limit: Option<Duration>,
        written: Written<'_>,
    ) -> RequestRecord {
        let limit = limit.unwrap_or(self.timeout);
        let asked = BodySpec {
            model: spec.model.as_deref().unwrap_or(&self.model),
            prompt: &spec.prompt,
            batch: &spec.batch,
            messages: spec.messages.as_ref(),
            parts: &spec.parts,
            max_tokens: spec.output_len,
            ignore_eos: self.ignore_eos,
        };
        let built = self.api.body(&asked);
        let mut body = match built {
            Ok(body) => body,
            Err((kind, why)) => return unsent(spec, scheduled_ns, clock.now_ns(), kind, why),
        };
        if let Some(s) = &self.structured {
            if let Err((kind, why)) = self.api.structured(&mut body, s) {
                return unsent(spec, scheduled_ns, clock.now_ns(), kind, why);
            }
        }
        if let Some(extra) = &self.extra_body {
            api::merge_json(&mut body, extra);
        }
        if let (Some(p), Some(body)) = (
            spec.class.as_ref().and_then(|c| c.priority),
            body.as_object_mut(),
        ) {
            body.insert("priority".into(), p.into());
        }
        let header = spec.class.as_ref().and_then(|c| c.header.as_ref());
        let max_tokens = self.api.max_tokens(&body);
        let request = match self.api.encode(&body, &asked) {
            Ok(request) => request,
            Err((kind, why)) => return unsent(spec, scheduled_ns, clock.now_ns(), kind, why),
        };
        // The body bounds the prompt's tokens, unless the prompt has parts that are not text.
        let text_only = spec.parts.is_empty()
            && !(spec.messages.as_ref()).is_some_and(usage::has_non_text_parts);
        let bounds = Bounds {
            max_tokens,
            prompt_bytes: text_only.then(|| self.api.prompt_bytes(&body, request.len() as u64)),
            cached_within_prompt: self.api.cached_within_prompt(),
        };
        // A conversation's turn keeps its reply: the next turn's history holds it.
        let save_text = self.save_text || spec.turn.is_some();
        let saved = save_text.then_some(self.limits.max_text);
        let mut state = Stream::new(
            spec.id,
            spec.warmup,
            scheduled_ns,
            (spec.input_len, spec.output_len),
            saved,
            self.tokenizer.as_ref(),
            bounds,
        );
        state.rec.designed_cached_tokens = spec.designed_cached;
        state.rec.adapter = spec.model.clone();
        state.rec.class = spec.class.as_ref().map(|c| c.index);
        state.rec.request_id = self.ids.as_ref().map(|ids| ids.id(spec));
        if let Some(s) = &self.structured {
            state.check_with(Checker::new(s));
        }
        // Media: the parts given, or a dataset's messages' own image parts (issue 25 §3).
        let images = (spec
            .parts
            .iter()
            .filter(|p| matches!(p, Part::Image { .. }))
            .count())
            + spec.messages.as_ref().map_or(0, api::image_parts);
        if !spec.parts.is_empty() || images > 0 {
            state.rec.images = u32::try_from(images).ok().filter(|n| *n > 0);
            let videos = (spec.parts.iter()).filter(|p| matches!(p, Part::Video { .. }));
            state.rec.videos = u32::try_from(videos.count()).ok().filter(|n| *n > 0);
            let clips = (spec.parts.iter()).filter(|p| matches!(p, Part::Audio { .. }));
            state.rec.audio_clips = u32::try_from(clips.count()).ok().filter(|n| *n > 0);
            state.rec.audio_duration_ns = audio_duration_ns(&spec.parts);
            state.rec.request_bytes = Some(request.len() as u64);
        }
        // A whole answer is judged against the body as sent; a streamed one never reads it
        // again, so it is freed before the wait (the prompt's text, once more, per stream).
        let body = match self.api.answer() {
            Answer::Whole(api) => {
                state.answered_whole(api.inputs(&body));
                body
            }
            Answer::Streamed(_) => {
                drop(body);
                serde_json::Value::Null
            }
        };
        // A lean response read to the server's final event, for its connection's reuse.
        let mut finished = None;
        state.rec.sent_ns = clock.now_ns();
        let sent_at = clock.instant_at(state.rec.sent_ns);
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => Outcome::failed(FailureKind::Cancelled, "run stopped while the request was in flight"),
            o = self.exchange((request, &body, header), &mut state, clock, &mut finished, (sent_at, limit, written)) => o,
        };
        let end_ns = clock.now_ns();
        // Everything after the last chunk's timestamp (counting the text with the tokenizer,
        // the record's hand-over, the next request that its freed slot lets in) waits until the
        // tasks already woken have run: when many streams end in the same instant, their last
        // chunks are then all timestamped before any of that work (it made the last chunk's
        // timestamp 0.2-0.5 ms late on average at 64 streams; docs/performance.md). Over the
        // lean transport the timestamps are kernel arrivals and do not depend on this; the
        // yield (one task poll per request) is kept for reqwest's user-space timestamps.
        tokio::task::yield_now().await;
        if let (Some(lean), Some(response)) = (&self.lean, finished) {
            if let Some(conn) = http1::Response::into_reusable(response) {
                lean.put_back(conn);
            }
        }
        let time_scale = f64::from_bits(self.time_scale.load(Ordering::Relaxed));
        let mut record = state.finish(outcome, end_ns, time_scale);
        if !save_text {
            record.generated_text = None;
        }
        // Whatever the server sent that the record keeps, without the user's secrets.
        if let Outcome::Failed { message, .. } = &mut record.outcome {
            self.scrub.string(message);
        }
        for text in [&mut record.generated_text, &mut record.server_request_id] {
            text.iter_mut().for_each(|t| self.scrub.string(t));
        }
        if let Some(why) = record.output_check.as_mut().and_then(|c| c.why.as_mut()) {
            self.scrub.string(why);
        }
        for v in [
            &mut record.server_timings,
            &mut record.server_request_metrics,
        ] {
            v.iter_mut().for_each(|v| self.scrub.json(v));
        }
        record
    }
}

/// The record of a request whose body could not be built (it holds what its API cannot
/// carry): failed with `kind` and `why` at `now_ns`, never sent.
fn unsent(
    spec: &RequestSpec,
    scheduled_ns: u64,
    now_ns: u64,
    kind: FailureKind,
    why: String,
) -> RequestRecord {
    RequestRecord {
        id: spec.id,
        warmup: spec.warmup,
        scheduled_ns,
        sent_ns: now_ns,
        end_ns: now_ns,
        outcome: Outcome::failed(kind, why),
        input_len_requested: spec.input_len,
        output_len_requested: Some(spec.output_len),
        designed_cached_tokens: spec.designed_cached,
        adapter: spec.model.clone(),
        class: spec.class.as_ref().map(|c| c.index),
        ..RequestRecord::default()
    }
}

/// The audio a request's parts carry, ns (their clips' durations summed); `None` without a
/// clip of known duration.
fn audio_duration_ns(parts: &[Part]) -> Option<u64> {
    let clip = |p: &Part| match p {
        Part::Audio { duration, .. } => {
            Some(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX))
        }
        Part::Image { .. } | Part::Video { .. } => None,
    };
    let ns: u64 = parts.iter().filter_map(clip).fold(0, u64::saturating_add);
    (ns > 0).then_some(ns)
}

/// The most a side channel's JSON answer (`/sim/info`, `/sim/stats`, a small `/tokenize`)
/// may hold; a larger one is refused rather than read whole.
const SIDE_ANSWER_MAX: usize = 1 << 20;

#[cfg(all(test, target_os = "linux"))]
mod ids_tests;
#[cfg(all(test, target_os = "linux"))]
mod tests;
