//! A result's job figures in its view: keys with their intervals, judged by `compare`.

use super::*;
use crate::measure::job::CallPlace;
use crate::measure::record::RequestRecord;
use crate::results::compare::Verdict;
use crate::results::jobs::{JobFigures, JobRun};
use crate::views::compare::compare;

/// A result of 30 one-call jobs taking `ms` plus a spread of up to 29 ms.
fn result(ms: u64) -> BenchResult {
    let records = (0..30u64).map(|j| RequestRecord {
        id: j,
        chunk_ns: vec![ms * 1_000_000 + j * 1_000_000],
        end_ns: ms * 1_000_000 + j * 1_000_000,
        output_tokens: Some(1),
        job: Some(j),
        call: Some(CallPlace {
            of: 1,
            ..CallPlace::default()
        }),
        ..RequestRecord::default()
    });
    let mut r = BenchResult::empty();
    let run = JobRun {
        duration_s: 10.0,
        time_scale: 1.0,
        planned: Some(30),
        slos: &[],
    };
    r.jobs = Some(JobFigures::of(records, run));
    r
}

/// Job keys reach the view with the JCT intervals; two runs whose jobs take 100 and 200 ms
/// are judged on them (B worse on JCT, no direction on calls per job), and an older
/// document without `jobs` reads and has none.
#[test]
fn job_figures_are_compared_with_their_intervals() {
    let (a, b) = (result(100), result(200));
    let path = Path::new("a.json");
    let (va, vb) = (from_result(path, &a), from_result(path, &b));
    let step = &va.series[0].steps[0];
    let mean: FigureKey = JobFigure::MeanJct.into();
    assert_eq!(step.metrics[&mean], 114.5);
    assert!(step.intervals.contains_key(&mean));
    assert_eq!(step.metrics[&JobFigure::Completed.into()], 30.0);
    assert_eq!(mean, FigureKey::named("mean_jct_ms"));
    let keys: Vec<FigureKey> = ["mean_jct_ms", "p99_jct_ms", "jobs_per_s", "mean_calls"]
        .map(FigureKey::named)
        .to_vec();
    let c = compare(&[va, vb], Some(&keys));
    let rows = &c.groups[0].steps[0].rows;
    let verdict = |i: usize| rows[i].judged[1].map(|j| j.verdict);
    assert_eq!(verdict(0), Some(Verdict::Worse));
    assert_eq!(verdict(1), Some(Verdict::Worse));
    assert_eq!(verdict(2), Some(Verdict::NoInterval));
    assert_eq!(verdict(3), Some(Verdict::NotJudged));

    let mut old = serde_json::to_value(&a).unwrap();
    old.as_object_mut().unwrap().remove("jobs");
    let old = BenchResult::from_value(path, old).unwrap();
    assert_eq!(old.jobs, None);
    let back = BenchResult::from_value(path, serde_json::to_value(&a).unwrap()).unwrap();
    assert_eq!(back.jobs, a.jobs);
}
