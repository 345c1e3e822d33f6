//! The "Jobs" block of an agentic run (docs/metrics.md, "Jobs"): its jobs by status, jobs
//! per second, job goodput and JCT SLO attainment, the job completion time's mean, median,
//! p90 and p99 with their 95% intervals (the bootstrap over jobs), the critical path and the
//! time beyond it, first-call TTFT, calls, tokens and cache hits per job, and the cut jobs.
//! Nothing for a run without jobs.

use super::lines::{line, num, rule};
use crate::results::document::BenchResult;

/// The block's lines, when the result has jobs.
pub(super) fn block(out: &mut String, result: &BenchResult) {
    let Some(j) = &result.jobs else {
        return;
    };
    out.push_str(&rule("Jobs", '-'));
    let known = |n: Option<u64>| n.map_or("unknown".to_string(), |n| n.to_string());
    line(out, "Jobs planned:", known(j.planned));
    line(
        out,
        "Jobs completed / failed / cut / unsent:",
        format!(
            "{} / {} / {} / {}",
            j.completed,
            j.failed,
            j.cut,
            known(j.unsent)
        ),
    );
    num(out, "Job throughput (jobs/s):", j.jobs_per_s);
    if let Some(g) = j.job_goodput {
        num(out, "Job goodput (jobs/s):", g);
    }
    if let Some(a) = j.jct_slo_attainment {
        line(out, "JCT SLO attainment:", format!("{:.1}%", a * 100.0));
    }
    let ms = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
    let with_ci = |v: Option<f64>, ci: Option<[f64; 2]>| match ci {
        Some([lo, hi]) => format!("{} [{lo:.2}, {hi:.2}]", ms(v)),
        None => ms(v),
    };
    line(
        out,
        "Mean JCT (ms):",
        with_ci(j.mean_jct_ms, j.ci95_mean_jct_ms),
    );
    line(
        out,
        "Median JCT (ms):",
        with_ci(j.median_jct_ms, j.ci95_median_jct_ms),
    );
    line(
        out,
        "P90 JCT (ms):",
        with_ci(j.p90_jct_ms, j.ci95_p90_jct_ms),
    );
    line(
        out,
        "P99 JCT (ms):",
        with_ci(j.p99_jct_ms, j.ci95_p99_jct_ms),
    );
    if let Some(m) = &j.intervals {
        let how = format!("bootstrap over jobs, {} resamples", m.resamples);
        line(out, "JCT intervals (95%):", how);
    }
    line(out, "Mean critical path (ms):", ms(j.mean_critical_path_ms));
    line(out, "Mean time beyond it (ms):", ms(j.mean_beyond_ms));
    line(out, "Mean first-call TTFT (ms):", ms(j.mean_first_ttft_ms));
    line(out, "Mean calls per job:", ms(j.mean_calls));
    let tokens = format!("{} / {}", ms(j.mean_input_tokens), ms(j.mean_output_tokens));
    line(out, "Mean input / output tokens per job:", tokens);
    let hit = (j.cache_hit_rate).map_or("unknown".to_string(), |r| format!("{:.1}%", r * 100.0));
    line(out, "Calls' prefix-cache hit rate:", hit);
    if !j.cut_jobs.is_empty() {
        let ids: Vec<String> = j.cut_jobs.iter().map(u64::to_string).collect();
        let more = match j.cut > j.cut_jobs.len() as u64 {
            true => format!(" (the first {})", j.cut_jobs.len()),
            false => String::new(),
        };
        line(out, &format!("Cut jobs{more}:"), ids.join(", "));
    }
}
