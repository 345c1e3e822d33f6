//! Sweeps: the same benchmark at several load levels, one full run per step.
//!
//! A sweep varies exactly one load parameter (`num_prompts`, `max_concurrency` or
//! `request_rate`), or the `prefix` dataset's `num_prefixes` at a fixed load. Each step is an ordinary run whose result is saved the moment it
//! finishes (`<stem>-<parameter><value>.json` plus its records), and the sweep document
//! (`<stem>.sweep.json`) is rewritten after every step, so a failure or Ctrl-C at step k keeps
//! steps 1..k−1 on disk. This module runs steps and writes the sweep document; it prints
//! nothing (the session's observer is told of each step).
//!
//! The parameter and its value lists are `config::sweep`; the plan (`drive::plan`) holds each
//! step's validated config and has checked every file the sweep writes; the document is
//! `results::sweep`. Each step is told to the session's one observer (`observer.rs`).
//!
//! With `--stop-saturated on` a load sweep (`--request-rate`, `--max-concurrency` lists)
//! stops at the first saturated step (`results::saturated`): the document names it with its
//! evidence and keeps the values not run as `skipped` (not failed); the sweep is complete
//! when every step it ran is.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::sweep::{LoadParameter, SweepValue};
use crate::config::valid::ValidConfig;
use crate::drive::error::RunError;
use crate::drive::hooks::SessionHooks;
use crate::drive::observer::StepObserver;
use crate::drive::plan::RunPlan;
use crate::drive::run::{execute_with, RunOptions};
use crate::results::document::SCHEMA_VERSION;
use crate::results::error::ResultsError;
use crate::results::saturated::{detect, StepFigures};
use crate::results::sweep::{SweepDoc, SweepStep};

/// Runs every step of `plan`'s sweep over `param` in order, saving each as it finishes.
/// Stops early (the document marked incomplete) when `stop` is cancelled, a step fails, or a
/// step was stopped early. `abort` is the second Ctrl-C (see `RunOptions::abort`).
pub async fn run_sweep(
    plan: &RunPlan,
    param: LoadParameter,
    steps: &[(SweepValue, ValidConfig)],
    cooldown: Duration,
    stop: CancellationToken,
    abort: &CancellationToken,
    observer: &mut dyn StepObserver,
) -> Result<SweepDoc, RunError> {
    let out = &plan.output;
    let doc_path = out.sweep_doc();
    std::fs::create_dir_all(&out.dir).map_err(|source| {
        RunError::from(ResultsError::Write {
            path: out.dir.clone(),
            source,
        })
    })?;
    let mut doc = SweepDoc {
        schema_version: SCHEMA_VERSION,
        kind: "sweep".into(),
        servebench_version: env!("CARGO_PKG_VERSION").into(),
        started_at: crate::measure::clock::Clock::start().started_at_rfc3339(),
        parameter: param,
        values: steps.iter().map(|(v, _)| *v).collect(),
        steps: Vec::new(),
        complete: false,
        saturation: None,
        skipped: Vec::new(),
    };
    // The saturation stop reads each step's figures (a load sweep only).
    let mut figures = Vec::new();
    let load = |v: SweepValue| match (param, v) {
        (
            LoadParameter::RequestRate,
            SweepValue::Rate(crate::config::RequestRate::PerSecond(r)),
        ) => Some(r),
        (LoadParameter::MaxConcurrency, SweepValue::Count(n)) => Some(n as f64),
        _ => None,
    };
    doc.save(&doc_path)?;
    let hooks = SessionHooks::new(plan);
    let outcome = async {
        for (i, (value, cfg)) in steps.iter().enumerate() {
            let value = *value;
            if stop.is_cancelled() {
                break;
            }
            if i > 0 && !cooldown.is_zero() {
                tokio::select! {
                    () = tokio::time::sleep(cooldown) => {}
                    () = stop.cancelled() => break,
                }
            }
            let file = out.step(param, value);
            // A failing hook stops the sweep here: the steps before it are saved.
            let run_opts = RunOptions {
                hooks_before: hooks.before().await?,
                ..RunOptions::from_plan(plan, &file, i == 0, abort)
            };
            observer.started(value, cfg, &run_opts);
            let ran = execute_with(cfg, &plan.text, &plan.secrets, &run_opts, stop.clone()).await;
            let mut result = match ran {
                // Stopped before this step's load began: the steps before it are the sweep.
                Err(RunError::Stopped) if i > 0 => break,
                r => r?,
            };
            let hooked = hooks.after(&mut result, &run_opts.result_path).await;
            observer.finished(value, &result);
            doc.steps.push(SweepStep {
                value,
                result: file.into(),
                complete: result.complete,
            });
            doc.complete = doc.steps.len() == steps.len() && doc.steps.iter().all(|s| s.complete);
            doc.save(&doc_path)?;
            hooked?;
            if let Some(at) = load(value).filter(|_| plan.stop_saturated) {
                figures.push(StepFigures::of(at, &result.summary));
                if let Some(stop) = detect(&figures) {
                    doc.skipped = steps[i + 1..].iter().map(|(v, _)| *v).collect();
                    doc.saturation = Some(stop);
                    doc.complete = doc.steps.iter().all(|s| s.complete);
                    doc.save(&doc_path)?;
                    if !doc.skipped.is_empty() {
                        break;
                    }
                }
            }
            // A server failing past --max-errors / --max-error-rate will not do better under
            // more load.
            if result.stopped_early.is_some() {
                break;
            }
        }
        Ok::<_, RunError>(())
    };
    // `after-run` whatever ended the sweep (an error, a failed hook, a stop).
    hooks.ended(outcome.await).await?;
    Ok(doc)
}
