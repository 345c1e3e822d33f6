//! One request in, one [`RequestRecord`] out: HTTP over a real socket, streaming, timestamps.
//!
//! [`Client::send`] never fails: whatever the server does (refuses, errors, stalls, cuts the
//! stream, sends garbage) ends up in the record's `outcome`. It does not aggregate, print,
//! or retry. The wire formats live in [`api`]; the SSE framing in `crate::measure::sse`. Measured
//! requests to `http://` servers go over the lean HTTP/1.1 transport in `http1`, others over
//! reqwest; both feed one body-reading loop (`Body`).
//!
//! Timestamps: `sent_ns` is the user-space time just before the request is handed to the
//! connection. Every output chunk's time is the arrival of the read that completed it, so events
//! read together share one timestamp. Over the lean transport that arrival is the kernel's
//! receive stamp of the read's newest byte (`crate::measure::rxtime`; the read time where the kernel gave
//! none), so a busy or descheduled client does not delay it; over reqwest (HTTPS) it is the time
//! the read returned in user space.

pub mod api;
mod http1;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::RunConfig;
use crate::measure::clock::Clock;
use crate::measure::error::{describe, ClientError};
use crate::measure::record::{FailureKind, Outcome, RequestRecord, TokenSource};
use crate::measure::sse::SseParser;
use crate::tokenizer::Tokenizer;
use api::{Api, BodySpec, EventError};

/// One request to send, as built by the workload.
#[derive(Clone, Debug)]
pub struct RequestSpec {
    pub id: u64,
    pub prompt: String,
    /// Chat messages, when the dataset gave them (chat API only; others send `prompt`).
    pub messages: Option<serde_json::Value>,
    /// Prompt length under servebench's tokenizer (or as requested), when known.
    pub input_len: Option<u64>,
    pub output_len: u64,
    pub warmup: bool,
}

/// Options that are not in the saved config because they can hold secrets.
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    pub api_key: Option<String>,
    /// Extra headers, `(name, value)`.
    pub headers: Vec<(String, String)>,
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
    url: String,
    api: Box<dyn Api>,
    model: String,
    ignore_eos: bool,
    extra_body: Option<serde_json::Value>,
    timeout: Duration,
    save_text: bool,
    /// Counts every answer's text, next to the server's own count.
    tokenizer: Option<Tokenizer>,
}

impl Client {
    pub fn new(
        cfg: &RunConfig,
        secrets: &Secrets,
        tokenizer: Option<Tokenizer>,
    ) -> Result<Arc<Client>, ClientError> {
        install_crypto_provider();
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = &secrets.api_key {
            let v = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| ClientError("the API key is not a valid header value".into()))?;
            headers.insert(AUTHORIZATION, v);
        }
        for (k, v) in &secrets.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| ClientError(format!("invalid header name '{k}'")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|_| ClientError(format!("invalid value for header '{k}'")))?;
            headers.insert(name, value);
        }
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .no_proxy()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(usize::MAX)
            .connect_timeout(Duration::from_secs(30))
            .tls_danger_accept_invalid_certs(cfg.insecure)
            .build()
            .map_err(|e| ClientError(e.to_string()))?;
        // The same headers for the lean transport (validated above); a user's header replaces
        // the default of the same name, as in reqwest's default-header map.
        let user = |name: &str| {
            secrets
                .headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case(name))
        };
        let mut lean_headers = Vec::new();
        if let Some(key) = secrets.api_key.as_ref().filter(|_| !user("authorization")) {
            lean_headers.push(("authorization".to_string(), format!("Bearer {key}")));
        }
        lean_headers.extend(secrets.headers.iter().cloned());
        let url = cfg.url();
        Ok(Arc::new(Client {
            http,
            lean: http1::Endpoint::new(&url, &lean_headers),
            url,
            api: api::for_backend(cfg.backend),
            model: cfg.model.clone(),
            ignore_eos: cfg.ignore_eos,
            extra_body: cfg.extra_body.clone(),
            timeout: cfg.load.timeout(),
            save_text: cfg.save_generated_text,
            tokenizer,
        }))
    }

    /// GETs `path` on the server's base URL and parses JSON; `None` on any failure. Used for
    /// optional side channels (the simulator's `/sim/stats`), never for measured requests.
    pub async fn get_json(&self, base_url: &str, path: &str) -> Option<serde_json::Value> {
        let resp = self
            .get(&format!("{}{path}", base_url.trim_end_matches('/')))
            .await?;
        if !resp.status().is_success() {
            return None;
        }
        serde_json::from_slice(&resp.bytes().await.ok()?).ok()
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
    ) -> Result<serde_json::Value, String> {
        let url = format!("{}{path}", base_url.trim_end_matches('/'));
        let body = serde_json::to_vec(body).map_err(|e| e.to_string())?;
        let resp = self
            .http
            .post(&url)
            .body(body)
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .map_err(|e| format!("POST {url}: {}", describe(&e)))?;
        let status = resp.status();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| format!("POST {url}: {}", describe(&e)))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            return Err(format!(
                "POST {url}: HTTP {status}: {}",
                text.chars().take(200).collect::<String>()
            ));
        }
        serde_json::from_slice(&bytes).map_err(|e| format!("POST {url}: not JSON: {e}"))
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
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
        let mut body = self.api.body(&BodySpec {
            model: &self.model,
            prompt: &spec.prompt,
            messages: spec.messages.as_ref(),
            max_tokens: spec.output_len,
            ignore_eos: self.ignore_eos,
        });
        if let Some(extra) = &self.extra_body {
            api::merge_json(&mut body, extra);
        }
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let keep_text = self.save_text || self.tokenizer.is_some();
        let mut state = Stream::new(spec, scheduled_ns, keep_text);
        // A lean response read to the server's final event, for its connection's reuse.
        let mut finished = None;
        state.rec.sent_ns = clock.now_ns();
        let deadline = clock.instant_at(state.rec.sent_ns) + self.timeout;
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => Outcome::failed(FailureKind::Cancelled, "run stopped while the request was in flight"),
            () = tokio::time::sleep_until(deadline) => Outcome::failed(
                FailureKind::Timeout,
                format!("no complete answer within {:.1} s", self.timeout.as_secs_f64()),
            ),
            o = self.exchange(body, &mut state, clock, &mut finished) => o,
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
        let mut record = state.finish(outcome, self.tokenizer.as_ref());
        record.end_ns = end_ns;
        if !self.save_text {
            record.generated_text = None;
        }
        record
    }

    /// Sends the request and reads its response; a lean response that reached the server's
    /// final event is left in `finished`.
    async fn exchange(
        &self,
        request: Vec<u8>,
        state: &mut Stream,
        clock: &Clock,
        finished: &mut Option<http1::Response>,
    ) -> Outcome {
        let mut body = match &self.lean {
            Some(lean) => match lean.post(&request, &mut state.rec.connection_retries).await {
                Ok(r) => Body::Lean(r),
                Err(e) => return lean_failure(e),
            },
            None => match self.send_reqwest(request).await {
                Ok(r) => Body::Reqwest(r, Bytes::new()),
                Err(e) => return Outcome::failed(classify(&e), describe(&e)),
            },
        };
        let status = body.status();
        state.rec.http_status = Some(status);
        if !(200..300).contains(&status) {
            let text = body.error_text().await;
            let excerpt: String = text.chars().take(200).collect();
            // As reqwest's status shows: the code and its standard reason.
            let status = reqwest::StatusCode::from_u16(status)
                .map_or_else(|_| status.to_string(), |s| s.to_string());
            return Outcome::failed(
                FailureKind::HttpStatus,
                format!("HTTP {status}: {}", excerpt.trim()),
            );
        }
        let mut parser = SseParser::new();
        let api = self.api.as_ref();
        loop {
            match body.next_chunk().await {
                Ok(Some((bytes, arrived))) => {
                    let t = arrived.map_or_else(|| clock.now_ns(), |at| clock.ns_at(at));
                    let fed = parser.feed(bytes, &mut |name, data| state.event(api, name, data, t));
                    if let Err((kind, msg)) = fed {
                        return Outcome::failed(kind, msg);
                    }
                    if state.done {
                        body.keep(finished);
                        return Outcome::Ok;
                    }
                }
                Ok(None) => {
                    let t = clock.now_ns();
                    let truncated =
                        match parser.finish(&mut |name, data| state.event(api, name, data, t)) {
                            Ok(truncated) => truncated,
                            Err((kind, msg)) => return Outcome::failed(kind, msg),
                        };
                    return if state.done {
                        body.keep(finished);
                        Outcome::Ok
                    } else if truncated {
                        Outcome::failed(
                            FailureKind::StreamBroken,
                            "stream ended in the middle of an event",
                        )
                    } else {
                        Outcome::failed(
                            FailureKind::StreamBroken,
                            "stream ended before the server signalled completion",
                        )
                    };
                }
                Err(failure) => return failure,
            }
        }
    }

    /// The request through reqwest (HTTPS). Never sent again here: hyper-util already resends
    /// a request that never left (its connection found closed before the request was
    /// written), and one that did may have reached the server.
    async fn send_reqwest(&self, body: Vec<u8>) -> Result<reqwest::Response, reqwest::Error> {
        self.http.post(&self.url).body(body).send().await
    }
}

/// A response body being read, from either transport: one read loop for both.
enum Body {
    Lean(http1::Response),
    /// The response and the piece last read from it.
    Reqwest(reqwest::Response, Bytes),
}

impl Body {
    fn status(&self) -> u16 {
        match self {
            Body::Lean(r) => r.status,
            Body::Reqwest(r, _) => r.status().as_u16(),
        }
    }

    /// The next piece of the body as read, with when it arrived where the transport knows
    /// (the lean one); `None` at its end; a failure as the outcome.
    async fn next_chunk(&mut self) -> Result<Option<(&[u8], Option<Instant>)>, Outcome> {
        match self {
            Body::Lean(r) => match r.next_chunk().await {
                Ok(piece) => Ok(piece.map(|(bytes, at)| (bytes, Some(at)))),
                Err(e) => Err(lean_failure(e)),
            },
            Body::Reqwest(r, last) => match r.chunk().await {
                Ok(Some(bytes)) => {
                    *last = bytes;
                    Ok(Some((&last[..], None)))
                }
                Ok(None) => Ok(None),
                Err(e) => {
                    let kind = if e.is_timeout() {
                        FailureKind::Timeout
                    } else {
                        FailureKind::StreamBroken
                    };
                    Err(Outcome::failed(
                        kind,
                        format!("stream broken: {}", describe(&e)),
                    ))
                }
            },
        }
    }

    /// An error response's body, as text.
    async fn error_text(self) -> String {
        match self {
            Body::Lean(mut r) => String::from_utf8_lossy(&r.error_body().await).into_owned(),
            Body::Reqwest(r, _) => r.text().await.unwrap_or_default(),
        }
    }

    /// Leaves a lean response in `slot` (its connection may serve another request).
    fn keep(self, slot: &mut Option<http1::Response>) {
        if let Body::Lean(r) = self {
            *slot = Some(r);
        }
    }
}

/// The outcome of a lean-transport failure. A connection closed before any response byte (on a
/// fresh connection) counts as a broken stream: the server cut the exchange off, as in a
/// disconnect mid-body. Malformed HTTP framing is a broken stream too, not `malformed_stream`,
/// which is about the SSE events carried inside a well-framed body (reqwest classed chunked
/// coding errors as body errors, which were `stream_broken` as well).
fn lean_failure(e: http1::Error) -> Outcome {
    match e {
        http1::Error::Connect(msg) => Outcome::failed(FailureKind::Connect, msg),
        http1::Error::Closed(msg) | http1::Error::Broken(msg) => {
            Outcome::failed(FailureKind::StreamBroken, format!("stream broken: {msg}"))
        }
    }
}

/// Most chunk timestamps reserved per request before the stream starts (8 KiB); longer
/// answers grow the vector as usual.
const MAX_RESERVED_CHUNKS: u64 = 1024;

/// A request's state while its stream is read.
struct Stream {
    rec: RequestRecord,
    chunk_tokens: Vec<u32>,
    all_chunk_tokens_known: bool,
    usage_prompt: Option<u64>,
    last_cumulative: Option<u64>,
    text: Option<String>,
    done: bool,
}

impl Stream {
    fn new(spec: &RequestSpec, scheduled_ns: u64, save_text: bool) -> Self {
        // Room for one timestamp per requested token up front (servers send at most one chunk
        // per token), so the per-chunk push does not reallocate and copy; capped, so a huge
        // `max_tokens` does not reserve memory the answer may never use.
        let expected = spec.output_len.clamp(1, MAX_RESERVED_CHUNKS) as usize;
        Stream {
            rec: RequestRecord {
                id: spec.id,
                warmup: spec.warmup,
                scheduled_ns,
                input_len_requested: spec.input_len,
                output_len_requested: Some(spec.output_len),
                chunk_ns: Vec::with_capacity(expected),
                ..RequestRecord::default()
            },
            chunk_tokens: Vec::new(),
            all_chunk_tokens_known: true,
            usage_prompt: None,
            last_cumulative: None,
            text: save_text.then(String::new),
            done: false,
        }
    }

    fn event(
        &mut self,
        api: &dyn Api,
        name: Option<&str>,
        data: &str,
        t: u64,
    ) -> Result<(), EventError> {
        if self.done {
            return Ok(()); // anything after the terminator is ignored
        }
        let p = api.parse(name, data)?;
        if p.has_output() {
            self.rec.chunk_ns.push(t);
            if !p.reasoning.is_empty() {
                self.rec.first_reasoning_ns.get_or_insert(t);
            }
            if !p.content.is_empty() {
                self.rec.first_answer_ns.get_or_insert(t);
            }
            let tokens = p.tokens.or_else(|| {
                let cum = p.cumulative_completion_tokens?;
                let prev = self.last_cumulative.unwrap_or(0);
                Some(cum.saturating_sub(prev) as u32)
            });
            match tokens {
                Some(n) => self.chunk_tokens.push(n),
                None => self.all_chunk_tokens_known = false,
            }
            if let Some(text) = &mut self.text {
                text.push_str(&p.reasoning);
                text.push_str(&p.content);
            }
        }
        if let Some(c) = p.cumulative_completion_tokens {
            self.last_cumulative = Some(c);
        }
        if let Some(u) = p.usage {
            if u.completion_tokens.is_some() {
                self.rec.usage_output_tokens = u.completion_tokens;
            }
            if u.prompt_tokens.is_some() {
                self.usage_prompt = u.prompt_tokens;
            }
        }
        if p.timings.is_some() {
            self.rec.server_timings = p.timings;
        }
        self.done |= p.done;
        Ok(())
    }

    fn finish(mut self, mut outcome: Outcome, tokenizer: Option<&Tokenizer>) -> RequestRecord {
        let r = &mut self.rec;
        if let (Some(tok), Some(text)) = (tokenizer, &self.text) {
            r.tokenizer_output_tokens = Some(tok.count(text) as u64);
        }
        if outcome.is_ok() && r.chunk_ns.is_empty() {
            outcome = Outcome::failed(FailureKind::NoOutput, "the stream carried no output token");
        }
        r.outcome = outcome;
        if self.all_chunk_tokens_known && !self.chunk_tokens.is_empty() {
            r.chunk_tokens = Some(self.chunk_tokens);
        }
        // N from one source: the server's count, else the model's tokenizer, else the chunks
        // (a labelled fallback).
        (r.output_tokens, r.output_tokens_source) =
            match (r.usage_output_tokens, r.tokenizer_output_tokens) {
                (Some(n), _) => (Some(n), Some(TokenSource::ServerUsage)),
                (None, Some(n)) => (Some(n), Some(TokenSource::Tokenizer)),
                (None, None) => {
                    let n = r
                        .chunk_tokens
                        .as_ref()
                        .map_or(r.chunk_ns.len() as u64, |c| {
                            c.iter().map(|&x| x as u64).sum()
                        });
                    (Some(n), Some(TokenSource::ChunkCount))
                }
            };
        (r.prompt_tokens, r.prompt_tokens_source) = match (self.usage_prompt, r.input_len_requested)
        {
            (Some(n), _) => (Some(n), Some(TokenSource::ServerUsage)),
            (None, Some(n)) => (Some(n), Some(TokenSource::Requested)),
            (None, None) => (None, None),
        };
        r.generated_text = self.text;
        self.rec
    }
}

fn classify(e: &reqwest::Error) -> FailureKind {
    if e.is_connect() {
        FailureKind::Connect
    } else if e.is_timeout() {
        FailureKind::Timeout
    } else if e.is_body() || e.is_decode() {
        FailureKind::StreamBroken
    } else {
        FailureKind::Other
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Answers two requests on one kept-alive connection with an SSE stream of three output
    /// events, each written `GAP` after the previous one; sends the instant before each write.
    fn serve_slowly(listener: std::net::TcpListener, sent: std::sync::mpsc::Sender<Vec<Instant>>) {
        const GAP: Duration = Duration::from_millis(60);
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_nodelay(true).unwrap();
        for _ in 0..2 {
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            // The request: a head and a body of its content-length.
            loop {
                let n = conn.read(&mut buf).unwrap();
                assert!(n > 0, "request cut short");
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got).to_lowercase();
                if let Some(head_end) = text.find("\r\n\r\n") {
                    let len: usize = text[..head_end]
                        .split("content-length:")
                        .nth(1)
                        .and_then(|v| v.lines().next()?.trim().parse().ok())
                        .unwrap();
                    if got.len() >= head_end + 4 + len {
                        break;
                    }
                }
            }
            conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n").unwrap();
            let mut times = Vec::new();
            for i in 0..3 {
                std::thread::sleep(GAP);
                let event = format!("data: {{\"choices\":[{{\"text\":\"t{i}\"}}]}}\n\n");
                let mut chunk = format!("{:x}\r\n{event}\r\n", event.len());
                if i == 2 {
                    chunk.push_str("e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
                }
                times.push(Instant::now());
                conn.write_all(chunk.as_bytes()).unwrap();
            }
            sent.send(times).unwrap();
        }
    }

    /// A chunk's time is when it reached the host, not when the client got round to reading
    /// it: the only runtime thread is blocked from 5 to 95 ms after the request, the first
    /// chunk is written at 60 ms (the next at 120) and still timestamped within 3 ms of its
    /// write (a read time would be ~35 ms late).
    #[test]
    fn lean_chunk_times_are_kernel_arrivals() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let cfg = RunConfig {
            base_url: format!("http://{}", listener.local_addr().unwrap()),
            ..RunConfig::default()
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let server = std::thread::spawn(move || serve_slowly(listener, tx));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let clock = Clock::start();
        let (records, blocked) = rt.block_on(async {
            let client = Client::new(&cfg, &Secrets::default(), None).unwrap();
            assert!(client.lean.is_some());
            let spec = RequestSpec {
                id: 0,
                prompt: "hi".into(),
                messages: None,
                input_len: None,
                output_len: 3,
                warmup: false,
            };
            let (mut records, mut blocked) = (Vec::new(), Vec::new());
            for _ in 0..2 {
                let busy = tokio::spawn(async {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    let from = Instant::now();
                    std::thread::sleep(Duration::from_millis(90));
                    (from, Instant::now())
                });
                let cancel = CancellationToken::new();
                records.push(client.send(&spec, 0, &clock, &cancel).await);
                blocked.push(busy.await.unwrap());
            }
            (records, blocked)
        });
        server.join().unwrap();
        // The first request may meet the kernel before it stamps (rxtime's docs); the second,
        // on the same kept-alive connection, is the one checked.
        let writes: Vec<Vec<Instant>> = rx.iter().collect();
        let (r, written) = (&records[1], &writes[1]);
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        assert_eq!(r.connection_retries, 0);
        assert_eq!(r.chunk_ns.len(), 3);
        let ms = |ns: u64| ns as f64 / 1e6;
        for (k, (&t, &w)) in r.chunk_ns.iter().zip(written).enumerate() {
            let late = ms(t) - ms(clock.ns_at(w));
            assert!(
                (-0.5..3.0).contains(&late),
                "chunk {k} timestamped {late:+.2} ms after its write"
            );
        }
        // The check could fail: the first chunk came while the only thread was blocked, well
        // before it was free to read it.
        let (from, to) = blocked[1];
        assert!(from < written[0] && to > written[0] + Duration::from_millis(10));
    }
}
