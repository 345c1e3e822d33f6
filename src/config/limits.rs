//! The bounds every value from outside is held to, so that none makes a run take unbounded
//! time or memory: the most tokens, requests and turns a run may ask for, the longest time
//! span, the lowest rate, and a conversation's history. Each is checked before the work or memory it guards, with a one-line error naming
//! the flag or the field (`RunConfig::validate`, `LoadShape::validate`, the dataset readers).
//! docs/reliability.md, "Limits", gives each one's reason.

use std::time::Duration;

/// The most tokens one prompt (prefix included) or one answer may ask for: ten million, far
/// past any served context today (128k to a few million), so only a typo is refused before
/// the workload tries to build it.
pub const MAX_TOKENS: u64 = 10_000_000;
/// The most requests (measured, or warm-ups) of one run: every one is built before the load
/// starts, so a typo such as `--num-prompts 1e12` is refused rather than exhausting memory.
pub const MAX_PROMPTS: u64 = 100_000_000;
/// The longest wait or time span a flag or a file may ask for, seconds (a week): a longer one
/// is surely a typo, and past about 1.8e19 a `Duration` cannot hold it.
pub const MAX_WAIT_S: f64 = 604_800.0;
/// The lowest request rate: one request a week on average (a lower one would wait longer than
/// any time span may).
pub const MIN_RATE: f64 = 1.0 / MAX_WAIT_S;
/// The most turns of a conversation (`--turns`): each turn resends the whole history, so the
/// tokens a conversation sends grow with the square of its turns (100 turns at the default
/// lengths send 1.28 million tokens).
pub const MAX_TURNS: u32 = 100;
/// A conversation's history (its messages' text), bytes, by default: it bounds what each
/// turn's request body repeats (`--max-history-bytes`).
pub const MAX_HISTORY_BYTES: u64 = 16 << 20;
/// A conversation's history, tokens, by default: about the longest context served widely
/// today; the server would refuse a longer prompt (`--max-history-tokens`).
pub const MAX_HISTORY_TOKENS: u64 = 1_000_000;

/// The most calls one agentic job may hold (a `graph` line, the `agentic` generator's levels
/// times their calls): far above any agent's graph, it bounds what one job can make the driver
/// hold in flight and in memory.
pub const MAX_CALLS_PER_JOB: usize = 10_000;
/// The longest gap before a job's call, ms: a week (as every other wait servebench schedules).
pub const MAX_GAP_MS: f64 = MAX_WAIT_S * 1e3;

/// The most tokens the prompts of one run may hold in all: every prompt is built in memory
/// before the run starts (about 5 GB of text).
pub const MAX_BUILT_TOKENS: u64 = 1_000_000_000;
/// Most prompts a time-bounded run builds for its expected requests (`--num-prompts` raises
/// it): building is done before the run, and past the pool the prompts are sent again.
pub const POOL_MAX: u64 = 50_000;

/// A time limit in seconds as a `Duration`, at most [`MAX_WAIT_S`] (never a panic: a saved
/// document may hold any number).
pub fn limit(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds.min(MAX_WAIT_S)).unwrap_or(Duration::ZERO)
}

/// A time span or a rate past the bounds every value is held to; the message says why, to
/// follow the flag's name.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum LimitError {
    #[error("{seconds} is not a number of seconds {}", if *zero_ok { "0 or more" } else { "above 0" })]
    NotASpan { seconds: f64, zero_ok: bool },
    #[error("{seconds} s is longer than a week ({week:.0} s), the longest time span", week = MAX_WAIT_S)]
    SpanTooLong { seconds: f64 },
    #[error("{rps} is not a positive number of requests per second")]
    NotARate { rps: f64 },
    #[error("{rps} requests per second is a mean gap of more than a week: at least {min:.3e} (one a week)", min = MIN_RATE)]
    RateTooLow { rps: f64 },
    #[error("{seconds} s is shorter than the shortest time slice, {min} s", min = MIN_TIME_SLICE_S)]
    SliceTooShort { seconds: f64 },
}

/// Checks a time span in seconds: a number, not negative (above zero unless `zero_ok`), at
/// most [`MAX_WAIT_S`].
pub fn check_span(seconds: f64, zero_ok: bool) -> Result<(), LimitError> {
    let low_ok = if zero_ok {
        seconds >= 0.0
    } else {
        seconds > 0.0
    };
    if !(seconds.is_finite() && low_ok) {
        return Err(LimitError::NotASpan { seconds, zero_ok });
    }
    if seconds > MAX_WAIT_S {
        return Err(LimitError::SpanTooLong { seconds });
    }
    Ok(())
}

/// Checks a request rate (per second): a number of at least [`MIN_RATE`] (its mean gap at
/// most a week).
pub fn check_rate(rps: f64) -> Result<(), LimitError> {
    if !(rps.is_finite() && rps > 0.0) {
        return Err(LimitError::NotARate { rps });
    }
    if rps < MIN_RATE {
        return Err(LimitError::RateTooLow { rps });
    }
    Ok(())
}

/// The shortest time slice (`--time-slice`), seconds: a window of 10 ms already holds only a
/// handful of requests at thousands a second, and finer ones are noise.
pub const MIN_TIME_SLICE_S: f64 = 0.01;
/// The most time slices one run is cut into: a run longer than this many windows keeps none
/// (its result says so) and is re-sliced coarser from its records (`report --time-slice`).
pub const MAX_TIME_SLICES: u64 = 10_000;

/// Checks a time slice's width in seconds: a number of at least [`MIN_TIME_SLICE_S`], at
/// most [`MAX_WAIT_S`].
pub fn check_time_slice(seconds: f64) -> Result<(), LimitError> {
    check_span(seconds, false)?;
    if seconds < MIN_TIME_SLICE_S {
        return Err(LimitError::SliceTooShort { seconds });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_rates_are_numbers_within_a_week() {
        assert!(check_span(0.0, true).is_ok() && check_span(MAX_WAIT_S, false).is_ok());
        for bad in [1e300, f64::NAN, f64::INFINITY, -1.0, MAX_WAIT_S * 1.01] {
            let e = check_span(bad, true).unwrap_err().to_string();
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(check_span(0.0, false).is_err());
        assert!(check_rate(MIN_RATE).is_ok() && check_rate(1e9).is_ok());
        for bad in [1e-300, 0.0, -1.0, f64::NAN, f64::INFINITY, MIN_RATE / 2.0] {
            assert!(check_rate(bad).is_err(), "{bad}");
        }
        assert!(check_time_slice(MIN_TIME_SLICE_S).is_ok() && check_time_slice(60.0).is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 0.001, MAX_WAIT_S * 2.0] {
            let e = check_time_slice(bad).unwrap_err().to_string();
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
