//! The value parsers of the command line's flags: each turns one flag's text into a config
//! value, or says in one line what is wrong with it.

use std::time::Duration;

use crate::config::shard::Shard;
use crate::config::{BackendKind, Metric, RequestRate, Slo};
use crate::sim::{MetricsFlavor, Preset};

pub(super) fn parse_preset(s: &str) -> Result<Preset, crate::sim::SimConfigError> {
    s.parse()
}

pub(super) fn parse_flavor(s: &str) -> Result<MetricsFlavor, crate::sim::SimConfigError> {
    s.parse()
}

pub(super) fn parse_shard(s: &str) -> Result<Shard, String> {
    s.parse()
}

pub(super) fn parse_time_scale(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(k) if k.is_finite() && k > 0.0 => Ok(k),
        _ => Err(format!("'{s}' is not a time scale (a finite number > 0)")),
    }
}

pub(super) fn parse_backend(s: &str) -> Result<BackendKind, crate::config::UnknownBackend> {
    s.parse()
}

/// A comma-separated option value (see `sweep` for the syntax).
#[derive(Clone, Debug, PartialEq)]
pub struct List<T>(pub Vec<T>);

pub(super) fn parse_counts(s: &str) -> Result<List<u64>, String> {
    crate::config::sweep::parse_counts(s).map(List)
}

pub(super) fn parse_rates(s: &str) -> Result<List<RequestRate>, String> {
    let rates = crate::config::sweep::parse_rates(s)?;
    for r in &rates {
        if let RequestRate::PerSecond(r) = r {
            crate::config::limits::check_rate(*r)?;
        }
    }
    Ok(List(rates))
}

/// A time span in seconds: 0 or more, at most a week (`--cooldown`).
pub(super) fn parse_span(s: &str) -> Result<f64, String> {
    let v = (s.trim().parse::<f64>()).map_err(|_| format!("'{s}' is not a number of seconds"))?;
    crate::config::limits::check_span(v, true)?;
    Ok(v)
}

pub(super) fn parse_slo(s: &str) -> Result<Slo, String> {
    s.parse()
}

pub(super) fn parse_header(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' is not NAME:VALUE"))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(format!("'{s}' has an empty header name"));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

pub(super) fn parse_json_object(s: &str) -> Result<serde_json::Value, String> {
    let v: serde_json::Value =
        serde_json::from_str(s).map_err(|e| format!("not valid JSON: {e}"))?;
    if !v.is_object() {
        return Err("must be a JSON object, e.g. '{\"top_k\": 5}'".into());
    }
    Ok(v)
}

pub(super) fn parse_metric(s: &str) -> Result<Metric, String> {
    s.parse()
}

pub(super) fn parse_percentile(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!("'{s}' is not a percentile in (0, 100]")),
    }
}

pub(super) fn parse_http_url(s: &str) -> Result<String, String> {
    if s.starts_with("http://") || s.starts_with("https://") {
        Ok(s.to_string())
    } else {
        Err(format!("'{s}' is not an http:// or https:// URL"))
    }
}

/// A `--scrape-metrics` value: a URL, or "" (the flag alone: the server's /metrics).
pub(super) fn parse_scrape_url(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Ok(String::new());
    }
    parse_http_url(s)
}

pub(super) fn parse_interval(s: &str) -> Result<Duration, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= crate::config::MAX_WAIT_S)
        .and_then(|v| Duration::try_from_secs_f64(v).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("'{s}' is not a positive number of seconds, at most a week"))
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
/// `p99_ttft_ms:10`, `output_throughput:3`.
pub(super) fn parse_gate(s: &str) -> Result<Gate, String> {
    let bad =
        || format!("'{s}' is not METRIC:PCT (e.g. tpot:5, p99_ttft_ms:10, output_throughput:3)");
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
            if name.ends_with("_ms") || name.contains("throughput") || name.contains("goodput") =>
        {
            name
        }
        Err(_) => return Err(bad()),
    };
    Ok(Gate { metric, percent })
}
