//! Opening any saved or imported document (a result, a sweep, an imported document, another
//! tool's output) into one view model that `render` draws.
//!
//! - `model`: the view types ([`model::View`], series, steps), plain data;
//! - `open`: sniff a file and read it into a view (servebench documents here, foreign files
//!   through `import`);
//! - `import/`: one file per foreign format, and the `import` command's document writer;
//! - `imported`: the `imported` document's shape and reader;
//! - `keys`: which keys of a vLLM-style object are figures (each a typed
//!   `config::figure::FigureKey`, which knows its unit, direction and reading order);
//! - `samples`: per-request TTFT/E2EL samples for CDFs;
//! - `compare`: several views side by side (series paired, steps matched, each row judged by
//!   `results::compare`), and the `--fail-if-worse` gates;
//! - `cliff`: the prefix-cache cliff of a series over `num_prefixes` (the first step whose
//!   measured hit rate falls below half of its designed one);
//! - `saturation`: a load sweep's saturation point (the lowest load within 5% of its highest
//!   output throughput);
//! - `timeline`: a run's requests, sampled, split into their phases, for the HTML timeline;
//! - `pareto`: the Pareto front of every step of several views (output tokens/s per user
//!   against per GPU; the front itself is `results::pareto`'s);
//! - `error`: `ViewError` and `GateError`.
//!
//! Views hold and pair figures; they compute no statistic (that is `results`) and lay out no
//! output (that is `render`). Imports `config`, `measure` (records) and
//! `results`; never `drive` or `render`.

pub mod cliff;
pub mod compare;
pub mod error;
pub mod history;
pub mod import;
pub mod imported;
pub mod keys;
pub mod model;
pub mod open;
pub mod pareto;
pub mod samples;
pub mod saturation;
pub mod timeline;
