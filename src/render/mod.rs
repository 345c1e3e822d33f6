//! Output formats: the text report, compare tables, plots and the HTML report. Each reads a
//! document or a view and computes nothing of its own.

pub mod compare;
pub mod html;
pub mod plot;
pub mod report;
