//! `--mix-alone`: after a mix's run, each class run alone at its share of the
//! mixed run's load (`config::mix::alone_config`: its requests only, from the same seed), so
//! the latency a class suffers next to the others stands beside its latency alone.
//!
//! The mixed run's result is saved before the first run alone starts (`session::runs`), and
//! saved again after each run alone with that class's figures alone and its interference
//! (`results::stats::mix_alone`): a stop or an error during a run alone keeps the mixed
//! result and every figure measured before it. A run alone is a whole run: its own result
//! and records (`<stem>.alone<N>.json`, N the class's index in the mix, from 0), its planned
//! requests accounted for; a Ctrl-C during it saves what it measured, marked incomplete, and
//! adds it to the mixed result as such. Each run alone is a step of the session for its
//! hooks (`drive::hooks::SessionHooks::steps_only`): `before-step` (so `--reset-prefix-cache`
//! empties the server's cache before it, and the mixed run's prompts are not found cached)
//! and `after-step`.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::config::mix::{alone_config, MixAlone};
use crate::config::sweep::SweepValue;
use crate::config::valid::ValidConfig;
use crate::drive::error::RunError;
use crate::drive::hooks::SessionHooks;
use crate::drive::observer::StepObserver;
use crate::drive::plan::RunPlan;
use crate::drive::run::{execute_with, RunOptions};
use crate::results::document::BenchResult;

/// Whether `plan` runs each class alone after its mixed run.
pub fn wanted(plan: &RunPlan) -> bool {
    plan.config.mix_alone == Some(MixAlone::EachClass) && plan.config.mix.is_some()
}

/// Runs each class of `mixed`'s mix alone, in the mix's order, and saves `mixed` (at
/// `mixed_path`) again after each with the class's figures alone. `stop` (Ctrl-C) ends it
/// after the run alone it stopped; `abort` is the second Ctrl-C. An error ends it after
/// what was measured is saved.
pub async fn run(
    plan: &RunPlan,
    mut mixed: BenchResult,
    mixed_path: &Path,
    observer: &mut dyn StepObserver,
    (stop, abort): (&CancellationToken, &CancellationToken),
) -> Result<BenchResult, RunError> {
    let classes = mixed.config.mix.as_ref().map_or(0, |m| m.classes.len());
    let (mut outcome, mut ran) = (Ok(()), false);
    let hooks = SessionHooks::steps_only(plan);
    for k in 0..classes {
        if stop.is_cancelled() {
            break;
        }
        let cfg = ValidConfig::new(alone_config(&plan.config, k as u32))?;
        let file = plan.output.alone(k);
        let Some(hooks_before) = hooks.before_or_keep(&mut outcome).await else {
            break;
        };
        let opts = RunOptions {
            hooks_before,
            ..RunOptions::from_plan(plan, &file, false, abort)
        };
        observer.started(SweepValue::Count(cfg.load.num_prompts), &cfg, &opts);
        let run = execute_with(&cfg, &plan.text, &plan.secrets, &opts, stop.clone());
        let alone = match run.await {
            Ok(mut r) => {
                let hooked = hooks.after(&mut r, &opts.result_path).await;
                observer.finished(SweepValue::Count(r.config.load.num_prompts), &r);
                if let Err(e) = hooked {
                    outcome = Err(e);
                }
                r
            }
            // Stopped before this run's load began: nothing of it was measured.
            Err(RunError::Stopped) => break,
            // It saved what it measured, marked incomplete: that counts too.
            Err(e @ RunError::Incomplete { .. }) => {
                let saved = BenchResult::load(&opts.result_path);
                outcome = Err(e);
                match saved {
                    Ok(r) => r,
                    Err(_) => break,
                }
            }
            Err(e) => {
                outcome = Err(e);
                break;
            }
        };
        let facts = (alone.complete, alone.planned, alone.unsent);
        let figures = (alone.mix.as_ref())
            .and_then(|m| m.classes.get(k))
            .map(|c| c.alone_figures(file.into(), facts));
        let class = (mixed.mix.as_mut()).and_then(|m| m.classes.get_mut(k));
        if let (Some(class), Some(figures)) = (class, figures) {
            class.set_alone(figures);
        }
        mixed.save(mixed_path)?;
        ran = true;
        if outcome.is_err() {
            break;
        }
    }
    if ran {
        observer.mix_alone(&mixed);
    }
    outcome.map(|()| mixed)
}
