//! Why an output could not be made: the document could not be opened (`ViewError`,
//! `ResultsError`), a chart could not be drawn, a file could not be written, or the document
//! kind has no printer in the format asked for (`RenderError::Unsupported`, which names the
//! formats it has). The message names the file, the chart or the formats.

use std::path::PathBuf;

use crate::results::error::ResultsError;
use crate::views::error::ViewError;

/// An output could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    View(#[from] ViewError),
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// A chart could not be drawn: `what` is the file, or the chart in a page.
    #[error("cannot draw {what}: {source}")]
    Draw { what: String, source: DrawError },
    #[error("cannot write {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot draw {dir}: PNG text needs a TrueType font and none was found (set SERVEBENCH_FONT=/path/to/font.ttf, or install one, e.g. Debian's fonts-dejavu-core); --format svg works without")]
    NoFont { dir: PathBuf },
    #[error("cannot draw {dir}: nothing to draw: the inputs have no figures")]
    NothingToDraw { dir: PathBuf },
    /// The document kind has no printer in this format.
    #[error("--format {format}: {kind} prints as {formats}", formats = list(.formats))]
    Unsupported {
        /// "a records file".
        kind: &'static str,
        /// The format asked for (`render::print::Format`'s name).
        format: &'static str,
        /// The formats it has.
        formats: Vec<&'static str>,
    },
}

/// `text, markdown or csv`.
fn list(names: &[&str]) -> String {
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "nothing".into(),
    }
}

/// What plotters said when a drawing failed (its errors are generic over the backend, so
/// they are kept as its words).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DrawError(pub String);

impl DrawError {
    /// Plotters' error `e`, in its own words.
    pub fn of<E: std::fmt::Debug>(e: E) -> DrawError {
        DrawError(format!("{e:?}"))
    }
}
