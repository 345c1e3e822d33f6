//! The figures of an agentic run's jobs as views show and `compare` judges them
//! ([`JobFigure`]; docs/metrics.md, "Jobs"): each with the name it has in a result's `jobs`
//! block, prefixed where that name alone would mean a request figure (`jobs_completed`), its
//! unit and which way is better. Pure values.

use super::unit::{Better, Unit};

/// One job figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum JobFigure {
    JobsPerS,
    JobGoodput,
    JctSloAttainment,
    MeanJct,
    MedianJct,
    P90Jct,
    P99Jct,
    MeanCriticalPath,
    MeanBeyond,
    MeanFirstTtft,
    MeanCalls,
    MeanInputTokens,
    MeanOutputTokens,
    CacheHitRate,
    Completed,
    Failed,
    Cut,
    Unsent,
}

impl JobFigure {
    pub const ALL: [JobFigure; 18] = [
        JobFigure::JobsPerS,
        JobFigure::JobGoodput,
        JobFigure::JctSloAttainment,
        JobFigure::MeanJct,
        JobFigure::MedianJct,
        JobFigure::P90Jct,
        JobFigure::P99Jct,
        JobFigure::MeanCriticalPath,
        JobFigure::MeanBeyond,
        JobFigure::MeanFirstTtft,
        JobFigure::MeanCalls,
        JobFigure::MeanInputTokens,
        JobFigure::MeanOutputTokens,
        JobFigure::CacheHitRate,
        JobFigure::Completed,
        JobFigure::Failed,
        JobFigure::Cut,
        JobFigure::Unsent,
    ];

    /// Its name in views, `compare --metrics` and `--fail-if-worse`.
    pub fn name(self) -> &'static str {
        match self {
            JobFigure::JobsPerS => "jobs_per_s",
            JobFigure::JobGoodput => "job_goodput",
            JobFigure::JctSloAttainment => "jct_slo_attainment",
            JobFigure::MeanJct => "mean_jct_ms",
            JobFigure::MedianJct => "median_jct_ms",
            JobFigure::P90Jct => "p90_jct_ms",
            JobFigure::P99Jct => "p99_jct_ms",
            JobFigure::MeanCriticalPath => "mean_critical_path_ms",
            JobFigure::MeanBeyond => "mean_beyond_ms",
            JobFigure::MeanFirstTtft => "mean_first_ttft_ms",
            JobFigure::MeanCalls => "mean_calls",
            JobFigure::MeanInputTokens => "mean_job_input_tokens",
            JobFigure::MeanOutputTokens => "mean_job_output_tokens",
            JobFigure::CacheHitRate => "job_cache_hit_rate",
            JobFigure::Completed => "jobs_completed",
            JobFigure::Failed => "jobs_failed",
            JobFigure::Cut => "jobs_cut",
            JobFigure::Unsent => "jobs_unsent",
        }
    }

    pub fn unit(self) -> Unit {
        match self {
            JobFigure::JobsPerS | JobFigure::JobGoodput => Unit::JobsPerSecond,
            JobFigure::JctSloAttainment | JobFigure::CacheHitRate => Unit::Fraction,
            JobFigure::MeanJct
            | JobFigure::MedianJct
            | JobFigure::P90Jct
            | JobFigure::P99Jct
            | JobFigure::MeanCriticalPath
            | JobFigure::MeanBeyond
            | JobFigure::MeanFirstTtft => Unit::Milliseconds,
            JobFigure::MeanCalls => Unit::CallsPerJob,
            JobFigure::MeanInputTokens | JobFigure::MeanOutputTokens => Unit::TokensPerJob,
            JobFigure::Completed | JobFigure::Failed | JobFigure::Cut | JobFigure::Unsent => {
                Unit::Jobs
            }
        }
    }

    /// Throughput, goodput, attainment, cache hits and completions are better higher; times
    /// and jobs lost lower; what a job is made of (calls, tokens) is what was asked.
    pub fn better(self) -> Option<Better> {
        match self {
            JobFigure::JobsPerS
            | JobFigure::JobGoodput
            | JobFigure::JctSloAttainment
            | JobFigure::CacheHitRate
            | JobFigure::Completed => Some(Better::Higher),
            JobFigure::MeanCalls | JobFigure::MeanInputTokens | JobFigure::MeanOutputTokens => None,
            _ => Some(Better::Lower),
        }
    }

    /// The figure named `s`.
    pub fn named(s: &str) -> Option<JobFigure> {
        JobFigure::ALL.into_iter().find(|f| f.name() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are distinct and none is a request figure's.
    #[test]
    fn names_are_distinct_and_read_back() {
        for f in JobFigure::ALL {
            assert_eq!(JobFigure::named(f.name()), Some(f));
            assert!(f
                .name()
                .parse::<crate::config::metric::MetricKey>()
                .is_err());
        }
        assert_eq!(JobFigure::named("mean_ttft_ms"), None);
    }
}
