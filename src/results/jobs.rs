//! An agentic run's figures over its jobs (docs/metrics.md, "Jobs"), saved in the result as
//! `jobs`: how many jobs completed, failed, were cut or never sent; jobs per second; the
//! mean, median, p90 and p99 job completion time, each with its 95% interval (the bootstrap
//! over jobs, `stats::bootstrap`); the mean critical path and time beyond it, first-call
//! TTFT, calls and tokens per job; the calls' prefix-cache hit rate; job goodput and JCT SLO
//! attainment (`--goodput jct:MS`); and which jobs were cut.
//!
//! Computed from the run's records alone ([`JobFigures::of`]; warm-ups skipped, records of
//! no job left out), each job judged by `results::job` once all its calls have records (so
//! memory holds the jobs in flight, not the run) or when the records end.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::config::JobSlo;
use crate::measure::record::RequestRecord;
use crate::results::job::{JobCalls, JobOutcome, JobStatus};
use crate::results::stats::bootstrap::{self, Statistic};
use crate::results::stats::percentile;

/// The most cut jobs named in `cut_jobs` (the first by job number).
pub const CUT_JOBS_LISTED: usize = 100;

/// How the job intervals were computed (docs/metrics.md, "Job intervals: the bootstrap over
/// jobs").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalMethod {
    /// `percentile_bootstrap`.
    pub method: String,
    pub resamples: u64,
    pub seed: u64,
}

/// What the run's job figures need besides its records.
#[derive(Clone, Copy, Debug)]
pub struct JobRun<'a> {
    /// The run's duration, s, as its request throughputs use it (`RunSummary::duration_s`).
    pub duration_s: f64,
    /// The simulated server's clock speed-up (`--time-scale`); 1 for a real server.
    pub time_scale: f64,
    /// The jobs the run planned; `None` where unknown (then `unsent` is too).
    pub planned: Option<u64>,
    /// `--goodput jct:MS`.
    pub slos: &'a [JobSlo],
}

/// The run's job figures. Every mean is over the completed jobs; `None` when none completed
/// (or, for the cache hit rate, when no server gave its prompt and cached counts).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobFigures {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<u64>,
    pub completed: u64,
    pub failed: u64,
    pub cut: u64,
    /// planned − jobs with any record; `None` when `planned` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsent: Option<u64>,
    /// Completed jobs / the run's duration.
    pub jobs_per_s: f64,
    pub mean_jct_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_mean_jct_ms: Option<[f64; 2]>,
    pub median_jct_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_median_jct_ms: Option<[f64; 2]>,
    pub p90_jct_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_p90_jct_ms: Option<[f64; 2]>,
    pub p99_jct_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_p99_jct_ms: Option<[f64; 2]>,
    pub mean_critical_path_ms: Option<f64>,
    pub mean_beyond_ms: Option<f64>,
    pub mean_first_ttft_ms: Option<f64>,
    pub mean_calls: Option<f64>,
    pub mean_input_tokens: Option<f64>,
    pub mean_output_tokens: Option<f64>,
    /// Σ cached tokens / Σ the server's prompt tokens, over the completed jobs' calls whose
    /// server gave both.
    pub cache_hit_rate: Option<f64>,
    /// Completed jobs meeting every job SLO / the run's duration; `None` without job SLOs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_goodput: Option<f64>,
    /// Completed jobs meeting every job SLO / completed jobs; `None` without job SLOs or
    /// without a completed job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jct_slo_attainment: Option<f64>,
    /// The cut jobs' numbers, at most the first [`CUT_JOBS_LISTED`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut_jobs: Vec<u64>,
    /// The intervals' method, resamples and seed; absent when no interval was computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<IntervalMethod>,
}

/// The mean of `values`; `None` for none.
fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = values.fold((0u64, 0.0), |(n, s), v| (n + 1, s + v));
    (n > 0).then(|| sum / n as f64)
}

impl JobFigures {
    /// The job figures of `records` (any order; warm-ups and records of no job skipped).
    pub fn of(records: impl IntoIterator<Item = RequestRecord>, run: JobRun) -> JobFigures {
        let mut open: BTreeMap<u64, JobCalls> = BTreeMap::new();
        let mut seen: BTreeSet<u64> = BTreeSet::new();
        let mut done: Vec<JobOutcome> = Vec::new();
        for r in records.into_iter().filter(|r| !r.warmup) {
            let Some(job) = r.job else { continue };
            if !seen.insert(job) && !open.contains_key(&job) {
                // A record of a job already judged whole (a duplicate): not counted twice.
                continue;
            }
            let calls = open.entry(job).or_default();
            calls.add(&r);
            if calls.is_whole() {
                let calls = open.remove(&job).unwrap_or_default();
                done.push(calls.finish(job, run.time_scale));
            }
        }
        done.extend(open.iter().map(|(&j, c)| c.finish(j, run.time_scale)));
        // In job order, so the same records in any order give the same sums to the last bit.
        done.sort_unstable_by_key(|j| j.job);
        JobFigures::from_outcomes(&done, seen.len() as u64, run)
    }

    /// The run's figures from each job's.
    fn from_outcomes(jobs: &[JobOutcome], seen: u64, run: JobRun) -> JobFigures {
        let count = |s| jobs.iter().filter(|j| j.status == s).count() as u64;
        let completed: Vec<&JobOutcome> = (jobs.iter())
            .filter(|j| j.status == JobStatus::Completed)
            .collect();
        let mut jct: Vec<f64> = completed.iter().filter_map(|j| j.jct_ms).collect();
        jct.sort_unstable_by(f64::total_cmp);
        let per_s = |n: f64| match run.duration_s > 0.0 {
            true => n / run.duration_s,
            false => 0.0,
        };
        let stats = [
            Statistic::Mean,
            Statistic::Percentile(50.0),
            Statistic::Percentile(90.0),
            Statistic::Percentile(99.0),
        ];
        let ci = bootstrap::intervals(&jct, &stats);
        let good = (completed.iter())
            .filter(|j| (j.jct_ms).is_some_and(|t| run.slos.iter().all(|s| s.holds(t))))
            .count() as f64;
        let has_slos = !run.slos.is_empty();
        let cache = (completed.iter().filter_map(|j| j.cache)).fold(
            None,
            |acc: Option<(u128, u128)>, (c, p)| {
                let (a, b) = acc.unwrap_or_default();
                Some((a + u128::from(c), b + u128::from(p)))
            },
        );
        let mut cut_jobs: Vec<u64> = (jobs.iter())
            .filter(|j| j.status == JobStatus::Cut)
            .map(|j| j.job)
            .collect();
        cut_jobs.sort_unstable();
        cut_jobs.truncate(CUT_JOBS_LISTED);
        let over = |f: fn(&JobOutcome) -> Option<f64>| mean(completed.iter().filter_map(|j| f(j)));
        JobFigures {
            planned: run.planned,
            completed: completed.len() as u64,
            failed: count(JobStatus::Failed),
            cut: count(JobStatus::Cut),
            unsent: run.planned.map(|p| p.saturating_sub(seen)),
            jobs_per_s: per_s(completed.len() as f64),
            mean_jct_ms: mean(jct.iter().copied()),
            ci95_mean_jct_ms: ci[0],
            median_jct_ms: percentile(&jct, 50.0),
            ci95_median_jct_ms: ci[1],
            p90_jct_ms: percentile(&jct, 90.0),
            ci95_p90_jct_ms: ci[2],
            p99_jct_ms: percentile(&jct, 99.0),
            ci95_p99_jct_ms: ci[3],
            mean_critical_path_ms: over(|j| j.critical_path_ms),
            mean_beyond_ms: over(|j| j.beyond_ms),
            mean_first_ttft_ms: over(|j| j.first_ttft_ms),
            mean_calls: over(|j| Some(j.calls as f64)),
            mean_input_tokens: over(|j| Some(j.input_tokens as f64)),
            mean_output_tokens: over(|j| Some(j.output_tokens as f64)),
            cache_hit_rate: cache.filter(|c| c.1 > 0).map(|(c, p)| c as f64 / p as f64),
            job_goodput: has_slos.then(|| per_s(good)),
            jct_slo_attainment: (has_slos && !completed.is_empty())
                .then(|| good / completed.len() as f64),
            cut_jobs,
            intervals: ci[0].is_some().then(|| IntervalMethod {
                method: "percentile_bootstrap".into(),
                resamples: bootstrap::resamples(jct.len()) as u64,
                seed: bootstrap::SEED,
            }),
        }
    }
}

#[cfg(test)]
#[path = "jobs_tests.rs"]
mod tests;
