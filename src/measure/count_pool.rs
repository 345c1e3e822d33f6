//! Answers' token counts, off the threads that read streams: the text of an answer (and of its
//! reasoning) is counted with the model's tokenizer on one of [`COUNT_THREADS`] counting
//! threads, in pieces of about [`COUNT_PIECE`] bytes handed over as the text grows and the rest
//! when the answer ends; the record waits for the total before it is handed over, so every
//! count is what counting on the reading thread gave, and the reading thread only copies text.
//!
//! Why: a tokenizer's cost grows with the text (tens of microseconds a call for a
//! `tokenizer.json`); on the thread that also timestamps every other stream's chunks, the
//! counts of many answers ending together delayed the next requests' first chunks by
//! milliseconds (docs/performance.md, "Tokenizers off the reading thread"). The counting
//! threads run at the lowest priority, so a reading thread that shares their core runs first
//! whenever it has work, and keep a Hugging Face tokenizer's work on themselves (its own pool
//! of threads would run at normal priority).
//!
//! A piece is cut at whitespace, where every supported tokenizer starts a new word, so the
//! pieces' counts add up to the whole text's.

use std::future::Future;

use tokio::sync::oneshot;

use super::ahead::{self, Slot};
use super::workers::{Priority, Workers};
use crate::tokenizer::Tokenizer;

/// The counting threads of the process.
pub const COUNT_THREADS: usize = 2;

/// Text handed to a counting thread in pieces of about this many bytes (cut at whitespace),
/// so a long answer is counted without being kept whole.
pub const COUNT_PIECE: usize = 1 << 20;

/// One piece of text to count, and where its count goes.
struct Job {
    tokenizer: Tokenizer,
    text: String,
    reply: oneshot::Sender<u64>,
}

/// The counting threads, started on first use; `None` when no thread could be started (the
/// text is then counted where it is handed over: the only way left to a count).
fn pool() -> Option<&'static Workers<Job>> {
    static POOL: std::sync::OnceLock<Option<Workers<Job>>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        Tokenizer::keep_work_on_its_thread();
        Workers::start("servebench-count", COUNT_THREADS, Priority::Low, count)
    })
    .as_ref()
}

/// A counting thread's work on one piece.
fn count(job: Job) {
    let n = job.tokenizer.count_output(&job.text) as u64;
    let _ = job.reply.send(n);
}

/// A piece's count: known, or still being counted.
enum Piece {
    Counted(u64),
    Counting(oneshot::Receiver<u64>),
}

/// A text counted with a tokenizer as it grows.
pub struct Counting<'a> {
    tokenizer: &'a Tokenizer,
    /// The text not yet handed over.
    text: String,
    pieces: Vec<Piece>,
}

impl<'a> Counting<'a> {
    pub fn new(tokenizer: &'a Tokenizer) -> Self {
        Counting {
            tokenizer,
            text: String::new(),
            pieces: Vec::new(),
        }
    }

    /// Appends `piece` of the text; hands over what is past [`COUNT_PIECE`], up to its last
    /// whitespace.
    pub fn push(&mut self, piece: &str) {
        self.text.push_str(piece);
        ahead::note(Slot::Text, self.text.as_ptr().wrapping_add(self.text.len()));
        if self.text.len() >= COUNT_PIECE {
            let cut = (self.text.rfind(char::is_whitespace))
                .filter(|&i| i > 0)
                .unwrap_or(self.text.len());
            let rest = self.text.split_off(cut);
            let whole = std::mem::replace(&mut self.text, rest);
            self.hand_over(whole);
        }
    }

    fn hand_over(&mut self, text: String) {
        let job = match pool() {
            Some(pool) => {
                let (reply, counted) = oneshot::channel();
                let job = Job {
                    tokenizer: self.tokenizer.clone(),
                    text,
                    reply,
                };
                match pool.send(job) {
                    Ok(()) => return self.pieces.push(Piece::Counting(counted)),
                    Err(job) => job.text,
                }
            }
            None => text,
        };
        let n = self.tokenizer.count_output(&job) as u64;
        self.pieces.push(Piece::Counted(n));
    }

    /// Hands over the text not yet handed over; the future gives the whole text's count once
    /// every piece is counted (`None` when a piece's count was lost: its thread failed).
    pub fn total(mut self) -> impl Future<Output = Option<u64>> + 'static {
        if !self.text.is_empty() {
            let rest = std::mem::take(&mut self.text);
            self.hand_over(rest);
        }
        let pieces = self.pieces;
        async move {
            let mut n = 0u64;
            for piece in pieces {
                n += match piece {
                    Piece::Counted(k) => k,
                    Piece::Counting(rx) => rx.await.ok()?,
                };
            }
            Some(n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces' counts add up to the count of the whole text, for texts shorter and longer
    /// than a piece, with and without whitespace to cut at.
    #[tokio::test]
    async fn pieces_add_up_to_the_whole_texts_count() {
        let tok = Tokenizer::load("cl100k_base").unwrap();
        let long = "the quick brown fox jumps over it. ".repeat(COUNT_PIECE / 20);
        let unbroken = "x,".repeat(COUNT_PIECE / 2 + 7);
        for text in ["", "one", long.as_str(), unbroken.as_str()] {
            let mut c = Counting::new(&tok);
            for chunk in text.as_bytes().chunks(4093) {
                c.push(std::str::from_utf8(chunk).unwrap());
            }
            let handed = c.pieces.len();
            assert_eq!(
                c.total().await,
                Some(tok.count(text) as u64),
                "{} bytes",
                text.len()
            );
            assert!(
                text.len() < COUNT_PIECE || handed > 0,
                "a long text is handed over as it grows"
            );
        }
    }
}
