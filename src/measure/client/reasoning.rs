//! A request's reasoning phase while its stream is read: which leading output
//! chunks carried reasoning text, that text counted with the model's tokenizer (in pieces, as
//! the whole answer is), and the server's own reasoning count; at the end, the record's
//! reasoning figures from one source, as N has one (docs/metrics.md, "Reasoning").
//!
//! `stream.rs` calls [`Reasoning::chunk`] only for an output chunk with reasoning text, so a
//! stream without reasoning costs nothing more per chunk.

use crate::measure::client::usage::Reported;
use crate::measure::count_pool::Counting;
use crate::measure::record::{Implausible, RequestRecord, TokenSource};
use crate::tokenizer::Tokenizer;

/// The reasoning seen so far in one stream.
pub(super) struct Reasoning<'a> {
    /// Output chunks up to and including the last one with reasoning text (0: none yet).
    chunks: u64,
    /// The reasoning text, counted with the tokenizer off this thread (`count_pool`), from
    /// the first reasoning chunk on.
    count: Option<Counting<'a>>,
    tokenizer: Option<&'a Tokenizer>,
    /// The server's reasoning count as written, judged in [`Reasoning::finish`].
    pub(super) reported: Option<Reported>,
}

impl<'a> Reasoning<'a> {
    pub(super) fn new(tokenizer: Option<&'a Tokenizer>) -> Self {
        Reasoning {
            chunks: 0,
            count: None,
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
        self.count
            .get_or_insert_with(|| Counting::new(tok))
            .push(text);
    }

    /// The reasoning text's count, to be finished off this thread; `None` when no reasoning
    /// text came or there is no tokenizer.
    pub(super) fn take_count(&mut self) -> Option<Counting<'a>> {
        self.count.take()
    }

    /// Sets the record's reasoning figures once its N is chosen: the server's count when N is
    /// the server's and the count is plausible (a count, at most N, less than N when answer
    /// text or a tool call streamed, and at least 1 when reasoning text came), else the tokenizer's count of the reasoning text, else the
    /// reasoning chunks' tokens (their stated counts, or one per chunk); never more than N.
    /// An implausible server count is flagged (`reasoning_tokens`) and not used. `counted`:
    /// the tokenizer's count of the reasoning text (from [`Reasoning::take_count`]).
    pub(super) fn finish(self, r: &mut RequestRecord, counted: Option<u64>) {
        let n = r.output_tokens.unwrap_or(0);
        if self.chunks > 0 {
            r.reasoning_chunks = Some(self.chunks);
        }
        let from_server = r.output_tokens_source == Some(TokenSource::ServerUsage);
        // Answer text (or a tool call) took at least one of the N tokens.
        let answered = r.first_answer_ns.is_some() || r.first_tool_call_ns.is_some();
        let most = if answered { n.saturating_sub(1) } else { n };
        let server = match self.reported {
            Some(Reported::Count(k)) if from_server && k <= most && (k > 0 || self.chunks == 0) => {
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
        let tokenizer = counted;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A successful record of `n` output tokens from `source`, over `chunks` chunks.
    fn record(n: u64, source: TokenSource, chunks: usize) -> RequestRecord {
        RequestRecord {
            chunk_ns: (0..chunks as u64).collect(),
            output_tokens: Some(n),
            output_tokens_source: Some(source),
            ..RequestRecord::default()
        }
    }

    /// Each source of the reasoning count by hand: the server's count when N is the server's and the
    /// count fits; else (flagged when it does not fit) the tokenizer on the reasoning text;
    /// else the reasoning phase's stated chunk counts, or one per chunk; nothing without
    /// reasoning.
    #[test]
    fn the_reasoning_count_has_one_source() {
        let tok = Tokenizer::load("cl100k_base").unwrap();
        let think = [" think", " about", " it"];
        let streamed = |tokenizer: Option<&'static Tokenizer>, reported| {
            let mut x = Reasoning::new(tokenizer);
            for (i, t) in think.iter().enumerate() {
                x.chunk(i + 1, t);
            }
            x.reported = reported;
            x
        };
        let tok: &'static Tokenizer = Box::leak(Box::new(tok));
        let mut r = record(10, TokenSource::ServerUsage, 5);
        end(streamed(Some(tok), Some(Reported::Count(7))), &mut r);
        let got = (
            r.reasoning_tokens,
            r.reasoning_tokens_source,
            r.reasoning_chunks,
        );
        assert_eq!(got, (Some(7), Some(TokenSource::ServerUsage), Some(3)));
        assert!(r.implausible_usage.is_empty());

        // All of N beside answer text: flagged; without answer text, all of N is plausible.
        let mut r = record(10, TokenSource::ServerUsage, 5);
        r.first_answer_ns = Some(4);
        end(streamed(Some(tok), Some(Reported::Count(10))), &mut r);
        assert_eq!(r.implausible_usage, [Implausible::ReasoningTokens]);
        let mut r = record(10, TokenSource::ServerUsage, 5);
        r.first_answer_ns = Some(4);
        end(streamed(Some(tok), Some(Reported::Count(9))), &mut r);
        assert_eq!(
            (r.reasoning_tokens, r.implausible_usage.len()),
            (Some(9), 0)
        );
        let mut r = record(10, TokenSource::ServerUsage, 5);
        end(streamed(Some(tok), Some(Reported::Count(10))), &mut r);
        assert_eq!(
            (r.reasoning_tokens, r.implausible_usage.len()),
            (Some(10), 0)
        );

        // Past N, or 0 after reasoning text: flagged, and the tokenizer counts instead.
        for bad in [Reported::Count(11), Reported::Count(0), Reported::NotACount] {
            let mut r = record(10, TokenSource::ServerUsage, 5);
            end(streamed(Some(tok), Some(bad)), &mut r);
            assert_eq!(
                r.implausible_usage,
                [Implausible::ReasoningTokens],
                "{bad:?}"
            );
            let counted = tok.count(" think about it") as u64;
            assert_eq!(r.reasoning_tokens, Some(counted));
            assert_eq!(r.reasoning_tokens_source, Some(TokenSource::Tokenizer));
        }

        // N from the chunks: the server's count is not believed (nor flagged), the reasoning
        // chunks' stated counts are summed, never past N.
        let mut r = record(9, TokenSource::ChunkCount, 5);
        r.chunk_tokens = Some(vec![2, 3, 4, 1, 1]);
        end(streamed(None, Some(Reported::Count(1))), &mut r);
        assert!(r.implausible_usage.is_empty());
        assert_eq!(r.reasoning_tokens, Some(9), "2 + 3 + 4, within N");
        assert_eq!(r.reasoning_tokens_source, Some(TokenSource::ChunkCount));
        let mut r = record(4, TokenSource::ChunkCount, 5);
        end(streamed(None, None), &mut r);
        assert_eq!(r.reasoning_tokens, Some(3), "one per reasoning chunk");

        // Hidden reasoning (counted, never streamed), and none at all.
        let mut r = record(10, TokenSource::ServerUsage, 2);
        end(streamed_none(Some(Reported::Count(6))), &mut r);
        assert_eq!((r.reasoning_tokens, r.reasoning_chunks), (Some(6), None));
        let mut r = record(10, TokenSource::ServerUsage, 2);
        end(streamed_none(Some(Reported::Count(0))), &mut r);
        assert_eq!(
            (r.reasoning_tokens, r.reasoning_tokens_source),
            (None, None)
        );
        assert!(r.implausible_usage.is_empty());
    }

    /// Finishes `x` on `r` with the tokenizer's count of its reasoning text.
    fn end(mut x: Reasoning<'static>, r: &mut RequestRecord) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let counted = x.take_count().and_then(|c| rt.block_on(c.total()));
        x.finish(r, counted);
    }

    fn streamed_none(reported: Option<Reported>) -> Reasoning<'static> {
        let mut x = Reasoning::new(None);
        x.reported = reported;
        x
    }
}
