//! An autoscaler benchmark's charts (docs/metrics.md, "Autoscaler benchmarks"): the load, the
//! replicas and the SLO attainment over the run, three panels on one time axis (each window
//! a point at its middle, every panel over the same windows): `autoscale-load` (the shape's
//! rate, offered and achieved requests/s), `autoscale-replicas` (the time-weighted replicas,
//! the readings themselves, and the replicas the load needed with `--replica-capacity`) and
//! `autoscale-attainment` (each window's attainment and the target), for each step of each
//! view that has the figures (a servebench result's `autoscale`).
//!
//! Plain data, as `chart`'s charts: reads the figures, draws nothing.

use crate::render::plot::chart::{Chart, Dash, Line};
use crate::results::autoscale::{AutoscaleFigures, AutoscaleWindow};
use crate::views::model::View;

/// The time axis every panel shares.
const X_LABEL: &str = "time from the run's first scheduled send (s)";

type Value = fn(&AutoscaleWindow) -> Option<f64>;

fn windowed(name: &str, color: usize, dash: Dash, a: &AutoscaleFigures, value: Value) -> Line {
    let points = (a.windows.iter())
        .filter_map(|w| Some(((w.start_s + w.end_s) / 2.0, value(w)?)))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    Line {
        name: name.into(),
        color,
        dash,
        points,
        markers: true,
    }
}

fn chart(name: String, title: String, y_label: &str, lines: Vec<Line>) -> Chart {
    Chart::over_time(name, title, X_LABEL, y_label, lines)
}

/// The three panels of one result's figures; `suffix` tells steps apart.
pub fn panels(a: &AutoscaleFigures, suffix: &str, label: &str) -> Vec<Chart> {
    let name = |n: &str| format!("autoscale-{n}{suffix}");
    let title = |t: &str| format!("{t}: {label}");
    let load = vec![
        windowed("shape (req/s)", 0, Dash::Dotted, a, |w| w.shape_rps),
        windowed("offered (req/s)", 1, Dash::Solid, a, |w| {
            Some(w.offered_rps)
        }),
        windowed("achieved (req/s)", 2, Dash::Dashed, a, |w| {
            Some(w.achieved_rps)
        }),
    ];
    let mut replicas = vec![
        windowed("replicas (window mean)", 3, Dash::Solid, a, |w| w.replicas),
        windowed("needed", 4, Dash::Dashed, a, |w| w.needed_replicas),
    ];
    if let Some(s) = &a.replicas {
        let end = a.windows.last().map_or(0.0, |w| w.end_s);
        let points = (s.samples.iter())
            .filter(|p| p.at_s <= end)
            .filter_map(|p| Some((p.at_s, p.replicas?)))
            .collect();
        replicas.push(Line {
            name: "readings".into(),
            color: 5,
            dash: Dash::Dotted,
            points,
            markers: false,
        });
    }
    let target = a.attainment_target * 100.0;
    let attainment = windowed("attainment (%)", 6, Dash::Solid, a, |w| {
        w.attainment.map(|x| x * 100.0)
    });
    let target_line = Line {
        name: format!("target {target:.0}%"),
        color: 7,
        dash: Dash::Dashed,
        points: attainment
            .points
            .iter()
            .map(|&(x, _)| (x, target))
            .collect(),
        markers: false,
    };
    vec![
        chart(name("load"), title("Load"), "requests per second", load),
        chart(name("replicas"), title("Replicas"), "replicas", replicas),
        chart(
            name("attainment"),
            title("SLO attainment"),
            "attainment (%)",
            vec![attainment, target_line],
        ),
    ]
}

/// Every view's panels (see the module doc).
pub fn charts(views: &[View]) -> Vec<Chart> {
    let mut out = Vec::new();
    let steps: Vec<_> = (views.iter())
        .flat_map(|v| v.steps().map(move |s| (v, s)))
        .filter(|(_, s)| s.autoscale.is_some())
        .collect();
    let many = steps.len() > 1;
    for (i, (view, step)) in steps.iter().enumerate() {
        let Some(a) = &step.autoscale else { continue };
        let suffix = if many {
            format!("-{}", i + 1)
        } else {
            String::new()
        };
        out.extend(panels(a, &suffix, &view.label));
    }
    out
}
