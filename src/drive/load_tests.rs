//! Tests of `drive::load`: the arrival schedule (pure) and the driver against the built-in
//! simulator.

use super::*;

fn spec(rate: RequestRate, burstiness: f64, seed: u64) -> LoadSpec {
    LoadSpec {
        request_rate: rate,
        burstiness,
        seed,
        ..LoadSpec::default()
    }
}

/// A span too long to hold is the longest, never 0: a huge think time is a long wait, never
/// none (`tests/suite/accounting.rs` drives a run with one).
#[test]
fn spans_too_long_to_hold_saturate() {
    assert_eq!(span(1e300), Duration::MAX);
    assert_eq!(span(f64::INFINITY), Duration::MAX);
    assert_eq!(
        (span(f64::NAN), span(-1.0)),
        (Duration::ZERO, Duration::ZERO)
    );
    assert_eq!(span(1.5), Duration::from_millis(1500));
    assert_eq!(real_span_ns(1e300 * 1e9, 1.0), u64::MAX);
    assert_eq!(real_span_ns(2e9, 10.0), 200_000_000);
}

#[test]
fn stages_and_durations_bound_the_schedule_by_time() {
    use crate::config::shape::LoadShape;
    let mut s = spec(RequestRate::Infinite, 1.0, 5);
    s.shape = LoadShape {
        stages: vec!["5:100".parse().unwrap(), "50:100".parse().unwrap()],
        ..LoadShape::default()
    };
    let v: Vec<f64> = arrival_offsets(&s, 10).map(|x| x as f64 / 1e9).collect();
    let first = v.iter().filter(|&&t| t < 100.0).count();
    let second = v.len() - first;
    assert!((450..=550).contains(&first), "{first}");
    assert!((4700..=5300).contains(&second), "{second}");
    assert!(v.iter().all(|&t| t < 200.0));
    // A duration bounds a finite rate by time, not by the count.
    let mut s = spec(RequestRate::PerSecond(20.0), 1.0, 5);
    s.shape.duration_s = Some(10.0);
    let v: Vec<u64> = arrival_offsets(&s, 10).collect();
    assert!(v.len() > 150 && v.iter().all(|&t| t < 10_000_000_000));
}

#[test]
fn a_ramp_without_duration_steps_by_request_index() {
    use crate::config::shape::{Ramp, RampStrategy};
    let mut s = spec(RequestRate::Infinite, 1.0, 9);
    s.shape.ramp = Some(Ramp {
        strategy: RampStrategy::Linear,
        start_rps: 1.0,
        end_rps: 100.0,
    });
    let v: Vec<f64> = arrival_offsets(&s, 2001).map(|x| x as f64 / 1e9).collect();
    assert_eq!(v.len(), 2001);
    // Gaps of the first tenth average ~1/(1 + 99·0.05) s, of the last tenth ~1/95 s.
    let mean_gap = |a: usize, b: usize| (v[b] - v[a]) / (b - a) as f64;
    assert!(mean_gap(0, 200) > 5.0 * mean_gap(1800, 2000));
}

#[test]
fn infinite_rate_sends_everything_at_zero() {
    let v: Vec<_> = arrival_offsets(&spec(RequestRate::Infinite, 1.0, 0), 5).collect();
    assert_eq!(v, vec![0; 5]);
}

#[test]
fn poisson_offsets_are_seeded_monotone_and_have_the_right_mean_rate() {
    let s = spec(RequestRate::PerSecond(20.0), 1.0, 7);
    let a: Vec<_> = arrival_offsets(&s, 20_000).collect();
    let b: Vec<_> = arrival_offsets(&s, 20_000).collect();
    assert_eq!(a, b);
    assert!(a.windows(2).all(|w| w[0] <= w[1]));
    let rate = (a.len() - 1) as f64 / (*a.last().unwrap() as f64 / 1e9);
    assert!((rate - 20.0).abs() < 0.6, "rate {rate}");
    let other: Vec<_> = arrival_offsets(&spec(RequestRate::PerSecond(20.0), 1.0, 8), 10).collect();
    assert_ne!(&a[..10], &other[..]);
}

#[test]
fn burstiness_changes_the_spread_not_the_mean() {
    let gaps = |b: f64| {
        let v: Vec<f64> = arrival_offsets(&spec(RequestRate::PerSecond(10.0), b, 3), 20_000)
            .map(|x| x as f64 / 1e9)
            .collect();
        let g: Vec<f64> = v.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / g.len() as f64;
        (mean, var.sqrt() / mean)
    };
    let (m1, cv1) = gaps(1.0);
    let (m4, cv4) = gaps(4.0);
    assert!((m1 - 0.1).abs() < 0.005 && (m4 - 0.1).abs() < 0.005);
    // Coefficient of variation of Gamma(k) gaps is 1/sqrt(k).
    assert!((cv1 - 1.0).abs() < 0.05, "cv1 {cv1}");
    assert!((cv4 - 0.5).abs() < 0.05, "cv4 {cv4}");
}
