//! Sweeps: the same benchmark at several load levels, one full run per step.
//!
//! A sweep varies exactly one load parameter (`num_prompts`, `max_concurrency` or
//! `request_rate`). Each step is an ordinary run whose result is saved the moment it
//! finishes (`<stem>-<parameter><value>.json` plus its records), and the sweep document
//! (`<stem>.sweep.json`) is rewritten after every step, so a failure or Ctrl-C at step k keeps
//! steps 1..k−1 on disk. This module runs steps and writes the sweep document; it prints
//! nothing (the caller gets each step's result through a callback).
//!
//! The parameter and its value lists are `config::sweep`; the document is `results::sweep`.

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::error::ConfigError;
use crate::config::sweep::{step_config, LoadParameter, SweepValue};
use crate::config::RunConfig;
use crate::drive::error::RunError;
use crate::drive::run::{execute_with, RunOptions};
use crate::measure::client::Secrets;
use crate::results::document::{refuse_existing, BenchResult, SCHEMA_VERSION};
use crate::results::error::ResultsError;
use crate::results::sweep::{SweepDoc, SweepStep};
use crate::workload::PromptTokenizer;

/// Where a sweep writes and how it paces itself.
#[derive(Clone, Debug)]
pub struct SweepOptions {
    pub dir: PathBuf,
    pub stem: String,
    pub preflight: bool,
    pub scrape: Option<crate::config::ScrapeSpec>,
    pub cooldown: Duration,
    /// Replace existing files (`--overwrite`); otherwise the sweep refuses to start when its
    /// document or any step's result or records file exists.
    pub overwrite: bool,
    /// Cancelled on a second Ctrl-C (see `RunOptions::abort`).
    pub abort: CancellationToken,
}

impl SweepOptions {
    /// The result file of step `value`.
    fn step_file(&self, param: LoadParameter, value: SweepValue) -> String {
        format!("{}-{}{}.json", self.stem, param.file_tag(), value)
    }
}

/// Told about each step as it starts and when its result is saved (to show progress and
/// print each step's report as it finishes).
pub trait StepObserver {
    fn started(&mut self, value: SweepValue, cfg: &RunConfig, opts: &RunOptions);
    fn finished(&mut self, value: SweepValue, result: &BenchResult);
}

/// Runs every step in order, saving each as it finishes. Stops early (the document marked
/// incomplete) when `stop` is cancelled, a step fails, or a step was stopped early.
pub async fn run_sweep(
    base: &RunConfig,
    param: LoadParameter,
    values: &[SweepValue],
    secrets: &Secrets,
    opts: &SweepOptions,
    stop: CancellationToken,
    observer: &mut dyn StepObserver,
) -> Result<SweepDoc, RunError> {
    let doc_path = opts.dir.join(format!("{}.sweep.json", opts.stem));
    let step_results: Vec<PathBuf> = values
        .iter()
        .map(|&v| opts.dir.join(opts.step_file(param, v)))
        .collect();
    // Each step saves its own file: a value given twice would stop the sweep at its second
    // step, after measuring the first.
    if let Some((i, v)) = (values.iter().enumerate()).find(|(i, v)| values[..*i].contains(v)) {
        return Err(RunError::Config(ConfigError::Invalid {
            option: format!("--{}", param.as_str().replace('_', "-")),
            why: format!(
                "{v} is given twice (steps {} and {}): each step is its own run and file",
                values.iter().position(|x| x == v).map_or(0, |p| p + 1),
                i + 1
            ),
        }));
    }
    let step_records: Vec<PathBuf> = step_results
        .iter()
        .map(|p| p.with_extension("records.jsonl"))
        .collect();
    refuse_existing(
        opts.overwrite,
        std::iter::once(&doc_path)
            .chain(&step_results)
            .chain(&step_records),
    )?;
    let tokenizer = PromptTokenizer::resolve(base.workload.tokenizer.as_deref())?;
    std::fs::create_dir_all(&opts.dir).map_err(|source| {
        RunError::from(ResultsError::Write {
            path: opts.dir.clone(),
            source,
        })
    })?;
    let mut doc = SweepDoc {
        schema_version: SCHEMA_VERSION,
        kind: "sweep".into(),
        servebench_version: env!("CARGO_PKG_VERSION").into(),
        started_at: crate::measure::clock::Clock::start().started_at_rfc3339(),
        parameter: param,
        values: values.to_vec(),
        steps: Vec::new(),
        complete: false,
    };
    doc.save(&doc_path)?;
    for (i, &value) in values.iter().enumerate() {
        if stop.is_cancelled() {
            break;
        }
        if i > 0 && !opts.cooldown.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(opts.cooldown) => {}
                () = stop.cancelled() => break,
            }
        }
        let file = opts.step_file(param, value);
        let run_opts = RunOptions {
            scrape: opts.scrape.clone(),
            overwrite: opts.overwrite,
            abort: opts.abort.clone(),
            ..RunOptions::new(opts.dir.join(&file), opts.preflight && i == 0)
        };
        let cfg = step_config(base, param, value);
        observer.started(value, &cfg, &run_opts);
        let result = match execute_with(cfg, &tokenizer, secrets, &run_opts, stop.clone()).await {
            // Stopped before this step's load began: the steps before it are the sweep.
            Err(RunError::Stopped) if i > 0 => break,
            r => r?,
        };
        observer.finished(value, &result);
        doc.steps.push(SweepStep {
            value,
            result: file.into(),
            complete: result.complete,
        });
        doc.complete = doc.steps.len() == values.len() && doc.steps.iter().all(|s| s.complete);
        doc.save(&doc_path)?;
        // A server failing past --max-errors / --max-error-rate will not do better under
        // more load.
        if result.stopped_early.is_some() {
            break;
        }
    }
    Ok(doc)
}
