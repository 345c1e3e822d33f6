//! Sweeps: the same benchmark at several load levels, one full run per step.
//!
//! A sweep varies exactly one load parameter (`num_prompts`, `max_concurrency` or
//! `request_rate`). Each step is an ordinary run whose result is saved the moment it
//! finishes (`<stem>-<parameter><value>.json` plus its records), and the sweep document
//! (`<stem>.sweep.json`) is rewritten after every step, so a failure or Ctrl-C at step k keeps
//! steps 1..k−1 on disk. This module runs steps and writes the sweep document; it prints
//! nothing (the caller gets each step's result through a callback).
//!
//! Value lists: `1,2,4` lists values; `A,B,...,C` is the geometric progression with ratio B/A
//! up to C (`1,2,...,4096` is the seeds' doubling sweep).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::client::Secrets;
use crate::config::{RequestRate, RunConfig};
use crate::error::RunError;
use crate::results::{BenchResult, SCHEMA_VERSION};
use crate::run::{execute, RunOptions};

/// The load parameter a sweep varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepParameter {
    NumPrompts,
    MaxConcurrency,
    RequestRate,
}

impl SweepParameter {
    pub fn as_str(self) -> &'static str {
        match self {
            SweepParameter::NumPrompts => "num_prompts",
            SweepParameter::MaxConcurrency => "max_concurrency",
            SweepParameter::RequestRate => "request_rate",
        }
    }
    /// Short form used in step file names.
    fn file_tag(self) -> &'static str {
        match self {
            SweepParameter::NumPrompts => "n",
            SweepParameter::MaxConcurrency => "c",
            SweepParameter::RequestRate => "r",
        }
    }
}

/// One value of the swept parameter. Serialized as a number (or `"inf"` for a rate).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SweepValue {
    Count(u64),
    Rate(RequestRate),
}

impl std::fmt::Display for SweepValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SweepValue::Count(n) => write!(f, "{n}"),
            SweepValue::Rate(r) => write!(f, "{r}"),
        }
    }
}

/// Parses `1,2,4` or `A,B,...,C` into counts (all ≥ 1).
pub fn parse_counts(s: &str) -> Result<Vec<u64>, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let num = |p: &str| -> Result<u64, String> {
        p.parse::<u64>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| format!("'{p}' is not a whole number of at least 1"))
    };
    if let Some(pos) = parts.iter().position(|p| *p == "...") {
        if pos != 2 || parts.len() != 4 {
            return Err(format!(
                "'{s}': a range is written A,B,...,C (e.g. 1,2,...,4096)"
            ));
        }
        let (a, b, c) = (num(parts[0])?, num(parts[1])?, num(parts[3])?);
        if b <= a || b % a != 0 {
            return Err(format!(
                "'{s}': B must be a multiple of A greater than A (the ratio of the progression)"
            ));
        }
        let ratio = b / a;
        let mut v = Vec::new();
        let mut x = a;
        while x <= c {
            v.push(x);
            x = match x.checked_mul(ratio) {
                Some(y) => y,
                None => break,
            };
        }
        return Ok(v);
    }
    parts.into_iter().map(num).collect()
}

/// Parses a comma-separated list of request rates (`1,2.5,inf`).
pub fn parse_rates(s: &str) -> Result<Vec<RequestRate>, String> {
    s.split(',').map(|p| p.trim().parse()).collect()
}

/// The config of one step.
pub fn step_config(base: &RunConfig, param: SweepParameter, value: SweepValue) -> RunConfig {
    let mut cfg = base.clone();
    match (param, value) {
        (SweepParameter::NumPrompts, SweepValue::Count(n)) => cfg.load.num_prompts = n,
        (SweepParameter::MaxConcurrency, SweepValue::Count(n)) => {
            cfg.load.max_concurrency = Some(n)
        }
        (SweepParameter::RequestRate, SweepValue::Rate(r)) => cfg.load.request_rate = r,
        _ => {}
    }
    cfg
}

/// One finished step in the sweep document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepStep {
    pub value: SweepValue,
    /// The step's result file, relative to the sweep document's directory.
    pub result: PathBuf,
    pub complete: bool,
}

/// The sweep document: links the step results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepDoc {
    pub schema_version: u32,
    /// Always `"sweep"`.
    pub kind: String,
    pub servebench_version: String,
    pub started_at: String,
    pub parameter: SweepParameter,
    pub values: Vec<SweepValue>,
    pub steps: Vec<SweepStep>,
    /// True when every value ran to completion.
    pub complete: bool,
}

impl SweepDoc {
    fn save(&self, path: &Path) -> Result<(), RunError> {
        crate::results::save_json(path, self)
    }

    /// Reads a sweep document and the step results it links.
    pub fn load(path: &Path) -> Result<(SweepDoc, Vec<BenchResult>), RunError> {
        let text = std::fs::read_to_string(path).map_err(|source| RunError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let doc: SweepDoc = serde_json::from_str(&text).map_err(|e| RunError::BadResult {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let steps = doc
            .steps
            .iter()
            .map(|s| BenchResult::load(&dir.join(&s.result)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((doc, steps))
    }
}

/// Where a sweep writes and how it paces itself.
#[derive(Clone, Debug)]
pub struct SweepOptions {
    pub dir: PathBuf,
    pub stem: String,
    pub preflight: bool,
    pub scrape: Option<crate::scrape::ScrapeSpec>,
    pub cooldown: Duration,
}

/// Told about each step as it starts and when its result is saved (to show progress and
/// print each step's report as it finishes).
pub trait StepObserver {
    fn started(&mut self, value: SweepValue, cfg: &RunConfig, opts: &RunOptions);
    fn finished(&mut self, value: SweepValue, result: &BenchResult);
}

/// Runs every step in order, saving each as it finishes. Stops early (the document marked
/// incomplete) when `stop` is cancelled or a step fails.
pub async fn run_sweep(
    base: &RunConfig,
    param: SweepParameter,
    values: &[SweepValue],
    secrets: &Secrets,
    opts: &SweepOptions,
    stop: CancellationToken,
    observer: &mut dyn StepObserver,
) -> Result<SweepDoc, RunError> {
    let doc_path = opts.dir.join(format!("{}.sweep.json", opts.stem));
    std::fs::create_dir_all(&opts.dir).map_err(|source| RunError::Write {
        path: opts.dir.clone(),
        source,
    })?;
    let mut doc = SweepDoc {
        schema_version: SCHEMA_VERSION,
        kind: "sweep".into(),
        servebench_version: env!("CARGO_PKG_VERSION").into(),
        started_at: crate::clock::Clock::start().started_at_rfc3339(),
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
        let file = format!("{}-{}{}.json", opts.stem, param.file_tag(), value);
        let run_opts = RunOptions {
            scrape: opts.scrape.clone(),
            ..RunOptions::new(opts.dir.join(&file), opts.preflight && i == 0)
        };
        let cfg = step_config(base, param, value);
        observer.started(value, &cfg, &run_opts);
        let result = execute(cfg, secrets, &run_opts, stop.clone()).await?;
        observer.finished(value, &result);
        doc.steps.push(SweepStep {
            value,
            result: file.into(),
            complete: result.complete,
        });
        doc.complete = doc.steps.len() == values.len() && doc.steps.iter().all(|s| s.complete);
        doc.save(&doc_path)?;
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubling_ranges_and_lists_parse() {
        assert_eq!(parse_counts("1,2,...,16").unwrap(), vec![1, 2, 4, 8, 16]);
        assert_eq!(parse_counts("1,2,...,4096").unwrap().len(), 13);
        assert_eq!(
            parse_counts("10,100,...,5000").unwrap(),
            vec![10, 100, 1000]
        );
        assert_eq!(parse_counts("3, 5,8").unwrap(), vec![3, 5, 8]);
        assert_eq!(parse_counts("64").unwrap(), vec![64]);
        assert!(parse_counts("0").is_err());
        assert!(parse_counts("1,2,...").is_err());
        assert!(parse_counts("2,3,...,10").unwrap_err().contains("multiple"));
        assert!(parse_counts("a").unwrap_err().contains("'a'"));
    }

    #[test]
    fn rate_lists_parse() {
        assert_eq!(
            parse_rates("1,inf").unwrap(),
            vec![RequestRate::PerSecond(1.0), RequestRate::Infinite]
        );
        assert!(parse_rates("1,-2").is_err());
    }

    #[test]
    fn sweep_values_serialize_as_numbers() {
        let v = vec![
            SweepValue::Count(4),
            SweepValue::Rate(RequestRate::PerSecond(2.5)),
            SweepValue::Rate(RequestRate::Infinite),
        ];
        assert_eq!(serde_json::to_string(&v).unwrap(), r#"[4,"2.5","inf"]"#);
    }
}
