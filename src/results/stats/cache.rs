//! Prefix-cache hit rate, designed against measured (docs/metrics.md, "Prefix-cache hit rate").
//! Designed: the prompt tokens the workload built to repeat a prefix it had already
//! sent (`designed_cached_tokens`, from the `prefix` and `trace` datasets: an unbounded cache
//! would hold them). Measured: the prompt tokens the server says it took from its cache
//! (`cached_prompt_tokens`: `usage.prompt_tokens_details.cached_tokens`, else llama.cpp's
//! `timings.cache_n`). Each is a ratio of sums over the successful requests that carry it.

use serde::{Deserialize, Serialize};

use crate::measure::record::RequestRecord;

/// The two hit rates and the requests each is over.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PrefixCacheRates {
    /// Σ designed cached tokens / Σ prompt tokens; `None`: the workload designs no reuse.
    pub designed_hit_rate: Option<f64>,
    pub designed_requests: u64,
    /// Σ cached tokens the server reported / Σ prompt tokens; `None`: the server said nothing.
    pub measured_hit_rate: Option<f64>,
    pub measured_requests: u64,
}

/// Running sums: (cached tokens, prompt tokens, requests) for each side; tokens in 128 bits,
/// so no sum of counts can wrap.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct CacheSums {
    designed: (u128, u128, u64),
    measured: (u128, u128, u64),
}

impl CacheSums {
    /// Adds a successful request.
    pub(super) fn add(&mut self, r: &RequestRecord) {
        let prompt = r.prompt_tokens.unwrap_or(0);
        for (side, cached) in [
            (&mut self.designed, r.designed_cached_tokens),
            (&mut self.measured, r.cached_prompt_tokens),
        ] {
            if let Some(c) = cached {
                side.0 += u128::from(c.min(prompt));
                side.1 += u128::from(prompt);
                side.2 += 1;
            }
        }
    }

    pub(super) fn merge(&mut self, o: CacheSums) {
        for (a, b) in [
            (&mut self.designed, o.designed),
            (&mut self.measured, o.measured),
        ] {
            *a = (a.0 + b.0, a.1 + b.1, a.2 + b.2);
        }
    }

    /// `None` when no request carried either figure.
    pub(super) fn finish(self) -> Option<PrefixCacheRates> {
        let rate = |(c, p, _): (u128, u128, u64)| (p > 0).then(|| c as f64 / p as f64);
        (self.designed.2 + self.measured.2 > 0).then(|| PrefixCacheRates {
            designed_hit_rate: rate(self.designed),
            designed_requests: self.designed.2,
            measured_hit_rate: rate(self.measured),
            measured_requests: self.measured.2,
        })
    }
}
