//! Charts of results, sweeps and imports, as SVG (and PNG), drawn with plotters.
//!
//! What is drawn is first described as plain data (`chart`: [`chart::Chart`],
//! [`chart::Timeline`]) from views, then rendered by one function per kind for any plotters
//! backend (`draw`), so the SVG files, the PNG files and the HTML report's inline SVG are the
//! same pictures. Text needs a font (`font`). This file chooses the formats and writes the
//! files ([`plot_all`]).
//!
//! Charts, per load parameter (`num_prompts`, `max_concurrency`, `request_rate`,
//! `input_len`), one line per series: output and request throughput vs load; TTFT, TPOT, ITL,
//! E2EL (mean solid, median dashed, p99 dotted) vs load; TTFT and TPOT vs output throughput;
//! CDFs of TTFT and E2EL where per-request samples exist; the TTFT breakdown (client queue,
//! connection setup, server queue, prefill, first-token transfer: each part's mean stacked,
//! one bar per load step) where a servebench result has one; and a timeline of one run from its
//! records file (scheduled → sent → first chunk → last chunk per request). Axes become
//! logarithmic when the values are positive and span more than 50×, as the seeds do
//! (1..4096 prompts, 100 ms..700 s TTFT).
//!
//! A multi-LoRA sweep adds one chart per figure with a line per adapter (`adapters`); an
//! agentic run's job figures (JCT, job throughput, JCT SLO attainment) are drawn against the
//! load too (`jobs`). Every step of every input is also a point of output tokens/s per user
//! against per GPU, the Pareto front marked (`pareto`). An autoscaler benchmark's load,
//! replicas and attainment (`autoscale`) and the SLO controller's load and good fraction per
//! window (`adaptive`) are drawn against the run's time.
//!
//! Nothing here computes a figure: charts read the views' numbers. To add a chart: build a
//! [`chart::Chart`] in [`chart::charts`]; rendering and file naming follow. To add an image
//! format: a variant of [`ImageFormat`] and its branch in [`plot_all`].

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use self::chart::{breakdowns, charts, timelines};
use self::draw::{
    chart_size, chart_svg, draw_chart, draw_stacked, draw_timeline, stacked_svg, timeline_svg, SIZE,
};
use self::font::ensure_font;
use crate::render::error::{DrawError, RenderError};
use crate::views::model::View;

pub mod adapters;
pub mod adaptive;
pub mod autoscale;
pub mod chart;
pub mod draw;
pub mod font;
pub mod jobs;
pub mod pareto;

#[cfg(test)]
mod tests;

/// Which image formats to write (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ImageFormat {
    Svg,
    Png,
    Both,
}

impl ImageFormat {
    fn svg(self) -> bool {
        self != ImageFormat::Png
    }
    fn png(self) -> bool {
        self != ImageFormat::Svg
    }
}

type PngDraw<'a> = &'a dyn Fn(&DrawingArea<BitMapBackend, Shift>) -> Result<(), DrawError>;

/// A drawing of the file at `path` that failed.
fn draw_err(path: &Path) -> impl FnOnce(DrawError) -> RenderError + '_ {
    |source| RenderError::Draw {
        what: path.display().to_string(),
        source,
    }
}

fn write_png(path: &Path, size: (u32, u32), draw: PngDraw) -> Result<(), RenderError> {
    let root = BitMapBackend::new(path, size).into_drawing_area();
    draw(&root).map_err(draw_err(path))
}

/// Draws every chart, breakdown and timeline of `views` into `dir`; returns the files written.
pub fn plot_all(
    views: &[View],
    dir: &Path,
    formats: ImageFormat,
) -> Result<Vec<PathBuf>, RenderError> {
    let real_font = ensure_font();
    if formats.png() && !real_font {
        return Err(RenderError::NoFont {
            dir: dir.to_path_buf(),
        });
    }
    std::fs::create_dir_all(dir).map_err(|error| RenderError::Write {
        path: dir.to_path_buf(),
        error,
    })?;
    let mut written = Vec::new();
    // One picture as `name.svg` and/or `name.png`.
    let mut emit = |name: &str,
                    svg: &dyn Fn() -> Result<String, DrawError>,
                    size: (u32, u32),
                    png: PngDraw|
     -> Result<(), RenderError> {
        if formats.svg() {
            let path = dir.join(format!("{name}.svg"));
            let text = svg().map_err(draw_err(&path))?;
            std::fs::write(&path, text).map_err(|error| RenderError::Write {
                path: path.clone(),
                error,
            })?;
            written.push(path);
        }
        if formats.png() {
            let path = dir.join(format!("{name}.png"));
            write_png(&path, size, png)?;
            written.push(path);
        }
        Ok(())
    };
    let job_charts = jobs::charts(views);
    for c in (charts(views).into_iter())
        .chain(adapters::charts(views))
        .chain(job_charts)
        .chain(pareto::chart(views))
        .chain(autoscale::charts(views))
        .chain(adaptive::charts(views))
    {
        emit(&c.name, &|| chart_svg(&c), chart_size(&c), &|root| {
            draw_chart(root, &c)
        })?;
    }
    for b in breakdowns(views) {
        emit(&b.name, &|| stacked_svg(&b), SIZE, &|root| {
            draw_stacked(root, &b)
        })?;
    }
    for t in timelines(views) {
        emit(&t.name, &|| timeline_svg(&t), SIZE, &|root| {
            draw_timeline(root, &t)
        })?;
    }
    if written.is_empty() {
        return Err(RenderError::NothingToDraw {
            dir: dir.to_path_buf(),
        });
    }
    Ok(written)
}
