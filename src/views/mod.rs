//! Opening any saved or imported document (a result, a sweep, a search, another tool's
//! output) into one view model that `render` draws.
//!
//! Imports `config`, `measure` (records) and `results`; never `drive` or `render`.

pub mod error;
pub mod import;
pub mod open;
pub mod view;
