//! Output formats: the text report, compare tables, plots and the HTML report. Each reads a
//! document or a view and computes nothing of its own.
//!
//! - `report/`: a result's text report (vLLM's block, then servebench's), and a view's text;
//! - `compare`: side-by-side tables of several views, text or Markdown;
//! - `plot/`: charts as data, drawn to SVG and PNG;
//! - `html`: one self-contained HTML page of a view (tables and inline SVG charts);
//! - `format`: number formatting every output shares;
//! - `escape`: text from outside made safe for each output kind (terminal, CSV, Markdown,
//!   HTML); every output writes outside text through it.
//!
//! Imports `views` (and the `results`/`config` types they carry); never `drive` or `cli`. To
//! add an output format, add a module here that takes a `views::model::View` (or a
//! `results::document::BenchResult`) and returns text or writes files.

pub mod compare;
pub mod csv;
pub mod escape;
pub mod format;
pub mod html;
pub mod plot;
pub mod report;
