//! The SLO controller's charts (`run --adaptive`; docs/metrics.md, "The SLO controller"), two
//! panels on one time axis, seconds from the measured load's start:
//!
//! - `adaptive-load`: the load the controller ran, as a step over every window (judged or
//!   not: recovery, settle), each judged window's verdict as a marker at its load and middle
//!   (pass, fail, undecided), and the sustained load as a dashed line;
//! - `adaptive-goodput`: each judged window's good fraction (%) at its middle, its 95%
//!   interval's ends, the target as a dashed line, and the verdicts' markers.
//!
//! One pair per step of each view that has the figures (a servebench result's `adaptive`).
//! Plain data, as `chart`'s charts: reads the figures, draws nothing.

use crate::config::adaptive::AdaptiveOn;
use crate::render::plot::chart::{Chart, Dash, Line};
use crate::results::adaptive::{AdaptiveFigures, Verdict, Window};
use crate::views::model::View;

/// The time axis both panels share.
pub const X_LABEL: &str = "time from the measured load's start (s)";

/// The load axis's label, with its unit.
pub fn load_label(on: AdaptiveOn) -> &'static str {
    match on {
        AdaptiveOn::Rate => "request rate (requests/s)",
        AdaptiveOn::Concurrency => "concurrency (requests in flight)",
    }
}

fn middle(w: &Window) -> f64 {
    (w.start_s + w.end_s) / 2.0
}

fn finite(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    (points.into_iter())
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect()
}

fn line(name: String, color: usize, dash: Dash, points: Vec<(f64, f64)>, markers: bool) -> Line {
    Line {
        name,
        color,
        dash,
        points: finite(points),
        markers,
    }
}

/// One marker line per verdict, at `y` of each judged window with that verdict.
fn verdicts(a: &AdaptiveFigures, y: impl Fn(&Window) -> Option<f64>) -> Vec<Line> {
    let of = |v: Verdict, color: usize| {
        let points = (a.windows.iter())
            .filter(|w| w.verdict == Some(v))
            .filter_map(|w| Some((middle(w), y(w)?)))
            .collect();
        line(v.as_str().into(), color, Dash::Points, points, true)
    };
    vec![
        of(Verdict::Pass, 2),
        of(Verdict::Fail, 1),
        of(Verdict::Undecided, 3),
    ]
}

/// A horizontal line at `y` over the windows' span.
fn level(name: String, color: usize, a: &AdaptiveFigures, y: f64) -> Line {
    let (start, end) = (a.windows.first(), a.windows.last());
    let points = match (start, end) {
        (Some(s), Some(e)) => vec![(s.start_s, y), (e.end_s.max(e.start_s), y)],
        _ => Vec::new(),
    };
    line(name, color, Dash::Dashed, points, false)
}

fn chart(name: String, title: String, y_label: &str, lines: Vec<Line>) -> Chart {
    Chart::over_time(name, title, X_LABEL, y_label, lines)
}

/// The two panels of one controller's figures; `suffix` tells steps apart.
pub fn panels(a: &AdaptiveFigures, suffix: &str, label: &str) -> Vec<Chart> {
    let on = a.spec.on.as_str();
    // The load as a step: flat over each window (the `end` segment has no length).
    let steps = (a.windows.iter())
        .flat_map(|w| [(w.start_s, w.load), (w.end_s.max(w.start_s), w.load)])
        .collect();
    let mut load = vec![line(
        format!("{on} (per window)"),
        0,
        Dash::Solid,
        steps,
        false,
    )];
    load.extend(verdicts(a, |w| Some(w.load)));
    if let Some(s) = a.sustained {
        load.push(level(format!("sustained {on} {s}"), 4, a, s));
    }
    let pct = |v: f64| v * 100.0;
    let judged = || a.windows.iter().filter(|w| w.verdict.is_some());
    let fraction = judged()
        .filter_map(|w| Some((middle(w), pct(w.good_fraction?))))
        .collect();
    let ci = |end: fn((f64, f64)) -> f64| -> Vec<(f64, f64)> {
        judged()
            .filter_map(|w| Some((middle(w), pct(end(w.good_fraction_ci95?)))))
            .collect()
    };
    let target = pct(a.spec.target);
    let mut goodput = vec![
        line("good fraction (%)".into(), 0, Dash::Solid, fraction, true),
        line(
            "95% interval, lower end".into(),
            7,
            Dash::Dotted,
            ci(|c| c.0),
            false,
        ),
        line(
            "95% interval, upper end".into(),
            5,
            Dash::Dotted,
            ci(|c| c.1),
            false,
        ),
    ];
    goodput.extend(verdicts(a, |w| w.good_fraction.map(pct)));
    goodput.push(level(format!("target {target:.1}%"), 4, a, target));
    vec![
        chart(
            format!("adaptive-load{suffix}"),
            format!("SLO controller: {on} per window: {label}"),
            load_label(a.spec.on),
            load,
        ),
        chart(
            format!("adaptive-goodput{suffix}"),
            format!("SLO controller: good fraction per window: {label}"),
            "good fraction (% of the window's requests)",
            goodput,
        ),
    ]
}

/// Every view's panels (see the module doc).
pub fn charts(views: &[View]) -> Vec<Chart> {
    let found: Vec<(&View, &AdaptiveFigures)> = (views.iter())
        .flat_map(|v| {
            v.steps()
                .filter_map(move |s| Some((v, s.adaptive.as_ref()?)))
        })
        .filter(|(_, a)| !a.windows.is_empty())
        .collect();
    let many = found.len() > 1;
    let mut out = Vec::new();
    for (i, (view, a)) in found.iter().enumerate() {
        let suffix = if many {
            format!("-{}", i + 1)
        } else {
            String::new()
        };
        out.extend(panels(a, &suffix, &super::chart::shown(&view.label)));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::adaptive::AdaptiveSpec;
    use crate::results::adaptive::Phase;

    fn window(phase: Phase, load: f64, at: f64, verdict: Option<Verdict>) -> Window {
        let judged = verdict.is_some();
        Window {
            phase,
            load,
            start_s: at,
            end_s: at + 2.0,
            sent: 40,
            completed: 40,
            failed: 0,
            good: if verdict == Some(Verdict::Fail) {
                10
            } else {
                40
            },
            unfinished: 0,
            good_fraction: judged.then_some(if verdict == Some(Verdict::Fail) {
                0.25
            } else {
                1.0
            }),
            good_fraction_ci95: judged.then_some((0.2, 1.0)),
            verdict,
            throughput: 20.0,
            ttft_p50_ms: Some(20.0),
            in_flight: Some(load),
            early: verdict == Some(Verdict::Fail),
        }
    }

    /// A controller that escalated 1, 2, 4 (fail), recovered, bisected 3 (fail) and held 2.
    pub(crate) fn figures() -> AdaptiveFigures {
        let (p, f) = (Some(Verdict::Pass), Some(Verdict::Fail));
        AdaptiveFigures {
            spec: AdaptiveSpec {
                on: AdaptiveOn::Concurrency,
                target: 0.8,
                start: 1.0,
                factor: 2.0,
                max: 16.0,
                step_s: 2.0,
                resolution: 0.05,
                hold_s: 2.0,
                stop_saturated: true,
            },
            sustained: Some(2.0),
            sustained_ci95: Some((0.9, 1.0)),
            last_pass: Some(2.0),
            first_fail: Some(3.0),
            saturation: None,
            skipped: Vec::new(),
            notes: Vec::new(),
            complete: true,
            controller_s: 12.0,
            windows: vec![
                window(Phase::Escalate, 1.0, 0.0, p),
                window(Phase::Escalate, 2.0, 2.0, p),
                window(Phase::Escalate, 4.0, 4.0, f),
                window(Phase::Recover, 1.0, 6.0, None),
                window(Phase::Bisect, 3.0, 8.0, f),
                window(Phase::Hold, 2.0, 10.0, p),
            ],
        }
    }

    /// Each judged window is one verdict marker at its load and middle, the load is a step
    /// over every window, and the sustained load and the target are lines; the SVG names
    /// every line in its legend and its axes with their units.
    #[test]
    fn the_controller_s_panels_hold_every_window_its_verdict_and_the_target() {
        let charts = panels(&figures(), "", "run");
        let names: Vec<&str> = charts.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["adaptive-load", "adaptive-goodput"]);
        let line = |c: &Chart, name: &str| {
            (c.lines.iter().find(|l| l.name == name))
                .unwrap_or_else(|| panic!("{name} in {:?}", c.lines))
                .points
                .clone()
        };
        let load = &charts[0];
        assert_eq!(line(load, "pass"), [(1.0, 1.0), (3.0, 2.0), (11.0, 2.0)]);
        assert_eq!(line(load, "fail"), [(5.0, 4.0), (9.0, 3.0)]);
        assert_eq!(line(load, "concurrency (per window)").len(), 12);
        assert_eq!(
            line(load, "sustained concurrency 2"),
            [(0.0, 2.0), (12.0, 2.0)]
        );
        let good = &charts[1];
        assert_eq!(
            line(good, "good fraction (%)"),
            [
                (1.0, 100.0),
                (3.0, 100.0),
                (5.0, 25.0),
                (9.0, 25.0),
                (11.0, 100.0)
            ]
        );
        assert_eq!(line(good, "95% interval, lower end").len(), 5);
        assert_eq!(line(good, "target 80.0%"), [(0.0, 80.0), (12.0, 80.0)]);
        // No undecided window: no empty line and no legend entry for it.
        assert!(charts
            .iter()
            .all(|c| c.lines.iter().all(|l| !l.points.is_empty())));
        assert!(!good.legend.iter().any(|e| e.name == "undecided"));
        let svg = crate::render::plot::draw::chart_svg(load).unwrap();
        for text in [
            "time from the measured load&apos;s start (s)",
            "concurrency (requests in flight)",
            "pass",
            "fail",
            "sustained concurrency 2",
        ] {
            let alt = text.replace("&apos;", "'");
            assert!(svg.contains(text) || svg.contains(&alt), "{text}");
        }
        // Five verdict markers (radius 5; the legend draws its own at 4).
        assert_eq!(svg.matches("r=\"5\"").count(), 5, "{svg}");
        let svg = crate::render::plot::draw::chart_svg(good).unwrap();
        for text in [
            "good fraction (% of the window",
            "target 80.0%",
            "95% interval",
        ] {
            assert!(svg.contains(text), "{text}");
        }
    }
}
