//! A request's state while its response streams in: the record being filled, the output
//! events' token counts, and the generated text (kept up to `--max-generated-text` bytes, and
//! counted with the model's tokenizer in pieces so a long answer is never held whole for it).
//! Knows nothing of sockets or HTTP: `super` feeds it parsed events.

use crate::measure::client::api::{Api, EventError};
use crate::measure::record::{FailureKind, Outcome, RequestRecord, TokenSource};
use crate::tokenizer::Tokenizer;

/// Most chunk timestamps reserved per request before the stream starts (8 KiB); longer
/// answers grow the vector as usual.
const MAX_RESERVED_CHUNKS: u64 = 1024;

/// Text counted with the tokenizer in pieces of about this many bytes (cut at whitespace), so
/// a long answer is counted without being kept whole.
const COUNT_PIECE: usize = 1 << 20;

/// A request's state while its stream is read.
pub(super) struct Stream<'a> {
    pub(super) rec: RequestRecord,
    chunk_tokens: Vec<u32>,
    all_chunk_tokens_known: bool,
    usage_prompt: Option<u64>,
    last_cumulative: Option<u64>,
    /// The text kept for the record (`--save-generated-text`), and its most bytes.
    saved: Option<String>,
    max_saved: usize,
    /// The text not yet counted with the tokenizer, and the tokens counted so far.
    uncounted: Option<String>,
    counted: u64,
    tokenizer: Option<&'a Tokenizer>,
    /// The API's terminator came (`[DONE]`, ...): nothing after it is read.
    pub(super) done: bool,
    /// An event ended the answer (a `finish_reason`, the final usage): a body that ends
    /// cleanly after it is complete without the terminator (issue 23).
    pub(super) finished: bool,
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
            usage_prompt: None,
            last_cumulative: None,
            saved: saved.map(|_| String::new()),
            max_saved: saved.unwrap_or(0),
            uncounted: tokenizer.map(|_| String::new()),
            counted: 0,
            tokenizer,
            done: false,
            finished: false,
        }
    }

    /// Keeps `piece` of the generated text: in the saved text up to its limit, and for the
    /// tokenizer, counting a long text in pieces as it grows.
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
        if let (Some(text), Some(tok)) = (&mut self.uncounted, self.tokenizer) {
            text.push_str(piece);
            if text.len() >= COUNT_PIECE {
                let cut = text
                    .rfind(char::is_whitespace)
                    .filter(|&i| i > 0)
                    .unwrap_or(text.len());
                self.counted += tok.count(&text[..cut]) as u64;
                text.drain(..cut);
            }
        }
    }

    pub(super) fn event(
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
            if self.saved.is_some() || self.uncounted.is_some() {
                self.keep_text(&p.reasoning);
                self.keep_text(&p.content);
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
            if u.cached_tokens.is_some() {
                self.rec.cached_prompt_tokens = u.cached_tokens;
            }
        }
        if p.request_metrics.is_some() {
            self.rec.server_request_metrics = p.request_metrics;
        }
        if p.timings.is_some() {
            self.rec.server_timings = p.timings;
        }
        self.done |= p.done;
        self.finished |= p.finished;
        Ok(())
    }

    pub(super) fn finish(mut self, mut outcome: Outcome) -> RequestRecord {
        let r = &mut self.rec;
        if let (Some(tok), Some(text)) = (self.tokenizer, &self.uncounted) {
            r.tokenizer_output_tokens = Some(self.counted + tok.count(text) as u64);
        }
        if outcome.is_ok() && r.chunk_ns.is_empty() {
            outcome = Outcome::failed(FailureKind::NoOutput, "the stream carried no output token");
        }
        r.outcome = outcome;
        // Whether the terminator came, for every response whose body was read.
        r.done_marker = r
            .http_status
            .filter(|s| (200..300).contains(s))
            .map(|_| self.done);
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
        if r.cached_prompt_tokens.is_none() {
            let cache_n = r.server_timings.as_ref().and_then(|t| t.get("cache_n"));
            r.cached_prompt_tokens = cache_n.and_then(serde_json::Value::as_u64);
        }
        r.generated_text = self.saved;
        self.rec
    }
}
