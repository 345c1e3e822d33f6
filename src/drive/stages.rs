//! `--stages RATE:SECONDS,...`: one run against a warm server whose report has one
//! step per stage. After the run, its records are split by the stage their scheduled send
//! fell in, and each stage is saved as an ordinary result (`<stem>-stage<k>.json` and its
//! records) under a sweep document over `request_rate` (`<stem>.sweep.json`), so `report`,
//! `compare`, `plot` and the HTML report read a staged run as they read a sweep. The whole
//! run's result stays beside them.
//!
//! A request belongs to the stage its scheduled send time falls in, counted from the run's
//! first scheduled send (request 0's: offset 0; a shard's first request may come a gap
//! later, which shifts its boundaries by less than one inter-arrival gap).

use crate::config::sweep::{LoadParameter, SweepValue};
use crate::config::{RequestRate, RunConfig};
use crate::drive::plan::Output;
use crate::measure::record::{read_jsonl, RecordsWriter, RequestRecord};
use crate::results::document::{BenchResult, SCHEMA_VERSION};
use crate::results::error::ResultsError;
use crate::results::stats::{summarize, SummaryOptions};
use crate::results::sweep::{SweepDoc, SweepStep};

/// Splits a finished staged run (`result`, saved at `out`'s `<stem>.json`) into its stages,
/// saves each (`out.stage(k)`) and the sweep document (`out.sweep_doc()`; the session's plan
/// has checked them all), and returns the stage results in order.
pub fn split(
    result: &BenchResult,
    out: &Output,
) -> Result<(SweepDoc, Vec<BenchResult>), ResultsError> {
    let stages = &result.config.load.shape.stages;
    let doc_path = out.sweep_doc();
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
        saturation: None,
        skipped: Vec::new(),
    };
    let mut split = Vec::new();
    for (i, (stage, records)) in stages.iter().zip(by_stage).enumerate() {
        let file = out.stage(i + 1);
        let path = out.dir.join(&file);
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
                valid_output: cfg.goodput_valid_output,
            },
        );
        let mut step = BenchResult::new(
            cfg,
            summary,
            &records,
            result.started_at.clone(),
            out.stem.clone(),
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
        split.push(step);
    }
    doc.save(&doc_path)?;
    Ok((doc, split))
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
