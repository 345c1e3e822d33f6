//! `servebench run`'s limits on waiting and on what a server may send: every wait of
//! the client is bounded, and so is the memory a response can take. The defaults and why they
//! are what they are: the README's option table; the failure kinds they lead to:
//! docs/metrics.md. Set into `RunConfig` by [`LimitsArgs::apply`].

use clap::Args;

use super::heading;

use super::error::FlagError;
use crate::config::RunConfig;

#[derive(Debug, Args)]
pub struct LimitsArgs {
    /// Longest wait for a TCP (and TLS) connection to the server, seconds.
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_seconds)]
    pub connect_timeout: f64,
    /// Longest wait from sending a request to the first byte of its response body, seconds
    /// (queueing and prefill included). Default: --timeout.
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub first_byte_timeout: Option<f64>,
    /// Longest silence between two reads of a response body once it has started, seconds; a
    /// longer one fails the request as `stall`.
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, value_name = "SECONDS", default_value_t = 60.0, value_parser = parse_seconds)]
    pub idle_timeout: f64,
    /// Time limit of the pre-flight request, seconds.
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, value_name = "SECONDS", default_value_t = 15.0, value_parser = parse_seconds)]
    pub preflight_timeout: f64,
    /// Largest SSE line or event accepted, bytes (suffixes KiB, MiB, GiB); a larger one fails
    /// the request as `malformed_stream`.
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, value_name = "BYTES", default_value = "1MiB", value_parser = parse_bytes)]
    pub max_event_size: u64,
    /// Most bytes of an error response's body read (for its message), bytes.
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, value_name = "BYTES", default_value = "64KiB", value_parser = parse_bytes)]
    pub max_error_body: u64,
    /// Most bytes of each request's text kept by --save-generated-text (the rest is cut at a
    /// character boundary).
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, value_name = "BYTES", default_value = "1MiB", value_parser = parse_bytes)]
    pub max_generated_text: u64,
    /// Largest whole (non-streamed) answer read, bytes (default 64MiB: an embeddings batch);
    /// a larger one fails the request as `malformed_answer`.
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, value_name = "BYTES", value_parser = parse_bytes)]
    pub max_answer_size: Option<u64>,
}

impl LimitsArgs {
    /// `cfg` with these limits.
    pub fn apply(&self, mut cfg: RunConfig) -> RunConfig {
        cfg.load.connect_timeout_s = self.connect_timeout;
        cfg.load.first_byte_timeout_s = self.first_byte_timeout;
        cfg.load.idle_timeout_s = self.idle_timeout;
        cfg.load.preflight_timeout_s = self.preflight_timeout;
        cfg.max_event_bytes = self.max_event_size;
        cfg.max_error_body_bytes = self.max_error_body;
        cfg.max_generated_text_bytes = self.max_generated_text;
        cfg.max_answer_size = self.max_answer_size;
        cfg
    }
}

/// A time limit: a finite number of seconds above zero.
fn parse_seconds(s: &str) -> Result<f64, FlagError> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= crate::config::MAX_WAIT_S)
        .ok_or(FlagError::TimeLimit)
}

/// A size: a whole number of bytes above zero, optionally with a KiB, MiB or GiB suffix.
pub(super) fn parse_bytes(s: &str) -> Result<u64, FlagError> {
    let s = s.trim();
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(digits_end);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        _ => 0,
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|&n| n > 0)
        .ok_or(FlagError::Bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_seconds_parse_and_refuse_what_is_not_a_limit() {
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert_eq!(parse_bytes("64KiB"), Ok(64 << 10));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("2g"), Ok(2 << 30));
        for bad in [
            "0",
            "-1",
            "1.5MiB",
            "MiB",
            "1TiB",
            "99999999999999999999",
            "x",
        ] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_seconds("2.5"), Ok(2.5));
        for bad in ["0", "-1", "inf", "NaN", "1e20", "x"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }
}
