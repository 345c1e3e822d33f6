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

//!
//! Files: `model` (what is drawn, as data), `draw` (rendering with plotters), and here the
//! files written by `plot`.

mod draw;
mod model;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use crate::views::error::ViewError;
use crate::views::view::View;

pub use draw::{chart_size, chart_svg, font_path, timeline_svg};
use draw::{draw_chart, draw_timeline, ensure_font, write_png};
pub use model::*;

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
