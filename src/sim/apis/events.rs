//! Typed SSE events, as Anthropic Messages (`anthropic.rs`) and OpenAI Responses
//! (`responses.rs`) stream them: an `event:` line naming the event's kind, then its `data:`
//! line; and a stretch of the token text as JSON string content.
//!
//! # What it owns
//! The bytes of one such event ([`event`]) and a stretch of tokens' text ([`text`]), shared by
//! the two typed-event APIs so that neither imports the other.
//!
//! # What it must not touch
//! Any API's event kinds or JSON (each in its own file), timing, faults and statistics
//! (`stream/`, `common.rs`).

use crate::sim::text::TokenGen;

/// Appends one typed SSE event: `event: KIND` and its `data:` line.
pub(super) fn event(out: &mut Vec<u8>, kind: &str, data: &str) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(data.as_bytes());
    out.extend_from_slice(b"\n\n");
}

/// Tokens `[start, end)` as JSON string content (no quotes).
pub(super) fn text(gen: &TokenGen, start: u32, end: u32) -> String {
    let mut v = Vec::new();
    gen.push_text(&mut v, start, end);
    String::from_utf8_lossy(&v).into_owned()
}
