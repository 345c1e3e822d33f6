//! The one session driver: runs a [`RunPlan`] in whichever [`Mode`] it holds, telling one
//! [`StepObserver`] of every run as it starts and ends and of every document saved. Each
//! mode saves what it measured as it goes, so an error or a stop at any point keeps what
//! came before:
//!
//! - single run (a shard of one): one `drive::run`; with `--mix-alone`, then each class of
//!   its mix alone (`drive::mix_alone`);
//! - `--repeat K`: K runs (`<stem>.repK.json`), then the spread across them
//!   (`<stem>.repeat.json`, saved also when a later repetition failed);
//! - `--stages`: one run, then its stages split into a step each (`drive::stages`);
//! - a sweep (`drive::sweep`) and a search (`drive::search`).
//!
//! Each mode calls the plan's hooks around its runs (`drive::hooks::SessionHooks`).
//!
//! The plan has checked every file the session writes; nothing here checks one again, and
//! nothing here prints (the observer does).

use tokio_util::sync::CancellationToken;

use crate::config::sweep::SweepValue;
use crate::drive::error::RunError;
use crate::drive::hooks::SessionHooks;
use crate::drive::observer::StepObserver;
use crate::drive::plan::{Mode, RunPlan};
use crate::drive::run::{execute_with, RunOptions};
use crate::results::search::SearchDoc;
use crate::results::sweep::SweepDoc;

/// What Ctrl-C and SIGTERM have asked for.
#[derive(Clone, Debug, Default)]
pub struct Signals {
    /// First signal: send no new request, let those in flight finish within `--grace`.
    pub stop: CancellationToken,
    /// Second signal: cancel those in flight now; what was measured is still written and saved.
    pub abort: CancellationToken,
}

/// What a session ended with, besides what its observer was told.
#[derive(Debug)]
pub enum Done {
    /// A single run, or `--repeat`'s runs.
    Runs,
    /// A staged run, split into its stages (the sweep document `plan.output.sweep_doc()`).
    Stages,
    Sweep(SweepDoc),
    Search(SearchDoc),
}

/// Runs `plan`. An error after some runs were saved (a later repetition's, step's or probe's)
/// ends the session with it; what was saved stays saved.
pub async fn run(
    plan: &RunPlan,
    observer: &mut dyn StepObserver,
    signals: &Signals,
) -> Result<Done, RunError> {
    match &plan.mode {
        Mode::Single { start_at } => {
            let results = runs(plan, 1, *start_at, observer, signals).await?;
            // `--mix-alone`: each class alone after the mixed run, saved first.
            if let Some(mixed) = results.into_iter().next() {
                if crate::drive::mix_alone::wanted(plan) {
                    let path = plan.output.dir.join(plan.output.run(1, 1));
                    let tokens = (&signals.stop, &signals.abort);
                    crate::drive::mix_alone::run(plan, mixed, &path, observer, tokens).await?;
                }
            }
            Ok(Done::Runs)
        }
        Mode::Repeat { times } => {
            runs(plan, *times, None, observer, signals).await?;
            Ok(Done::Runs)
        }
        Mode::Stages { start_at } => {
            let results = runs(plan, 1, *start_at, observer, signals).await?;
            if let Some(r) = results.first() {
                let (doc, steps) = crate::drive::stages::split(r, &plan.output)?;
                for ((value, step), file) in doc.values.iter().zip(&steps).zip(&doc.steps) {
                    observer.stage(*value, &plan.output.dir.join(&file.result), step);
                }
            }
            Ok(Done::Stages)
        }
        Mode::Sweep {
            param,
            steps,
            cooldown,
        } => {
            let stop = signals.stop.clone();
            let sweep = crate::drive::sweep::run_sweep(
                plan,
                *param,
                steps,
                *cooldown,
                stop,
                &signals.abort,
                observer,
            );
            Ok(Done::Sweep(sweep.await?))
        }
        Mode::Search { spec } => {
            let stop = signals.stop.clone();
            let search =
                crate::drive::search::run_search(plan, spec, stop, &signals.abort, observer);
            Ok(Done::Search(search.await?))
        }
    }
}

/// `times` runs of the plan's config, each saved as it finishes; with more than one, their
/// spread is saved after the last (also after one that failed: the error comes after it).
async fn runs(
    plan: &RunPlan,
    times: u16,
    start_at: Option<time::OffsetDateTime>,
    observer: &mut dyn StepObserver,
    signals: &Signals,
) -> Result<Vec<crate::results::document::BenchResult>, RunError> {
    let cfg = &plan.config;
    let (mut results, mut files) = (Vec::new(), Vec::new());
    let mut outcome = Ok(());
    let hooks = SessionHooks::new(plan);
    for i in 1..=times {
        let file = plan.output.run(i, times);
        let Some(hooks_before) = hooks.before_or_keep(&mut outcome).await else {
            break;
        };
        let opts = RunOptions {
            start_at,
            hooks_before,
            ..RunOptions::from_plan(plan, &file, true, &signals.abort)
        };
        observer.started(SweepValue::Count(cfg.load.num_prompts), cfg, &opts);
        let stop = signals.stop.clone();
        match execute_with(cfg, &plan.text, &plan.secrets, &opts, stop).await {
            Ok(mut r) => {
                let hooked = hooks.after(&mut r, &opts.result_path).await;
                observer.finished(SweepValue::Count(r.config.load.num_prompts), &r);
                results.push(r);
                files.push(file);
                if let Err(e) = hooked {
                    outcome = Err(e);
                    break;
                }
            }
            // Stopped before this repetition's load began: the ones before it stand.
            Err(RunError::Stopped) if !results.is_empty() => break,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
        if signals.stop.is_cancelled() {
            break;
        }
    }
    // `after-run` whatever ended the repetitions (an error, a failed hook, a stop).
    let outcome = hooks.ended(outcome).await;
    if times > 1 && !results.is_empty() {
        let doc = crate::results::repeat::spread(&results, files);
        crate::results::document::save_json(&plan.output.repeat_doc(), &doc)?;
        observer.repeated(&doc);
    }
    outcome?;
    Ok(results)
}
