//! An agentic sweep's job charts (docs/metrics.md, "Jobs"): against each load parameter, the
//! job completion time (mean solid, median dashed, p99 dotted), job throughput and JCT SLO
//! attainment, one color per series of every document given ([`charts`]), named
//! `jct-<parameter>`, `jobs_per_s-<parameter>`, `jct_slo_attainment-<parameter>`; only where
//! steps have job figures (a servebench result's `jobs`).
//!
//! Plain data, as `chart`'s charts: reads the views' numbers, draws nothing.

use crate::config::figure::{FigureKey, JobFigure};
use crate::config::sweep::LoadParameter;
use crate::render::plot::chart::{finish, series_name, sorted, Chart, Dash, LegendEntry, Line};
use crate::views::model::{Series, View};

/// Series `s`'s figure `key` against `p`, a point per step that has both.
fn line(
    p: LoadParameter,
    (name, color, dash): (String, usize, Dash),
    key: JobFigure,
    s: &Series,
) -> Line {
    let key = FigureKey::from(key);
    Line {
        name,
        color,
        dash,
        points: sorted(
            (s.steps.iter())
                .filter_map(|st| Some((st.load_value(p)?, st.metric(&key)?)))
                .collect(),
        ),
        markers: true,
    }
}

/// Every job chart the views support.
pub fn charts(views: &[View]) -> Vec<Chart> {
    let all: Vec<(String, &Series)> = (views.iter())
        .flat_map(|v| v.series.iter().map(move |s| (series_name(v, s), s)))
        .collect();
    let mut out = Vec::new();
    for p in LoadParameter::ALL {
        let pname = p.as_str();
        let group: Vec<(usize, &(String, &Series))> = (all.iter().enumerate())
            .filter(|(_, (_, s))| s.parameter == p)
            .collect();
        if group.is_empty() {
            continue;
        }
        let stats = [
            (JobFigure::MeanJct, Dash::Solid, "mean"),
            (JobFigure::MedianJct, Dash::Dashed, "median"),
            (JobFigure::P99Jct, Dash::Dotted, "p99"),
        ];
        let mut lines = Vec::new();
        let mut legend = Vec::new();
        for (color, (name, s)) in &group {
            legend.push(LegendEntry {
                name: name.clone(),
                color: Some(*color),
                dash: Dash::Solid,
            });
            for (key, dash, word) in stats {
                lines.push(line(p, (format!("{name} {word}"), *color, dash), key, s));
            }
        }
        legend.extend(stats.iter().map(|(_, dash, word)| LegendEntry {
            name: word.to_string(),
            color: None,
            dash: *dash,
        }));
        out.extend(finish(Chart {
            name: format!("jct-{pname}"),
            title: format!(
                "Job completion time vs {pname} (mean solid, median dashed, p99 dotted)"
            ),
            x_label: pname.into(),
            y_label: "JCT (ms)".into(),
            x_log: false,
            y_log: false,
            lines,
            legend,
        }));
        for (key, title) in [
            (JobFigure::JobsPerS, "Job throughput"),
            (JobFigure::JctSloAttainment, "JCT SLO attainment"),
        ] {
            out.extend(finish(Chart {
                name: format!("{}-{pname}", key.name()),
                title: format!("{title} vs {pname}"),
                x_label: pname.into(),
                y_label: format!("{} ({})", key.name(), key.unit().as_str()),
                x_log: false,
                y_log: false,
                lines: (group.iter())
                    .map(|(c, (n, s))| line(p, (n.clone(), *c, Dash::Solid), key, s))
                    .collect(),
                legend: Vec::new(),
            }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::model::{Origin, Step};

    /// Two documents of two steps each with job figures: one JCT chart with a line per
    /// statistic of each, one job throughput chart; no attainment chart without SLOs; a
    /// view without jobs draws none.
    #[test]
    fn job_figures_across_documents_are_drawn_against_the_load() {
        let view = |label: &str, jct: f64| {
            let steps = [1u64, 8]
                .into_iter()
                .map(|n| {
                    let mut st = Step::default();
                    st.load.num_prompts = Some(n);
                    for (k, v) in [
                        (JobFigure::MeanJct, jct * n as f64),
                        (JobFigure::MedianJct, jct),
                        (JobFigure::P99Jct, 2.0 * jct),
                        (JobFigure::JobsPerS, n as f64),
                    ] {
                        st.metrics.insert(k.into(), v);
                    }
                    st
                })
                .collect();
            View {
                label: label.into(),
                origin: Origin::Result,
                format: "servebench".into(),
                path: format!("{label}.json").into(),
                series: vec![Series {
                    name: label.into(),
                    parameter: LoadParameter::NumPrompts,
                    steps,
                }],
                notes: Vec::new(),
                llmperf_requests: Vec::new(),
            }
        };
        let got = charts(&[view("a", 100.0), view("b", 200.0)]);
        let names: Vec<&str> = got.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["jct-num_prompts", "jobs_per_s-num_prompts"]);
        assert_eq!(got[0].lines.len(), 6);
        assert_eq!(got[0].lines[0].points, [(1.0, 100.0), (8.0, 800.0)]);
        assert_eq!(got[1].lines[1].points, [(1.0, 1.0), (8.0, 8.0)]);
        let mut bare = view("c", 1.0);
        bare.series[0]
            .steps
            .iter_mut()
            .for_each(|s| s.metrics.clear());
        assert!(charts(&[bare]).is_empty());
    }
}
