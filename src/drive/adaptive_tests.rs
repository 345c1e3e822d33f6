//! Tests of `drive::adaptive`'s decisions (pure): escalation, bisection, the hold and its
//! step back, an undecided window's extension, and the saturation stop.

use super::*;
use crate::config::adaptive::AdaptiveOn;

fn spec(on: AdaptiveOn) -> AdaptiveSpec {
    AdaptiveSpec {
        on,
        target: 0.9,
        start: 1.0,
        factor: 2.0,
        max: 1024.0,
        step_s: 10.0,
        resolution: 0.05,
        hold_s: 30.0,
        stop_saturated: false,
    }
}

fn figures(load: f64, capacity: f64) -> StepFigures {
    StepFigures {
        load,
        throughput: load.min(capacity),
        ttft_p50_ms: Some(if load > capacity { 100.0 * load } else { 10.0 }),
        in_flight: Some(load),
        error_fraction: 0.0,
    }
}

/// Runs the decisions against a server that passes every load up to `capacity`: the
/// windows' (phase, load) in order, and the steps.
fn drive(spec: &AdaptiveSpec, capacity: f64, hold_fails: bool) -> (Vec<(Phase, f64)>, Steps) {
    let mut steps = Steps::new(spec);
    let mut next = steps.first();
    let mut seen = Vec::new();
    while let Next::Window(phase, load) = next {
        seen.push((phase, load));
        assert!(seen.len() < 100, "{seen:?}");
        let pass = load <= capacity && !(hold_fails && phase == Phase::Hold && load == capacity);
        let v = if pass { Verdict::Pass } else { Verdict::Fail };
        next = steps.after(phase, load, v, figures(load, capacity));
    }
    (seen, steps)
}

#[test]
fn escalates_bisects_and_holds_the_exact_concurrency() {
    let (seen, steps) = drive(&spec(AdaptiveOn::Concurrency), 5.0, false);
    let loads: Vec<f64> = seen.iter().map(|w| w.1).collect();
    assert_eq!(loads, [1.0, 2.0, 4.0, 8.0, 6.0, 5.0, 5.0]);
    assert_eq!(seen.last().unwrap().0, Phase::Hold);
    assert_eq!(
        (steps.sustained, steps.last_pass, steps.first_fail),
        (Some(5.0), Some(5.0), Some(6.0))
    );
}

#[test]
fn bisects_a_rate_to_the_resolution() {
    let (_, steps) = drive(&spec(AdaptiveOn::Rate), 37.0, false);
    let (p, f) = (steps.last_pass.unwrap(), steps.first_fail.unwrap());
    assert!(p <= 37.0 && f > 37.0 && (f - p) / f <= 0.05, "{p} {f}");
    assert_eq!(steps.sustained, Some(p));
}

/// A failed hold steps back to the next lower passing load and says so; nothing passing at
/// the start ends with no load.
#[test]
fn a_failed_hold_steps_back_and_a_failed_start_ends() {
    let (seen, steps) = drive(&spec(AdaptiveOn::Concurrency), 5.0, true);
    assert_eq!(
        &seen[seen.len() - 2..],
        [(Phase::Hold, 5.0), (Phase::Hold, 4.0)]
    );
    assert_eq!((steps.sustained, steps.first_fail), (Some(4.0), Some(5.0)));
    assert!(
        steps.notes[0].contains("the hold at 5 failed: stepped back to 4"),
        "{:?}",
        steps.notes
    );
    let (seen, steps) = drive(&spec(AdaptiveOn::Concurrency), 0.5, false);
    assert_eq!(seen, [(Phase::Escalate, 1.0)]);
    assert_eq!(steps.sustained, None);
}

/// An undecided window is extended once at its load; undecided again it is a fail.
#[test]
fn an_undecided_window_is_extended_once_then_fails() {
    let mut steps = Steps::new(&spec(AdaptiveOn::Concurrency));
    let f = figures(1.0, 9.0);
    assert_eq!(
        steps.after(Phase::Escalate, 1.0, Verdict::Pass, f),
        Next::Window(Phase::Escalate, 2.0)
    );
    assert_eq!(
        steps.after(Phase::Escalate, 2.0, Verdict::Undecided, f),
        Next::Window(Phase::Extend, 2.0)
    );
    // Undecided twice: a fail at 2 after a pass at 1 — hold 1.
    assert_eq!(
        steps.after(Phase::Extend, 2.0, Verdict::Undecided, f),
        Next::Window(Phase::Hold, 1.0)
    );
    assert_eq!(steps.first_fail, Some(2.0));
}

/// With the saturation stop, escalation ends at the first flat step (throughput stuck at 4
/// while TTFT grows) and holds it, the higher loads skipped, not failed.
#[test]
fn saturation_stops_escalation_and_skips_the_rest() {
    let mut s = spec(AdaptiveOn::Concurrency);
    s.stop_saturated = true;
    s.max = 32.0;
    let mut steps = Steps::new(&s);
    let mut next = steps.first();
    let mut seen = Vec::new();
    while let Next::Window(phase, load) = next {
        seen.push((phase, load));
        // The SLO is loose: every load passes, but throughput stops at 4.
        next = steps.after(phase, load, Verdict::Pass, figures(load, 4.0));
    }
    assert_eq!(
        seen,
        [
            (Phase::Escalate, 1.0),
            (Phase::Escalate, 2.0),
            (Phase::Escalate, 4.0),
            (Phase::Escalate, 8.0),
            (Phase::Hold, 8.0)
        ]
    );
    let stop = steps.saturation.unwrap();
    assert_eq!((stop.step, stop.load), (3, 8.0));
    assert_eq!(steps.skipped, [16.0, 32.0]);
}
