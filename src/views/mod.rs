//! Opening any saved or imported document (a result, a sweep, an imported document, another
//! tool's output) into one view model that `render` draws.
//!
//! - `model`: the view types ([`model::View`], series, steps), plain data;
//! - `open`: sniff a file and read it into a view (servebench documents here, foreign files
//!   through `import`);
//! - `import/`: one file per foreign format, and the `import` command's document writer;
//! - `imported`: the `imported` document's shape and reader;
//! - `keys`: which metric keys are figures, which way is better, their reading order;
//! - `samples`: per-request TTFT/E2EL samples for CDFs.
//!
//! Imports `config`, `measure` (records) and `results`; never `drive` or `render`.

pub mod error;
pub mod import;
pub mod imported;
pub mod keys;
pub mod model;
pub mod open;
pub mod samples;
