//! Per-request figures of one record: TTFT, TPOT, E2EL, its ITL gaps, and what the server
//! said about its own timing.

use super::distribution::{NS_PER_MS, NS_PER_S};
use crate::config::{Slo, SloMetric, MAX_TOKENS};
use crate::measure::record::{Implausible, RequestRecord};

/// Per-request figures of one successful request (definitions in `docs/metrics.md`).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestMetrics {
    /// First output chunk − send.
    pub ttft_ns: u64,
    /// First output chunk − scheduled send (includes client-side queueing).
    pub ttft_from_scheduled_ns: u64,
    /// First output chunk − when the client began the request (a new connection's setup
    /// included).
    pub ttft_with_setup_ns: u64,
    /// Last output chunk − send.
    pub e2el_ns: u64,
    /// N, output tokens, from the record's one source.
    pub output_tokens: u64,
    /// (E2EL − TTFT) / (N − 1), milliseconds; `None` when N < 2.
    pub tpot_ms: Option<f64>,
    /// N / E2EL, tokens per second.
    pub output_throughput: f64,
    /// First chunk with answer text − send (the time to the first answer token, after any
    /// reasoning); `None` when no chunk carried answer text.
    pub ttfa_ns: Option<u64>,
}

impl RequestMetrics {
    /// The figures of a successful record with at least one output chunk; `None` otherwise.
    pub fn of(r: &RequestRecord) -> Option<RequestMetrics> {
        if !r.is_ok() {
            return None;
        }
        let first = r.first_chunk_ns()?;
        let last = r.last_chunk_ns()?;
        let ttft_ns = first.saturating_sub(r.sent_ns);
        let e2el_ns = last.saturating_sub(r.sent_ns);
        let n = r.output_tokens.unwrap_or(r.chunk_ns.len() as u64);
        let tpot_ms =
            (n >= 2).then(|| e2el_ns.saturating_sub(ttft_ns) as f64 / NS_PER_MS / (n - 1) as f64);
        let output_throughput = if e2el_ns > 0 {
            n as f64 / (e2el_ns as f64 / NS_PER_S)
        } else {
            0.0
        };
        Some(RequestMetrics {
            ttft_ns,
            ttft_from_scheduled_ns: first.saturating_sub(r.scheduled_ns),
            ttft_with_setup_ns: first.saturating_sub(r.began_ns()),
            e2el_ns,
            output_tokens: n,
            tpot_ms,
            output_throughput,
            ttfa_ns: r.first_answer_ns.map(|t| t.saturating_sub(r.sent_ns)),
        })
    }

    /// The figures in a clock `k` times slower (the simulated server's time, `--time-scale`).
    pub fn scaled(self, k: f64) -> RequestMetrics {
        if k == 1.0 {
            return self;
        }
        let ns = |x: u64| (x as f64 * k) as u64;
        RequestMetrics {
            ttft_ns: ns(self.ttft_ns),
            ttft_from_scheduled_ns: ns(self.ttft_from_scheduled_ns),
            ttft_with_setup_ns: ns(self.ttft_with_setup_ns),
            e2el_ns: ns(self.e2el_ns),
            output_tokens: self.output_tokens,
            tpot_ms: self.tpot_ms.map(|t| t * k),
            output_throughput: self.output_throughput / k,
            ttfa_ns: self.ttfa_ns.map(ns),
        }
    }

    /// True when the request meets every SLO. A TPOT SLO cannot be broken by a one-token
    /// request (TPOT is undefined for it).
    pub fn meets(&self, slos: &[Slo]) -> bool {
        slos.iter().all(|slo| {
            let ms = |ns: u64| ns as f64 / NS_PER_MS;
            let value = match slo.metric {
                SloMetric::Ttft => Some(ms(self.ttft_ns)),
                SloMetric::E2el => Some(ms(self.e2el_ns)),
                SloMetric::Tpot => self.tpot_ms,
                // A request that never answered (all reasoning) breaks it.
                SloMetric::Ttfa => Some(self.ttfa_ns.map_or(f64::INFINITY, ms)),
            };
            value.is_none_or(|v| v <= slo.max_ms)
        })
    }
}

/// What the server said about its own timing of one request (llama.cpp's `timings` object),
/// read from the record's verbatim `server_timings`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerTimings {
    /// `predicted_per_token_ms`: decode time per output token, ms; `None` when absent, not a
    /// finite number, or when the server predicted fewer than 2 tokens (then it is not a
    /// per-token time: llama.cpp reports 0).
    pub decode_per_token_ms: Option<f64>,
    /// `prompt_ms`: prompt processing time, ms.
    pub prompt_ms: Option<f64>,
    /// The server's time from the request's arrival to its first token, ms (vLLM's
    /// `metrics.time_to_first_token_ms`).
    pub server_ttft_ms: Option<f64>,
    /// The server's queueing before prefill, ms (`metrics.queue_time_ms`).
    pub queue_ms: Option<f64>,
}

impl ServerTimings {
    /// Prefill, ms: the server's TTFT less its queueing where both are known, else
    /// llama.cpp's `prompt_ms`.
    pub fn prefill_ms(&self) -> Option<f64> {
        match (self.server_ttft_ms, self.queue_ms) {
            (Some(t), Some(q)) => Some((t - q).max(0.0)),
            _ => self.prompt_ms,
        }
    }
}

impl ServerTimings {
    /// Reads the figures from a record; all `None` when it has no server timings, and those of
    /// an object the client found implausible are left out (docs/metrics.md, "Numbers a
    /// server reports").
    pub fn of(r: &RequestRecord) -> ServerTimings {
        let num = |v: Option<&serde_json::Value>, key: &str| {
            v?.get(key)
                .and_then(serde_json::Value::as_f64)
                .filter(|v| v.is_finite() && *v >= 0.0)
        };
        let flagged = |what| r.implausible_usage.contains(&what);
        let t = (r.server_timings.as_ref()).filter(|_| !flagged(Implausible::ServerTimings));
        let m = (r.server_request_metrics.as_ref())
            .filter(|_| !flagged(Implausible::ServerRequestMetrics));
        let enough_tokens = num(t, "predicted_n").is_none_or(|n| n >= 2.0);
        ServerTimings {
            decode_per_token_ms: num(t, "predicted_per_token_ms").filter(|_| enough_tokens),
            prompt_ms: num(t, "prompt_ms"),
            server_ttft_ms: num(m, "time_to_first_token_ms"),
            queue_ms: num(m, "queue_time_ms"),
        }
    }
}

/// Inter-chunk gaps of a record, nanoseconds: `chunk[i] − chunk[i−1]`.
pub fn itl_gaps_ns(r: &RequestRecord) -> impl Iterator<Item = u64> + '_ {
    r.chunk_ns.windows(2).map(|w| w[1].saturating_sub(w[0]))
}

/// Per-token ITL samples of a record, nanoseconds, when its per-chunk token counts are known:
/// the first chunk's extra tokens arrived with the first token (gaps of 0), and chunk i ≥ 1
/// with k tokens contributes k gaps of (chunk[i] − chunk[i−1]) / k. So there are N − 1
/// samples summing to E2EL − TTFT: their mean over a request is its TPOT.
///
/// Only for counts that sum to at most [`MAX_TOKENS`] (one answer's most tokens): a records
/// file's counts are not trusted to size the work they cause.
pub fn itl_per_token_ns(r: &RequestRecord) -> impl Iterator<Item = f64> + '_ {
    let counts = r.chunk_tokens.as_deref().filter(|c| {
        let sum: u64 = c.iter().map(|&k| u64::from(k.max(1))).sum();
        c.len() == r.chunk_ns.len() && !c.is_empty() && sum <= MAX_TOKENS
    });
    let first = counts.map_or(0, |c| c[0].saturating_sub(1) as usize);
    let gaps = counts.into_iter().flat_map(move |c| {
        c[1..]
            .iter()
            .zip(r.chunk_ns.windows(2))
            .flat_map(|(&k, w)| {
                let k = k.max(1);
                let g = w[1].saturating_sub(w[0]) as f64 / k as f64;
                std::iter::repeat_n(g, k as usize)
            })
    });
    std::iter::repeat_n(0.0, first).chain(gaps)
}
