//! The job figures against hand-built records with known answers (docs/metrics.md, "Jobs").

use super::*;
use crate::measure::job::CallPlace;
use crate::measure::record::{FailureKind, Outcome, TokenSource};

const MS: u64 = 1_000_000;

/// Call `call` of `of` in `job`, after `after`, gap `gap_ms`, sent at `sent` ms, its first
/// chunk 5 ms later, ended at `end` ms.
fn rec(
    job: u64,
    (call, of): (u32, u32),
    after: &[u32],
    gap_ms: f64,
    (sent, end): (u64, u64),
) -> RequestRecord {
    RequestRecord {
        id: job * 100 + u64::from(call),
        scheduled_ns: sent * MS,
        sent_ns: sent * MS,
        chunk_ns: vec![(sent + 5) * MS, end * MS],
        end_ns: end * MS,
        prompt_tokens: Some(100),
        prompt_tokens_source: Some(TokenSource::Requested),
        output_tokens: Some(10),
        job: Some(job),
        call: Some(CallPlace {
            call,
            of,
            after: after.to_vec(),
            splice: Vec::new(),
            gap_ms,
        }),
        ..RequestRecord::default()
    }
}

fn failed(mut r: RequestRecord, kind: FailureKind) -> RequestRecord {
    r.outcome = Outcome::failed(kind, "test");
    r.chunk_ns.clear();
    r
}

fn run(planned: Option<u64>, slos: &[JobSlo]) -> JobRun<'_> {
    JobRun {
        duration_s: 10.0,
        time_scale: 1.0,
        planned,
        slos,
    }
}

fn one(records: Vec<RequestRecord>) -> JobFigures {
    JobFigures::of(records, run(Some(1), &[]))
}

fn close(a: Option<f64>, b: f64) {
    let a = a.expect("a value");
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

/// A chain 0 → 1 → 2 with a 50 ms gap before call 1: JCT is the first send to the last end
/// (300 ms), the critical path the calls and gap along the chain (100 + 50 + 100 + 30 =
/// 280 ms), and the 20 ms beyond it the client's own delays (10 ms after the gap, 10 ms
/// before call 2).
#[test]
fn a_chain_s_critical_path_is_its_calls_and_gaps() {
    let f = one(vec![
        rec(7, (0, 3), &[], 0.0, (0, 100)),
        rec(7, (1, 3), &[0], 50.0, (160, 260)),
        rec(7, (2, 3), &[1], 0.0, (270, 300)),
    ]);
    assert_eq!((f.completed, f.failed, f.cut, f.unsent), (1, 0, 0, Some(0)));
    close(f.mean_jct_ms, 300.0);
    close(f.median_jct_ms, 300.0);
    close(f.mean_critical_path_ms, 280.0);
    close(f.mean_beyond_ms, 20.0);
    close(f.mean_calls, 3.0);
    close(f.mean_input_tokens, 300.0);
    close(f.mean_output_tokens, 30.0);
    close(f.mean_first_ttft_ms, 5.0);
    close(Some(f.jobs_per_s), 0.1);
}

/// A fan-out: three calls after call 0, in parallel; the path is call 0 and the slowest of
/// the three, and nothing lies beyond it.
#[test]
fn a_fan_out_s_path_is_its_slowest_branch() {
    let f = one(vec![
        rec(1, (0, 4), &[], 0.0, (0, 100)),
        rec(1, (1, 4), &[0], 0.0, (100, 150)),
        rec(1, (2, 4), &[0], 0.0, (100, 200)),
        rec(1, (3, 4), &[0], 0.0, (100, 180)),
    ]);
    close(f.mean_jct_ms, 200.0);
    close(f.mean_critical_path_ms, 200.0);
    close(f.mean_beyond_ms, 0.0);
}

/// A fan-in: call 2 waits for a fast (50 ms) and a slow (300 ms) upstream call; the slow one
/// sets the path: 300 + 10 ms gap + 80 ms = 390 ms, of a 400 ms job.
#[test]
fn a_fan_in_waits_for_its_slowest_upstream_call() {
    let f = one(vec![
        rec(2, (0, 3), &[], 0.0, (0, 50)),
        rec(2, (1, 3), &[], 0.0, (0, 300)),
        rec(2, (2, 3), &[0, 1], 10.0, (320, 400)),
    ]);
    close(f.mean_jct_ms, 400.0);
    close(f.mean_critical_path_ms, 390.0);
    close(f.mean_beyond_ms, 10.0);
}

/// A failed call fails its job (its downstream calls never sent); a job missing calls with
/// none failed (or one cancelled by the stop) is cut and named; planned jobs with no record
/// are unsent. Neither enters a completion time.
#[test]
fn failed_cut_and_unsent_jobs() {
    let records = vec![
        rec(0, (0, 2), &[], 0.0, (0, 100)),
        rec(0, (1, 2), &[0], 0.0, (100, 200)),
        rec(1, (0, 2), &[], 0.0, (0, 100)),
        failed(
            rec(1, (1, 2), &[0], 0.0, (100, 110)),
            FailureKind::HttpStatus,
        ),
        failed(rec(2, (0, 3), &[], 0.0, (0, 40)), FailureKind::Timeout),
        rec(3, (0, 2), &[], 0.0, (0, 100)),
        rec(4, (0, 2), &[], 0.0, (0, 100)),
        failed(
            rec(4, (1, 2), &[0], 0.0, (100, 130)),
            FailureKind::Cancelled,
        ),
    ];
    let f = JobFigures::of(records, run(Some(8), &[]));
    assert_eq!((f.completed, f.failed, f.cut), (1, 2, 2));
    assert_eq!((f.planned, f.unsent), (Some(8), Some(3)));
    assert_eq!(f.cut_jobs, [3, 4]);
    close(f.mean_jct_ms, 200.0);
    assert_eq!(JobFigures::of(Vec::new(), run(None, &[])).unsent, None);
}

/// Only the first hundred cut jobs are named.
#[test]
fn cut_jobs_listed_are_bounded() {
    let records = (0..150).rev().map(|j| rec(j, (0, 2), &[], 0.0, (0, 10)));
    let f = JobFigures::of(records, run(None, &[]));
    assert_eq!(f.cut, 150);
    assert_eq!(f.cut_jobs, (0..100).collect::<Vec<u64>>());
}

/// Gaps count on the critical path however long; a gap that is not a number counts as none.
#[test]
fn gaps_lie_on_the_critical_path() {
    let f = one(vec![
        rec(5, (0, 2), &[], 1000.0, (1000, 1100)),
        rec(5, (1, 2), &[0], f64::NAN, (1100, 1200)),
    ]);
    close(f.mean_jct_ms, 200.0);
    close(f.mean_critical_path_ms, 1200.0);
    close(f.mean_beyond_ms, -1000.0);
}

/// Job goodput and attainment: of jobs of 100, 200 and 300 ms, two meet `jct:250`.
#[test]
fn job_goodput_and_attainment() {
    let records: Vec<RequestRecord> = (1..=3)
        .map(|j| rec(j, (0, 1), &[], 0.0, (0, 100 * j)))
        .collect();
    let slo = [JobSlo { max_jct_ms: 250.0 }];
    let f = JobFigures::of(records.clone(), run(Some(3), &slo));
    close(f.job_goodput, 0.2);
    close(f.jct_slo_attainment, 2.0 / 3.0);
    let none = JobFigures::of(records, run(Some(3), &[]));
    assert_eq!((none.job_goodput, none.jct_slo_attainment), (None, None));
}

/// The hit rate's denominator is the server's prompt tokens: calls whose count is not the
/// server's are left out, and with none there is no rate.
#[test]
fn cache_hit_rate_is_over_the_server_s_prompt_tokens() {
    let served = |mut r: RequestRecord, prompt, cached| {
        r.prompt_tokens = Some(prompt);
        r.prompt_tokens_source = Some(TokenSource::ServerUsage);
        r.cached_prompt_tokens = Some(cached);
        r
    };
    let f = one(vec![
        served(rec(0, (0, 3), &[], 0.0, (0, 10)), 100, 0),
        served(rec(0, (1, 3), &[0], 0.0, (10, 20)), 300, 200),
        rec(0, (2, 3), &[1], 0.0, (20, 30)),
    ]);
    close(f.cache_hit_rate, 0.5);
    let f = one(vec![rec(0, (0, 1), &[], 0.0, (0, 10))]);
    assert_eq!(f.cache_hit_rate, None);
}

/// Warm-ups and records of no job are not jobs; a second record of a whole job's call is
/// not counted twice; times read in the server's clock (`time_scale`).
#[test]
fn warm_ups_strays_duplicates_and_time_scale() {
    let mut warm = rec(9, (0, 1), &[], 0.0, (0, 10));
    warm.warmup = true;
    let stray = RequestRecord::default();
    let r = rec(1, (0, 1), &[], 0.0, (0, 100));
    let f = JobFigures::of(
        vec![warm, stray, r.clone(), r],
        JobRun {
            time_scale: 2.0,
            ..run(Some(1), &[])
        },
    );
    assert_eq!((f.completed, f.unsent), (1, Some(0)));
    close(f.mean_jct_ms, 200.0);
    close(f.mean_first_ttft_ms, 10.0);
}

/// Percentiles by the one method, intervals by the bootstrap over jobs: from ten jobs on,
/// each interval holds its figure; fewer jobs have none.
#[test]
fn percentiles_and_their_intervals() {
    let records: Vec<RequestRecord> = (1..=20)
        .map(|j| rec(j, (0, 1), &[], 0.0, (0, 10 * j)))
        .collect();
    let f = JobFigures::of(records.clone(), run(None, &[]));
    close(f.mean_jct_ms, 105.0);
    close(f.median_jct_ms, 105.0);
    // Rank 0.9 × 19 = 17.1: 180 + 0.1 × 10.
    close(f.p90_jct_ms, 181.0);
    close(f.p99_jct_ms, 198.1);
    for (v, ci) in [
        (f.mean_jct_ms, f.ci95_mean_jct_ms),
        (f.median_jct_ms, f.ci95_median_jct_ms),
        (f.p90_jct_ms, f.ci95_p90_jct_ms),
        (f.p99_jct_ms, f.ci95_p99_jct_ms),
    ] {
        let ([lo, hi], v) = (ci.unwrap(), v.unwrap());
        assert!(lo <= v && v <= hi && lo < hi, "{lo} {v} {hi}");
    }
    let m = f.intervals.unwrap();
    assert_eq!((m.resamples, m.seed), (1000, bootstrap::SEED));
    let few = JobFigures::of(records.into_iter().take(9), run(None, &[]));
    assert_eq!((few.ci95_mean_jct_ms, few.intervals), (None, None));
}

/// The block reads back as written.
#[test]
fn the_block_round_trips_through_json() {
    let records: Vec<RequestRecord> = (1..=12)
        .map(|j| rec(j, (0, 1), &[], 0.0, (0, 10 * j)))
        .chain([rec(50, (0, 2), &[], 0.0, (0, 10))])
        .collect();
    let slo = [JobSlo { max_jct_ms: 50.0 }];
    let f = JobFigures::of(records, run(Some(20), &slo));
    let text = serde_json::to_string(&f).unwrap();
    assert_eq!(serde_json::from_str::<JobFigures>(&text).unwrap(), f);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for key in [
        "mean_jct_ms",
        "ci95_p99_jct_ms",
        "jct_slo_attainment",
        "cut_jobs",
        "unsent",
    ] {
        assert!(v.get(key).is_some(), "{key}: {text}");
    }
}
