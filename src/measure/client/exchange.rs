//! One exchange with the server, on either transport: the request written, the response's
//! head judged (an error status is read to its message, a redirect named, never followed),
//! and its body read in the shape its API answers in: events fed to the request's state as
//! they arrive ([`Answer::Streamed`]), or one JSON document read to its end, bounded by
//! `--max-answer-size`, and judged whole ([`Answer::Whole`]). Every wait is bounded (module
//! doc of `super`); nothing here builds a body or finishes a record.

use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::Response;
use serde_json::Value;
use tokio::time::{Instant, Sleep};

use super::api::{Answer, Failure, Whole};
use super::body::{lean_failure, Body};
use super::ids::{server_id, RequestIds};
use super::spec::Written;
use super::stream::Stream;
use super::upload::{Taken, Timed};
use super::{http1, Client, Limits};
use crate::config::url::redact_url;
use crate::measure::clock::Clock;
use crate::measure::error::describe;
use crate::measure::record::{FailureKind, Outcome};
use crate::measure::sse::SseParser;

impl Client {
    /// Sends the request and reads its response; a lean response that reached the server's
    /// final event (or a whole answer's end) is left in `finished`. `sent` is the body as
    /// sent, which a whole answer is judged against. Every wait is bounded: the whole exchange
    /// by `limit` from `sent_at` (`timeout`), until the body's first byte by the first-byte
    /// limit, after it by the idle limit between two reads (a `stall`); one timer serves all
    /// three, moved only when it fires (not once per read), so a read polls no other timer.
    pub(super) async fn exchange(
        &self,
        (request, sent, header): (Vec<u8>, &Value, Option<&(String, String)>),
        state: &mut Stream<'_>,
        clock: &Clock,
        finished: &mut Option<http1::Response>,
        (sent_at, limit, written): (Instant, Duration, Written<'_>),
    ) -> Outcome {
        let limits = self.limits;
        let end = sent_at + limit;
        let first_byte = sent_at + limits.first_byte;
        let mut wait = std::pin::pin!(tokio::time::sleep_until(first_byte.min(end)));
        let opened = tokio::select! {
            biased;
            o = self.open((request, header), written, state) => o,
            () = &mut wait => return if first_byte < end { no_first_byte(limits.first_byte) } else { timed_out(limit) },
        };
        let mut body = match opened {
            Ok((body, taken)) => {
                // A request with media over reqwest: its upload, as its body's pieces were
                // taken (`upload.rs`).
                if let Some(t) = taken {
                    let rec = &mut state.rec;
                    rec.upload_start_ns = t.first.get().map(|&i| clock.ns_at(i));
                    rec.upload_end_ns = t.last.get().map(|&i| clock.ns_at(i));
                }
                body
            }
            Err(failure) => return failure,
        };
        self.note_head(&body, state, clock);
        let status = body.status();
        state.rec.http_status = Some(status);
        if !(200..300).contains(&status) {
            return Box::pin(self.error_status(body, status, end)).await;
        }
        let api = match self.api.answer() {
            Answer::Streamed(api) => api,
            Answer::Whole(api) => {
                let bounds = (end, limit);
                let read = (body, wait.as_mut(), finished);
                return Box::pin(self.read_whole(api, sent, read, state, clock, bounds)).await;
            }
        };
        let mut parser = SseParser::with_limit(limits.max_event);
        // The latest piece's time: an event the body's end completes arrived with it.
        let mut last_t = None;
        // Whether any event came, and the body's first bytes until one does (named when none
        // comes: a 200 that is not an event stream).
        let mut seen = NoEvent::default();
        let each = |bytes: &[u8], arrived: Option<Instant>| {
            let t = arrived.map_or_else(|| clock.now_ns(), |at| clock.ns_at(at));
            last_t = Some(t);
            seen.note(bytes);
            let fed = parser.feed(bytes, &mut |name, data| {
                seen.event = true;
                let read = state.event(api, name, data, t);
                read.map_err(|e| self.event_error(e, name, data))
            });
            if let Err((kind, msg)) = fed {
                return ControlFlow::Break(Outcome::failed(kind, msg));
            }
            if parser.too_long() {
                return ControlFlow::Break(Outcome::failed(
                    FailureKind::MalformedStream,
                    format!(
                        "an SSE line or event longer than {} bytes (--max-event-size)",
                        limits.max_event
                    ),
                ));
            }
            if state.done {
                return ControlFlow::Break(Outcome::Ok);
            }
            ControlFlow::Continue(())
        };
        if let ControlFlow::Break(outcome) =
            read_body(&mut body, wait.as_mut(), limits, (end, limit), each).await
        {
            // `Ok` only when the server's final event was read.
            if matches!(outcome, Outcome::Ok) {
                body.keep(finished);
            }
            return outcome;
        }
        // The body's clean end: its last event's bytes came with the last piece, on the
        // stream's clock.
        let t = last_t.unwrap_or_else(|| clock.now_ns());
        let fed = parser.finish(&mut |name, data| {
            seen.event = true;
            let read = state.event(api, name, data, t);
            read.map_err(|e| self.event_error(e, name, data))
        });
        if !seen.event && fed.is_ok() {
            return self.no_event_stream(&body, &seen.start);
        }
        let outcome = match fed {
            Ok(truncated) => clean_end(state, truncated),
            Err((kind, msg)) => return Outcome::failed(kind, msg),
        };
        if outcome.is_ok() {
            body.keep(finished);
        }
        outcome
    }

    /// The failure of a streamed request whose `2xx` body ended without a single event: what
    /// came instead (its content type and first bytes, without the user's secrets), so a
    /// server or proxy that does not stream (a whole JSON answer, an HTML page) is named,
    /// and the pre-flight refuses it.
    fn no_event_stream(&self, body: &Body, start: &[u8]) -> Outcome {
        let clean = |s: &str| -> String {
            let text = self.scrub.text(s);
            let cut: String = text.chars().take(NO_EVENT_EXCERPT).collect();
            cut.escape_debug().to_string()
        };
        let content_type = body
            .content_type()
            .map_or_else(|| "none".into(), |c| clean(&c));
        let came = if start.is_empty() {
            "an empty body".to_string()
        } else {
            format!(
                "a body beginning \"{}\"",
                clean(&String::from_utf8_lossy(start))
            )
        };
        Outcome::failed(
            FailureKind::MalformedStream,
            format!(
                "HTTP {} without an event stream: content-type {content_type}, {came}",
                body.status()
            ),
        )
    }

    /// Notes on the record what the response head says about the exchange: over the lean
    /// transport when the request was written, whether its connection was reused (a new
    /// one's connect timed), a media request's upload end; on either, the request id the
    /// server sent back (when plausible).
    fn note_head(&self, body: &Body, state: &mut Stream<'_>, clock: &Clock) {
        let rec = &mut state.rec;
        if let Body::Lean(r) = body {
            rec.sent_ns = clock.ns_at(r.phase.written);
            rec.connection_reused = Some(r.phase.connect.is_none());
            // A request with media: its upload's end.
            if rec.request_bytes.is_some() && r.phase.body_whole {
                rec.upload_end_ns = Some(clock.ns_at(r.phase.body_written));
            }
            if let Some((began, done)) = r.phase.connect {
                rec.connect_start_ns = Some(clock.ns_at(began));
                rec.connect_end_ns = Some(clock.ns_at(done));
            }
        }
        // With a session header the lean head's echo holds both values, one per line.
        let lean_echo = match body {
            Body::Lean(r) => r.echoed.as_deref(),
            Body::Reqwest(..) => None,
        };
        let (lean_id, lean_session) = match (lean_echo, &self.session_header) {
            (Some(e), Some(_)) => e
                .split_once('\n')
                .map_or((None, None), |(a, b)| (Some(a), Some(b))),
            (e, None) => (e, None),
            (None, Some(_)) => (None, None),
        };
        state.echoed = match (body, &self.session_header) {
            (Body::Lean(_), _) => lean_session.map(str::to_string),
            (Body::Reqwest(r, _), Some(name)) => (r.headers().get(name.as_str()))
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            (Body::Reqwest(..), None) => None,
        }
        .filter(|v| !v.is_empty() && v.len() <= MAX_SESSION_VALUE && !v.contains(['\r', '\n']));
        let rec = &mut state.rec;
        rec.server_request_id = match (body, &self.ids) {
            (Body::Lean(_), _) => lean_id.filter(|i| !i.is_empty()).and_then(server_id),
            (Body::Reqwest(r, _), Some(ids)) => (r.headers().get(ids.name.as_str()))
                .and_then(|v| v.to_str().ok())
                .and_then(server_id),
            (Body::Reqwest(..), None) => None,
        };
        rec.server_timing_headers = match body {
            Body::Lean(r) => r.timing_headers.clone(),
            Body::Reqwest(r, _) => super::server_forms::tgi_headers(
                (r.headers().iter()).map(|(k, v)| (k.as_str(), v.as_bytes())),
            ),
        };
    }

    /// Reads a whole answer to its end (at most `--max-answer-size` bytes, under the same
    /// limits as a stream) and judges it against the body as sent; its time is the arrival of
    /// the read that completed it.
    async fn read_whole(
        &self,
        api: &dyn Whole,
        sent: &Value,
        (mut body, wait, finished): (Body, Pin<&mut Sleep>, &mut Option<http1::Response>),
        state: &mut Stream<'_>,
        clock: &Clock,
        (end, limit): (Instant, Duration),
    ) -> Outcome {
        let limits = self.limits;
        let mut answer = Vec::new();
        let mut last_ns = None;
        let each = |bytes: &[u8], arrived: Option<Instant>| {
            if answer.len().saturating_add(bytes.len()) > limits.max_answer {
                return ControlFlow::Break(Outcome::failed(
                    FailureKind::MalformedAnswer,
                    format!(
                        "an answer longer than {} bytes (--max-answer-size)",
                        limits.max_answer
                    ),
                ));
            }
            answer.extend_from_slice(bytes);
            last_ns = Some(arrived.map_or_else(|| clock.now_ns(), |at| clock.ns_at(at)));
            ControlFlow::Continue(())
        };
        if let ControlFlow::Break(failure) =
            read_body(&mut body, wait, limits, (end, limit), each).await
        {
            return failure;
        }
        let t = last_ns.unwrap_or_else(|| clock.now_ns());
        match api.read(&answer, sent) {
            Ok(answered) => {
                state.whole(answered, t);
                body.keep(finished);
                Outcome::Ok
            }
            Err(e) => {
                let (kind, message) = self.answer_error(e, api, &answer, sent);
                Outcome::failed(kind, message)
            }
        }
    }

    /// An error status: its body read (to `--max-error-body`, within the idle limit) for a
    /// message, a redirect's target named (not followed), `Retry-After` quoted (not obeyed).
    async fn error_status(&self, body: Body, status: u16, end: Instant) -> Outcome {
        let limits = self.limits;
        // Secrets out of what the server sent before any excerpt is cut.
        let clean = |s: String| self.scrub.text(&s).into_owned();
        let location = body.location().map(clean);
        let retry_after = body.retry_after().map(clean);
        let read = body.error_text(limits.max_error_body);
        let until = (Instant::now() + limits.idle).min(end);
        let text = tokio::time::timeout_at(until, read)
            .await
            .unwrap_or_default();
        let excerpt: String = self.scrub.text(&text).chars().take(200).collect();
        // As reqwest's status shows: the code and its standard reason.
        let status = reqwest::StatusCode::from_u16(status)
            .map_or_else(|_| status.to_string(), |s| s.to_string());
        // No redirect is followed (it would carry the API key and headers elsewhere).
        if let Some(target) = location {
            return Outcome::failed(
                FailureKind::HttpStatus,
                format!(
                    "HTTP {status}: redirect to {} not followed (servebench follows no redirect: give the final URL)",
                    redact_url(&target)
                ),
            );
        }
        // Not retried, and not waited for: the load is the load asked for, and a server
        // that sheds part of it has that counted against it.
        let advice = retry_after
            .map(|v| {
                format!(
                    " (Retry-After: {}, not retried)",
                    v.chars().take(40).collect::<String>()
                )
            })
            .unwrap_or_default();
        Outcome::failed(
            FailureKind::HttpStatus,
            format!("HTTP {status}{advice}: {}", excerpt.trim()),
        )
    }

    /// An event's failure, its excerpt of the event taken from the event without the user's
    /// secrets: an event that holds one is read again with them replaced, so the excerpt
    /// cannot cut a secret in two.
    fn event_error(&self, e: Failure, name: Option<&str>, data: &str) -> Failure {
        let clean = self.scrub.text(data);
        if matches!(clean, std::borrow::Cow::Borrowed(_)) {
            return e;
        }
        let Answer::Streamed(api) = self.api.answer() else {
            return e;
        };
        match api.parse(name, &clean) {
            Err(again) => again,
            Ok(_) => (e.0, SECRET_NOT_QUOTED.into()),
        }
    }

    /// A whole answer's failure, read again without the user's secrets when it held one (as
    /// [`Client::event_error`]).
    fn answer_error(&self, e: Failure, api: &dyn Whole, answer: &[u8], sent: &Value) -> Failure {
        let text = String::from_utf8_lossy(answer);
        let clean = self.scrub.text(&text);
        if matches!(clean, std::borrow::Cow::Borrowed(_)) {
            return e;
        }
        match api.read(clean.as_bytes(), sent) {
            Err(again) => again,
            Ok(_) => (e.0, SECRET_NOT_QUOTED.into()),
        }
    }

    /// Sends the request, with its own `header` (a mix class's tenant) where it has one,
    /// over either transport, up to the response head; over reqwest a request with media is
    /// sent as a [`Timed`] body, whose hand-overs come back with it.
    async fn open(
        &self,
        (request, header): (Vec<u8>, Option<&(String, String)>),
        written: Written<'_>,
        state: &mut Stream<'_>,
    ) -> Result<(Body, Option<Arc<Taken>>), Outcome> {
        // This request's own header: its id (one line, formatted once per request).
        let id = (self.ids.as_ref()).zip(state.rec.request_id.as_deref());
        let retried = &mut state.rec.connection_retries;
        let head = header.map_or(String::new(), |(k, v)| format!("{k}: {v}\r\n"));
        let media = state.rec.request_bytes.is_some();
        let target = &self.targets[state.target];
        let mut head = head;
        if let (Some(name), Some(value)) = (&self.session_header, &state.echo) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        match &target.lean {
            Some(lean) => {
                if let Some((ids, id)) = id {
                    head.push_str(&ids.head_lines(id));
                }
                match (lean.post_noting(&request, head.as_bytes(), retried, written)).await {
                    Ok(r) => Ok((Body::Lean(r), None)),
                    Err(e) => Err(lean_failure(e)),
                }
            }
            None => {
                let to = &target.target;
                let session = (self.session_header.as_deref()).zip(state.echo.as_deref());
                let sent = self.send_reqwest((request, media), (header, session, to), id, written);
                match Box::pin(sent).await {
                    Ok((r, taken)) => Ok((Body::Reqwest(r, Bytes::new()), taken)),
                    Err(e) => {
                        // reqwest's message names the URL, which may hold credentials.
                        let e = e.without_url();
                        Err(Outcome::failed(classify(&e), describe(&e)))
                    }
                }
            }
        }
    }

    /// The request through reqwest (HTTPS). Never sent again here: hyper-util already resends
    /// a request that never left (its connection found closed before the request was
    /// written), and one that did may have reached the server.
    async fn send_reqwest(
        &self,
        (body, media): (Vec<u8>, bool),
        (header, session, to): Headed<'_>,
        id: Option<(&RequestIds, &str)>,
        w: Written<'_>,
    ) -> reqwest::Result<(Response, Option<Arc<Taken>>)> {
        w.inspect(|w| w());
        let (body, taken) = if media {
            let (timed, taken) = Timed::new(body);
            (reqwest::Body::wrap(timed), Some(taken))
        } else {
            (reqwest::Body::from(body), None)
        };
        let mut req = self.measured_http().post(to).body(body);
        if let Some((k, v)) = header {
            req = req.header(k.as_str(), v.as_str());
        }
        if let Some((k, v)) = session {
            req = req.header(k, v);
        }
        if let Some((ids, id)) = id {
            req = req.header(ids.name.as_str(), id);
            if ids.propagate {
                req = req.header("traceparent", crate::measure::traceid::traceparent(id));
            }
        }
        Ok((req.send().await?, taken))
    }
}

/// A request's own headers over reqwest: a mix class's tenant, the session header's name and
/// value, and the URL it goes to.
type Headed<'a> = (
    Option<&'a (String, String)>,
    Option<(&'a str, &'a str)>,
    &'a str,
);

/// Bytes of a session header's value (`--session-header`) kept to send back; a longer one is
/// not echoed.
const MAX_SESSION_VALUE: usize = 1024;

/// Characters of a non-stream body (and of its content type) quoted in its failure.
const NO_EVENT_EXCERPT: usize = 120;

/// A streamed body's first bytes, kept until its first event (at most [`NO_EVENT_EXCERPT`]
/// bytes, so a body that is not an event stream can be named), and whether an event came.
#[derive(Default)]
struct NoEvent {
    event: bool,
    start: Vec<u8>,
}

impl NoEvent {
    #[inline]
    fn note(&mut self, bytes: &[u8]) {
        if !self.event && self.start.len() < NO_EVENT_EXCERPT {
            let room = NO_EVENT_EXCERPT - self.start.len();
            self.start
                .extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }
}

/// What a failure says when the event or answer that failed held a secret.
const SECRET_NOT_QUOTED: &str = "the event held a secret given to servebench: not quoted";

/// Reads `body` to its end, giving each read and its arrival (`None` over reqwest: taken as
/// it is read) to `each`, until `each` breaks with an outcome, a read fails or a limit passes
/// ([`waited`]); `Continue` at the body's clean end. Both shapes of answer, streamed and
/// whole, read through it. One timer bounds every read: `wait` (set to the first byte's
/// limit, or the request's end) is reset once, at the first read, to the idle limit, and after
/// that moved only when it fires, so a read polls no other timer.
async fn read_body(
    body: &mut Body,
    mut wait: Pin<&mut Sleep>,
    limits: Limits,
    (end, limit): (Instant, Duration),
    mut each: impl FnMut(&[u8], Option<Instant>) -> ControlFlow<Outcome>,
) -> ControlFlow<Outcome> {
    // The last read's arrival; `None` until the body's first byte.
    let mut last_read: Option<Instant> = None;
    loop {
        let next = tokio::select! {
            biased;
            next = body.next_chunk() => next,
            () = wait.as_mut() => match waited(wait.as_mut(), last_read, limits, (end, limit)) {
                Some(failure) => return ControlFlow::Break(failure),
                None => continue,
            },
        };
        match next {
            Ok(Some((bytes, arrived))) => {
                let at = arrived.unwrap_or_else(Instant::now);
                if last_read.replace(at).is_none() {
                    wait.as_mut().reset((at + limits.idle).min(end));
                }
                each(bytes, arrived)?;
            }
            Ok(None) => return ControlFlow::Continue(()),
            Err(failure) => return ControlFlow::Break(failure),
        }
    }
}

/// The timer fired: the failure when a limit has passed (the request's time, the first byte,
/// the idle limit: a `stall`), else `None` with the timer moved to the next limit.
fn waited(
    wait: Pin<&mut Sleep>,
    last_read: Option<Instant>,
    limits: Limits,
    (end, limit): (Instant, Duration),
) -> Option<Outcome> {
    if Instant::now() >= end {
        return Some(timed_out(limit));
    }
    let Some(last) = last_read else {
        return Some(no_first_byte(limits.first_byte));
    };
    let quiet = last.elapsed();
    if quiet >= limits.idle {
        return Some(Outcome::failed(
            FailureKind::Stall,
            format!(
                "stream stalled: no data for {:.1} s (--idle-timeout)",
                quiet.as_secs_f64()
            ),
        ));
    }
    wait.reset((last + limits.idle).min(end));
    None
}

/// The failure of a request that did not finish within its time limit.
fn timed_out(limit: Duration) -> Outcome {
    Outcome::failed(
        FailureKind::Timeout,
        format!("no complete answer within {:.1} s", limit.as_secs_f64()),
    )
}

/// How a stream whose body ended cleanly ended: complete when the server's final event was
/// read, or, without the terminator, when a chunk ended the answer and no event was cut
/// (servers that send no `[DONE]`); broken otherwise.
fn clean_end(state: &Stream<'_>, truncated: bool) -> Outcome {
    if state.done || (state.finished && !truncated) {
        Outcome::Ok
    } else if truncated {
        Outcome::failed(
            FailureKind::StreamBroken,
            "stream ended in the middle of an event",
        )
    } else {
        Outcome::failed(
            FailureKind::StreamBroken,
            "stream ended before the server signalled completion (no terminator, and no chunk ended the answer)",
        )
    }
}

/// The failure of a response whose body did not start within the first-byte limit.
fn no_first_byte(limit: Duration) -> Outcome {
    Outcome::failed(
        FailureKind::Timeout,
        format!(
            "no response within {:.1} s of sending (--first-byte-timeout)",
            limit.as_secs_f64()
        ),
    )
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
