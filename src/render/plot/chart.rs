//! What each chart shows, as plain data: [`Chart`] (x-y lines with a legend), [`Stacked`]
//! (the TTFT breakdown, a stacked bar per load step) and [`Timeline`] (one bar per request),
//! built from views by [`charts`], [`breakdowns`] and [`timelines`].
//!
//! Chooses the figures, series, colors (palette indices), dashes and log axes; draws nothing
//! (that is `draw`) and writes no file (`plot/mod.rs`). Figures are read by their typed
//! `config::figure::FigureKey`s. To add a chart, build one more [`Chart`] in [`charts`]; its
//! `name` is its file stem.

use crate::config::figure::{FigureKey, RunFigure};
use crate::config::metric::{MetricKey, Stat};
use crate::config::sweep::LoadParameter;
use crate::config::Metric;
use crate::render::format::fmt_load;
use crate::results::stats::{TTFT_PARTS, TTFT_REST};
use crate::views::model::{file_stem, Series, Step, View};
use crate::views::samples::read_records;

/// How a line is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
    /// No line: only the points' markers (a line's `markers` is then always drawn); the
    /// legend shows one marker.
    Points,
}

/// One line of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub name: String,
    /// Index into the palette: one color per series.
    pub color: usize,
    pub dash: Dash,
    /// Sorted by x.
    pub points: Vec<(f64, f64)>,
    /// Draw a dot at each point (load steps), not for dense lines (CDFs).
    pub markers: bool,
}

/// One entry of a chart's legend, drawn below the plot so it never hides data.
#[derive(Clone, Debug, PartialEq)]
pub struct LegendEntry {
    pub name: String,
    /// Palette index; `None` for a black key (e.g. "median: dashed").
    pub color: Option<usize>,
    pub dash: Dash,
}

/// An x-y chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// File stem (`ttft-num_prompts`).
    pub name: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_log: bool,
    pub y_log: bool,
    pub lines: Vec<Line>,
    pub legend: Vec<LegendEntry>,
}

impl Chart {
    /// A chart of series over a run's time on linear axes, its legend one entry per line
    /// drawn (lines without points are left out of both).
    pub fn over_time(
        name: String,
        title: String,
        x_label: &str,
        y_label: &str,
        lines: Vec<Line>,
    ) -> Chart {
        let lines: Vec<Line> = lines.into_iter().filter(|l| !l.points.is_empty()).collect();
        Chart {
            name,
            title,
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_log: false,
            y_log: false,
            legend: (lines.iter())
                .map(|l| LegendEntry {
                    name: l.name.clone(),
                    color: Some(l.color),
                    dash: l.dash,
                })
                .collect(),
            lines,
        }
    }
}

/// One request of a timeline, seconds from the run's first scheduled send.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub scheduled: f64,
    pub sent: f64,
    pub first_chunk: Option<f64>,
    pub last_chunk: Option<f64>,
    pub end: f64,
    pub ok: bool,
}

/// Every request of one run, in schedule order.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    pub name: String,
    pub title: String,
    pub bars: Vec<Bar>,
    /// The run's steady window, seconds on the bars' clock (`--steady-state auto`).
    pub steady: Option<(f64, f64)>,
}

/// Mean TTFT parts per load step of one series, drawn as stacked bars.
#[derive(Clone, Debug, PartialEq)]
pub struct Stacked {
    pub name: String,
    pub title: String,
    pub x_label: String,
    /// The parts, bottom to top (`results::stats::TTFT_PARTS`' names, then the rest of TTFT
    /// no server part accounts for).
    pub parts: Vec<&'static str>,
    /// Per step: its load as a label, and each part's mean in ms (`None`: nobody reported it,
    /// not drawn).
    pub bars: Vec<(String, Vec<Option<f64>>)>,
}

/// Requests drawn at most in a timeline (the first ones by id).
const TIMELINE_MAX: usize = 2000;

/// A label or name from a document as a chart shows it: control characters visible (an SVG
/// with one is not well-formed XML, and no browser draws it).
pub(super) fn shown(s: &str) -> String {
    crate::render::escape::terminal_line(s).into_owned()
}

pub(super) fn series_name(v: &View, s: &Series) -> String {
    if v.series.len() == 1 {
        shown(&v.label)
    } else {
        shown(&format!("{} · {}", v.label, s.name))
    }
}

pub(super) fn sorted(mut p: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    p.retain(|(x, y)| x.is_finite() && y.is_finite());
    p.sort_by(|a, b| a.0.total_cmp(&b.0));
    p
}

/// True when positive values span more than 50×: draw that axis logarithmically.
pub(super) fn wants_log(values: impl Iterator<Item = f64>) -> bool {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values {
        if v <= 0.0 {
            return false;
        }
        lo = lo.min(v);
        hi = hi.max(v);
    }
    hi > 0.0 && hi / lo > 50.0
}

pub(super) fn finish(mut c: Chart) -> Option<Chart> {
    c.lines.retain(|l| !l.points.is_empty());
    // A chart of lone points (single runs) says nothing a table does not.
    if c.lines.iter().all(|l| l.points.len() < 2) {
        return None;
    }
    if c.legend.is_empty() {
        c.legend = c
            .lines
            .iter()
            .map(|l| LegendEntry {
                name: l.name.clone(),
                color: Some(l.color),
                dash: l.dash,
            })
            .collect();
    } else {
        // Keep only the series entries that still have a line.
        let colors: Vec<usize> = c.lines.iter().map(|l| l.color).collect();
        c.legend
            .retain(|e| e.color.is_none_or(|col| colors.contains(&col)));
    }
    c.x_log = wants_log(c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)));
    c.y_log = wants_log(c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
    Some(c)
}

fn metric_title(m: Metric) -> &'static str {
    match m {
        Metric::Ttft => "TTFT",
        Metric::Tpot => "TPOT",
        Metric::Itl => "ITL",
        Metric::E2el => "E2EL",
        Metric::Ttst => "TTST",
        Metric::OutputTpsPerUser => "output tokens/s per user",
    }
}

/// One series with its display name and palette color.
type Member<'a> = (String, usize, &'a Series);

/// Every chart the views support.
pub fn charts(views: &[View]) -> Vec<Chart> {
    let mut out = Vec::new();
    // Series by the parameter they vary, each with its color.
    let mut all: Vec<Member> = Vec::new();
    for v in views {
        for s in &v.series {
            let color = all.len();
            all.push((series_name(v, s), color, s));
        }
    }
    for p in LoadParameter::ALL {
        let group: Vec<&Member> = all.iter().filter(|(_, _, s)| s.parameter == p).collect();
        if group.is_empty() {
            continue;
        }
        out.extend(figure_charts(p, &group));
        out.extend(latency_charts(p, &group));
        out.extend(latency_vs_throughput(p, &group));
    }
    out.extend(cdf_charts(&all));
    out
}

/// Series `s`'s figure `key` against parameter `p`, one point per step that has both.
fn step_line(
    p: LoadParameter,
    name: &str,
    color: usize,
    dash: Dash,
    key: &FigureKey,
    s: &Series,
) -> Line {
    Line {
        name: name.to_string(),
        color,
        dash,
        points: sorted(
            s.steps
                .iter()
                .filter_map(|st| Some((st.load_value(p)?, st.metric(key)?)))
                .collect(),
        ),
        markers: true,
    }
}

/// The run-level figures (throughputs, acceptance length, valid answers, upload time,
/// real-time factor) against parameter `p`, one line per series; a figure no step has makes
/// no chart.
fn figure_charts(p: LoadParameter, group: &[&Member]) -> Vec<Chart> {
    let pname = p.as_str();
    let mut out = Vec::new();
    for (figure, title) in [
        (RunFigure::OutputThroughput, "Output token throughput"),
        (RunFigure::RequestThroughput, "Request throughput"),
        (RunFigure::InputSequenceThroughput, "Input throughput"),
        // The reasoning, speculative-decoding, structured-output, media and audio figures:
        // drawn for a sweep whose steps have them.
        (RunFigure::ReasoningThroughput, "Reasoning throughput"),
        (RunFigure::AnswerThroughput, "Answer throughput"),
        (
            RunFigure::SpecDecodeAcceptanceLength,
            "Mean acceptance length",
        ),
        (RunFigure::CorrectRate, "Valid answers"),
        (RunFigure::MeanUploadMs, "Mean upload time"),
        (RunFigure::Rtfx, "Real-time factor"),
    ] {
        let key = FigureKey::from(figure);
        out.extend(finish(Chart {
            // `correct_rate(%)` (vLLM's key) names its file `correct_rate_pct-...`.
            name: format!("{}-{pname}", key.to_string().replace("(%)", "_pct")),
            title: format!("{title} vs {pname}"),
            x_label: pname.into(),
            y_label: format!("{key} ({})", figure.unit().as_str()),
            x_log: false,
            y_log: false,
            lines: group
                .iter()
                .map(|(n, c, s)| step_line(p, n, *c, Dash::Solid, &key, s))
                .collect(),
            legend: Vec::new(),
        }));
    }
    out
}

/// Each latency metric against parameter `p`: mean solid, median dashed, p99 dotted, one
/// color per series.
fn latency_charts(p: LoadParameter, group: &[&Member]) -> Vec<Chart> {
    let pname = p.as_str();
    let mut out = Vec::new();
    for m in Metric::ALL {
        let mut lines = Vec::new();
        let stats = [
            (Stat::Mean, Dash::Solid),
            (Stat::Median, Dash::Dashed),
            (Stat::Percentile(99.0), Dash::Dotted),
        ];
        let mut legend: Vec<LegendEntry> = group
            .iter()
            .map(|(n, c, _)| LegendEntry {
                name: n.clone(),
                color: Some(*c),
                dash: Dash::Solid,
            })
            .collect();
        for (n, c, s) in group {
            for (stat, dash) in stats {
                let key = MetricKey::new(stat, m).into();
                lines.push(step_line(p, &format!("{n} {stat}"), *c, dash, &key, s));
            }
        }
        legend.extend(stats.iter().map(|(stat, dash)| LegendEntry {
            name: stat.to_string(),
            color: None,
            dash: *dash,
        }));
        out.extend(finish(Chart {
            name: format!("{}-{pname}", m.key()),
            title: format!(
                "{} vs {pname} (mean solid, median dashed, p99 dotted)",
                metric_title(m)
            ),
            x_label: pname.into(),
            y_label: format!("{} (ms)", metric_title(m)),
            x_log: false,
            y_log: false,
            lines,
            legend,
        }));
    }
    out
}

/// Mean TTFT and TPOT against output throughput, the points in the order of parameter `p`'s
/// steps.
fn latency_vs_throughput(p: LoadParameter, group: &[&Member]) -> Vec<Chart> {
    let pname = p.as_str();
    let mut out = Vec::new();
    for m in [Metric::Ttft, Metric::Tpot] {
        let key = MetricKey::new(Stat::Mean, m);
        out.extend(finish(Chart {
            name: format!("{}_vs_throughput-{pname}", m.key()),
            title: format!(
                "Mean {} vs output throughput (points: {pname} steps)",
                metric_title(m)
            ),
            x_label: "output_throughput (tokens/s)".into(),
            y_label: format!("mean {} (ms)", metric_title(m)),
            x_log: false,
            y_log: false,
            lines: group
                .iter()
                .map(|(n, c, s)| {
                    let mut steps: Vec<&Step> = s.steps.iter().collect();
                    steps.sort_by(|a, b| {
                        a.load_value(p)
                            .unwrap_or(0.0)
                            .total_cmp(&b.load_value(p).unwrap_or(0.0))
                    });
                    Line {
                        name: n.clone(),
                        color: *c,
                        dash: Dash::Solid,
                        // In load order, so the line follows the sweep.
                        points: steps
                            .iter()
                            .filter_map(|st| {
                                Some((st.metric(RunFigure::OutputThroughput)?, st.metric(key)?))
                            })
                            .collect(),
                        markers: true,
                    }
                })
                .collect(),
            legend: Vec::new(),
        }));
    }
    out
}

/// The CDF of TTFT and of E2EL per request, one line per step that kept its samples.
fn cdf_charts(all: &[Member]) -> Vec<Chart> {
    let mut out = Vec::new();
    for (m, title) in [("ttft", "TTFT"), ("e2el", "E2EL")] {
        let mut lines = Vec::new();
        for (n, c, s) in all {
            for st in &s.steps {
                let samples = if m == "ttft" {
                    &st.samples.ttft_ms
                } else {
                    &st.samples.e2el_ms
                };
                if samples.is_empty() {
                    continue;
                }
                let name = match (s.steps.len(), st.load_value(s.parameter)) {
                    (1, _) | (_, None) => n.clone(),
                    (_, Some(v)) => format!("{n} {}={}", s.parameter.as_str(), fmt_load(v)),
                };
                lines.push(Line {
                    name,
                    color: *c + lines.len(),
                    dash: Dash::Solid,
                    points: cdf(samples),
                    // Few requests: show each one (a single request is a single point).
                    markers: samples.len() <= 30,
                });
            }
        }
        if let Some(mut c) = finish(Chart {
            name: format!("cdf_{m}"),
            title: format!("CDF of {title} (per request)"),
            x_label: format!("{title} (ms)"),
            y_label: "fraction of requests".into(),
            x_log: false,
            y_log: false,
            lines,
            legend: Vec::new(),
        }) {
            c.y_log = false;
            out.push(c);
        }
    }
    out
}

/// The TTFT breakdown (docs/metrics.md) of each series whose steps have one: one bar per
/// step, in load order, each known part's mean stacked (an unknown part is not drawn), topped
/// by the rest of mean TTFT, so a bar is as tall as mean TTFT from scheduled.
pub fn breakdowns(views: &[View]) -> Vec<Stacked> {
    let mut out = Vec::new();
    for v in views {
        for s in &v.series {
            let mut steps: Vec<&Step> = s.steps.iter().collect();
            steps.sort_by(|a, b| {
                let load = |st: &Step| st.load_value(s.parameter).unwrap_or(0.0);
                load(a).total_cmp(&load(b))
            });
            let bars: Vec<(String, Vec<Option<f64>>)> = steps
                .iter()
                .map(|st| {
                    let load = st.load_value(s.parameter).map_or("?".into(), fmt_load);
                    let parts = TTFT_PARTS
                        .iter()
                        .chain([&TTFT_REST])
                        .map(|(_, part)| st.metric(*part))
                        .collect();
                    (load, parts)
                })
                .collect();
            if bars.iter().all(|(_, p)| p.iter().all(Option::is_none)) {
                // Not a servebench result: no breakdown at all.
                continue;
            }
            let mut name = format!("ttft_breakdown-{}", slug(&file_stem(&v.path)));
            if v.series.len() > 1 {
                name.push_str(&format!("-{}", out.len()));
            }
            out.push(Stacked {
                name,
                title: format!("Mean TTFT from scheduled, by part: {}", shown(&v.label)),
                x_label: s.parameter.as_str().into(),
                parts: TTFT_PARTS
                    .iter()
                    .chain([&TTFT_REST])
                    .map(|(name, _)| *name)
                    .collect(),
                bars,
            });
        }
    }
    out
}

/// Empirical CDF: (value, fraction ≤ value), at most ~500 points.
pub(super) fn cdf(samples: &[f64]) -> Vec<(f64, f64)> {
    let mut s: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let stride = n.div_ceil(500).max(1);
    let mut pts: Vec<(f64, f64)> = s
        .iter()
        .enumerate()
        .filter(|(i, _)| i % stride == 0 || *i == n - 1)
        .map(|(i, v)| (*v, (i + 1) as f64 / n as f64))
        .collect();
    pts.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    pts
}

/// The timeline of each view's last step that has a records file.
pub fn timelines(views: &[View]) -> Vec<Timeline> {
    let mut out = Vec::new();
    for v in views {
        let Some((s, st)) = v
            .series
            .iter()
            .flat_map(|s| s.steps.iter().map(move |st| (s, st)))
            .rfind(|(_, st)| st.records_file.is_some())
        else {
            continue;
        };
        let Some(file) = &st.records_file else {
            continue;
        };
        let Ok(mut records) = read_records(file) else {
            continue;
        };
        records.retain(|r| !r.warmup);
        records.sort_by_key(|r| r.id);
        let Some(t0) = records.iter().map(|r| r.scheduled_ns).min() else {
            continue;
        };
        let total = records.len();
        let sec = |ns: u64| ns.saturating_sub(t0) as f64 / 1e9;
        let bars = records
            .iter()
            .take(TIMELINE_MAX)
            .map(|r| Bar {
                scheduled: sec(r.scheduled_ns),
                sent: sec(r.sent_ns),
                first_chunk: r.first_chunk_ns().map(sec),
                last_chunk: r.last_chunk_ns().map(sec),
                end: sec(r.end_ns),
                ok: r.is_ok(),
            })
            .collect();
        let step = st
            .load_value(s.parameter)
            .map(|x| format!(", {}={}", s.parameter.as_str(), fmt_load(x)))
            .unwrap_or_default();
        let cut = if total > TIMELINE_MAX {
            format!(" (first {TIMELINE_MAX} of {total})")
        } else {
            String::new()
        };
        out.push(Timeline {
            name: format!("timeline-{}", slug(&file_stem(file))),
            title: format!("Requests over time: {}{step}{cut}", shown(&v.label)),
            bars,
            steady: st.steady_window_ns.map(|[a, z]| (sec(a), sec(z))),
        });
    }
    out
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
