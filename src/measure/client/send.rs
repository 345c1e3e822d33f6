//! One request, from its spec to its record, in steps: the body built in its API's words
//! ([`Client::encode`]: refused unsent when the API cannot carry it), the record's state
//! prepared ([`Client::stream`]), the exchange run against the run's cancellation
//! (`exchange.rs`), the connection put back, and the record finished and cleared of the
//! user's secrets ([`Client::finish`]).
//!
//! Per request, not per event: the reading of a stream is `exchange.rs`'s and `stream.rs`'s.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::api::{self, Answer, BodySpec, Failure, Part};
use super::http1;
use super::media_bound;
use super::route;
use super::spec::{RequestSpec, Written};
use super::stream::{Bounds, Counts, Stream};
use super::Client;
use crate::measure::checker_pool;
use crate::measure::clock::Clock;
use crate::measure::output_check::{Checker, OutputCheck};
use crate::measure::record::{FailureKind, Outcome, RequestRecord};

/// A request's body in its API's words, ready to write.
struct Encoded {
    /// The bytes sent.
    request: Vec<u8>,
    /// The body as JSON, which a whole answer is judged against.
    body: Value,
    /// The `max_tokens` the body asks for, as the API reads it back.
    max_tokens: Option<u64>,
}

impl Client {
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

    /// Closes the prefill gate (`--max-prefill-concurrency`) when the run stops: a request
    /// still waiting for it is never sent, and ends as one [`Client::stopped_at_gate`] knows.
    /// Every lane's client shares the gate. Nothing without a gate.
    pub fn close_prefill_gate(&self) {
        self.shared.close_gate();
    }

    /// Whether `record` is of a request the stop caught waiting at the prefill gate: never
    /// sent, so counted unsent (`stopped`) rather than failed.
    pub fn stopped_at_gate(record: &RequestRecord) -> bool {
        matches!(&record.outcome, Outcome::Failed { kind: FailureKind::Cancelled, message }
            if message == route::GATE_CLOSED)
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
        // The pre-flight request (the one with a limit of its own) goes to the first endpoint.
        let first = limit.is_some();
        let limit = limit.unwrap_or(self.timeout);
        let Encoded {
            request,
            body,
            max_tokens,
        } = match self.encode(spec) {
            Ok(encoded) => encoded,
            Err((kind, why)) => return unsent(spec, scheduled_ns, clock.now_ns(), kind, why),
        };
        let header = spec.class.as_ref().and_then(|c| c.header.as_ref());
        // A conversation's turn keeps its reply: the next turn's history holds it; so does a
        // job's call (a later call may carry it).
        let save_text = self.save_text || spec.turn.is_some() || spec.call.is_some();
        let mut state = self.stream(spec, scheduled_ns, save_text, (&body, &request, max_tokens));
        // A whole answer is judged against the body as sent; a streamed one never reads it
        // again, so it is freed before the wait (the prompt's text, once more, per stream).
        let body = match self.api.answer() {
            Answer::Whole(api) => {
                state.answered_whole(api.inputs(&body));
                body
            }
            Answer::Streamed(_) => {
                drop(body);
                Value::Null
            }
        };
        // The prefill gate's wait, then the endpoint: before the send, so the wait is the
        // request's client queue (`route.rs`).
        let picked = match self.route(spec, &mut state, cancel, first).await {
            Ok(p) => p,
            Err((kind, why)) => return unsent(spec, scheduled_ns, clock.now_ns(), kind, why),
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
        // The gate is let go at the first output chunk (`stream.rs`), else here: a whole
        // answer's end, a failure, a cancel.
        drop(state.gate.take());
        let echoed = state.echoed.take();
        (self.shared.router).ended(picked, spec.session, outcome.failure_kind(), end_ns, echoed);
        // Everything after the last chunk's timestamp (counting the text with the tokenizer,
        // the record's hand-over, the next request that its freed slot lets in) waits until the
        // tasks already woken have run: when many streams end in the same instant, their last
        // chunks are then all timestamped before any of that work (it made the last chunk's
        // timestamp 0.2-0.5 ms late on average at 64 streams; docs/performance.md). Over the
        // lean transport the timestamps are kernel arrivals and do not depend on this; the
        // yield (one task poll per request) is kept for reqwest's user-space timestamps.
        tokio::task::yield_now().await;
        if let (Some(lean), Some(response)) = (&self.targets[picked].lean, finished) {
            if let Some(conn) = http1::Response::into_reusable(response) {
                lean.put_back(conn);
            }
        }
        // The answer's tokens are counted and a structured answer is checked on threads of
        // their own, never on this one (which reads every other stream and hears the run's
        // stop); the record waits for both.
        let counts = state.counts();
        let check = outcome.is_ok().then(|| state.take_check()).flatten();
        let checked = match check {
            Some(c) => Some(checker_pool::judged(c, cancel).await),
            None => None,
        };
        let counts = counts.await;
        self.finish(state, (outcome, checked, counts), end_ns, save_text)
    }

    /// Waits for the prefill gate (`--max-prefill-concurrency`), its permit kept in `state`
    /// until the first output chunk, and picks the request's endpoint (noted on its record
    /// when the run has several); the failure when the run stopped during the wait, or every
    /// endpoint was stopped (`--failover`).
    async fn route(
        &self,
        spec: &RequestSpec,
        state: &mut Stream<'_>,
        cancel: &CancellationToken,
        first: bool,
    ) -> Result<usize, Failure> {
        if let Some(gate) = &self.shared.gate {
            state.gate = tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    let why = "run stopped while the request waited for the prefill gate";
                    return Err((FailureKind::Cancelled, why.into()));
                }
                p = gate.clone().acquire_owned() => match p {
                    Ok(p) => Some(p),
                    Err(_) => return Err((FailureKind::Cancelled, route::GATE_CLOSED.into())),
                },
            };
        }
        let Some(picked) = self.shared.router.pick(spec.session, first) else {
            let why =
                "every endpoint was stopped after consecutive connection failures (--failover)";
            return Err((FailureKind::Connect, why.into()));
        };
        state.target = picked.index;
        state.echo = picked.echo;
        if self.targets.len() > 1 {
            state.rec.endpoint = u32::try_from(picked.index).ok();
        }
        Ok(picked.index)
    }

    /// The request's body in its API's words: asked as the spec says, with structured output,
    /// `--extra-body` and the mix class's priority; the failure (kind and message) when the API
    /// cannot carry it.
    fn encode(&self, spec: &RequestSpec) -> Result<Encoded, Failure> {
        let asked = BodySpec {
            model: spec.model.as_deref().unwrap_or(&self.model),
            prompt: &spec.prompt,
            batch: &spec.batch,
            messages: spec.messages.as_ref(),
            parts: &spec.parts,
            max_tokens: spec.output_len,
            ignore_eos: self.ignore_eos,
        };
        let mut body = self.api.body(&asked)?;
        if let Some(s) = &self.structured {
            self.api.structured(&mut body, s)?;
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
        let max_tokens = self.api.max_tokens(&body);
        let request = self.api.encode(&body, &asked)?;
        Ok(Encoded {
            request,
            body,
            max_tokens,
        })
    }

    /// The state a request's record is made in: the bounds the body sets on what the server
    /// may report, the spec's own fields, the structured answer's checker, and the media sent.
    fn stream(
        &self,
        spec: &RequestSpec,
        scheduled_ns: u64,
        save_text: bool,
        (body, request, max_tokens): (&Value, &[u8], Option<u64>),
    ) -> Stream<'_> {
        // The body's bytes bound the prompt's text tokens, and the media's own bounds the rest.
        let media = media_bound::media_tokens(&spec.parts, spec.messages.as_ref());
        let bounds = Bounds {
            max_tokens,
            prompt_bytes: media
                .map(|m| (self.api.prompt_bytes(body, request.len() as u64)).saturating_add(m)),
            cached_within_prompt: self.api.cached_within_prompt(),
        };
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
        if let Some(judge) = &self.judge {
            state.check_with(Checker::new(judge));
        }
        // Media: the parts given, or a dataset's messages' own image parts.
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
        state
    }

    /// The record of an exchange that ended with `outcome` at `end_ns` (its answer's check,
    /// when it had one, and its tokenizer counts): its text kept only
    /// when asked (`save_text`), and whatever the server sent that it keeps without the
    /// user's secrets.
    fn finish(
        &self,
        state: Stream<'_>,
        (outcome, checked, counts): (Outcome, Option<OutputCheck>, Counts),
        end_ns: u64,
        save_text: bool,
    ) -> RequestRecord {
        let time_scale = f64::from_bits(self.time_scale.load(Ordering::Relaxed));
        let mut record = state.finish(outcome, end_ns, time_scale, counts);
        if record.outcome.is_ok() {
            record.output_check = checked;
        }
        if !save_text {
            record.generated_text = None;
        }
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
