//! What the client saw of one request ([`Seen`]) and the bounds it sets on what its server
//! may report: the most output and prompt tokens, the longest duration. `usage.rs` judges the
//! server's counts against them, `server_forms.rs` its other forms; both read this file, which
//! reads neither.

use std::time::Duration;

/// Tokens one stream event may carry besides one per byte of its text: tokens that show no
/// text (special tokens, a token whose bytes complete a character in a later event), several
/// of them in one event under speculative decoding.
pub const TOKENS_PER_EVENT: u64 = 16;

/// Tokens a server may add to a prompt besides one per byte of the request body: a BOS token
/// and its chat template (role markers, a default system prompt).
pub const PROMPT_TEMPLATE_TOKENS: u64 = 4096;

/// How much longer than the client's own span (send to the end of the stream) a duration the
/// server reports may be: the server's clock starts after the request was written and stops
/// before the client read the end, so only rounding and clock rates separate the two.
pub const TIMING_SLACK_ABS: Duration = Duration::from_millis(1);
/// The relative part of that slack.
pub const TIMING_SLACK_REL: f64 = 0.01;

/// What the client saw of one request, and what it asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Seen {
    /// SSE events of the stream read (up to its terminator).
    pub events: u64,
    /// Bytes of output text received (answer and reasoning).
    pub text_bytes: u64,
    /// Output chunks (events with text).
    pub output_chunks: u64,
    /// The most output tokens the request allowed (`max_tokens` as sent), when known.
    pub max_tokens: Option<u64>,
    /// Bytes of the request body, and the tokens its media may cost (`media_bound`): the
    /// prompt's bound before the template's; `None` when a part's cost has no known bound.
    pub prompt_bytes: Option<u64>,
    /// Whether the API's cached count is part of its prompt count (all but Anthropic's,
    /// whose `input_tokens` leaves cache reads out).
    pub cached_within_prompt: bool,
    /// The client's own span of the exchange, from the send to the stream's end, in the
    /// server's time (× `--time-scale` against the simulator).
    pub span: Duration,
}

impl Seen {
    /// The most output tokens the stream could have carried: one per byte of text, and
    /// [`TOKENS_PER_EVENT`] per event for tokens that show no text; and at most `max_tokens`.
    pub fn output_bound(&self) -> u64 {
        let carried =
            (self.text_bytes).saturating_add(self.events.saturating_mul(TOKENS_PER_EVENT));
        self.max_tokens.map_or(carried, |m| m.min(carried))
    }

    /// The most prompt tokens the request could have held, when it can be bounded.
    pub fn prompt_bound(&self) -> Option<u64> {
        Some(self.prompt_bytes?.saturating_add(PROMPT_TEMPLATE_TOKENS))
    }

    /// The longest duration the server can have measured, ms.
    pub fn span_bound_ms(&self) -> f64 {
        let span = self.span.as_secs_f64() * 1e3;
        span * (1.0 + TIMING_SLACK_REL) + TIMING_SLACK_ABS.as_secs_f64() * 1e3
    }
}
