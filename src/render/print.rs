//! One interface for every printed document, in the spirit of hyperfine's exporters: each
//! output [`Format`] is a type ([`Text`], [`Markdown`], [`Csv`], [`Json`], [`Html`]) that
//! implements [`Printer`] for each document kind it can write, and each document kind
//! ([`ResultDoc`], [`ViewDoc`] for sweeps and imports, [`RecordsDoc`], [`CompareDoc`],
//! [`ImportSummary`]) lists its printers once ([`Document::PRINTERS`]).
//!
//! A pair that does not exist has no `Printer` implementation, so it cannot be listed: the
//! compiler checks the table, and [`printer`] refuses a format a kind lacks with one line
//! naming the formats it has (`RenderError::Unsupported`), before the document is read. The
//! formats a kind has are read from the same table, so the message and `--help` cannot drift
//! from the code. The printers call the format modules (`report`, `compare`, `csv`, `html`)
//! and compute nothing.
//!
//! To add a format: a variant of [`Format`], a type here with its [`Named`] impl, its
//! `Printer` impls, and its entry in each kind's `PRINTERS` (the flag's value is the variant's
//! name). To print one more document kind: a type here, its [`Document`] impl, and a
//! `Printer` impl per format.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::config::figure::FigureKey;
use crate::render::error::RenderError;
use crate::render::{compare, csv, html, report};
use crate::results::document::BenchResult;
use crate::views::compare::Comparison;
use crate::views::model::View;

/// An output format (`--format` of `report` and `compare`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Csv,
    Json,
    Html,
    /// llm-d's Benchmark Report (`render::llm_d`).
    #[value(name = "llm-d")]
    LlmD,
}

impl Format {
    pub const ALL: [Format; 6] = [
        Format::Text,
        Format::Markdown,
        Format::Csv,
        Format::Json,
        Format::Html,
        Format::LlmD,
    ];

    /// The format's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Markdown => "markdown",
            Format::Csv => "csv",
            Format::Json => "json",
            Format::Html => "html",
            Format::LlmD => "llm-d",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The format a printer type writes.
pub trait Named {
    fn format(&self) -> Format;
}

/// Writes a document of kind `D` in one format.
pub trait Printer<D>: Named + Sync {
    fn print(&self, doc: &D) -> Result<String, RenderError>;
}

/// A kind of document that can be printed, and its printers.
pub trait Document: Sized + 'static {
    /// The kind as messages name it ("a records file").
    const KIND: &'static str;
    /// One printer per format this kind is printed in.
    const PRINTERS: &'static [&'static dyn Printer<Self>];
}

/// The formats documents of kind `D` are printed in.
pub fn formats<D: Document>() -> Vec<Format> {
    D::PRINTERS.iter().map(|p| p.format()).collect()
}

/// The printer of kind `D` in `format`, or the one-line refusal naming the formats `D` has.
pub fn printer<D: Document>(format: Format) -> Result<&'static dyn Printer<D>, RenderError> {
    (D::PRINTERS.iter().copied())
        .find(|p| p.format() == format)
        .ok_or_else(|| RenderError::Unsupported {
            kind: D::KIND,
            format: format.as_str(),
            formats: formats::<D>().iter().map(|f| f.as_str()).collect(),
        })
}

/// Prints the document `open` gives in `format`: the format is checked first, so a pair
/// that does not exist is refused before the document is read.
pub fn print<D: Document>(
    format: Format,
    open: impl FnOnce() -> Result<D, RenderError>,
) -> Result<String, RenderError> {
    let printer = printer::<D>(format)?;
    printer.print(&open()?)
}

/// Writes a printed document to the file `path` (its folder created if missing).
pub fn write_file(path: &Path, text: &str) -> Result<(), RenderError> {
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |error| RenderError::Write { path, error }
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err(dir))?;
    }
    std::fs::write(path, text).map_err(err(path))
}

/// Aligned text for a terminal.
pub struct Text;
/// Markdown tables.
pub struct Markdown;
/// CSV for spreadsheets and databases.
pub struct Csv;
/// JSON for programs.
pub struct Json;
/// One self-contained HTML page.
pub struct Html;

macro_rules! named {
    ($($t:ident),*) => {
        $(impl Named for $t {
            fn format(&self) -> Format {
                Format::$t
            }
        })*
    };
}
/// llm-d's Benchmark Report, version 0.2.
pub struct LlmD;

named!(Text, Markdown, Csv, Json, Html, LlmD);

/// A servebench result, and the file it was read from (its records file is found beside it).
pub struct ResultDoc {
    pub path: PathBuf,
    pub result: BenchResult,
    /// The HTML page's request timeline: its slow-gap threshold, ms.
    pub slow_itl_ms: f64,
}

impl ResultDoc {
    pub fn load(path: PathBuf) -> Result<ResultDoc, RenderError> {
        let result = BenchResult::load(&path)?;
        Ok(ResultDoc {
            path,
            result,
            slow_itl_ms: crate::views::timeline::DEFAULT_SLOW_ITL_MS,
        })
    }
}

impl Document for ResultDoc {
    const KIND: &'static str = "a result";
    const PRINTERS: &'static [&'static dyn Printer<Self>] = &[&Text, &Markdown, &Csv, &Html, &LlmD];
}

impl Printer<ResultDoc> for Text {
    fn print(&self, doc: &ResultDoc) -> Result<String, RenderError> {
        Ok(report::text(&doc.result))
    }
}

impl Printer<ResultDoc> for Markdown {
    fn print(&self, doc: &ResultDoc) -> Result<String, RenderError> {
        Ok(report::view::result_markdown(&report::text(&doc.result)))
    }
}

impl Printer<ResultDoc> for Csv {
    fn print(&self, doc: &ResultDoc) -> Result<String, RenderError> {
        Ok(csv::result(&doc.result))
    }
}

impl Printer<ResultDoc> for Html {
    /// The result's view (with its records' samples) and its text report.
    fn print(&self, doc: &ResultDoc) -> Result<String, RenderError> {
        let view = crate::views::open::from_result(&doc.path, &doc.result);
        let text = report::text(&doc.result);
        let opts = html::PageOptions {
            text_report: Some(&text),
            slow_itl_ms: doc.slow_itl_ms,
        };
        html::page(&view, &opts)
    }
}

/// A sweep, an imported document, or another tool's file read directly; and the HTML page's
/// slow-gap threshold for its request timeline, ms.
pub struct ViewDoc(pub View, pub f64);

impl Document for ViewDoc {
    const KIND: &'static str = "a sweep or an import";
    const PRINTERS: &'static [&'static dyn Printer<Self>] = &[&Text, &Markdown, &Csv, &Html, &LlmD];
}

impl Printer<ViewDoc> for Text {
    fn print(&self, doc: &ViewDoc) -> Result<String, RenderError> {
        Ok(report::view::view_text(&doc.0))
    }
}

impl Printer<ViewDoc> for Markdown {
    fn print(&self, doc: &ViewDoc) -> Result<String, RenderError> {
        Ok(report::view::view_markdown(&doc.0))
    }
}

impl Printer<ViewDoc> for Csv {
    fn print(&self, doc: &ViewDoc) -> Result<String, RenderError> {
        Ok(csv::view(&doc.0))
    }
}

impl Printer<ViewDoc> for Html {
    fn print(&self, doc: &ViewDoc) -> Result<String, RenderError> {
        let opts = html::PageOptions {
            text_report: None,
            slow_itl_ms: doc.1,
        };
        html::page(&doc.0, &opts)
    }
}

/// A records file (`.records.jsonl`), read as it is printed.
pub struct RecordsDoc {
    pub path: PathBuf,
}

impl Document for RecordsDoc {
    const KIND: &'static str = "a records file";
    const PRINTERS: &'static [&'static dyn Printer<Self>] = &[&Csv];
}

impl Printer<RecordsDoc> for Csv {
    fn print(&self, doc: &RecordsDoc) -> Result<String, RenderError> {
        Ok(csv::records(crate::views::samples::records_in(&doc.path)?))
    }
}

/// A result's time slices (`report RESULT --time-slice S --format csv`): a row per window.
pub struct SlicesDoc(pub crate::results::stats::slices::Slices);

impl Document for SlicesDoc {
    const KIND: &'static str = "a result's time slices";
    const PRINTERS: &'static [&'static dyn Printer<Self>] = &[&Csv];
}

impl Printer<SlicesDoc> for Csv {
    fn print(&self, doc: &SlicesDoc) -> Result<String, RenderError> {
        Ok(crate::render::slices_csv::slices(&doc.0))
    }
}

/// An autoscaler benchmark's windows (`report RESULT --autoscale --format csv`).
pub struct AutoscaleDoc(pub crate::results::autoscale::AutoscaleFigures);

impl Document for AutoscaleDoc {
    const KIND: &'static str = "an autoscaler benchmark's windows";
    const PRINTERS: &'static [&'static dyn Printer<Self>] = &[&Csv];
}

impl Printer<AutoscaleDoc> for Csv {
    fn print(&self, doc: &AutoscaleDoc) -> Result<String, RenderError> {
        Ok(crate::render::autoscale_csv::windows(&doc.0))
    }
}

/// Several documents compared (`views::compare`), with the figures asked for.
pub struct CompareDoc {
    pub views: Vec<View>,
    /// Only these figures, when given.
    pub metrics: Option<Vec<FigureKey>>,
    pub comparison: Comparison,
}

impl Document for CompareDoc {
    const KIND: &'static str = "a comparison";
    const PRINTERS: &'static [&'static dyn Printer<Self>] = &[&Text, &Markdown, &Csv, &Json];
}

impl Printer<CompareDoc> for Text {
    fn print(&self, doc: &CompareDoc) -> Result<String, RenderError> {
        Ok(compare::text(&doc.comparison))
    }
}

impl Printer<CompareDoc> for Markdown {
    fn print(&self, doc: &CompareDoc) -> Result<String, RenderError> {
        Ok(compare::markdown(&doc.comparison))
    }
}

impl Printer<CompareDoc> for Csv {
    fn print(&self, doc: &CompareDoc) -> Result<String, RenderError> {
        Ok(csv::views(&doc.views, doc.metrics.as_deref()))
    }
}

impl Printer<CompareDoc> for Json {
    fn print(&self, doc: &CompareDoc) -> Result<String, RenderError> {
        Ok(compare::json(&doc.comparison))
    }
}

/// What `servebench import` found in one file, and where it saved it.
pub struct ImportSummary {
    pub view: View,
    pub saved: PathBuf,
}

impl Document for ImportSummary {
    const KIND: &'static str = "an import's summary";
    const PRINTERS: &'static [&'static dyn Printer<Self>] = &[&Text];
}

impl Printer<ImportSummary> for Text {
    fn print(&self, doc: &ImportSummary) -> Result<String, RenderError> {
        Ok(report::view::import_summary(&doc.view, &doc.saved))
    }
}

/// A run joined with a server's trace (`servebench join`).
pub struct JoinDoc(pub crate::results::join::Join);

impl Document for JoinDoc {
    const KIND: &'static str = "a join";
    const PRINTERS: &'static [&'static dyn Printer<Self>] = &[&Text, &Csv, &Json, &Html];
}

impl Printer<JoinDoc> for Text {
    fn print(&self, doc: &JoinDoc) -> Result<String, RenderError> {
        Ok(super::join::text(&doc.0))
    }
}

impl Printer<JoinDoc> for Csv {
    fn print(&self, doc: &JoinDoc) -> Result<String, RenderError> {
        Ok(super::join::csv(&doc.0))
    }
}

impl Printer<JoinDoc> for Json {
    fn print(&self, doc: &JoinDoc) -> Result<String, RenderError> {
        Ok(super::join::json(&doc.0))
    }
}

impl Printer<JoinDoc> for Html {
    fn print(&self, doc: &JoinDoc) -> Result<String, RenderError> {
        Ok(super::join::html(&doc.0))
    }
}

/// `servebench plan`'s answer over its sweeps and searches (`results::capacity`).
pub struct CapacityDoc(pub crate::results::capacity::CapacityPlan);

impl Document for CapacityDoc {
    const KIND: &'static str = "a capacity plan";
    const PRINTERS: &'static [&'static dyn Printer<Self>] = &[&Text, &Csv, &Html];
}

impl Printer<CapacityDoc> for Text {
    fn print(&self, doc: &CapacityDoc) -> Result<String, RenderError> {
        Ok(crate::render::capacity::text(&doc.0))
    }
}

impl Printer<CapacityDoc> for Csv {
    fn print(&self, doc: &CapacityDoc) -> Result<String, RenderError> {
        Ok(crate::render::capacity::csv(&doc.0))
    }
}

impl Printer<CapacityDoc> for Html {
    fn print(&self, doc: &CapacityDoc) -> Result<String, RenderError> {
        crate::render::capacity::html(&doc.0)
    }
}

/// A trace's analysis (`servebench trace analyze`).
pub struct TraceDoc(pub crate::results::trace_stats::TraceAnalysis);

impl Document for TraceDoc {
    const KIND: &'static str = "a trace analysis";
    const PRINTERS: &'static [&'static dyn Printer<Self>] = &[&Text, &Json];
}

impl Printer<TraceDoc> for Text {
    fn print(&self, doc: &TraceDoc) -> Result<String, RenderError> {
        Ok(super::trace_stats::text(&doc.0))
    }
}

impl Printer<TraceDoc> for Json {
    fn print(&self, doc: &TraceDoc) -> Result<String, RenderError> {
        Ok(super::trace_stats::json(&doc.0))
    }
}

/// `servebench history`: many saved runs of a configuration over time, judged.
pub struct HistoryDoc(pub crate::views::history::History);

impl Document for HistoryDoc {
    const KIND: &'static str = "a history";
    const PRINTERS: &'static [&'static dyn Printer<Self>] = &[&Text, &Markdown, &Csv, &Json, &Html];
}

impl Printer<HistoryDoc> for Text {
    fn print(&self, doc: &HistoryDoc) -> Result<String, RenderError> {
        Ok(super::history::text(&doc.0))
    }
}

impl Printer<HistoryDoc> for Markdown {
    fn print(&self, doc: &HistoryDoc) -> Result<String, RenderError> {
        Ok(super::history::markdown(&doc.0))
    }
}

impl Printer<HistoryDoc> for Csv {
    fn print(&self, doc: &HistoryDoc) -> Result<String, RenderError> {
        Ok(super::history::csv(&doc.0))
    }
}

impl Printer<HistoryDoc> for Json {
    fn print(&self, doc: &HistoryDoc) -> Result<String, RenderError> {
        Ok(super::history::json(&doc.0))
    }
}

impl Printer<HistoryDoc> for Html {
    fn print(&self, doc: &HistoryDoc) -> Result<String, RenderError> {
        super::history::html(&doc.0)
    }
}

impl Printer<ResultDoc> for LlmD {
    fn print(&self, doc: &ResultDoc) -> Result<String, RenderError> {
        let view = crate::views::open::from_result(&doc.path, &doc.result);
        Ok(crate::render::llm_d::text(&view))
    }
}

impl Printer<ViewDoc> for LlmD {
    fn print(&self, doc: &ViewDoc) -> Result<String, RenderError> {
        Ok(crate::render::llm_d::text(&doc.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document kinds and the formats each is printed in, as README's options table
    /// states them.
    fn matrix() -> Vec<(&'static str, Vec<Format>)> {
        vec![
            (ResultDoc::KIND, formats::<ResultDoc>()),
            (ViewDoc::KIND, formats::<ViewDoc>()),
            (RecordsDoc::KIND, formats::<RecordsDoc>()),
            (CompareDoc::KIND, formats::<CompareDoc>()),
            (JoinDoc::KIND, formats::<JoinDoc>()),
            (TraceDoc::KIND, formats::<TraceDoc>()),
            (HistoryDoc::KIND, formats::<HistoryDoc>()),
        ]
    }

    #[test]
    fn each_kind_lists_a_format_once() {
        for (kind, formats) in matrix() {
            let mut unique = formats.clone();
            unique.dedup();
            assert_eq!(unique, formats, "{kind}");
            assert!(!formats.is_empty(), "{kind}");
        }
    }

    #[test]
    fn a_missing_pair_is_refused_naming_the_pairs_that_exist() {
        let e = printer::<RecordsDoc>(Format::Html)
            .err()
            .unwrap()
            .to_string();
        assert_eq!(e, "--format html: a records file prints as csv");
        let e = printer::<CompareDoc>(Format::Html)
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            e,
            "--format html: a comparison prints as text, markdown, csv or json"
        );
        assert!(printer::<ResultDoc>(Format::Csv).is_ok());
    }

    /// README's "Output formats" table is the matrix above, row for row.
    #[test]
    fn readme_states_the_formats_of_each_kind() {
        let readme = include_str!("../../README.md");
        let table: Vec<&str> = (readme.lines())
            .skip_while(|l| *l != "| document | formats |")
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        let rows: Vec<String> = (matrix().into_iter())
            .map(|(kind, formats)| {
                let names: Vec<&str> = formats.iter().map(|f| f.as_str()).collect();
                format!("| {kind} | {} |", names.join(", "))
            })
            .collect();
        assert_eq!(table, rows, "README's output formats table");
    }
}
