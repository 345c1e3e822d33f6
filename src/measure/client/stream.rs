//! A request's state while its response streams in: the record being filled, the output
//! events' token counts, the generated text (kept up to `--max-generated-text` bytes, and
//! counted with the model's tokenizer in pieces so a long answer is never held whole for it),
//! and what the server reported about the request, judged at the end (`usage`) before the
//! record's counts are chosen; a structured answer's text or tool call, kept for its check
//! when the run asks for one (`measure::output_check`). A whole (non-streamed) answer is one output chunk, at the
//! arrival of its last byte, carrying all its text ([`Stream::whole`]); one that answers each
//! input (embeddings) generates nothing: its record counts its inputs and no output. Knows
//! nothing of sockets or HTTP: `super` feeds it parsed events or the answer read whole.

use std::future::Future;
use std::time::Duration;

use crate::measure::ahead::{self, Slot};
use crate::measure::client::api::{Answered, Failure, Streamed, Usage};
use crate::measure::client::fast_event::Shape;
use crate::measure::client::reasoning::Reasoning;
use crate::measure::client::server_forms;
use crate::measure::client::usage::{self, Claims, Reported, Seen, TOKENS_PER_EVENT};
use crate::measure::count_pool::Counting;
use crate::measure::output_check::Checker;
use crate::measure::record::{FailureKind, Implausible, Outcome, RequestRecord, TokenSource};
use crate::tokenizer::Tokenizer;

/// Most chunk timestamps reserved per request before the stream starts (8 KiB); longer
/// answers grow the vector as usual.
const MAX_RESERVED_CHUNKS: u64 = 1024;

/// The model's tokenizer's counts of an answer's text and of its reasoning text; `None` where
/// there is no tokenizer, no reasoning text, or a count was lost.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counts {
    pub(super) output: Option<u64>,
    pub(super) reasoning: Option<u64>,
}

/// What a request allowed and held, the bounds of what its server may report (`usage::Seen`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Bounds {
    pub(super) max_tokens: Option<u64>,
    pub(super) prompt_bytes: Option<u64>,
    pub(super) cached_within_prompt: bool,
}

/// A request's state while its stream is read.
pub(super) struct Stream<'a> {
    pub(super) rec: RequestRecord,
    chunk_tokens: Vec<u32>,
    all_chunk_tokens_known: bool,
    /// A chunk's stated token count was more than it could carry.
    chunk_tokens_implausible: bool,
    /// The server's counts as written, judged in `finish`.
    usage_output: Option<Reported>,
    usage_prompt: Option<Reported>,
    usage_cached: Option<Reported>,
    last_cumulative: Option<u64>,
    /// Events read and bytes of output text, for `usage::Seen`.
    events: u64,
    text_bytes: u64,
    bounds: Bounds,
    /// The text kept for the record (`--save-generated-text`), and its most bytes.
    saved: Option<String>,
    max_saved: usize,
    /// The answer's text, counted with the tokenizer off this thread (`count_pool`).
    count: Option<Counting<'a>>,
    /// The API's terminator came (`[DONE]`, ...): nothing after it is read.
    pub(super) done: bool,
    /// An event ended the answer (a `finish_reason`, the final usage): a body that ends
    /// cleanly after it is complete without the terminator.
    pub(super) finished: bool,
    /// The answer comes whole (not streamed): it has no terminator.
    whole: bool,
    /// The reasoning phase.
    reasoning: Reasoning<'a>,
    /// A structured answer's check: the answer kept for it.
    check: Option<Checker>,
    /// The prefill gate's permit (`--max-prefill-concurrency`), let go at the first output
    /// chunk (`send.rs` lets it go at the exchange's end otherwise).
    pub(super) gate: Option<tokio::sync::OwnedSemaphorePermit>,
    /// The endpoint the request goes to (its index), the session header's value it sends
    /// back, and the one its response carried (`--session-header`).
    pub(super) target: usize,
    pub(super) echo: Option<String>,
    pub(super) echoed: Option<String>,
    /// The last plain event, which the next is read against (`fast_event::Shape`).
    shape: Shape,
}

impl<'a> Stream<'a> {
    /// `saved`: keep the generated text, at most this many bytes of it.
    /// `lengths`: the prompt length built (when known) and the output length asked for.
    pub(super) fn new(
        id: u64,
        warmup: bool,
        scheduled_ns: u64,
        lengths: (Option<u64>, u64),
        saved: Option<usize>,
        tokenizer: Option<&'a Tokenizer>,
        bounds: Bounds,
    ) -> Self {
        let (input_len, output_len) = lengths;
        // Room for one timestamp per requested token up front (servers send at most one chunk
        // per token), so the per-chunk push does not reallocate and copy; capped, so a huge
        // `max_tokens` does not reserve memory the answer may never use.
        let expected = output_len.clamp(1, MAX_RESERVED_CHUNKS) as usize;
        Stream {
            rec: RequestRecord {
                id,
                warmup,
                scheduled_ns,
                input_len_requested: input_len,
                output_len_requested: Some(output_len),
                chunk_ns: Vec::with_capacity(expected),
                ..RequestRecord::default()
            },
            chunk_tokens: Vec::new(),
            all_chunk_tokens_known: true,
            chunk_tokens_implausible: false,
            usage_output: None,
            usage_prompt: None,
            usage_cached: None,
            last_cumulative: None,
            events: 0,
            text_bytes: 0,
            bounds,
            saved: saved.map(|_| String::new()),
            max_saved: saved.unwrap_or(0),
            count: tokenizer.map(Counting::new),
            done: false,
            finished: false,
            whole: false,
            reasoning: Reasoning::new(tokenizer),
            check: None,
            gate: None,
            target: 0,
            echo: None,
            echoed: None,
            shape: Shape::default(),
        }
    }

    /// The answer will be checked as structured output (`output_check.rs`).
    pub(super) fn check_with(&mut self, checker: Checker) {
        self.check = Some(checker);
    }

    /// The answer kept for its check, when it has one to check (an output chunk came): the
    /// check runs off this thread (`measure::checker_pool`), its verdict set on the record
    /// by `send.rs`.
    pub(super) fn take_check(&mut self) -> Option<Checker> {
        self.check.take().filter(|_| !self.rec.chunk_ns.is_empty())
    }

    /// The answer will come whole; `inputs`: the inputs the request carries, each answered
    /// separately (an embeddings batch), when it generates nothing.
    pub(super) fn answered_whole(&mut self, inputs: Option<u64>) {
        self.whole = true;
        if inputs.is_some() {
            self.rec.inputs = inputs;
            self.rec.output_len_requested = None;
        }
    }

    /// The whole answer, read at `t`: one output chunk at `t` with all its text.
    pub(super) fn whole(&mut self, a: Answered, t: u64) {
        self.events = 1;
        self.rec.chunk_ns.push(t);
        if !a.content.is_empty() {
            self.text_bytes = a.content.len() as u64;
            self.rec.first_answer_ns = Some(t);
            if self.saved.is_some() || self.count.is_some() {
                self.keep_text(&a.content);
            }
            if let Some(c) = &mut self.check {
                c.content(&a.content);
            }
        }
        if let Some(u) = a.usage {
            self.usage(u);
        }
        self.done = true;
    }

    /// The counts a server reported, each kept until a later report replaces it.
    fn usage(&mut self, u: Usage) {
        if u.completion_tokens.is_some() {
            self.usage_output = u.completion_tokens;
        }
        if u.prompt_tokens.is_some() {
            self.usage_prompt = u.prompt_tokens;
        }
        if u.cached_tokens.is_some() {
            self.usage_cached = u.cached_tokens;
        }
        if u.reasoning_tokens.is_some() {
            self.reasoning.reported = u.reasoning_tokens;
        }
    }

    /// Keeps `piece` of the generated text: in the saved text up to its limit, and for the
    /// tokenizer, whose counting threads take a long text in pieces as it grows.
    fn keep_text(&mut self, piece: &str) {
        if let Some(text) = &mut self.saved {
            let room = self.max_saved.saturating_sub(text.len());
            if piece.len() > room {
                let mut cut = room;
                while !piece.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.push_str(&piece[..cut]);
                self.rec.generated_text_truncated = true;
            } else {
                text.push_str(piece);
            }
        }
        if let Some(count) = &mut self.count {
            count.push(piece);
        }
    }

    pub(super) fn event(
        &mut self,
        api: &dyn Streamed,
        name: Option<&str>,
        data: &str,
        t: u64,
    ) -> Result<(), Failure> {
        if self.done {
            return Ok(()); // anything after the terminator is ignored
        }
        let p = api.parse_shaped(&mut self.shape, name, data)?;
        self.events += 1;
        if p.has_output() {
            let more: usize = p.more_tool_calls.iter().map(|c| c.args.len()).sum();
            let bytes = (p.content.len() + p.reasoning.len() + p.tool_args.len() + more) as u64;
            self.text_bytes = self.text_bytes.saturating_add(bytes);
            self.rec.chunk_ns.push(t);
            let times = &self.rec.chunk_ns;
            ahead::note(Slot::Times, times.as_ptr().wrapping_add(times.len()).cast());
            self.gate = None;
            if !p.reasoning.is_empty() {
                self.rec.first_reasoning_ns.get_or_insert(t);
                self.reasoning.chunk(self.rec.chunk_ns.len(), &p.reasoning);
            }
            if !p.content.is_empty() {
                self.rec.first_answer_ns.get_or_insert(t);
            }
            if !p.tool_args.is_empty() || more > 0 {
                self.rec.first_tool_call_ns.get_or_insert(t);
            }
            let tokens = p.tokens.map(u64::from).or_else(|| {
                let cum = p.cumulative_completion_tokens?;
                Some(cum.saturating_sub(self.last_cumulative.unwrap_or(0)))
            });
            // A chunk carries at most one token per byte of its text and a few that show none.
            let carried = tokens.filter(|&n| n <= bytes.saturating_add(TOKENS_PER_EVENT));
            match carried.and_then(|n| u32::try_from(n).ok()) {
                Some(n) => self.chunk_tokens.push(n),
                None => {
                    self.chunk_tokens_implausible |= tokens.is_some();
                    self.all_chunk_tokens_known = false;
                }
            }
            if self.saved.is_some() || self.count.is_some() {
                self.keep_text(&p.reasoning);
                self.keep_text(&p.content);
                self.keep_text(&p.tool_args);
                for c in &p.more_tool_calls {
                    self.keep_text(&c.args);
                }
            }
        }
        if let Some(c) = &mut self.check {
            c.content(&p.content);
            if p.tool_name.is_some() || !p.tool_args.is_empty() {
                c.tool_call(p.tool_index, p.tool_name.as_deref(), &p.tool_args);
            }
            for m in &p.more_tool_calls {
                c.tool_call(m.index, m.name.as_deref(), &m.args);
            }
        }
        if let Some(c) = p.cumulative_completion_tokens {
            self.last_cumulative = Some(c);
        }
        if let Some(u) = p.usage {
            self.usage(u);
        }
        if p.request_metrics.is_some() {
            self.rec.server_request_metrics = p.request_metrics;
        }
        if p.timings.is_some() {
            self.rec.server_timings = p.timings;
        }
        if let Some(m) = p
            .meta_info
            .as_ref()
            .and_then(server_forms::sglang_meta_info)
        {
            self.rec.server_meta_info = Some(m);
        }
        self.done |= p.done;
        self.finished |= p.finished;
        Ok(())
    }

    /// Hands the text still to count to the counting threads, once the stream has ended; the
    /// future gives the tokenizer's counts (`None` without a tokenizer), which [`Stream::finish`]
    /// takes. Nothing is counted on this thread.
    pub(super) fn counts(&mut self) -> impl Future<Output = Counts> + 'static {
        let output = self.count.take().map(Counting::total);
        let reasoning = self.reasoning.take_count().map(Counting::total);
        async move {
            Counts {
                output: match output {
                    Some(total) => total.await,
                    None => None,
                },
                reasoning: match reasoning {
                    Some(total) => total.await,
                    None => None,
                },
            }
        }
    }

    /// The record, with its outcome and end; `time_scale`: the server's clock speed-up (its
    /// timings are in its own time); `counts`: the tokenizer's, from [`Stream::counts`].
    pub(super) fn finish(
        mut self,
        mut outcome: Outcome,
        end_ns: u64,
        time_scale: f64,
        counts: Counts,
    ) -> RequestRecord {
        let r = &mut self.rec;
        r.end_ns = end_ns;
        r.tokenizer_output_tokens = counts.output;
        if outcome.is_ok() && r.chunk_ns.is_empty() {
            outcome = Outcome::failed(FailureKind::NoOutput, "the stream carried no output token");
        }
        // Times that go backwards measure nothing (`RequestRecord::time_disorder`).
        if let Some(why) = r.time_disorder().filter(|_| outcome.is_ok()) {
            outcome = Outcome::failed(FailureKind::MalformedStream, why);
        }
        r.outcome = outcome;
        // Whether the terminator came, for every streamed response whose body was read.
        r.done_marker = (r.http_status)
            .filter(|s| (200..300).contains(s) && !self.whole)
            .map(|_| self.done);
        if self.all_chunk_tokens_known && !self.chunk_tokens.is_empty() {
            r.chunk_tokens = Some(self.chunk_tokens);
        }
        // What the server reported, judged against what was seen before it is believed.
        let cache_n = (r.server_timings.as_ref())
            .and_then(|t| t.get("cache_n"))
            .or_else(|| (r.server_meta_info.as_ref())?.get("cached_tokens"));
        let span_ns = end_ns.saturating_sub(r.sent_ns) as f64 * time_scale.max(0.0);
        let seen = Seen {
            events: self.events,
            text_bytes: self.text_bytes,
            // A whole answer's one chunk carries output only when it has text.
            output_chunks: match self.whole {
                true => u64::from(self.text_bytes > 0),
                false => r.chunk_ns.len() as u64,
            },
            max_tokens: self.bounds.max_tokens,
            prompt_bytes: self.bounds.prompt_bytes,
            cached_within_prompt: self.bounds.cached_within_prompt,
            span: Duration::try_from_secs_f64(span_ns / 1e9).unwrap_or(Duration::MAX),
        };
        let judged = usage::judge(
            &Claims {
                output: self.usage_output,
                prompt: self.usage_prompt,
                cached: self.usage_cached.or_else(|| cache_n.and_then(Reported::of)),
                timings: r.server_timings.as_ref(),
                metrics: r.server_request_metrics.as_ref(),
                headers: r.server_timing_headers.as_ref(),
                meta_info: r.server_meta_info.as_ref(),
            },
            &seen,
        );
        r.implausible_usage = judged.flags;
        if self.chunk_tokens_implausible
            && !r.implausible_usage.contains(&Implausible::OutputTokens)
        {
            r.implausible_usage.push(Implausible::OutputTokens);
            r.implausible_usage.sort();
        }
        // The server's own count is kept whenever it is a count, believed or not.
        r.usage_output_tokens = self.usage_output.and_then(Reported::count);
        // N from one source: the server's count, else the model's tokenizer, else the chunks
        // (a labelled fallback).
        (r.output_tokens, r.output_tokens_source) = match (judged.output, r.tokenizer_output_tokens)
        {
            // An answer per input (embeddings) generates no token.
            _ if r.inputs.is_some() => (Some(0), None),
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
        (r.prompt_tokens, r.prompt_tokens_source) = match (judged.prompt, r.input_len_requested) {
            (Some(n), _) => (Some(n), Some(TokenSource::ServerUsage)),
            (None, Some(n)) => (Some(n), Some(TokenSource::Requested)),
            (None, None) => (None, None),
        };
        r.cached_prompt_tokens = judged.cached;
        r.generated_text = self.saved;
        self.reasoning.finish(&mut self.rec, counts.reasoning);
        self.rec
    }
}
