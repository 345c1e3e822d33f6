//! Drawing [`Chart`]s and [`Timeline`]s on any plotters backend (SVG strings here, PNG files in
//! `plot/mod.rs`): axes, ticks, lines, markers, the legend below the plot, the timeline bars.
//!
//! Draws what `chart` describes and decides nothing about which figures to show. To draw a
//! new kind of picture, add its data type to `chart` and one `draw_*` function here for any
//! backend, plus an `*_svg` wrapper for the HTML report.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::render::error::DrawError;
use crate::render::plot::chart::{Chart, Dash, Stacked, Timeline};
use crate::render::plot::font::ensure_font;

pub(super) const SIZE: (u32, u32) = (1000, 620);

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

fn err<E: std::fmt::Debug>(e: E) -> DrawError {
    DrawError::of(e)
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

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    c: &Chart,
) -> Result<(), DrawError> {
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
            Dash::Points => {
                area.draw(&Circle::new((x + 14, y + 7), 4, color.filled()))
                    .map_err(err)?;
                (0, 0)
            }
        };
        let mut sx = if e.dash == Dash::Points { x + 28 } else { x };
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

pub(super) fn draw_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &Chart,
) -> Result<(), DrawError> {
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

fn draw_xy<DB, X, Y>(root: &DrawingArea<DB, Shift>, c: &Chart, x: X, y: Y) -> Result<(), DrawError>
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
            Dash::Points => chart.draw_series(std::iter::empty::<Circle<(f64, f64), i32>>()),
        }
        .map_err(err)?;
        if l.markers || l.dash == Dash::Points {
            let r = if l.dash == Dash::Points { 5 } else { 3 };
            chart
                .draw_series(l.points.iter().map(|p| Circle::new(*p, r, color.filled())))
                .map_err(err)?;
        }
    }
    Ok(())
}

pub(super) fn draw_timeline<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    t: &Timeline,
) -> Result<(), DrawError> {
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
    let window = RGBColor(44, 160, 44);
    if let Some((a, z)) = t.steady {
        // Under the bars: the steady window's span, faint, with its edges drawn.
        let span = Rectangle::new([(a, 0.0), (z.max(a), n)], window.mix(0.12).filled());
        chart.draw_series(std::iter::once(span)).map_err(err)?;
        let edges =
            [a, z].map(|x| PathElement::new(vec![(x, 0.0), (x, n)], window.stroke_width(2)));
        chart.draw_series(edges).map_err(err)?;
    }
    chart.draw_series(rects).map_err(err)?;
    let mut keys = vec![
        ("queued: scheduled → sent", queue),
        ("TTFT: sent → first chunk", ttft),
        ("decode: first → last chunk", decode),
        ("failed: sent → end", failed),
    ];
    if t.steady.is_some() {
        keys.push(("steady window (MSER-5)", window));
    }
    color_key(&mut chart, keys, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)
}

/// A boxed key of filled squares, one per `(name, color)`, in a corner of the plot.
fn color_key<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    keys: impl IntoIterator<Item = (&'a str, RGBColor)>,
    position: SeriesLabelPosition,
) -> Result<(), DrawError> {
    for (name, c) in keys {
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], c.filled()));
    }
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(180, 180, 180))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(err)
}

/// Palette indices of a stack's parts: the TTFT breakdown's five, then grey for the rest.
const STACK_COLORS: [usize; 6] = [0, 1, 2, 3, 4, 7];

pub(super) fn draw_stacked<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    t: &Stacked,
) -> Result<(), DrawError> {
    root.fill(&WHITE).map_err(err)?;
    let top = t
        .bars
        .iter()
        .map(|(_, p)| p.iter().flatten().map(|v| v.max(0.0)).sum::<f64>())
        .fold(0.0f64, f64::max)
        .max(1e-3)
        * 1.08;
    let n = t.bars.len();
    let mut chart = ChartBuilder::on(root)
        .caption(&t.title, ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(78)
        .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..top)
        .map_err(err)?;
    let labels: Vec<&str> = t.bars.iter().map(|(l, _)| l.as_str()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n.max(1))
        .x_desc(&t.x_label)
        .y_desc("mean (ms)")
        .x_label_formatter(&|v| {
            let i = v.round();
            let hit = (v - i).abs() < 1e-6 && i >= 0.0;
            hit.then(|| labels.get(i as usize).copied())
                .flatten()
                .unwrap_or_default()
                .to_string()
        })
        .y_label_formatter(&|v| fmt_tick(*v))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()
        .map_err(err)?;
    let mut rects = Vec::new();
    for (i, (_, parts)) in t.bars.iter().enumerate() {
        let x = i as f64;
        let mut y = 0.0;
        for (k, v) in parts.iter().enumerate() {
            let Some(v) = v.filter(|v| *v > 0.0) else {
                continue;
            };
            let color = PALETTE[STACK_COLORS[k % STACK_COLORS.len()]];
            rects.push(Rectangle::new(
                [(x - 0.3, y), (x + 0.3, y + v)],
                color.filled(),
            ));
            y += v;
        }
    }
    chart.draw_series(rects).map_err(err)?;
    let keys = (t.parts.iter().enumerate())
        .map(|(k, name)| (*name, PALETTE[STACK_COLORS[k % STACK_COLORS.len()]]));
    color_key(&mut chart, keys, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)
}

/// A stacked breakdown as an SVG document.
pub fn stacked_svg(t: &Stacked) -> Result<String, DrawError> {
    ensure_font();
    let mut s = String::new();
    draw_stacked(
        &SVGBackend::with_string(&mut s, SIZE).into_drawing_area(),
        t,
    )?;
    Ok(s)
}

/// A chart as an SVG document.
pub fn chart_svg(c: &Chart) -> Result<String, DrawError> {
    ensure_font();
    let mut s = String::new();
    draw_chart(
        &SVGBackend::with_string(&mut s, chart_size(c)).into_drawing_area(),
        c,
    )?;
    Ok(s)
}

/// A timeline as an SVG document.
pub fn timeline_svg(t: &Timeline) -> Result<String, DrawError> {
    ensure_font();
    let mut s = String::new();
    draw_timeline(
        &SVGBackend::with_string(&mut s, SIZE).into_drawing_area(),
        t,
    )?;
    Ok(s)
}
