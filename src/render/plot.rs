//! Charts of results, sweeps and imports, as SVG (and PNG), drawn with plotters.
//!
//! What is drawn is first described as plain data ([`Chart`], [`Timeline`]) from [`View`]s,
//! then rendered by one function per kind for any plotters backend, so the SVG files, the PNG
//! files and the HTML report's inline SVG are the same pictures. Charts, per load parameter
//! (`num_prompts`, `max_concurrency`, `request_rate`, `input_len`), one line per series:
//! output and request throughput vs load; TTFT, TPOT, ITL, E2EL (mean solid, median dashed,
//! p99 dotted) vs load; TTFT and TPOT vs output throughput; CDFs of TTFT and E2EL where
//! per-request samples exist; and a timeline of one run from its records file
//! (scheduled → sent → first chunk → last chunk per request).
//!
//! Axes become logarithmic when the values are positive and span more than 50×, as the seeds
//! do (1..4096 prompts, 100 ms..700 s TTFT).
//!
//! Text in PNGs needs a font: one is looked up at run time ([`font_path`]: `SERVEBENCH_FONT`,
//! then the usual system locations); none is bundled or downloaded. SVG text is laid out with
//! the same font when there is one, else with built-in metrics (browsers draw SVG text with
//! their own fonts), so SVG and HTML work on machines without any font.
//!
//! To add a chart: build a [`Chart`] in [`charts`]; rendering and file naming follow.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::register_font;

use crate::views::error::ViewError;
use crate::views::view::{fmt_load, Parameter, Series, Step, View};

/// Which image formats to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Formats {
    pub svg: bool,
    pub png: bool,
}

impl Formats {
    /// `svg`, `png` or `both`.
    pub fn parse(s: &str) -> Formats {
        Formats {
            svg: s != "png",
            png: s != "svg",
        }
    }
}

/// How a line is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
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
}

/// Requests drawn at most in a timeline (the first ones by id).
const TIMELINE_MAX: usize = 2000;
const SIZE: (u32, u32) = (1000, 620);

const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn series_name(v: &View, s: &Series) -> String {
    if v.series.len() == 1 {
        v.label.clone()
    } else {
        format!("{} · {}", v.label, s.name)
    }
}

fn sorted(mut p: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    p.retain(|(x, y)| x.is_finite() && y.is_finite());
    p.sort_by(|a, b| a.0.total_cmp(&b.0));
    p
}

/// True when positive values span more than 50×: draw that axis logarithmically.
fn wants_log(values: impl Iterator<Item = f64>) -> bool {
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

fn finish(mut c: Chart) -> Option<Chart> {
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

fn metric_title(m: &str) -> &'static str {
    match m {
        "ttft" => "TTFT",
        "tpot" => "TPOT",
        "itl" => "ITL",
        _ => "E2EL",
    }
}

/// Every chart the views support.
pub fn charts(views: &[View]) -> Vec<Chart> {
    let mut out = Vec::new();
    // Series by the parameter they vary, each with its color.
    let mut all: Vec<(String, usize, &Series)> = Vec::new();
    for v in views {
        for s in &v.series {
            let color = all.len();
            all.push((series_name(v, s), color, s));
        }
    }
    for p in [
        Parameter::NumPrompts,
        Parameter::MaxConcurrency,
        Parameter::RequestRate,
        Parameter::InputLen,
    ] {
        let group: Vec<&(String, usize, &Series)> =
            all.iter().filter(|(_, _, s)| s.parameter == p).collect();
        if group.is_empty() {
            continue;
        }
        let pname = p.as_str();
        let line = |name: &str, color, dash, key: &str, s: &Series| Line {
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
        };
        for (key, title, unit) in [
            ("output_throughput", "Output token throughput", "tokens/s"),
            ("request_throughput", "Request throughput", "requests/s"),
        ] {
            out.extend(finish(Chart {
                name: format!("{key}-{pname}"),
                title: format!("{title} vs {pname}"),
                x_label: pname.into(),
                y_label: format!("{key} ({unit})"),
                x_log: false,
                y_log: false,
                lines: group
                    .iter()
                    .map(|(n, c, s)| line(n, *c, Dash::Solid, key, s))
                    .collect(),
                legend: Vec::new(),
            }));
        }
        for m in ["ttft", "tpot", "itl", "e2el"] {
            let mut lines = Vec::new();
            let stats = [
                ("mean", Dash::Solid),
                ("median", Dash::Dashed),
                ("p99", Dash::Dotted),
            ];
            let mut legend: Vec<LegendEntry> = group
                .iter()
                .map(|(n, c, _)| LegendEntry {
                    name: n.clone(),
                    color: Some(*c),
                    dash: Dash::Solid,
                })
                .collect();
            for (n, c, s) in &group {
                for (stat, dash) in stats {
                    let key = format!("{stat}_{m}_ms");
                    lines.push(line(&format!("{n} {stat}"), *c, dash, &key, s));
                }
            }
            legend.extend(stats.iter().map(|(stat, dash)| LegendEntry {
                name: (*stat).to_string(),
                color: None,
                dash: *dash,
            }));
            out.extend(finish(Chart {
                name: format!("{m}-{pname}"),
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
        for m in ["ttft", "tpot"] {
            let key = format!("mean_{m}_ms");
            out.extend(finish(Chart {
                name: format!("{m}_vs_throughput-{pname}"),
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
                                    Some((st.metric("output_throughput")?, st.metric(&key)?))
                                })
                                .collect(),
                            markers: true,
                        }
                    })
                    .collect(),
                legend: Vec::new(),
            }));
        }
    }
    for (m, title) in [("ttft", "TTFT"), ("e2el", "E2EL")] {
        let mut lines = Vec::new();
        for (n, c, s) in &all {
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

/// Empirical CDF: (value, fraction ≤ value), at most ~500 points.
fn cdf(samples: &[f64]) -> Vec<(f64, f64)> {
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
        let Ok(mut records) = crate::views::view::read_records(file) else {
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
        let shown = if total > TIMELINE_MAX {
            format!(" (first {TIMELINE_MAX} of {total})")
        } else {
            String::new()
        };
        out.push(Timeline {
            name: format!("timeline-{}", slug(&crate::views::view::file_stem(file))),
            title: format!("Requests over time: {}{step}{shown}", v.label),
            bars,
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

// ---------------------------------------------------------------- fonts

/// A font file for text in PNGs: `SERVEBENCH_FONT`, else the first of the usual system fonts.
pub fn font_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SERVEBENCH_FONT").map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    const CANDIDATES: [&str; 12] = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
        "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
        "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
        "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
        "/usr/share/fonts/noto/NotoSans-Regular.ttf",
        "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
        "/System/Library/Fonts/Supplemental/Arial.ttf",
        "C:\\Windows\\Fonts\\arial.ttf",
    ];
    CANDIDATES.iter().map(PathBuf::from).find(|p| p.is_file())
}

/// Registers the font used for layout (and PNG glyphs) once; true when it is a real font.
fn ensure_font() -> bool {
    static REAL: OnceLock<bool> = OnceLock::new();
    *REAL.get_or_init(|| {
        let real = font_path()
            .and_then(|p| std::fs::read(p).ok())
            .map(|bytes| &*Box::leak(bytes.into_boxed_slice()))
            .filter(|bytes| register_font("sans-serif", FontStyle::Normal, bytes).is_ok());
        if real.is_some() {
            return true;
        }
        // No font on this machine: metrics only (every glyph 0.55 em wide), enough to lay out
        // SVG text, which the viewer draws with its own fonts.
        let metrics = &*Box::leak(metrics_only_font().into_boxed_slice());
        let _ = register_font("sans-serif", FontStyle::Normal, metrics);
        false
    })
}

/// A minimal TrueType font with metrics but no outlines: head, hhea, maxp and hmtx tables,
/// one glyph 0.55 em wide. It lets text be measured when no system font exists.
fn metrics_only_font() -> Vec<u8> {
    let upem: u16 = 1000;
    let mut head = vec![0u8; 54];
    head[0..4].copy_from_slice(&0x0001_0000u32.to_be_bytes()); // version
    head[12..16].copy_from_slice(&0x5F0F_3CF5u32.to_be_bytes()); // magic
    head[18..20].copy_from_slice(&upem.to_be_bytes());
    head[40..42].copy_from_slice(&550u16.to_be_bytes()); // xMax
    head[42..44].copy_from_slice(&800u16.to_be_bytes()); // yMax
    let mut hhea = vec![0u8; 36];
    hhea[0..4].copy_from_slice(&0x0001_0000u32.to_be_bytes());
    hhea[4..6].copy_from_slice(&800i16.to_be_bytes()); // ascender
    hhea[6..8].copy_from_slice(&(-200i16).to_be_bytes()); // descender
    hhea[10..12].copy_from_slice(&550u16.to_be_bytes()); // advanceWidthMax
    hhea[34..36].copy_from_slice(&1u16.to_be_bytes()); // numberOfHMetrics
    let mut maxp = vec![0u8; 6];
    maxp[0..4].copy_from_slice(&0x0000_5000u32.to_be_bytes());
    maxp[4..6].copy_from_slice(&1u16.to_be_bytes()); // numGlyphs
    let hmtx = [550u16.to_be_bytes(), 0u16.to_be_bytes()].concat();
    let tables: [(&[u8; 4], Vec<u8>); 4] = [
        (b"head", head),
        (b"hhea", hhea),
        (b"hmtx", hmtx),
        (b"maxp", maxp),
    ];
    let mut out = Vec::new();
    out.extend_from_slice(&0x0001_0000u32.to_be_bytes());
    out.extend_from_slice(&(tables.len() as u16).to_be_bytes());
    out.extend_from_slice(&[0, 64, 0, 2, 0, 0]); // searchRange, entrySelector, rangeShift
    let mut offset = 12 + 16 * tables.len();
    let mut body = Vec::new();
    for (tag, data) in &tables {
        out.extend_from_slice(*tag);
        out.extend_from_slice(&0u32.to_be_bytes()); // checksum (not verified by readers)
        out.extend_from_slice(&(offset as u32).to_be_bytes());
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut d = data.clone();
        d.resize(data.len().div_ceil(4) * 4, 0);
        offset += d.len();
        body.extend_from_slice(&d);
    }
    out.extend_from_slice(&body);
    out
}

// ---------------------------------------------------------------- rendering

fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e7 {
        format!("{v:.0e}")
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if log {
        (lo / 1.3, hi * 1.3)
    } else {
        let pad = if hi > lo {
            (hi - lo) * 0.05
        } else {
            hi.abs().max(1.0) * 0.1
        };
        let lo = if lo >= 0.0 && lo - pad < 0.0 {
            0.0
        } else {
            lo - pad
        };
        (lo, hi + pad)
    }
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

const LEGEND_ROW: u32 = 20;
const PLOT_HEIGHT: u32 = 560;

/// Legend entries per row: two columns, or one when a name is long.
fn legend_columns(c: &Chart) -> usize {
    if c.legend.iter().any(|e| e.name.chars().count() > 60) {
        1
    } else {
        2
    }
}

/// The pixel size of a chart: the plot plus its legend rows.
pub fn chart_size(c: &Chart) -> (u32, u32) {
    let rows = c.legend.len().div_ceil(legend_columns(c)) as u32;
    (SIZE.0, PLOT_HEIGHT + rows * LEGEND_ROW + 12)
}

fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, c: &Chart) -> Result<(), String> {
    let cols = legend_columns(c);
    let col_w = (SIZE.0 as i32 - 100) / cols as i32;
    for (i, e) in c.legend.iter().enumerate() {
        let x = 80 + (i % cols) as i32 * col_w;
        let y = 8 + (i / cols) as i32 * LEGEND_ROW as i32;
        let color = e.color.map_or(BLACK, |c| PALETTE[c % PALETTE.len()]);
        let style = color.stroke_width(2);
        let (dash, gap) = match e.dash {
            Dash::Solid => (28, 0),
            Dash::Dashed => (8, 5),
            Dash::Dotted => (2, 4),
        };
        let mut sx = x;
        while sx < x + 28 {
            let ex = (sx + dash).min(x + 28);
            area.draw(&PathElement::new(vec![(sx, y + 7), (ex, y + 7)], style))
                .map_err(err)?;
            sx = ex + gap.max(1);
        }
        let max_chars = if cols == 1 { 120 } else { 62 };
        let name: String = if e.name.chars().count() > max_chars {
            e.name.chars().take(max_chars - 1).chain(['…']).collect()
        } else {
            e.name.clone()
        };
        area.draw(&Text::new(
            name,
            (x + 36, y),
            ("sans-serif", 13).into_font().color(&BLACK),
        ))
        .map_err(err)?;
    }
    Ok(())
}

fn draw_chart<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &Chart) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let (plot, legend) = root.split_vertically(PLOT_HEIGHT);
    draw_legend(&legend, c)?;
    let root = &plot;
    let (x0, x1) = range(
        c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)),
        c.x_log,
    );
    let (y0, y1) = range(
        c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
        c.y_log,
    );
    match (c.x_log, c.y_log) {
        (false, false) => draw_xy(root, c, x0..x1, y0..y1),
        (true, false) => draw_xy(root, c, (x0..x1).log_scale(), y0..y1),
        (false, true) => draw_xy(root, c, x0..x1, (y0..y1).log_scale()),
        (true, true) => draw_xy(root, c, (x0..x1).log_scale(), (y0..y1).log_scale()),
    }?;
    root.present().map_err(err)
}

fn draw_xy<DB, X, Y>(root: &DrawingArea<DB, Shift>, c: &Chart, x: X, y: Y) -> Result<(), String>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let log_note = |log: bool| if log { " [log]" } else { "" };
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(78)
        .build_cartesian_2d(x, y)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(format!("{}{}", c.x_label, log_note(c.x_log)))
        .y_desc(format!("{}{}", c.y_label, log_note(c.y_log)))
        .x_label_formatter(&|v| fmt_tick(*v))
        .y_label_formatter(&|v| fmt_tick(*v))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(err)?;
    for l in &c.lines {
        let color = PALETTE[l.color % PALETTE.len()];
        let style = color.stroke_width(2);
        let pts = l.points.clone();
        match l.dash {
            Dash::Solid => chart.draw_series(LineSeries::new(pts, style)),
            Dash::Dashed => chart.draw_series(DashedLineSeries::new(pts, 9, 6, style)),
            Dash::Dotted => chart.draw_series(DashedLineSeries::new(pts, 2, 5, style)),
        }
        .map_err(err)?;
        if l.markers {
            chart
                .draw_series(l.points.iter().map(|p| Circle::new(*p, 3, color.filled())))
                .map_err(err)?;
        }
    }
    Ok(())
}

fn draw_timeline<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    t: &Timeline,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let x1 = t
        .bars
        .iter()
        .map(|b| b.end.max(b.last_chunk.unwrap_or(0.0)))
        .fold(0.0f64, f64::max)
        .max(1e-3)
        * 1.03;
    let n = t.bars.len().max(1) as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(&t.title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..x1, n..0.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds since the first scheduled send")
        .y_desc("request (schedule order)")
        .x_label_formatter(&|v| fmt_tick(*v))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()
        .map_err(err)?;
    let queue = RGBColor(190, 190, 190);
    let ttft = RGBColor(255, 127, 14);
    let decode = RGBColor(31, 119, 180);
    let failed = RGBColor(214, 39, 40);
    let h = if n > 200.0 { 1.0 } else { 0.8 };
    let mut rects = Vec::new();
    for (i, b) in t.bars.iter().enumerate() {
        let y = i as f64;
        let mut seg = |a: f64, z: f64, c: RGBColor| {
            rects.push(Rectangle::new([(a, y), (z.max(a), y + h)], c.filled()));
        };
        seg(b.scheduled, b.sent, queue);
        if b.ok {
            if let (Some(f), Some(l)) = (b.first_chunk, b.last_chunk) {
                seg(b.sent, f, ttft);
                seg(f, l, decode);
            }
        } else {
            seg(b.sent, b.end, failed);
        }
    }
    chart.draw_series(rects).map_err(err)?;
    for (name, c) in [
        ("queued: scheduled → sent", queue),
        ("TTFT: sent → first chunk", ttft),
        ("decode: first → last chunk", decode),
        ("failed: sent → end", failed),
    ] {
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], c.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(180, 180, 180))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// A chart as an SVG document.
pub fn chart_svg(c: &Chart) -> Result<String, String> {
    ensure_font();
    let mut s = String::new();
    draw_chart(
        &SVGBackend::with_string(&mut s, chart_size(c)).into_drawing_area(),
        c,
    )?;
    Ok(s)
}

/// A timeline as an SVG document.
pub fn timeline_svg(t: &Timeline) -> Result<String, String> {
    ensure_font();
    let mut s = String::new();
    draw_timeline(
        &SVGBackend::with_string(&mut s, SIZE).into_drawing_area(),
        t,
    )?;
    Ok(s)
}

type PngDraw<'a> = &'a dyn Fn(&DrawingArea<BitMapBackend, Shift>) -> Result<(), String>;

fn write_png(path: &Path, size: (u32, u32), draw: PngDraw) -> Result<(), ViewError> {
    let plot_err = |why: String| ViewError::Plot {
        path: path.to_path_buf(),
        why,
    };
    let root = BitMapBackend::new(path, size).into_drawing_area();
    draw(&root).map_err(plot_err)
}

/// Draws every chart and timeline of `views` into `dir`; returns the files written.
pub fn plot_all(views: &[View], dir: &Path, formats: Formats) -> Result<Vec<PathBuf>, ViewError> {
    let real_font = ensure_font();
    if formats.png && !real_font {
        return Err(ViewError::Plot {
            path: dir.to_path_buf(),
            why: "PNG text needs a TrueType font and none was found (set SERVEBENCH_FONT=/path/to/font.ttf, or install one, e.g. Debian's fonts-dejavu-core); --format svg works without".into(),
        });
    }
    std::fs::create_dir_all(dir).map_err(|error| ViewError::Write {
        path: dir.to_path_buf(),
        error,
    })?;
    let mut written = Vec::new();
    let write = |path: PathBuf, text: String| -> Result<PathBuf, ViewError> {
        std::fs::write(&path, text).map_err(|error| ViewError::Write {
            path: path.clone(),
            error,
        })?;
        Ok(path)
    };
    let plot_err = |path: &Path, why: String| ViewError::Plot {
        path: path.to_path_buf(),
        why,
    };
    for c in charts(views) {
        if formats.svg {
            let path = dir.join(format!("{}.svg", c.name));
            let svg = chart_svg(&c).map_err(|w| plot_err(&path, w))?;
            written.push(write(path, svg)?);
        }
        if formats.png {
            let path = dir.join(format!("{}.png", c.name));
            write_png(&path, chart_size(&c), &|root| draw_chart(root, &c))?;
            written.push(path);
        }
    }
    for t in timelines(views) {
        if formats.svg {
            let path = dir.join(format!("{}.svg", t.name));
            let svg = timeline_svg(&t).map_err(|w| plot_err(&path, w))?;
            written.push(write(path, svg)?);
        }
        if formats.png {
            let path = dir.join(format!("{}.png", t.name));
            write_png(&path, SIZE, &|root| draw_timeline(root, &t))?;
            written.push(path);
        }
    }
    if written.is_empty() {
        return Err(ViewError::Plot {
            path: dir.to_path_buf(),
            why: "nothing to draw: the inputs have no figures".into(),
        });
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axes_only_for_wide_positive_ranges() {
        assert!(wants_log([1.0, 4096.0].into_iter()));
        assert!(!wants_log([1.0, 40.0].into_iter()));
        assert!(!wants_log([0.0, 4096.0].into_iter()));
    }

    #[test]
    fn cdf_ends_at_one() {
        let c = cdf(&[3.0, 1.0, 2.0]);
        assert_eq!(c, vec![(1.0, 1.0 / 3.0), (2.0, 2.0 / 3.0), (3.0, 1.0)]);
    }

    #[test]
    fn metrics_only_font_parses() {
        let bytes = Box::leak(metrics_only_font().into_boxed_slice());
        assert!(register_font("servebench-test-metrics", FontStyle::Normal, bytes).is_ok());
    }
}
