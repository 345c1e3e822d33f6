//! The names of the latency figures: a [`MetricKey`] is one statistic ([`Stat`]) of one
//! [`Metric`], written the way vLLM's `--save-result` writes it (`mean_ttft_ms`,
//! `median_itl_ms`, `std_e2el_ms`, `p99_tpot_ms`, `p99.9_ttft_ms`); a metric that is not a
//! time (output tokens/s per user) is written without the `_ms` (`p99_output_tps_per_user`).
//!
//! Every place that writes or reads such a key goes through [`MetricKey`]'s `Display` and
//! `FromStr` (the result document, the importers, the plots, the key ordering of tables), so
//! the spelling lives here only. Run-level figures (`output_throughput`, `completed`, ...) are
//! not metric keys: they have no statistic.
//!
//! Pure values: nothing here reads files or knows a document. To add a statistic, add a
//! [`Stat`] variant with its word in `Display` and `FromStr` (and its place in the reading
//! order, `config::figure::FigureKey`'s `Ord`); a new metric is a [`Metric`] variant here.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::ValueError;
use super::unit::{Better, Unit};

/// A per-request (or per-gap) metric with a distribution: the latencies, and the output rate
/// one user sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Ttft,
    Tpot,
    Itl,
    E2el,
    /// Time to second token: the second output token's arrival − the first's.
    Ttst,
    /// Output tokens per second one user sees: 1000 / TPOT (ms), per request.
    OutputTpsPerUser,
}

impl Metric {
    pub const ALL: [Metric; 6] = [
        Metric::Ttft,
        Metric::Tpot,
        Metric::Itl,
        Metric::E2el,
        Metric::Ttst,
        Metric::OutputTpsPerUser,
    ];
    /// The lowercase key used in JSON names (`mean_ttft_ms`) and on the command line.
    pub fn key(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Tpot => "tpot",
            Metric::Itl => "itl",
            Metric::E2el => "e2el",
            Metric::Ttst => "ttst",
            Metric::OutputTpsPerUser => "output_tps_per_user",
        }
    }

    /// What its samples measure: milliseconds, or tokens per second for the per-user rate.
    pub fn unit(self) -> Unit {
        match self {
            Metric::OutputTpsPerUser => Unit::TokensPerSecond,
            _ => Unit::Milliseconds,
        }
    }

    /// Latencies are better lower, a user's output rate higher.
    pub fn better(self) -> Better {
        match self {
            Metric::OutputTpsPerUser => Better::Higher,
            _ => Better::Lower,
        }
    }

    /// What follows the metric's key in a statistic's name: `_ms` for a time, nothing else.
    fn suffix(self) -> &'static str {
        match self.unit() {
            Unit::Milliseconds => "_ms",
            _ => "",
        }
    }
}

impl FromStr for Metric {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s.trim() {
            "ttft" => Ok(Metric::Ttft),
            "tpot" => Ok(Metric::Tpot),
            "itl" => Ok(Metric::Itl),
            "e2el" => Ok(Metric::E2el),
            "ttst" => Ok(Metric::Ttst),
            "output_tps_per_user" => Ok(Metric::OutputTpsPerUser),
            other => Err(ValueError::Metric(other.to_string())),
        }
    }
}

/// The suffix vLLM uses for a percentile: `99` for 99.0, `99.9` otherwise.
pub fn percentile_word(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{}", p as i64)
    } else {
        format!("{p}")
    }
}

/// One statistic of a metric's distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stat {
    Mean,
    Median,
    /// Population standard deviation.
    Std,
    /// The p-th percentile, 0 < p ≤ 100 (`p99`, `p99.9`).
    Percentile(f64),
}

impl fmt::Display for Stat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stat::Mean => f.write_str("mean"),
            Stat::Median => f.write_str("median"),
            Stat::Std => f.write_str("std"),
            Stat::Percentile(p) => write!(f, "p{}", percentile_word(*p)),
        }
    }
}

impl FromStr for Stat {
    type Err = ValueError;
    /// `mean`, `median`, `std` or `p` and a percentile in (0, 100] (`p99`, `p99.9`).
    fn from_str(s: &str) -> Result<Stat, ValueError> {
        match s {
            "mean" => Ok(Stat::Mean),
            "median" => Ok(Stat::Median),
            "std" => Ok(Stat::Std),
            _ => s
                .strip_prefix('p')
                .and_then(|p| p.parse::<f64>().ok())
                .filter(|p| *p > 0.0 && *p <= 100.0)
                .map(Stat::Percentile)
                .ok_or_else(|| ValueError::Stat(s.to_string())),
        }
    }
}

/// A statistic of a metric: `p99_ttft_ms`, `mean_output_tps_per_user`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetricKey {
    pub stat: Stat,
    pub metric: Metric,
}

impl MetricKey {
    pub fn new(stat: Stat, metric: Metric) -> MetricKey {
        MetricKey { stat, metric }
    }
}

impl fmt::Display for MetricKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.metric;
        write!(f, "{}_{}{}", self.stat, m.key(), m.suffix())
    }
}

impl FromStr for MetricKey {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<MetricKey, ValueError> {
        let junk = || ValueError::MetricKey(s.to_string());
        // The stat is the text before the first `_`: no stat's word has one, every key may.
        let (stat, rest) = s.split_once('_').ok_or_else(junk)?;
        let metric = Metric::ALL
            .into_iter()
            .find(|m| rest.strip_suffix(m.suffix()) == Some(m.key()))
            .ok_or_else(junk)?;
        Ok(MetricKey {
            stat: stat.parse().map_err(|_| junk())?,
            metric,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_words_follow_vllm() {
        assert_eq!(percentile_word(99.0), "99");
        assert_eq!(percentile_word(99.9), "99.9");
        assert_eq!(percentile_word(50.0), "50");
    }

    #[test]
    fn every_key_round_trips() {
        let stats = [
            Stat::Mean,
            Stat::Median,
            Stat::Std,
            Stat::Percentile(25.0),
            Stat::Percentile(50.0),
            Stat::Percentile(99.0),
            Stat::Percentile(99.9),
            Stat::Percentile(99.99),
            Stat::Percentile(100.0),
            Stat::Percentile(0.5),
        ];
        for metric in Metric::ALL {
            for stat in stats {
                let key = MetricKey::new(stat, metric);
                let text = key.to_string();
                assert_eq!(text.parse::<MetricKey>(), Ok(key), "{text}");
                assert_eq!(text.parse::<MetricKey>().unwrap().to_string(), text);
            }
        }
    }

    #[test]
    fn keys_are_spelled_as_vllm_does() {
        let k = |stat, metric| MetricKey::new(stat, metric).to_string();
        assert_eq!(k(Stat::Mean, Metric::Ttft), "mean_ttft_ms");
        assert_eq!(k(Stat::Median, Metric::Tpot), "median_tpot_ms");
        assert_eq!(k(Stat::Std, Metric::E2el), "std_e2el_ms");
        assert_eq!(k(Stat::Percentile(99.0), Metric::Itl), "p99_itl_ms");
        assert_eq!(k(Stat::Percentile(99.9), Metric::Ttft), "p99.9_ttft_ms");
        assert_eq!(k(Stat::Mean, Metric::Ttst), "mean_ttst_ms");
        assert_eq!(
            k(Stat::Percentile(99.0), Metric::OutputTpsPerUser),
            "p99_output_tps_per_user"
        );
    }

    #[test]
    fn junk_is_rejected() {
        for junk in [
            "",
            "_ms",
            "mean_ttft",
            "mean_ttft_s",
            "mean__ms",
            "mean_foo_ms",
            "avg_ttft_ms",
            "p_ttft_ms",
            "px_ttft_ms",
            "p0_ttft_ms",
            "p101_ttft_ms",
            "p-5_ttft_ms",
            "pnan_ttft_ms",
            "pinf_ttft_ms",
            "ttft_ms",
            "output_throughput",
            "llmperf_mean_inter_token_latency_ms",
            "mean_TTFT_ms",
            "mean_output_tps_per_user_ms",
            "mean_ttst",
            "mean_tps_per_user",
        ] {
            assert!(junk.parse::<MetricKey>().is_err(), "{junk}");
        }
        let e = "nope".parse::<MetricKey>().unwrap_err().to_string();
        assert!(e.contains("'nope'"), "{e}");
    }
}
