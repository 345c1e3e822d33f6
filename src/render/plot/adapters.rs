//! A multi-LoRA sweep's charts: for each figure `compare` shows per adapter (mean and p99
//! TTFT, mean TPOT, output throughput, goodput), one chart against the load with one line per
//! adapter of each series ([`charts`]), named `<figure>_by_adapter-<parameter>`; only for
//! series whose steps have adapters (a servebench result's `per_adapter`).
//!
//! Plain data, as `chart`'s charts: reads the views' numbers, draws nothing. An adapter's
//! name is outside text, shown as every chart label is (control characters visible; the
//! drawing escapes markup).

use crate::config::figure::{FigureKey, RunFigure};
use crate::config::metric::{MetricKey, Stat};
use crate::config::sweep::LoadParameter;
use crate::config::Metric;
use crate::render::plot::chart::{finish, series_name, shown, sorted, Chart, Dash, Line};
use crate::views::model::View;

/// The figures drawn per adapter, in drawing order.
fn figures() -> [FigureKey; 5] {
    [
        MetricKey::new(Stat::Mean, Metric::Ttft).into(),
        MetricKey::new(Stat::Percentile(99.0), Metric::Ttft).into(),
        MetricKey::new(Stat::Mean, Metric::Tpot).into(),
        RunFigure::OutputThroughput.into(),
        RunFigure::RequestGoodput.into(),
    ]
}

/// Each per-adapter chart the views support: a figure against a load parameter, a line per
/// adapter of each series varying it (a chart of lone points is left out, as `chart`'s are).
pub fn charts(views: &[View]) -> Vec<Chart> {
    let mut out = Vec::new();
    for p in LoadParameter::ALL {
        // (series name, adapter, its points' source) for every adapter of every series.
        let mut sources = Vec::new();
        for v in views {
            for s in v.series.iter().filter(|s| s.parameter == p) {
                let mut names: Vec<&String> =
                    s.steps.iter().flat_map(|st| st.adapters.keys()).collect();
                names.sort();
                names.dedup();
                let many = views.len() > 1 || v.series.len() > 1;
                for name in names {
                    let line_name = match many {
                        true => format!("{} · {}", series_name(v, s), shown(name)),
                        false => shown(name),
                    };
                    sources.push((line_name, name, s));
                }
            }
        }
        if sources.is_empty() {
            continue;
        }
        let pname = p.as_str();
        for key in figures() {
            let lines = (sources.iter().enumerate())
                .map(|(color, (line_name, adapter, s))| Line {
                    name: line_name.clone(),
                    color,
                    dash: Dash::Solid,
                    points: sorted(
                        (s.steps.iter())
                            .filter_map(|st| {
                                let f = st.adapters.get(*adapter)?;
                                Some((st.load_value(p)?, *f.metrics.get(&key)?))
                            })
                            .collect(),
                    ),
                    markers: true,
                })
                .collect();
            let unit = key
                .unit()
                .map_or(String::new(), |u| format!(" ({})", u.as_str()));
            out.extend(finish(Chart {
                name: format!("{key}_by_adapter-{pname}"),
                title: format!("{key} by LoRA adapter vs {pname}"),
                x_label: pname.into(),
                y_label: format!("{key}{unit}"),
                x_log: false,
                y_log: false,
                lines,
                legend: Vec::new(),
            }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::model::{Figures, Load, Origin, Series, Step};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn step(n: u64, adapters: &[(&str, f64)]) -> Step {
        let ttft: FigureKey = MetricKey::new(Stat::Mean, Metric::Ttft).into();
        Step {
            load: Load {
                num_prompts: Some(n),
                ..Load::default()
            },
            adapters: (adapters.iter())
                .map(|(name, v)| {
                    let metrics = BTreeMap::from([(ttft.clone(), *v)]);
                    let f = Figures {
                        metrics,
                        ..Figures::default()
                    };
                    (name.to_string(), f)
                })
                .collect(),
            ..Step::default()
        }
    }

    /// A line per adapter, its points the adapter's figure at each step; an
    /// adapter's name shown with its control characters visible; no chart without adapters.
    #[test]
    fn a_line_per_adapter_against_the_load() {
        let view = |steps| View {
            label: "s".into(),
            origin: Origin::Sweep,
            format: "servebench".into(),
            path: PathBuf::from("s.sweep.json"),
            series: vec![Series {
                name: "s".into(),
                parameter: LoadParameter::NumPrompts,
                steps,
            }],
            notes: vec![],
            llmperf_requests: vec![],
        };
        let v = view(vec![
            step(8, &[("a", 30.0), ("\x1b[2Jb", 40.0)]),
            step(16, &[("a", 35.0), ("\x1b[2Jb", 50.0)]),
        ]);
        let c = charts(std::slice::from_ref(&v));
        assert_eq!(c.len(), 1, "only mean TTFT has values");
        assert_eq!(c[0].name, "mean_ttft_ms_by_adapter-num_prompts");
        let lines: Vec<(&str, &[(f64, f64)])> = (c[0].lines.iter())
            .map(|l| (l.name.as_str(), l.points.as_slice()))
            .collect();
        assert_eq!(
            lines,
            [
                ("\\x1b[2Jb", &[(8.0, 40.0), (16.0, 50.0)][..]),
                ("a", &[(8.0, 30.0), (16.0, 35.0)][..])
            ]
        );
        assert!(charts(&[view(vec![step(8, &[]), step(16, &[])])]).is_empty());
    }
}
