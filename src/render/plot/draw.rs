//! Rendering charts and timelines with plotters, for any backend: SVG strings and PNG files,
//! fonts, axes, legends.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::register_font;

use crate::views::error::ViewError;

use super::model::*;

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
pub(super) fn ensure_font() -> bool {
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
pub(super) fn metrics_only_font() -> Vec<u8> {
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

pub(super) fn err<E: std::fmt::Debug>(e: E) -> String {
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

pub(super) fn draw_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &Chart,
) -> Result<(), String> {
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

pub(super) fn draw_timeline<DB: DrawingBackend>(
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

pub(super) fn write_png(path: &Path, size: (u32, u32), draw: PngDraw) -> Result<(), ViewError> {
    let plot_err = |why: String| ViewError::Plot {
        path: path.to_path_buf(),
        why,
    };
    let root = BitMapBackend::new(path, size).into_drawing_area();
    draw(&root).map_err(plot_err)
}
