//! Goodput's service-level objectives: a [`Slo`] bounds one per-request latency
//! ([`SloMetric`]), parsed from `--goodput`'s `METRIC:MS` terms and saved in the result. A
//! request is good when every SLO of its run (or of its mix class) holds. A [`JobSlo`] bounds
//! an agentic job's completion time (`--goodput jct:MS`): a completed job is good when every
//! job SLO holds; request SLOs judge requests (a job's calls among them), never jobs
//! (docs/metrics.md, "Job goodput"). Pure values.

use serde::{Deserialize, Serialize};
use std::str::FromStr;

use super::error::ValueError;
use super::metric::Metric;

/// One service-level objective for goodput: a request is good when every SLO holds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    pub metric: SloMetric,
    /// Upper bound, milliseconds (as on vLLM's command line).
    pub max_ms: f64,
}

/// What a goodput SLO bounds: a per-request latency (`ttft`, `tpot`, `e2el`, saved under
/// [`Metric`]'s names), or the time to the first answer token (`ttfa`: a
/// reasoning model's first token of its answer, after its reasoning).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloMetric {
    Ttft,
    Tpot,
    E2el,
    Ttfa,
}

impl SloMetric {
    /// Its name on the command line and in documents.
    pub fn key(self) -> &'static str {
        match self {
            SloMetric::Ttft => "ttft",
            SloMetric::Tpot => "tpot",
            SloMetric::E2el => "e2el",
            SloMetric::Ttfa => "ttfa",
        }
    }
}

impl FromStr for Slo {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        let (name, value) = (s.split_once(':')).ok_or_else(|| ValueError::Slo(s.to_string()))?;
        let metric = match name.trim() {
            "ttfa" => SloMetric::Ttfa,
            other => match (other.parse::<Metric>()).map_err(|_| ValueError::Slo(s.to_string()))? {
                Metric::Ttft => SloMetric::Ttft,
                Metric::Tpot => SloMetric::Tpot,
                Metric::E2el => SloMetric::E2el,
                Metric::Itl => return Err(ValueError::SloOfItl),
                Metric::Ttst | Metric::OutputTpsPerUser => {
                    return Err(ValueError::Slo(s.to_string()))
                }
            },
        };
        let max_ms: f64 = (value.parse().ok())
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| ValueError::SloBound {
                slo: s.to_string(),
                ms: value.to_string(),
            })?;
        Ok(Slo { metric, max_ms })
    }
}

/// A job's service-level objective (`--goodput jct:MS`): a completed job is good when its
/// completion time is at most `max_jct_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobSlo {
    /// Upper bound on the job's completion time, milliseconds.
    pub max_jct_ms: f64,
}

impl JobSlo {
    /// True when a job that took `jct_ms` meets it.
    pub fn holds(&self, jct_ms: f64) -> bool {
        jct_ms <= self.max_jct_ms
    }
}

impl FromStr for JobSlo {
    type Err = ValueError;
    /// `jct:MS`, MS a positive number.
    fn from_str(s: &str) -> Result<Self, ValueError> {
        let value =
            (s.trim().strip_prefix("jct:")).ok_or_else(|| ValueError::Slo(s.to_string()))?;
        let max_jct_ms: f64 = (value.trim().parse().ok())
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| ValueError::SloBound {
                slo: s.to_string(),
                ms: value.to_string(),
            })?;
        Ok(JobSlo { max_jct_ms })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_slo_is_jct_and_a_positive_number_of_ms() {
        let slo: JobSlo = "jct:2500".parse().unwrap();
        assert_eq!(slo.max_jct_ms, 2500.0);
        assert!(slo.holds(2500.0) && !slo.holds(2500.1));
        for bad in ["jct:0", "jct:-5", "jct:inf", "jct:NaN", "jct:", "jct:5ms"] {
            let e = bad.parse::<JobSlo>().unwrap_err().to_string();
            assert!(
                e.contains(bad) && e.contains("positive number"),
                "{bad}: {e}"
            );
            assert!(!e.contains('\n'), "{e}");
        }
        assert!("ttft:5".parse::<JobSlo>().is_err());
    }
}
