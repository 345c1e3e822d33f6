//! Per-request figures of one record: TTFT, TPOT, E2EL, its ITL gaps, and what the server
//! said about its own timing.

use super::distribution::{NS_PER_MS, NS_PER_S};
use crate::config::{Slo, SloMetric, MAX_TOKENS};
use crate::measure::client::usage::header_number;
use crate::measure::record::{Implausible, RequestRecord, TokenSource};

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

/// Which form a server's account of a request came in (docs/metrics.md, "The server's
/// account").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimingsForm {
    /// vLLM's `metrics` object (`server_request_metrics`).
    Vllm,
    /// llama.cpp's `timings` object (`server_timings`).
    Llamacpp,
    /// TGI's timing headers (`server_timing_headers`).
    Tgi,
    /// SGLang's `meta_info` (`server_meta_info`).
    Sglang,
}

impl TimingsForm {
    pub fn as_str(self) -> &'static str {
        match self {
            TimingsForm::Vllm => "vllm",
            TimingsForm::Llamacpp => "llamacpp",
            TimingsForm::Tgi => "tgi",
            TimingsForm::Sglang => "sglang",
        }
    }
}

/// What the server said about its own timing of one request, in one shape whatever form it
/// came in (vLLM `metrics`, llama.cpp `timings`, TGI's headers, SGLang's `meta_info`), read
/// from the record's verbatim fields. All in the server's time, ms. A number absent, not
/// finite or negative is `None`; a form the client flagged implausible is not read at all.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerTimings {
    /// `predicted_per_token_ms`: decode time per output token, ms; `None` when absent, not a
    /// finite number, or when the server predicted fewer than 2 tokens (then it is not a
    /// per-token time: llama.cpp reports 0).
    pub decode_per_token_ms: Option<f64>,
    /// `prompt_ms`: prompt processing time, ms.
    pub prompt_ms: Option<f64>,
    /// The server's time from the request's arrival to its first token, ms (vLLM's
    /// `metrics.time_to_first_token_ms`; SGLang's `prefill_finished_ts − request_received_ts`).
    pub server_ttft_ms: Option<f64>,
    /// The server's queueing before prefill, ms (vLLM `metrics.queue_time_ms`, TGI
    /// `x-queue-time`, SGLang `queue_time`).
    pub queue_ms: Option<f64>,
    /// The form the first account read came in; `None`: the record has none believed.
    pub form: Option<TimingsForm>,
    /// Decode: from the server's first output token to its last, ms (vLLM
    /// `generation_time_ms`, llama.cpp `predicted_ms`, SGLang `decode_finished_ts −
    /// prefill_finished_ts`).
    pub decode_ms: Option<f64>,
    /// The server's mean time per output token after the first, ms (vLLM `mean_itl_ms`,
    /// llama.cpp `predicted_per_token_ms`, SGLang decode / (completion tokens − 1), TGI
    /// `x-time-per-token`, whose inference time includes the prefill).
    pub itl_ms: Option<f64>,
    /// Prompt tokens the server took from its cache (llama.cpp `cache_n`, SGLang
    /// `cached_tokens`, else the record's believed `cached_prompt_tokens`).
    pub cached_tokens: Option<u64>,
    /// Prompt tokens the server counted (llama.cpp `prompt_n + cache_n`, TGI
    /// `x-prompt-tokens`, SGLang `prompt_tokens`, else the server's `usage` count).
    pub prompt_tokens: Option<u64>,
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

    /// Reads the figures from a record; all `None` when it has no server timings, and those of
    /// a form the client found implausible are left out (docs/metrics.md, "Numbers a
    /// server reports").
    pub fn of(r: &RequestRecord) -> ServerTimings {
        let num = |v: Option<&serde_json::Value>, key: &str| {
            v?.get(key)
                .and_then(serde_json::Value::as_f64)
                .filter(|v| v.is_finite() && *v >= 0.0)
        };
        let count = |v: Option<&serde_json::Value>, key: &str| v?.get(key)?.as_u64();
        fn believed<'a>(
            r: &RequestRecord,
            v: &'a Option<serde_json::Value>,
            what: Implausible,
        ) -> Option<&'a serde_json::Value> {
            v.as_ref().filter(|_| !r.implausible_usage.contains(&what))
        }
        let t = believed(r, &r.server_timings, Implausible::ServerTimings);
        let m = believed(
            r,
            &r.server_request_metrics,
            Implausible::ServerRequestMetrics,
        );
        let h = believed(
            r,
            &r.server_timing_headers,
            Implausible::ServerTimingHeaders,
        );
        let s = believed(r, &r.server_meta_info, Implausible::ServerMetaInfo);
        let header = |key: &str| h?.get(key).and_then(header_number);
        let secs = |key: &str| num(s, key).map(|x| x * 1e3);
        let gap = |a: &str, b: &str| Some((num(s, b)? - num(s, a)?) * 1e3).filter(|d| *d >= 0.0);
        let enough_tokens = num(t, "predicted_n").is_none_or(|n| n >= 2.0);
        let decode_per_token_ms = num(t, "predicted_per_token_ms").filter(|_| enough_tokens);
        let sglang_decode = gap("prefill_finished_ts", "decode_finished_ts");
        let sglang_itl = (count(s, "completion_tokens").filter(|n| *n >= 2))
            .and_then(|n| Some(sglang_decode? / (n - 1) as f64));
        let form = [
            (m, TimingsForm::Vllm),
            (t, TimingsForm::Llamacpp),
            (h, TimingsForm::Tgi),
            (s, TimingsForm::Sglang),
        ]
        .into_iter()
        .find_map(|(v, f)| v.map(|_| f));
        let usage_prompt = r
            .prompt_tokens
            .filter(|_| r.prompt_tokens_source == Some(TokenSource::ServerUsage));
        let llama_prompt = count(t, "prompt_n").map(|n| n + count(t, "cache_n").unwrap_or(0));
        ServerTimings {
            decode_per_token_ms,
            prompt_ms: num(t, "prompt_ms"),
            server_ttft_ms: num(m, "time_to_first_token_ms")
                .or_else(|| gap("request_received_ts", "prefill_finished_ts")),
            queue_ms: (num(m, "queue_time_ms"))
                .or_else(|| header("x-queue-time"))
                .or_else(|| secs("queue_time")),
            form,
            decode_ms: (num(m, "generation_time_ms"))
                .or_else(|| num(t, "predicted_ms"))
                .or(sglang_decode),
            itl_ms: (num(m, "mean_itl_ms"))
                .or(decode_per_token_ms)
                .or(sglang_itl)
                .or_else(|| header("x-time-per-token")),
            cached_tokens: (count(t, "cache_n"))
                .or_else(|| count(s, "cached_tokens"))
                .or(r.cached_prompt_tokens),
            prompt_tokens: (llama_prompt)
                .or_else(|| header("x-prompt-tokens").map(|n| n as u64))
                .or_else(|| count(s, "prompt_tokens"))
                .or(usage_prompt),
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
