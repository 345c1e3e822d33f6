//! Output formats: the text report, compare tables, CSV, JSON, plots and the HTML report. Each
//! reads a document, a view or a comparison and formats or draws it; none computes a figure
//! (statistics are `results`', the pairing of compared documents `views::compare`'s, each
//! figure's unit and direction its `config::figure::FigureKey`'s).
//!
//! - `print`: the one interface every printed document goes through: a type per format
//!   implementing `Printer` for each document kind it writes, each kind listing its
//!   printers; a pair that does not exist has no implementation and is refused in one line;
//! - `report/`: a result's text report (vLLM's block, then servebench's), and a view's text;
//! - `compare`: a comparison as aligned text, Markdown or JSON;
//! - `csv`: results, sweeps, imports, comparisons and records files as CSV; `autoscale_csv`:
//!   an autoscaler benchmark's windows; `slices_csv`: a
//!   result's time slices, a row per window;
//! - `plot/`: charts as data, drawn to SVG and PNG;
//! - `html`: one self-contained HTML page of a view, in reading order: the answer
//!   (`html_first`), the charts (the request timeline, `html_timeline`; inline SVG charts),
//!   the full labelled table (`html_table`);
//! - `html_pareto`: the HTML page's Pareto section (its chart and the steps on the front);
//!   `html_slices`: its charts of the time slices; `html_autoscale`: an autoscaler
//!   benchmark's figures and charts; `html_account`: the server's account of each request;
//!   `html_buckets`: the figures by prompt-length bucket; `html_adaptive`: the SLO
//!   controller's sustained load and charts; `html_figure`: one chart as the
//!   page's `<figure>` (every section's charts go through it);
//! - `history`: `servebench history`'s tables, CSV, JSON and page of saved runs over time;
//! - `llm_d`: a view as llm-d's Benchmark Report (version 0.2), a report per step;
//! - `capacity`: `servebench plan`'s tables, CSV, chart and HTML page;
//! - `format`: number formatting every output shares;
//! - `escape`: text from outside made safe for each output kind (terminal, CSV, Markdown,
//!   HTML); every output writes outside text through it;
//! - `error`: `RenderError`.
//!
//! Imports `views` (and the `results`/`config` types they carry); never `drive` or `cli`. To
//! add an output format, see `print`'s doc: a `Format` variant, its printer type, and a
//! `Printer` impl per document kind it writes (a function in a module here that takes the
//! document and returns text).

pub mod autoscale_csv;
pub mod capacity;
pub mod compare;
pub mod csv;
pub mod error;
pub mod escape;
pub mod format;
pub mod history;
pub mod html;
pub mod html_account;
pub mod html_adaptive;
pub mod html_autoscale;
pub mod html_buckets;
pub mod html_figure;
pub mod html_first;
pub mod html_pareto;
pub mod html_slices;
pub mod html_table;
pub mod html_timeline;
pub mod join;
pub mod llm_d;
pub mod plot;
pub mod print;
pub mod report;
pub mod slices_csv;
pub mod trace_stats;
