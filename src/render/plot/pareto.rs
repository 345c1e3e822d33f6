//! The Pareto chart: output tokens/s per user against output tokens/s per GPU (or per
//! server), one line per series (a sweep, a configuration), and the front drawn over them as
//! a dashed line through its points, each marked (`views::pareto`: the points and the front;
//! docs/metrics.md, "Pareto front").
//!
//! Chooses what is drawn; the points and the front come computed from the view. Drawn as any
//! [`Chart`] (`draw`), as `pareto_front.svg` by `plot` and inline in the HTML report.

use crate::render::plot::chart::{finish, series_name, sorted, Chart, Dash, Line};
use crate::views::model::View;
use crate::views::pareto::front;

/// The chart's file stem.
pub const NAME: &str = "pareto_front";

/// The front's name in the legend.
pub const FRONT: &str = "Pareto front";

/// The Pareto chart of `views`, when at least two points make a line.
pub fn chart(views: &[View]) -> Option<Chart> {
    let f = front(views);
    let mut lines = Vec::new();
    let mut color = 0;
    for (vi, v) in views.iter().enumerate() {
        for (si, s) in v.series.iter().enumerate() {
            let points = (f.points.iter())
                .filter(|p| p.view == vi && p.series == si)
                .map(|p| (p.per_gpu, p.per_user))
                .collect();
            lines.push(Line {
                name: series_name(v, s),
                color,
                dash: Dash::Solid,
                points: sorted(points),
                markers: true,
            });
            color += 1;
        }
    }
    let on: Vec<(f64, f64)> = (f.points.iter())
        .filter(|p| p.on_front)
        .map(|p| (p.per_gpu, p.per_user))
        .collect();
    lines.push(Line {
        name: format!("{FRONT} ({} steps)", on.len()),
        color,
        dash: Dash::Dashed,
        points: sorted(on),
        markers: true,
    });
    finish(Chart {
        name: NAME.into(),
        title: "Output tokens/s per user vs per GPU: the Pareto front dashed".into(),
        x_label: f.basis.axis().into(),
        y_label: "output tokens/s per user (1000 / mean TPOT)".into(),
        x_log: false,
        y_log: false,
        lines,
        legend: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(label: &str, steps: &[(u64, f64, f64)]) -> View {
        crate::views::pareto::test_sweep(label, Some(2), steps)
    }

    #[test]
    fn one_line_per_configuration_and_the_front_dashed_through_its_points() {
        let a = view("a", &[(1, 100.0, 20.0), (2, 200.0, 40.0), (4, 240.0, 80.0)]);
        let b = view("b\u{1b}[31m<b>", &[(1, 300.0, 25.0), (2, 320.0, 100.0)]);
        let c = chart(&[a, b]).unwrap();
        assert_eq!(c.name, "pareto_front");
        assert_eq!(c.x_label, "output tokens/s per GPU");
        assert_eq!(c.lines.len(), 3);
        // The label's escape is visible, not sent to the drawing.
        assert!(!c.lines[1].name.contains('\u{1b}'), "{}", c.lines[1].name);
        let front = &c.lines[2];
        assert_eq!(front.dash, Dash::Dashed);
        assert!(front.name.starts_with(FRONT));
        // Per GPU: a's (50, 50) and b's (150, 40) and (160, 10); a's others are beaten by b's.
        assert_eq!(front.points, [(50.0, 50.0), (150.0, 40.0), (160.0, 10.0)]);
        assert_eq!(c.legend.len(), 3);
        // The legend and title reach the SVG escaped.
        let svg = crate::render::plot::draw::chart_svg(&c).unwrap();
        assert!(
            svg.contains("Pareto front") && !svg.contains("<b>"),
            "{svg}"
        );
    }

    #[test]
    fn a_lone_point_is_no_chart() {
        assert_eq!(chart(&[view("a", &[(1, 100.0, 20.0)])]), None);
        assert_eq!(chart(&[]), None);
    }
}
