//! The load parameter a sweep varies and its values: `1,2,4` lists values; `A,B,...,C` is the
//! geometric progression with ratio B/A up to C (`1,2,...,4096` is the seeds' doubling sweep).
//! Pure values; running a sweep is `drive::sweep`, its document `results::sweep`.

use serde::{Deserialize, Serialize};

use super::{RequestRate, RunConfig};

/// The load parameter a sweep varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepParameter {
    NumPrompts,
    MaxConcurrency,
    RequestRate,
}

impl SweepParameter {
    pub fn as_str(self) -> &'static str {
        match self {
            SweepParameter::NumPrompts => "num_prompts",
            SweepParameter::MaxConcurrency => "max_concurrency",
            SweepParameter::RequestRate => "request_rate",
        }
    }
    /// Short form used in step file names.
    pub fn file_tag(self) -> &'static str {
        match self {
            SweepParameter::NumPrompts => "n",
            SweepParameter::MaxConcurrency => "c",
            SweepParameter::RequestRate => "r",
        }
    }
}

/// One value of the swept parameter. Serialized as a number (or `"inf"` for a rate).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SweepValue {
    Count(u64),
    Rate(RequestRate),
}

impl std::fmt::Display for SweepValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SweepValue::Count(n) => write!(f, "{n}"),
            SweepValue::Rate(r) => write!(f, "{r}"),
        }
    }
}

/// Parses `1,2,4` or `A,B,...,C` into counts (all ≥ 1).
pub fn parse_counts(s: &str) -> Result<Vec<u64>, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let num = |p: &str| -> Result<u64, String> {
        p.parse::<u64>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| format!("'{p}' is not a whole number of at least 1"))
    };
    if let Some(pos) = parts.iter().position(|p| *p == "...") {
        if pos != 2 || parts.len() != 4 {
            return Err(format!(
                "'{s}': a range is written A,B,...,C (e.g. 1,2,...,4096)"
            ));
        }
        let (a, b, c) = (num(parts[0])?, num(parts[1])?, num(parts[3])?);
        if b <= a || b % a != 0 {
            return Err(format!(
                "'{s}': B must be a multiple of A greater than A (the ratio of the progression)"
            ));
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
pub fn parse_rates(s: &str) -> Result<Vec<RequestRate>, String> {
    s.split(',').map(|p| p.trim().parse()).collect()
}

/// The config of one step.
pub fn step_config(base: &RunConfig, param: SweepParameter, value: SweepValue) -> RunConfig {
    let mut cfg = base.clone();
    match (param, value) {
        (SweepParameter::NumPrompts, SweepValue::Count(n)) => cfg.load.num_prompts = n,
        (SweepParameter::MaxConcurrency, SweepValue::Count(n)) => {
            cfg.load.max_concurrency = Some(n)
        }
        (SweepParameter::RequestRate, SweepValue::Rate(r)) => cfg.load.request_rate = r,
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
        assert!(parse_counts("2,3,...,10").unwrap_err().contains("multiple"));
        assert!(parse_counts("a").unwrap_err().contains("'a'"));
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
        ];
        assert_eq!(serde_json::to_string(&v).unwrap(), r#"[4,"2.5","inf"]"#);
    }
}
