//! An autoscaler benchmark's windows as CSV (`report RESULT --autoscale --format csv`): a row
//! per window in time order, the same columns whatever the run had (a figure it lacks is an
//! empty cell), then the run's figures in the columns of their own names on every row
//! (docs/metrics.md, "Autoscaler benchmarks"); a window where a dip of the attainment below
//! its target starts says so, with the dip's recovery.

use crate::render::escape::csv_cell;
use crate::results::autoscale::{AutoscaleFigures, AutoscaleWindow};

/// The columns, in order.
pub const HEAD: [&str; 17] = [
    "window_s",
    "start_s",
    "end_s",
    "shape_rps",
    "offered_rps",
    "achieved_rps",
    "attainment",
    "replicas",
    "needed_replicas",
    "run_attainment",
    "replica_hours",
    "mean_replicas",
    "cost",
    "over_provisioned_replica_hours",
    "replica_source",
    "dip_start",
    "dip_recovery_s",
];

/// Outside text as one CSV cell: formula-safe (`csv_cell`), quoted when it holds a comma, a
/// quote or a line break.
fn text(s: &str) -> String {
    let c = csv_cell(s);
    if c.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", c.replace('"', "\"\""))
    } else {
        c.into_owned()
    }
}

fn cell(v: Option<f64>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

fn row(a: &AutoscaleFigures, w: &AutoscaleWindow) -> String {
    let source = a.replicas.as_ref().map_or("", |s| s.source.as_str());
    // A dip of the attainment that starts in this window.
    let dip = a.dips.iter().find(|d| d.start_s == w.start_s);
    let cells = [
        a.window_s.to_string(),
        w.start_s.to_string(),
        w.end_s.to_string(),
        cell(w.shape_rps),
        w.offered_rps.to_string(),
        w.achieved_rps.to_string(),
        cell(w.attainment),
        cell(w.replicas),
        cell(w.needed_replicas),
        cell(a.attainment),
        cell(a.replica_hours),
        cell(a.mean_replicas),
        cell(a.cost),
        cell(a.over_provisioned_replica_hours),
        text(source),
        dip.is_some().to_string(),
        cell(dip.and_then(|d| d.recovery_s)),
    ];
    cells.join(",")
}

/// The CSV text: the head, then a row per window.
pub fn windows(a: &AutoscaleFigures) -> String {
    let mut out = HEAD.join(",");
    out.push('\n');
    for w in &a.windows {
        out.push_str(&row(a, w));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::autoscale::ReplicaSeries;

    #[test]
    fn a_row_per_window_and_outside_text_escaped() {
        let w = AutoscaleWindow {
            start_s: 0.0,
            end_s: 1.0,
            shape_rps: Some(2.0),
            offered_rps: 3.0,
            achieved_rps: 2.0,
            attainment: None,
            replicas: Some(1.5),
            needed_replicas: None,
        };
        let a = AutoscaleFigures {
            window_s: 1.0,
            attainment_target: 0.9,
            windows: vec![
                w.clone(),
                AutoscaleWindow {
                    start_s: 1.0,
                    end_s: 2.0,
                    ..w
                },
            ],
            attainment: Some(0.5),
            replica_hours: Some(0.001),
            mean_replicas: Some(1.5),
            replica_coverage: Some(1.0),
            cost: None,
            over_provisioned_replica_hours: None,
            recoveries: Vec::new(),
            dips: vec![crate::results::autoscale::Dip {
                start_s: 1.0,
                recovery_s: None,
            }],
            replicas: Some(ReplicaSeries {
                source: "prometheus http://x =cmd,\"q\"".into(),
                ..ReplicaSeries::default()
            }),
        };
        let text = windows(&a);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].split(',').count(), HEAD.len());
        assert!(
            lines[1].starts_with("1,0,1,2,3,2,,1.5,,0.5,0.001,1.5,,,")
                && lines[1].ends_with(",false,"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].contains("\"prometheus http://x =cmd,\"\"q\"\"\",true,"),
            "{}",
            lines[2]
        );
    }
}
