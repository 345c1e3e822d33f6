//! A request's reasoning phase while its stream is read (issue 25 §6): which leading output
//! chunks carried reasoning text, that text counted with the model's tokenizer (in pieces, as
//! the whole answer is), and the server's own reasoning count; at the end, the record's
//! reasoning figures from one source, as N has one (docs/metrics.md, "Reasoning").
//!
//! `stream.rs` calls [`Reasoning::chunk`] only for an output chunk with reasoning text, so a
//! stream without reasoning costs nothing more per chunk.

use crate::measure::client::usage::Reported;
use crate::measure::record::{Implausible, RequestRecord, TokenSource};
use crate::tokenizer::Tokenizer;

/// Reasoning text counted with the tokenizer in pieces of about this many bytes (cut at
/// whitespace), as `stream.rs` counts the whole answer.
const COUNT_PIECE: usize = 1 << 20;

/// The reasoning seen so far in one stream.
pub(super) struct Reasoning<'a> {
    /// Output chunks up to and including the last one with reasoning text (0: none yet).
    chunks: u64,
    /// Reasoning text not yet counted with the tokenizer, and the tokens counted so far.
    uncounted: Option<String>,
    counted: u64,
    tokenizer: Option<&'a Tokenizer>,
    /// The server's reasoning count as written, judged in [`Reasoning::finish`].
    pub(super) reported: Option<Reported>,
}

impl<'a> Reasoning<'a> {
    pub(super) fn new(tokenizer: Option<&'a Tokenizer>) -> Self {
        Reasoning {
            chunks: 0,
            uncounted: None,
            counted: 0,
            tokenizer,
            reported: None,
        }
    }

    /// Output chunk number `chunks` (counted from 1) carried reasoning `text`.
    pub(super) fn chunk(&mut self, chunks: usize, text: &str) {
        self.chunks = chunks as u64;
        let Some(tok) = self.tokenizer else {
            return;
        };
        let buf = self.uncounted.get_or_insert_with(String::new);
        buf.push_str(text);
        if buf.len() >= COUNT_PIECE {
            let cut = buf
                .rfind(char::is_whitespace)
                .filter(|&i| i > 0)
                .unwrap_or(buf.len());
            self.counted += tok.count(&buf[..cut]) as u64;
            buf.drain(..cut);
        }
    }

    /// Sets the record's reasoning figures once its N is chosen: the server's count when N is
    /// the server's and the count is plausible (a count, at most N, and at least 1 when
    /// reasoning text came), else the tokenizer's count of the reasoning text, else the
    /// reasoning chunks' tokens (their stated counts, or one per chunk); never more than N.
    /// An implausible server count is flagged (`reasoning_tokens`) and not used.
    pub(super) fn finish(self, r: &mut RequestRecord) {
        let n = r.output_tokens.unwrap_or(0);
        if self.chunks > 0 {
            r.reasoning_chunks = Some(self.chunks);
        }
        let from_server = r.output_tokens_source == Some(TokenSource::ServerUsage);
        let server = match self.reported {
            Some(Reported::Count(k)) if from_server && k <= n && (k > 0 || self.chunks == 0) => {
                Some(k)
            }
            Some(_) if from_server => {
                if !r.implausible_usage.contains(&Implausible::ReasoningTokens) {
                    r.implausible_usage.push(Implausible::ReasoningTokens);
                    r.implausible_usage.sort();
                }
                None
            }
            // A count beside an output count that was not believed is not believed either.
            _ => None,
        };
        let tokenizer = match (self.tokenizer, self.uncounted) {
            (Some(tok), Some(text)) => Some(self.counted + tok.count(&text) as u64),
            _ => None,
        };
        let chunks = (self.chunks > 0).then(|| {
            let phase = usize::try_from(self.chunks).unwrap_or(usize::MAX);
            r.chunk_tokens.as_ref().map_or(self.chunks, |c| {
                c.iter().take(phase).map(|&x| u64::from(x)).sum()
            })
        });
        let (count, source) = match (server, tokenizer, chunks) {
            (Some(k), _, _) => (k, TokenSource::ServerUsage),
            (None, Some(k), _) => (k, TokenSource::Tokenizer),
            (None, None, Some(k)) => (k, TokenSource::ChunkCount),
            (None, None, None) => return,
        };
        // A server that reports 0 for a stream without reasoning text has none to show.
        if count == 0 && self.chunks == 0 {
            return;
        }
        r.reasoning_tokens = Some(count.min(n));
        r.reasoning_tokens_source = Some(source);
    }
}
