//! The session's observer for `run` and `search` ([`Screen`]): shows progress during each run
//! and prints each report as soon as its run is saved, each stage of a staged run, `--repeat`'s
//! spread, and each search probe's line; keeps the step table's rows for the end.

use std::path::{Path, PathBuf};

use crate::cli::plan::Show;
use crate::config::search::axis_word;
use crate::config::sweep::{LoadParameter, SweepValue};
use crate::config::RunConfig;
use crate::drive::observer::StepObserver;
use crate::drive::plan::{Mode, RunPlan};
use crate::drive::run::RunOptions;
use crate::drive::ui::progress::{Progress, ProgressMode};
use crate::render::report;
use crate::results::document::BenchResult;
use crate::results::repeat::RepeatDoc;
use crate::results::search::SearchDoc;

pub(super) struct Screen {
    mode: ProgressMode,
    progress: Option<Progress>,
    /// Successful requests over every run.
    pub(super) completed: u64,
    /// A sweep's parameter, or a staged run's (`request_rate`) once its stages come.
    sweep_param: Option<LoadParameter>,
    /// A search's axis: its probes show no progress and no report, one line each.
    search: Option<LoadParameter>,
    /// Where the current step's result is saved.
    result_path: PathBuf,
    /// `--summary-only` in a sweep or stages: no report per step, the step table at the end.
    summary_only: bool,
    /// Each finished step (a sweep's, the stages'): its figures and validity.
    steps: Vec<report::view::TableStep>,
    /// A sweep's number of steps.
    steps_total: usize,
    /// Why the first run or step that stopped early did (`--max-errors`, `--max-error-rate`):
    /// the exit code is then 1, for a sweep as for a single run.
    pub(super) stopped_early: Option<String>,
    /// Every run's saved result (not a search's probes), in order: their spans are exported
    /// after the session (`--otel-file`, `--otel-endpoint`).
    pub(super) saved: Vec<PathBuf>,
}

impl Screen {
    pub(super) fn new(plan: &RunPlan, show: Show) -> Screen {
        let (sweep_param, steps_total) = match &plan.mode {
            Mode::Sweep { param, steps, .. } => (Some(*param), steps.len()),
            _ => (None, 0),
        };
        Screen {
            mode: ProgressMode::detect(show.quiet, show.no_tui),
            progress: None,
            completed: 0,
            sweep_param,
            search: match &plan.mode {
                Mode::Search { spec } => Some(spec.by),
                _ => None,
            },
            result_path: PathBuf::new(),
            // A step table follows a sweep or stages, the spread a --repeat: --summary-only
            // prints only that (the plan refuses it for a single run).
            summary_only: show.summary_only,
            steps: Vec::new(),
            steps_total,
            stopped_early: None,
            saved: Vec::new(),
        }
    }

    /// Stops the progress display of a run that did not finish.
    pub(super) fn end_progress(&mut self) {
        if let Some(p) = self.progress.take() {
            p.finish();
        }
    }

    /// Prints the table of the steps so far (a sweep's or the stages', after the last one),
    /// with the commands for `doc`, the saved sweep document.
    pub(super) fn step_table(&self, doc: &Path) {
        let Some(param) = self
            .sweep_param
            .filter(|_| self.mode != ProgressMode::Quiet)
        else {
            return;
        };
        if self.steps.is_empty() {
            return;
        }
        let _ = super::out::out(&report::view::step_table(
            param,
            &self.steps,
            &[doc.to_path_buf()],
        ));
    }
}

impl StepObserver for Screen {
    fn started(&mut self, value: SweepValue, cfg: &RunConfig, opts: &RunOptions) {
        if self.search.is_some() {
            return;
        }
        self.result_path = opts.result_path.clone();
        let label = match self.sweep_param {
            Some(p) => format!(
                "{}={value} (step {} of {})",
                p.as_str(),
                self.steps.len() + 1,
                self.steps_total
            ),
            None => "run".to_string(),
        };
        // A time-bounded run's total is what its pool was built for (its expected requests).
        let info = crate::drive::ui::dashboard::RunInfo {
            label,
            total: crate::workload::requests::pool_size(&cfg.load),
            cap: cfg.load.concurrency_cap(),
            stages: (cfg.load.shape.stages.iter())
                .scan(0.0, |end, st| {
                    *end += st.seconds / cfg.time_scale.max(f64::MIN_POSITIVE);
                    Some((st.rate, *end))
                })
                .collect(),
            time_scale: cfg.time_scale,
            open_loop: cfg.load.max_concurrency.is_none()
                && matches!(
                    cfg.load.request_rate,
                    crate::config::RequestRate::PerSecond(_)
                ),
        };
        self.progress = Some(Progress::start(opts.live.clone(), info, self.mode));
    }

    fn finished(&mut self, value: SweepValue, result: &BenchResult) {
        if self.search.is_some() {
            return;
        }
        self.end_progress();
        self.saved.push(self.result_path.clone());
        self.completed += result.summary.completed;
        if self.stopped_early.is_none() {
            self.stopped_early.clone_from(&result.stopped_early);
        }
        if let Some(m) = result.server_metrics.as_ref().filter(|m| m.failures > 0) {
            note!(
                "servebench: warning: {} of {} metric scrapes failed (first: {})",
                m.failures,
                m.failures + m.samples.len() as u64,
                m.errors.first().map_or("?", String::as_str)
            );
        }
        if let Some(m) = result.server_metrics.as_ref().filter(|m| m.over_limit > 0) {
            note!(
                "servebench: warning: {} lines of the metric scrapes were past their limits and not read (the report says which)",
                m.over_limit
            );
        }
        if self.sweep_param.is_some() {
            (self.steps).push(report::view::table_step(&self.result_path, result));
        }
        if self.mode == ProgressMode::Quiet || self.summary_only {
            return;
        }
        // A closed stdout must not stop a sweep whose results are still being saved.
        let _ = super::out::out(&match self.sweep_param {
            Some(p) => format!("{}: {value}\n{}\n", p.as_str(), report::text(result)),
            None => report::text(result),
        });
        note!("servebench: result saved to {}", self.result_path.display());
    }

    fn stage(&mut self, value: SweepValue, path: &Path, result: &BenchResult) {
        // The whole run was reported as a run; its stages are a sweep's steps over the rate.
        if self.sweep_param.is_none() {
            self.sweep_param = Some(LoadParameter::RequestRate);
            self.steps.clear();
        }
        self.result_path = path.to_path_buf();
        self.finished(value, result);
    }

    fn repeated(&mut self, doc: &RepeatDoc) {
        // Saved before it is printed: a closed stdout does not lose it.
        let _ = super::out::out(&report::repeats(doc));
    }

    fn mix_alone(&mut self, mixed: &BenchResult) {
        if self.mode == ProgressMode::Quiet {
            return;
        }
        // Saved before it is printed: a closed stdout does not lose it.
        let _ = super::out::out(&report::mix(mixed));
        note!(
            "servebench: result saved to {} (with each class alone)",
            self.saved
                .first()
                .map_or_else(String::new, |p| p.display().to_string())
        );
    }

    fn probed(&mut self, doc: &SearchDoc) {
        let (Some(by), Some(p)) = (self.search, doc.probes.last()) else {
            return;
        };
        if self.mode == ProgressMode::Quiet {
            return;
        }
        note!(
            "servebench: probe {} at {} {}: {}/{} good ({:.1}%) -> {}",
            doc.probes.len(),
            axis_word(by).unwrap_or_default(),
            p.value,
            p.good,
            p.total,
            100.0 * p.good_fraction,
            if p.passed { "pass" } else { "fail" }
        );
    }
}
