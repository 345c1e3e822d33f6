//! `servebench history`: many saved results of one configuration over time (nightly runs),
//! each headline figure with its 95% interval, and a regression flag when the newest run is
//! worse than the runs before it (docs/metrics.md, "History and regressions").
//!
//! The results are found in the given directories (three levels deep, at most
//! [`MAX_FILES`] files looked at), read as `compare` reads them (`views::open::step_of`:
//! the same figures and intervals), grouped by configuration (`--key`: the run's label by
//! default), and ordered by the time each run started. The newest run of a group is judged
//! against each of the K before it with `results::compare::judge`, the statistics of
//! `compare --fail-if-worse`: a regression is a figure on which it is significantly worse than
//! every one of them. Computes no new statistic; `render::history` prints it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::figure::FigureKey;
use crate::results::compare::{judge, Judged, Verdict};
use crate::results::document::BenchResult;
use crate::views::error::HistoryError;
use crate::views::open::step_of;

/// The most files looked at under the directories given (a bound on a mistaken `/`).
pub const MAX_FILES: usize = 100_000;
/// How deep directories are read (a nightly job's `DIR/DATE/run.json` is depth 2).
const MAX_DEPTH: usize = 3;

/// The figures shown when `--metrics` is not given, those of them some run has.
pub const HEADLINE: [&str; 8] = [
    "output_throughput",
    "request_throughput",
    "request_goodput",
    "mean_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "p99_itl_ms",
    "mean_e2el_ms",
];

/// Documents saved beside results that are not results: not read.
const NOT_RESULTS: [&str; 5] = [
    ".sweep.json",
    ".repeat.json",
    ".search.json",
    ".imported.json",
    ".llm-d.json",
];

/// One figure of one run: its value and 95% interval where the result has one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Point {
    pub value: f64,
    pub ci95: Option<[f64; 2]>,
}

/// One saved run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Run {
    pub file: PathBuf,
    /// As the result saved it (RFC 3339).
    pub started_at: String,
    /// Seconds since the Unix epoch, for ordering and charts.
    #[serde(skip)]
    pub unix_s: f64,
    /// One per figure of its group, in the group's order.
    pub figures: Vec<Option<Point>>,
}

/// What the newest run's figure is against the runs before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trend {
    /// Significantly worse than each of the runs before it.
    Regression,
    /// Not significantly worse than at least one of them.
    NoRegression,
    /// A run has no interval for the figure: it cannot be judged.
    NoInterval,
    /// The figure has no better direction, or fewer than two runs have it.
    NotJudged,
}

impl Trend {
    pub fn as_str(self) -> &'static str {
        match self {
            Trend::Regression => "REGRESSION",
            Trend::NoRegression => "no regression",
            Trend::NoInterval => "no interval",
            Trend::NotJudged => "not judged",
        }
    }
}

/// The newest run against the runs before it on one figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Judgement {
    pub figure: FigureKey,
    pub trend: Trend,
    /// Newest/earlier with its interval, against each earlier run (newest first).
    pub against: Vec<Judged>,
    /// How much worse than the least of them, as a fraction (a regression's size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worse_by: Option<f64>,
}

/// The runs of one configuration, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// The configuration, as `label=nightly` (`key=value` pairs).
    pub name: String,
    pub figures: Vec<FigureKey>,
    pub runs: Vec<Run>,
    /// One per figure, in order.
    pub judgements: Vec<Judgement>,
    /// Workload differences between runs of the group, worth a reader's attention.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Every group, and what was left out.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct History {
    /// K: the newest run is judged against the K runs before it.
    pub window: usize,
    pub groups: Vec<Group>,
    /// Files left out (not readable as a result, incomplete, no start time).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// What `history` is asked.
#[derive(Clone, Debug, Default)]
pub struct Ask<'a> {
    /// `--key`: names to group by, `KEY=VALUE` to keep; empty: by label, one group only.
    pub keys: &'a [String],
    pub window: usize,
    /// `--metrics`; `None`: [`HEADLINE`].
    pub metrics: Option<&'a [FigureKey]>,
    /// Figures shown besides (the `--fail-if-worse` gates' own).
    pub also: &'a [FigureKey],
}

/// Reads the results under `paths` and builds their history.
pub fn history(paths: &[PathBuf], ask: &Ask) -> Result<History, HistoryError> {
    let mut notes = Vec::new();
    let files = result_files(paths, &mut notes)?;
    let mut loaded = Vec::new();
    for file in files {
        match load(&file) {
            Ok(Some(l)) => loaded.push(l),
            Ok(None) => {}
            Err(why) => notes.push(format!("{} left out: {why}", file.display())),
        }
    }
    if loaded.is_empty() {
        let dirs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(HistoryError::NoResults {
            dirs: dirs.join(", "),
        });
    }
    let groups = group(loaded, ask)?;
    Ok(History {
        window: ask.window,
        groups,
        notes,
    })
}

/// The `.json` files under `paths` (a file given is taken as it is), sorted.
fn result_files(paths: &[PathBuf], notes: &mut Vec<String>) -> Result<Vec<PathBuf>, HistoryError> {
    let mut out = Vec::new();
    let mut seen = 0usize;
    let mut stack: Vec<(PathBuf, usize)> = paths.iter().map(|p| (p.clone(), 0)).collect();
    while let Some((path, depth)) = stack.pop() {
        seen += 1;
        if seen > MAX_FILES {
            notes.push(format!("only the first {MAX_FILES} files were looked at"));
            break;
        }
        if path.is_dir() {
            if depth >= MAX_DEPTH {
                continue;
            }
            let entries =
                std::fs::read_dir(&path).map_err(|error| crate::views::error::ViewError::Read {
                    path: path.clone(),
                    error,
                })?;
            for e in entries.flatten() {
                stack.push((e.path(), depth + 1));
            }
        } else if depth == 0 && !path.exists() {
            return Err(crate::views::error::ViewError::Read {
                path,
                error: std::io::ErrorKind::NotFound.into(),
            }
            .into());
        } else {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            let name = name.unwrap_or_default();
            if name.ends_with(".json") && !NOT_RESULTS.iter().any(|s| name.ends_with(s)) {
                out.push(path);
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// One result: its facts (for `--key`), start time and figures.
struct Loaded {
    facts: BTreeMap<String, String>,
    run: Run,
    step: crate::views::model::Step,
}

/// A result file read; `None` for a JSON file that is not a servebench result.
fn load(file: &Path) -> Result<Option<Loaded>, String> {
    let bytes = crate::results::read::read_bounded(file).map_err(|e| e.to_string())?;
    let value: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => return Ok(None),
    };
    if value.get("kind").is_some() || value.get("config").is_none() {
        return Ok(None);
    }
    let r = BenchResult::from_value(file, value).map_err(|e| e.to_string())?;
    if !r.complete {
        return Err("the run was stopped before it was done".into());
    }
    let fmt = &time::format_description::well_known::Rfc3339;
    let at = time::OffsetDateTime::parse(&r.started_at, fmt)
        .map_err(|_| format!("its started_at '{}' is not a time", r.started_at))?;
    let c = &r.config;
    let server = if c.simulated {
        "sim"
    } else {
        c.backend.as_str()
    };
    let mut facts: BTreeMap<String, String> = c.tags.metadata.clone();
    facts.insert("model".into(), c.model.clone());
    facts.insert("backend".into(), server.to_string());
    facts.insert("dataset".into(), c.workload.dataset.to_string());
    let label = (c.tags.label.clone()).unwrap_or_else(|| format!("{server} {}", c.model));
    facts.insert("label".into(), label);
    // Its figures and intervals, as `compare` reads them (not its per-request samples).
    let step = step_of(file, &r, false);
    let run = Run {
        file: file.to_path_buf(),
        started_at: r.started_at.clone(),
        unix_s: (at.unix_timestamp_nanos() as f64) / 1e9,
        figures: Vec::new(),
    };
    Ok(Some(Loaded { facts, run, step }))
}

/// The runs grouped by `ask.keys`, each group ordered by start time and judged.
fn group(loaded: Vec<Loaded>, ask: &Ask) -> Result<Vec<Group>, HistoryError> {
    let mut by: Vec<&str> = Vec::new();
    let mut keep: Vec<(&str, &str)> = Vec::new();
    for k in ask.keys {
        match k.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => keep.push((k.trim(), v.trim())),
            None if !k.trim().is_empty() => by.push(k.trim()),
            _ => return Err(HistoryError::BadKey(k.clone())),
        }
    }
    let explicit = !ask.keys.is_empty();
    if !explicit {
        by.push("label");
    }
    let mut groups: BTreeMap<String, Vec<Loaded>> = BTreeMap::new();
    for l in loaded {
        if !keep
            .iter()
            .all(|(k, v)| l.facts.get(*k).map(String::as_str) == Some(*v))
        {
            continue;
        }
        let name: Vec<String> = (by.iter().chain(keep.iter().map(|(k, _)| k)))
            .map(|k| format!("{k}={}", l.facts.get(*k).map_or("—", String::as_str)))
            .collect();
        groups.entry(name.join(" ")).or_default().push(l);
    }
    if groups.is_empty() {
        return Err(HistoryError::NoMatch {
            key: ask.keys.join(" "),
        });
    }
    if !explicit && groups.len() > 1 {
        let names: Vec<&str> = groups.keys().map(String::as_str).take(5).collect();
        return Err(HistoryError::Mixed {
            count: groups.len(),
            names: names.join("; "),
        });
    }
    Ok((groups.into_iter())
        .map(|(name, runs)| judged_group(name, runs, ask))
        .collect())
}

/// One group's runs ordered, their figures picked, and the newest judged.
fn judged_group(name: String, mut loaded: Vec<Loaded>, ask: &Ask) -> Group {
    loaded.sort_by(|a, b| {
        (a.run.unix_s.total_cmp(&b.run.unix_s)).then_with(|| a.run.file.cmp(&b.run.file))
    });
    let mut figures: Vec<FigureKey> = match ask.metrics {
        Some(m) => m.to_vec(),
        None => (HEADLINE.iter())
            .map(|n| FigureKey::named(n))
            .filter(|k| loaded.iter().any(|l| l.step.metrics.contains_key(k)))
            .collect(),
    };
    for k in ask.also {
        if !figures.contains(k) {
            figures.push(k.clone());
        }
    }
    let mut notes = Vec::new();
    if let Some(first) = loaded.first() {
        for l in &loaded[1..] {
            for d in first.step.workload.differences(&l.step.workload) {
                notes.push(format!("{}: {d}", l.run.file.display()));
            }
        }
    }
    let runs: Vec<Run> = (loaded.into_iter())
        .map(|l| {
            let figures = (figures.iter())
                .map(|k| {
                    let value = *l.step.metrics.get(k)?;
                    let ci95 = l.step.intervals.get(k).copied();
                    Some(Point { value, ci95 })
                })
                .collect();
            Run { figures, ..l.run }
        })
        .collect();
    let judgements = (figures.iter().enumerate())
        .map(|(i, k)| newest_against_earlier(k, &runs, i, ask.window))
        .collect();
    Group {
        name,
        figures,
        runs,
        judgements,
        notes,
    }
}

/// The newest run with figure `i` against each of the `window` runs before it that have it.
pub fn newest_against_earlier(key: &FigureKey, runs: &[Run], i: usize, window: usize) -> Judgement {
    let with: Vec<Point> = runs.iter().filter_map(|r| r.figures[i]).collect();
    let not_judged = Judgement {
        figure: key.clone(),
        trend: Trend::NotJudged,
        against: Vec::new(),
        worse_by: None,
    };
    let (Some(better), Some((newest, earlier))) = (key.better(), with.split_last()) else {
        return not_judged;
    };
    let earlier: Vec<&Point> = earlier.iter().rev().take(window).collect();
    if earlier.is_empty() {
        return not_judged;
    }
    let against: Vec<Judged> = (earlier.iter())
        .filter_map(|e| judge(Some(better), e.value, newest.value, e.ci95, newest.ci95))
        .collect();
    if against.len() < earlier.len() {
        // A value of zero (or not finite) has no ratio: nothing to judge it by.
        return Judgement {
            against,
            ..not_judged
        };
    }
    let trend = if against.iter().any(|j| j.verdict == Verdict::NoInterval) {
        Trend::NoInterval
    } else if against.iter().all(|j| j.verdict == Verdict::Worse) {
        Trend::Regression
    } else {
        Trend::NoRegression
    };
    let worse_by = (trend == Trend::Regression).then(|| {
        (against.iter())
            .map(|j| j.worse_by(better))
            .fold(f64::INFINITY, f64::min)
    });
    Judgement {
        figure: key.clone(),
        trend,
        against,
        worse_by,
    }
}

/// One failed `--fail-if-worse` gate: a group's newest run regressed on the figure by more
/// than the gate's percent.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryGateFailure {
    pub group: String,
    pub figure: FigureKey,
    pub worse_by: f64,
    pub percent: f64,
    pub window: usize,
}

impl std::fmt::Display for HistoryGateFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: the newest run is worse on {} than each of the {} before it, by {:.1}% at least (more than {}%)",
            self.group,
            self.figure,
            self.window,
            self.worse_by * 100.0,
            self.percent
        )
    }
}

/// The gates (figure, percent) that fail; an error when a gate cannot be judged (no better
/// direction, a run without an interval, or no group with two runs that have the figure).
pub fn failed_gates(
    h: &History,
    gates: &[(FigureKey, f64)],
) -> Result<Vec<HistoryGateFailure>, HistoryError> {
    let mut failed = Vec::new();
    for (metric, percent) in gates {
        if metric.better().is_none() {
            return Err(HistoryError::NoDirection {
                metric: metric.clone(),
            });
        }
        let mut seen = false;
        for g in &h.groups {
            let Some(i) = g.figures.iter().position(|f| f == metric) else {
                continue;
            };
            let j = &g.judgements[i];
            match j.trend {
                Trend::NotJudged => continue,
                Trend::NoInterval => {
                    return Err(HistoryError::NoInterval {
                        metric: metric.clone(),
                        group: g.name.clone(),
                    })
                }
                Trend::NoRegression => seen = true,
                Trend::Regression => {
                    seen = true;
                    let worse_by = j.worse_by.unwrap_or(0.0);
                    if worse_by * 100.0 > *percent {
                        failed.push(HistoryGateFailure {
                            group: g.name.clone(),
                            figure: metric.clone(),
                            worse_by,
                            percent: *percent,
                            window: j.against.len(),
                        });
                    }
                }
            }
        }
        if !seen {
            return Err(HistoryError::NotJudged {
                metric: metric.clone(),
            });
        }
    }
    Ok(failed)
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
