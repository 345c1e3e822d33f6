//! `--stages RATE:SECONDS,...` (issue 16): one run against a warm server whose report has one
//! step per stage. After the run, its records are split by the stage their scheduled send
//! fell in, and each stage is saved as an ordinary result (`<stem>-stage<k>.json` and its
//! records) under a sweep document over `request_rate` (`<stem>.sweep.json`), so `report`,
//! `compare`, `plot` and the HTML report read a staged run as they read a sweep. The whole
//! run's result stays beside them.
//!
//! A request belongs to the stage its scheduled send time falls in, counted from the run's
//! first scheduled send (request 0's: offset 0; a shard's first request may come a gap
//! later, which shifts its boundaries by less than one inter-arrival gap).

use std::path::{Path, PathBuf};

use crate::config::sweep::{LoadParameter, SweepValue};
use crate::config::{RequestRate, RunConfig};
use crate::measure::record::{read_jsonl, RecordsWriter, RequestRecord};
use crate::results::document::{refuse_existing, BenchResult, SCHEMA_VERSION};
use crate::results::error::ResultsError;
use crate::results::stats::{summarize, SummaryOptions};
use crate::results::sweep::{SweepDoc, SweepStep};

/// The file of stage `k` (from 1).
fn stage_file(stem: &str, k: usize) -> String {
    format!("{stem}-stage{k}.json")
}

/// The files a staged run of `stages` stages would write besides its own result.
pub fn stage_targets(dir: &Path, stem: &str, stages: usize) -> Vec<PathBuf> {
    let mut out = vec![dir.join(format!("{stem}.sweep.json"))];
    for k in 1..=stages {
        let result = dir.join(stage_file(stem, k));
        out.push(result.with_extension("records.jsonl"));
        out.push(result);
    }
    out
}

/// Splits a finished staged run (`result`, saved at `dir/<stem>.json`) into its stages, saves
/// each and the sweep document, and returns the stage results in order.
pub fn split(
    result: &BenchResult,
    dir: &Path,
    stem: &str,
    overwrite: bool,
) -> Result<(SweepDoc, Vec<BenchResult>), ResultsError> {
    let stages = &result.config.load.shape.stages;
    let doc_path = dir.join(format!("{stem}.sweep.json"));
    refuse_existing(overwrite, stage_targets(dir, stem, stages.len()).iter())?;
    let records_path = result.records_file.clone().unwrap_or_default();
    let read_err = |source| ResultsError::Read {
        path: records_path.clone(),
        source,
    };
    let mut measured: Vec<RequestRecord> = Vec::new();
    // The file was written by this run: no line is skipped.
    for r in read_jsonl(&records_path).map_err(read_err)? {
        if !r.warmup {
            measured.push(r);
        }
    }
    let k = result.config.time_scale.max(f64::MIN_POSITIVE);
    let t0 = measured.iter().map(|r| r.scheduled_ns).min().unwrap_or(0);
    let mut by_stage: Vec<Vec<RequestRecord>> = vec![Vec::new(); stages.len()];
    for r in measured {
        let t_s = (r.scheduled_ns - t0) as f64 * k / 1e9;
        let i = result
            .config
            .load
            .shape
            .stage_at(t_s)
            .map_or(stages.len() - 1, |(i, _)| i);
        by_stage[i].push(r);
    }
    let mut doc = SweepDoc {
        schema_version: SCHEMA_VERSION,
        kind: "sweep".into(),
        servebench_version: env!("CARGO_PKG_VERSION").into(),
        started_at: result.started_at.clone(),
        parameter: LoadParameter::RequestRate,
        values: stages
            .iter()
            .map(|s| SweepValue::Rate(RequestRate::PerSecond(s.rate)))
            .collect(),
        steps: Vec::new(),
        complete: result.complete,
    };
    let mut out = Vec::new();
    for (i, (stage, records)) in stages.iter().zip(by_stage).enumerate() {
        let file = stage_file(stem, i + 1);
        let path = dir.join(&file);
        let records_file = path.with_extension("records.jsonl");
        let write_err = |source| ResultsError::Write {
            path: records_file.clone(),
            source,
        };
        let mut w = RecordsWriter::create(&records_file).map_err(write_err)?;
        for r in &records {
            w.write(r).map_err(write_err)?;
        }
        w.flush().map_err(write_err)?;
        let cfg = stage_config(&result.config, stage.rate, stage.seconds, records.len());
        let summary = summarize(
            &records,
            &SummaryOptions {
                percentiles: cfg.metric_percentiles.clone(),
                goodput: cfg.goodput.clone(),
                time_scale: cfg.time_scale,
            },
        );
        let mut step = BenchResult::new(
            cfg,
            summary,
            &records,
            result.started_at.clone(),
            stem.to_string(),
            0,
            Some(records_file),
        );
        step.complete = result.complete;
        // One client watched the whole run: its verdict is each stage's.
        step.validity = result.validity.clone();
        step.save(&path)?;
        doc.steps.push(SweepStep {
            value: doc.values[i],
            result: file.into(),
            complete: step.complete,
        });
        out.push(step);
    }
    doc.save(&doc_path)?;
    Ok((doc, out))
}

/// A stage's config: the run's, as a `--duration` run of the stage's length at its rate.
fn stage_config(run: &RunConfig, rate: f64, seconds: f64, sent: usize) -> RunConfig {
    let mut cfg = run.clone();
    cfg.load.request_rate = RequestRate::PerSecond(rate);
    cfg.load.num_prompts = sent as u64;
    cfg.load.shape.stages.clear();
    cfg.load.shape.duration_s = Some(seconds);
    cfg
}
