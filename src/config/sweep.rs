//! The load parameter ([`LoadParameter`], one enum for sweeps, searches and views) and a
//! sweep's values: `1,2,4` lists values; `A,B,...,C` is the geometric progression with ratio
//! B/A up to C (`1,2,...,4096` is the seeds' doubling sweep).
//! Pure values; running a sweep is `drive::sweep`, its document `results::sweep`.
//!
//! To let a sweep vary one more parameter: add the [`LoadParameter`] variant (its serialized
//! name is what sweep documents store), its file tag, and its case in [`step_config`].
//! `num_prefixes` (the `prefix` dataset's distinct prefixes) is a workload
//! setting swept at a fixed load: the prefix-cache cliff (`views::cliff`); `user_gap` (the
//! gap of `--users`) is swept at the same users: the hit rate against the gap.

use serde::{Deserialize, Serialize};

use super::error::ValueError;
use super::load::RequestRate;
use super::run::RunConfig;

/// A load parameter: what a sweep varies, what a search probes (rate or concurrency, see
/// `config::search`), and what a view's series is drawn against. Serialized as
/// `num_prompts`, `max_concurrency`, `request_rate`, `input_len` (sweep documents, imported
/// documents).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadParameter {
    NumPrompts,
    MaxConcurrency,
    RequestRate,
    /// Mean prompt tokens per request (seed 002's last section varies the prompt length).
    /// Read from imported files; a sweep does not vary it.
    InputLen,
    /// The `prefix` dataset's number of distinct prefixes (`--num-prefixes 1,2,...,64`): the
    /// working set a prefix cache must hold, at a fixed load.
    NumPrefixes,
    /// The gap between a user's units (`--users N --user-gap 1,10,60`), seconds: how long a
    /// cache must keep a user's prefix, at the same users.
    UserGap,
}

impl LoadParameter {
    /// Every parameter, in the order charts and series choose among them.
    pub const ALL: [LoadParameter; 6] = [
        LoadParameter::NumPrompts,
        LoadParameter::MaxConcurrency,
        LoadParameter::RequestRate,
        LoadParameter::InputLen,
        LoadParameter::NumPrefixes,
        LoadParameter::UserGap,
    ];

    /// The serialized name (`num_prompts`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            LoadParameter::NumPrompts => "num_prompts",
            LoadParameter::MaxConcurrency => "max_concurrency",
            LoadParameter::RequestRate => "request_rate",
            LoadParameter::InputLen => "input_len",
            LoadParameter::NumPrefixes => "num_prefixes",
            LoadParameter::UserGap => "user_gap",
        }
    }

    /// The parameter named `s` (its serialized name).
    pub fn parse(s: &str) -> Option<LoadParameter> {
        LoadParameter::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// Short form used in step file names.
    pub fn file_tag(self) -> &'static str {
        match self {
            LoadParameter::NumPrompts => "n",
            LoadParameter::MaxConcurrency => "c",
            LoadParameter::RequestRate => "r",
            LoadParameter::InputLen => "i",
            LoadParameter::NumPrefixes => "p",
            LoadParameter::UserGap => "g",
        }
    }

    /// The step value `v` of this parameter: a whole count (truncated), a rate per second, or
    /// seconds.
    pub fn value(self, v: f64) -> SweepValue {
        match self {
            LoadParameter::RequestRate => SweepValue::Rate(RequestRate::PerSecond(v)),
            LoadParameter::UserGap => SweepValue::Seconds(v),
            _ => SweepValue::Count(v as u64),
        }
    }
}

/// One value of the swept parameter. Serialized as a number (or `"inf"` for a rate); seconds
/// always with a fraction (`10.0`), so they read back as seconds, never as a count.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SweepValue {
    Count(u64),
    Rate(RequestRate),
    Seconds(f64),
}

impl std::fmt::Display for SweepValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SweepValue::Count(n) => write!(f, "{n}"),
            SweepValue::Rate(r) => write!(f, "{r}"),
            SweepValue::Seconds(s) => write!(f, "{s}"),
        }
    }
}

/// Parses `1,2,4` or `A,B,...,C` into counts (all ≥ 1).
pub fn parse_counts(s: &str) -> Result<Vec<u64>, ValueError> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let num = |p: &str| -> Result<u64, ValueError> {
        (p.parse::<u64>().ok())
            .filter(|&n| n >= 1)
            .ok_or_else(|| ValueError::Count(p.to_string()))
    };
    if let Some(pos) = parts.iter().position(|p| *p == "...") {
        if pos != 2 || parts.len() != 4 {
            return Err(ValueError::Range(s.to_string()));
        }
        let (a, b, c) = (num(parts[0])?, num(parts[1])?, num(parts[3])?);
        if b <= a || b % a != 0 {
            return Err(ValueError::RangeRatio(s.to_string()));
        }
        let ratio = b / a;
        let mut v = Vec::new();
        let mut x = a;
        while x <= c {
            v.push(x);
            x = match x.checked_mul(ratio) {
                Some(y) => y,
                None => break,
            };
        }
        return Ok(v);
    }
    parts.into_iter().map(num).collect()
}

/// Parses a comma-separated list of request rates (`1,2.5,inf`).
pub fn parse_rates(s: &str) -> Result<Vec<RequestRate>, ValueError> {
    s.split(',').map(|p| p.trim().parse()).collect()
}

/// The config of one step.
pub fn step_config(base: &RunConfig, param: LoadParameter, value: SweepValue) -> RunConfig {
    let mut cfg = base.clone();
    match (param, value) {
        (LoadParameter::NumPrompts, SweepValue::Count(n)) => cfg.load.num_prompts = n,
        (LoadParameter::MaxConcurrency, SweepValue::Count(n)) => cfg.load.max_concurrency = Some(n),
        (LoadParameter::RequestRate, SweepValue::Rate(r)) => cfg.load.request_rate = r,
        (LoadParameter::UserGap, SweepValue::Seconds(s)) => cfg.load.shape.user_gap_s = Some(s),
        (LoadParameter::NumPrefixes, SweepValue::Count(n)) => {
            if let super::workload::Dataset::Prefix { num_prefixes, .. } = &mut cfg.workload.dataset
            {
                *num_prefixes = n;
            }
        }
        _ => {}
    }
    cfg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubling_ranges_and_lists_parse() {
        assert_eq!(parse_counts("1,2,...,16").unwrap(), vec![1, 2, 4, 8, 16]);
        assert_eq!(parse_counts("1,2,...,4096").unwrap().len(), 13);
        assert_eq!(
            parse_counts("10,100,...,5000").unwrap(),
            vec![10, 100, 1000]
        );
        assert_eq!(parse_counts("3, 5,8").unwrap(), vec![3, 5, 8]);
        assert_eq!(parse_counts("64").unwrap(), vec![64]);
        assert!(parse_counts("0").is_err());
        assert!(parse_counts("1,2,...").is_err());
        let err = |s| parse_counts(s).unwrap_err().to_string();
        assert!(err("2,3,...,10").contains("multiple"));
        assert!(err("a").contains("'a'"));
    }

    #[test]
    fn rate_lists_parse() {
        assert_eq!(
            parse_rates("1,inf").unwrap(),
            vec![RequestRate::PerSecond(1.0), RequestRate::Infinite]
        );
        assert!(parse_rates("1,-2").is_err());
    }

    #[test]
    fn sweep_values_serialize_as_numbers() {
        let v = vec![
            SweepValue::Count(4),
            SweepValue::Rate(RequestRate::PerSecond(2.5)),
            SweepValue::Rate(RequestRate::Infinite),
            SweepValue::Seconds(10.0),
            SweepValue::Seconds(0.2),
        ];
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(text, r#"[4,"2.5","inf",10.0,0.2]"#);
        // A gap of whole seconds reads back as seconds, not as a count.
        assert_eq!(serde_json::from_str::<Vec<SweepValue>>(&text).unwrap(), v);
    }
}
