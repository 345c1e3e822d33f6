//! The value parsers of the command line's flags: each turns one flag's text into a config
//! value, or says in one line what is wrong with it.

use std::time::Duration;

use super::error::FlagError;
use crate::config::{Metric, RequestRate};

pub(super) fn parse_time_scale(s: &str) -> Result<f64, FlagError> {
    match s.trim().parse::<f64>() {
        Ok(k) if k.is_finite() && k > 0.0 => Ok(k),
        _ => Err(FlagError::TimeScale(s.to_string())),
    }
}

/// A threshold in milliseconds: > 0 and at most an hour (`report --timeline-itl-ms`).
pub(super) fn parse_threshold_ms(s: &str) -> Result<f64, FlagError> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 3_600_000.0 => Ok(v),
        _ => Err(FlagError::Milliseconds(s.to_string())),
    }
}

/// A comma-separated option value (see `sweep` for the syntax).
#[derive(Clone, Debug, PartialEq)]
pub struct List<T>(pub Vec<T>);

pub(super) fn parse_counts(s: &str) -> Result<List<u64>, FlagError> {
    Ok(List(crate::config::sweep::parse_counts(s)?))
}

/// `--source-addresses` (`config::source`).
pub(super) fn parse_source_addresses(s: &str) -> Result<List<std::net::IpAddr>, FlagError> {
    Ok(List(crate::config::source::parse(s)?))
}

pub(super) fn parse_rates(s: &str) -> Result<List<RequestRate>, FlagError> {
    let rates = crate::config::sweep::parse_rates(s)?;
    for r in &rates {
        if let RequestRate::PerSecond(r) = r {
            crate::config::limits::check_rate(*r)?;
        }
    }
    Ok(List(rates))
}

/// A time span in seconds: 0 or more, at most a week (`--cooldown`).
pub(super) fn parse_span(s: &str) -> Result<f64, FlagError> {
    let v = (s.trim().parse::<f64>()).map_err(|_| FlagError::Seconds(s.to_string()))?;
    crate::config::limits::check_span(v, true)?;
    Ok(v)
}

/// A time slice's width in seconds (`--time-slice`): at least 10 ms, at most a week.
pub(super) fn parse_time_slice(s: &str) -> Result<f64, FlagError> {
    let v = (s.trim().parse::<f64>()).map_err(|_| FlagError::Seconds(s.to_string()))?;
    crate::config::limits::check_time_slice(v)?;
    Ok(v)
}

/// `--bucket-by FIELD:E0,E1,...` (`config::buckets`).
pub(super) fn parse_bucket_by(s: &str) -> Result<crate::config::buckets::BucketBy, FlagError> {
    Ok(s.parse()?)
}

pub(super) fn parse_header(s: &str) -> Result<(String, String), FlagError> {
    let (k, v) = (s.split_once(':')).ok_or_else(|| FlagError::Header(s.to_string()))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(FlagError::EmptyHeaderName(s.to_string()));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

pub(super) fn parse_json_object(s: &str) -> Result<serde_json::Value, FlagError> {
    let v: serde_json::Value =
        serde_json::from_str(s).map_err(|e| FlagError::Json(e.to_string()))?;
    if !v.is_object() {
        return Err(FlagError::NotAnObject);
    }
    Ok(v)
}

pub(super) fn parse_percentile(s: &str) -> Result<f64, FlagError> {
    match s.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(FlagError::Percentile(s.to_string())),
    }
}

pub(super) fn parse_http_url(s: &str) -> Result<String, FlagError> {
    if s.starts_with("http://") || s.starts_with("https://") {
        Ok(s.to_string())
    } else {
        Err(FlagError::Url(s.to_string()))
    }
}

/// A `--scrape-metrics` value: a URL, or "" (the flag alone: the server's /metrics).
pub(super) fn parse_scrape_url(s: &str) -> Result<String, FlagError> {
    if s.is_empty() {
        return Ok(String::new());
    }
    parse_http_url(s)
}

pub(super) fn parse_interval(s: &str) -> Result<Duration, FlagError> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= crate::config::MAX_WAIT_S)
        .and_then(|v| Duration::try_from_secs_f64(v).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| FlagError::Interval(s.to_string()))
}

/// `compare --fail-if-worse METRIC:PCT`: fail when B is significantly worse than A on METRIC by
/// more than PCT percent.
#[derive(Clone, Debug, PartialEq)]
pub struct Gate {
    /// A metric key (`mean_tpot_ms`, `p99_ttft_ms`, `output_throughput`).
    pub metric: String,
    pub percent: f64,
}

/// `tpot:5` (a short name means the mean: `ttft`, `tpot`, `itl`, `e2el`) or
/// `p99_ttft_ms:10`, `output_throughput:3`, a job figure (`jobs_per_s:5`).
pub(super) fn parse_gate(s: &str) -> Result<Gate, FlagError> {
    let bad = || FlagError::Gate(s.to_string());
    let (name, pct) = s.split_once(':').ok_or_else(bad)?;
    let percent: f64 = pct.trim().parse().map_err(|_| bad())?;
    if !(percent.is_finite() && percent >= 0.0) {
        return Err(bad());
    }
    let name = name.trim().to_ascii_lowercase();
    let metric = match name.parse::<Metric>() {
        Ok(m) => {
            crate::config::metric::MetricKey::new(crate::config::metric::Stat::Mean, m).to_string()
        }
        Err(_)
            if name.ends_with("_ms")
                || name.contains("throughput")
                || name.contains("goodput")
                || crate::config::figure::JobFigure::named(&name).is_some() =>
        {
            name
        }
        Err(_) => return Err(bad()),
    };
    Ok(Gate { metric, percent })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gate takes a job figure's name, as a request figure's.
    #[test]
    fn gates_take_job_figures() {
        for name in [
            "p99_jct_ms",
            "jobs_per_s",
            "jct_slo_attainment",
            "job_goodput",
        ] {
            assert_eq!(parse_gate(&format!("{name}:5")).unwrap().metric, name);
        }
        assert!(parse_gate("jobs_nope:5").is_err());
    }
}
