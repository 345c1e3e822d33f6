//! The session's one observer: [`StepObserver`], told of every run of a session as it starts
//! and ends and of every document the session saves besides (a staged run's stages,
//! `--repeat`'s spread, a search's document after each probe, a mix's classes alone). The
//! session (`session.rs`) and each mode's driver (`sweep.rs`, `search.rs`, `mix_alone.rs`)
//! call it; `commands` implements it to print as a session goes. Nothing here prints.
//!
//! A new kind of saved document is a method here with an empty default, so an observer that
//! does not care about it need not change.

use std::path::Path;

use crate::config::sweep::SweepValue;
use crate::config::RunConfig;
use crate::drive::run::RunOptions;
use crate::results::document::BenchResult;
use crate::results::repeat::RepeatDoc;
use crate::results::search::SearchDoc;

/// Told about each run of a session as it starts and when its result is saved (to show
/// progress and print each report as it finishes), and about each document a session saves
/// besides: a staged run's stages, `--repeat`'s spread, a search's document after each probe,
/// a mix's result with its classes alone.
pub trait StepObserver {
    /// A run starts: the single run, a repetition, a sweep step or a search probe, at `value`.
    fn started(&mut self, value: SweepValue, cfg: &RunConfig, opts: &RunOptions);
    /// Its result was saved, at the `opts.result_path` of [`StepObserver::started`].
    fn finished(&mut self, value: SweepValue, result: &BenchResult);
    /// A staged run's stage at `value`, split from its result and saved at `path`.
    fn stage(&mut self, _value: SweepValue, _path: &Path, _result: &BenchResult) {}
    /// `--repeat`'s spread across the runs, saved.
    fn repeated(&mut self, _doc: &RepeatDoc) {}
    /// A search's document after a probe, saved.
    fn probed(&mut self, _doc: &SearchDoc) {}
    /// A mix's result with each class's figures alone (`--mix-alone`), saved.
    fn mix_alone(&mut self, _mixed: &BenchResult) {}
}
