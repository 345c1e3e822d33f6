//! The regression rule of `history` on hand-built series: a planted regression found and
//! gated, noise within the intervals not, the window and the direction, gates without data.

use super::*;

/// Runs with one figure: each value with an interval of ± `pct` percent (none when 0).
fn runs(values: &[f64], pct: f64) -> Vec<Run> {
    (values.iter().enumerate())
        .map(|(i, &v)| Run {
            file: PathBuf::from(format!("r{i}.json")),
            started_at: format!("2026-11-{:02}T00:00:00Z", i + 1),
            unix_s: i as f64 * 86400.0,
            figures: vec![Some(Point {
                value: v,
                ci95: (pct > 0.0).then(|| [v * (1.0 - pct / 100.0), v * (1.0 + pct / 100.0)]),
            })],
        })
        .collect()
}

fn history_of(key: &str, values: &[f64], pct: f64, window: usize) -> History {
    let key = FigureKey::named(key);
    let runs = runs(values, pct);
    let j = newest_against_earlier(&key, &runs, 0, window);
    History {
        window,
        groups: vec![Group {
            name: "label=nightly".into(),
            figures: vec![key],
            runs,
            judgements: vec![j],
            notes: Vec::new(),
        }],
        notes: Vec::new(),
    }
}

#[test]
fn a_planted_regression_is_found_and_fails_its_gate() {
    let h = history_of(
        "p99_ttft_ms",
        &[100.0, 101.0, 99.0, 100.0, 100.5, 130.0],
        2.0,
        5,
    );
    let j = &h.groups[0].judgements[0];
    assert_eq!(j.trend, Trend::Regression);
    assert_eq!(j.against.len(), 5);
    // Worse than the worst of the five earlier runs (101) by 130/101 − 1.
    let by = j.worse_by.unwrap();
    assert!((by - (130.0 / 101.0 - 1.0)).abs() < 1e-9, "{by}");
    let key = FigureKey::named("p99_ttft_ms");
    let failed = failed_gates(&h, &[(key.clone(), 10.0)]).unwrap();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].to_string().contains("28.7%"), "{}", failed[0]);
    // A gate wider than the regression passes.
    assert!(failed_gates(&h, &[(key, 40.0)]).unwrap().is_empty());
}

#[test]
fn noise_within_the_intervals_is_no_regression() {
    let h = history_of(
        "p99_ttft_ms",
        &[100.0, 103.0, 98.0, 101.0, 99.0, 102.5],
        3.0,
        5,
    );
    assert_eq!(h.groups[0].judgements[0].trend, Trend::NoRegression);
    let key = FigureKey::named("p99_ttft_ms");
    assert!(failed_gates(&h, &[(key, 0.0)]).unwrap().is_empty());
}

#[test]
fn the_window_and_the_direction_decide() {
    // Throughput is better higher: a drop below every earlier run is a regression.
    let h = history_of("output_throughput", &[1000.0, 1010.0, 800.0], 1.0, 5);
    assert_eq!(h.groups[0].judgements[0].trend, Trend::Regression);
    // A rise is not.
    let h = history_of("output_throughput", &[1000.0, 1010.0, 1300.0], 1.0, 5);
    assert_eq!(h.groups[0].judgements[0].trend, Trend::NoRegression);
    // Worse than the last run only, not than one within the window: no regression; with a
    // window of 1, a regression.
    let values = [130.0, 100.0, 129.0];
    let h = history_of("mean_ttft_ms", &values, 1.0, 5);
    assert_eq!(h.groups[0].judgements[0].trend, Trend::NoRegression);
    let h = history_of("mean_ttft_ms", &values, 1.0, 1);
    assert_eq!(h.groups[0].judgements[0].trend, Trend::Regression);
    // One run: nothing to judge.
    let h = history_of("mean_ttft_ms", &[100.0], 1.0, 5);
    assert_eq!(h.groups[0].judgements[0].trend, Trend::NotJudged);
}

#[test]
fn a_gate_without_intervals_is_an_error_not_a_pass() {
    let h = history_of("p99_ttft_ms", &[100.0, 200.0], 0.0, 5);
    assert_eq!(h.groups[0].judgements[0].trend, Trend::NoInterval);
    let key = FigureKey::named("p99_ttft_ms");
    let e = failed_gates(&h, &[(key, 5.0)]).unwrap_err();
    assert!(matches!(e, HistoryError::NoInterval { .. }), "{e}");
    let e = failed_gates(&h, &[(FigureKey::named("mean_itl_ms"), 5.0)]).unwrap_err();
    assert!(matches!(e, HistoryError::NotJudged { .. }), "{e}");
    let e = failed_gates(&h, &[(FigureKey::named("total_input_tokens"), 5.0)]).unwrap_err();
    assert!(matches!(e, HistoryError::NoDirection { .. }), "{e}");
}
