//! `servebench merge`: one result from the results of a sharded run's shards (`shard`).
//!
//! The shards' records (their `.records.jsonl` files) are put on one time axis — a record time
//! `t` of a shard whose records' zero was at wall-clock time `A` (its [`Timebase`]) becomes
//! `t + (A − A_min)` — and the one statistics function, [`summarize`], runs over their union.
//! So every figure has the definition it has for one process (docs/metrics.md, "Merged
//! shards"), with exact percentiles from every record. Latencies are differences within one
//! record and do not depend on the shift; only the run's duration, and the throughputs over
//! it, depend on how well the shards' clocks agree.
//!
//! Merging refuses shards of different runs (configs that differ in anything but the shard,
//! seeds included), a shard given twice, missing shards unless `allow_missing` (then the
//! result names them), and a shard whose records or counts are not its own
//! (`shard::check_records`: a record of another shard's schedule positions, past the planned
//! count, or measured twice; a planned count its config does not make): the merged planned
//! count is the one the configs make. Incomplete shards and shards whose measurement was not
//! valid are merged and reported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::shard::{Shard, MAX_SHARDS};
use crate::config::RequestRate;
use crate::measure::record::{RecordsWriter, RequestRecord};
use crate::results::document::BenchResult;
use crate::results::error::ResultsError;
use crate::results::shard::{check_records, MergedFrom, MergedShard, ShardCounts, Timebase};
use crate::results::stats::{summarize, SummaryOptions};
use crate::results::validity::{Validity, Verdict};

/// A merged result and what the user should know about its shards.
#[derive(Debug)]
pub struct Merged {
    pub result: BenchResult,
    pub records: Vec<RequestRecord>,
    /// One line each: missing, incomplete or invalid shards, clocks that disagree.
    pub warnings: Vec<String>,
    /// One line each: the shards that were stopped before they were done
    /// (`BenchResult::interrupted`): the merge is of a stopped run.
    pub stopped: Vec<String>,
}

/// One shard's saved result and records.
struct Input {
    path: PathBuf,
    shard: Shard,
    timebase: Timebase,
    result: BenchResult,
    records: Vec<RequestRecord>,
}

/// What the summary (and the time slices) of the merged run need from its config.
fn summary_options_of(config: &crate::config::RunConfig) -> SummaryOptions {
    SummaryOptions {
        percentiles: config.metric_percentiles.clone(),
        goodput: config.goodput.clone(),
        time_scale: config.time_scale,
        valid_output: config.goodput_valid_output,
    }
}

fn refuse(why: String) -> ResultsError {
    ResultsError::Merge(why)
}

impl Merged {
    /// Writes the merged records (`.records.jsonl` next to `path`, in completion order on the
    /// shared time axis) and the merged result at `path`.
    pub fn save(&mut self, path: &Path) -> Result<(), ResultsError> {
        let records_path = path.with_extension("records.jsonl");
        let write_err = |source| ResultsError::Write {
            path: records_path.clone(),
            source,
        };
        let mut writer = RecordsWriter::create(&records_path).map_err(write_err)?;
        for r in &self.records {
            writer.write(r).map_err(write_err)?;
        }
        writer.flush().map_err(write_err)?;
        self.result.records_file = Some(records_path);
        self.result.save(path)
    }
}

/// Merges the shard results at `paths`; the records file of each is found next to it (or
/// where the result says). Writes nothing.
pub fn merge(paths: &[PathBuf], allow_missing: bool) -> Result<Merged, ResultsError> {
    let inputs = paths
        .iter()
        .map(|p| load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(first) = inputs.first() else {
        return Err(refuse("merge needs at least one shard result".into()));
    };
    let Gathered {
        shards,
        missing,
        mut warnings,
    } = gather(first, &inputs, allow_missing)?;
    let planned = checked_planned(&shards)?;
    warnings.extend(shard_warnings(&shards));

    let earliest = shards
        .iter()
        .min_by_key(|s| s.timebase.anchor_unix_ns)
        .expect("at least one shard");
    let origin = earliest.timebase.anchor_unix_ns;
    let mut records: Vec<RequestRecord> = shards
        .iter()
        .flat_map(|s| {
            let by = s.timebase.anchor_unix_ns - origin;
            s.records.iter().map(move |r| shifted(r, by))
        })
        .collect();
    records.sort_by_key(|r| r.end_ns);

    let mut config = earliest.result.config.clone();
    config.load.shard = None;
    // The addresses each shard sent from were its machine's, not the run's.
    config.load.source_addresses.clear();
    let summary = summarize(&records, &summary_options_of(&config));
    let date = earliest
        .result
        .vllm
        .get("date")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut result = BenchResult::new(
        config,
        summary,
        &records,
        earliest.result.started_at.clone(),
        date,
        shards.iter().map(|s| s.result.unsent).sum(),
        None,
    );
    result.complete = missing.is_empty() && shards.iter().all(|s| s.result.complete);
    // What the shards planned: known when every shard is here and says.
    for s in &shards {
        result.unsent_by.add(&s.result.unsent_by);
    }
    result.planned = (planned.into_iter())
        .try_fold(0u64, |sum, p| sum.checked_add(p?))
        .filter(|_| missing.is_empty());
    result.jobs = merged_jobs(&shards, &records, &result, missing.is_empty());
    // Several endpoints: each one's figures over the union (a shard's failover is its own).
    let (c, d) = (&result.config, result.summary.duration_s);
    result.per_endpoint = crate::results::endpoints::of_records(records.iter().cloned(), c, d, &[]);
    // Time slices of the union on the shared axis, as one process would cut them.
    if let Some(seconds) = result.config.time_slice_s {
        let opts = summary_options_of(&result.config);
        result.slices = Some(crate::results::stats::slices::slice(
            || &records,
            seconds,
            &opts,
        )?);
    }
    let offered = match result.config.load.request_rate {
        RequestRate::PerSecond(r) => Some(r),
        RequestRate::Infinite => None,
    };
    result.validity = combined_validity(&shards, offered);
    result.merged_from = Some(MergedFrom {
        count: first.shard.count,
        shards: shards
            .iter()
            .map(|s| MergedShard {
                index: s.shard.index,
                file: s.path.clone(),
                complete: s.result.complete,
                verdict: s.result.validity.as_ref().map(|v| v.verdict),
                timebase: s.timebase.clone(),
            })
            .collect(),
        missing,
    });
    let stopped = (shards.iter())
        .filter_map(|s| {
            let why = s.result.interrupted()?;
            Some(format!(
                "shard {} ({}) was {why}",
                s.shard,
                s.path.display()
            ))
        })
        .collect();
    Ok(Merged {
        result,
        records,
        warnings,
        stopped,
    })
}

/// An agentic run's job figures over every shard's records (docs/metrics.md, "Jobs"; a
/// job's calls are one arrival, so one shard's), the jobs planned the shards' sum when every
/// shard is here and says; `None` when no shard has jobs.
fn merged_jobs(
    shards: &[&Input],
    records: &[RequestRecord],
    result: &BenchResult,
    whole: bool,
) -> Option<crate::results::jobs::JobFigures> {
    use crate::results::jobs::{JobFigures, JobRun};
    let each: Vec<&JobFigures> = shards
        .iter()
        .filter_map(|s| s.result.jobs.as_ref())
        .collect();
    if each.is_empty() {
        return None;
    }
    let planned = (each.iter().map(|j| j.planned))
        .try_fold(0u64, |sum, p| sum.checked_add(p?))
        .filter(|_| whole && each.len() == shards.len());
    let run = JobRun {
        duration_s: result.summary.duration_s,
        time_scale: result.config.time_scale,
        planned,
        slos: &result.config.job_goodput,
    };
    Some(JobFigures::of(records.iter().cloned(), run))
}

/// The shards of one merge, in index order.
struct Gathered<'a> {
    shards: Vec<&'a Input>,
    /// The indices no result was given for.
    missing: Vec<u64>,
    /// One line when some are missing.
    warnings: Vec<String>,
}

/// The shards in index order: refused when two are of different runs, one is given twice,
/// or one is missing without `allow_missing`.
fn gather<'a>(
    first: &Input,
    inputs: &'a [Input],
    allow_missing: bool,
) -> Result<Gathered<'a>, ResultsError> {
    let count = first.shard.count;
    let mut by_index: BTreeMap<u64, &Input> = BTreeMap::new();
    for input in inputs {
        if let Some(path) = config_difference(first, input) {
            return Err(refuse(format!(
                "{} and {} are not shards of one run: their configs differ at {path}",
                first.path.display(),
                input.path.display()
            )));
        }
        if let Some(twin) = by_index.insert(input.shard.index, input) {
            return Err(refuse(format!(
                "shard {} is given twice: {} and {}",
                input.shard,
                twin.path.display(),
                input.path.display()
            )));
        }
    }
    let missing: Vec<u64> = (0..count).filter(|i| !by_index.contains_key(i)).collect();
    let mut warnings = Vec::new();
    if !missing.is_empty() {
        let list = crate::config::shard::list(&missing, count);
        if !allow_missing {
            return Err(refuse(format!(
                "missing shard results: {list} (a merge without them is not the whole run; give every shard's result, or --allow-missing to merge the others)"
            )));
        }
        warnings.push(format!(
            "missing shards {list}: the merged result has only {} of {count} shards' requests",
            inputs.len()
        ));
    }
    Ok(Gathered {
        shards: by_index.into_values().collect(),
        missing,
        warnings,
    })
}

/// Each shard's planned count, once its records are checked to be its own
/// (`shard::check_records`; `None`: its config does not fix the count).
fn checked_planned(shards: &[&Input]) -> Result<Vec<Option<u64>>, ResultsError> {
    let mut seen = std::collections::HashSet::new();
    let mut planned = Vec::new();
    for s in shards {
        let r = &s.result;
        let counts = ShardCounts {
            measured: r.summary.completed + r.summary.failed,
            unsent: r.unsent,
            planned: r.planned,
        };
        let checked = check_records(&r.config, s.shard, counts, &s.records, &mut seen);
        planned.push(checked.map_err(|why| ResultsError::Invalid {
            path: s.path.clone(),
            why: why.0,
        })?);
    }
    Ok(planned)
}

/// Reads one shard's result and records, and checks they belong together.
fn load(path: &Path) -> Result<Input, ResultsError> {
    let result = BenchResult::load(path)?;
    let bad = |why: &str| ResultsError::Invalid {
        path: path.to_path_buf(),
        why: why.into(),
    };
    let shard = result
        .config
        .load
        .shard
        .ok_or_else(|| bad("not a shard's result (it was not run with --shard)"))?;
    if shard.count > MAX_SHARDS || shard.index >= shard.count {
        return Err(bad(&format!(
            "shard {shard} is not a shard of a run (at most {MAX_SHARDS} shards)"
        )));
    }
    let timebase = result
        .timebase
        .clone()
        .ok_or_else(|| bad("a shard result without a timebase"))?;
    let records_path =
        crate::measure::record::records_next_to(path, result.records_file.as_deref())
            .ok_or_else(|| bad("its records file (.records.jsonl) is not next to it"))?;
    let mut lines =
        crate::measure::record::read_jsonl(&records_path).map_err(|source| ResultsError::Read {
            path: records_path.clone(),
            source,
        })?;
    let records: Vec<RequestRecord> = lines
        .by_ref()
        .map(RequestRecord::with_ordered_times)
        .collect();
    let measured = records.iter().filter(|r| !r.warmup).count() as u64;
    let counted = result.summary.completed + result.summary.failed;
    let skipped = lines.skipped();
    if measured != counted || skipped.count > 0 {
        return Err(ResultsError::Invalid {
            path: records_path,
            why: format!("{measured} measured records, but its result counts {counted}; {skipped}"),
        });
    }
    Ok(Input {
        path: path.to_path_buf(),
        shard,
        timebase,
        result,
        records,
    })
}

/// Where two shards' configs differ, other than in the shard itself and the addresses it sent
/// from (`None`: they agree).
fn config_difference(a: &Input, b: &Input) -> Option<String> {
    let value = |i: &Input| {
        let mut c = i.result.config.clone();
        c.load.shard = None;
        // Each shard's machine has its own local addresses to send from.
        c.load.source_addresses.clear();
        serde_json::to_value(c).unwrap_or_default()
    };
    if a.shard.count != b.shard.count {
        return Some(format!("the shard count ({} vs {})", a.shard, b.shard));
    }
    first_difference(&value(a), &value(b), "config")
}

/// The path of the first value that differs between two JSON documents, with both values.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (u, v) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                first_difference(u, v, &format!("{path}.{k}"))
            })
        }
        _ if a == b => None,
        _ => Some(format!("{path} ({a} vs {b})")),
    }
}

/// `r` with every time moved `by` nanoseconds later.
fn shifted(r: &RequestRecord, by: u64) -> RequestRecord {
    let mut r = r.clone();
    for t in [&mut r.scheduled_ns, &mut r.sent_ns, &mut r.end_ns]
        .into_iter()
        .chain(r.chunk_ns.iter_mut())
        .chain(r.first_reasoning_ns.as_mut())
        .chain(r.first_answer_ns.as_mut())
    {
        *t = t.saturating_add(by);
    }
    r
}

/// Incomplete shards, shards whose measurement was not valid, and clocks that disagree
/// beyond their estimates' uncertainty.
fn shard_warnings(shards: &[&Input]) -> Vec<String> {
    let mut out = Vec::new();
    for s in shards {
        let r = &s.result;
        if !r.complete {
            out.push(format!(
                "shard {} ({}) is incomplete: {} requests unsent, {} cancelled",
                s.shard,
                s.path.display(),
                r.unsent,
                r.summary
                    .failures_by_kind
                    .get("cancelled")
                    .copied()
                    .unwrap_or(0)
            ));
        }
        if let Some(v) = r.validity.as_ref().filter(|v| v.verdict != Verdict::Valid) {
            out.push(format!(
                "shard {} measured as {:?}: {}",
                s.shard,
                v.verdict,
                v.reasons.join("; ")
            ));
        }
    }
    let offsets: Vec<(Shard, f64, f64)> = shards
        .iter()
        .filter_map(|s| {
            let o = s.timebase.clock_offset.as_ref()?;
            Some((s.shard, o.offset_ms, o.uncertainty_ms))
        })
        .collect();
    for (i, a) in offsets.iter().enumerate() {
        for b in &offsets[i + 1..] {
            let gap = (a.1 - b.1).abs();
            if gap > a.2 + b.2 {
                out.push(format!(
                    "the clocks of shards {} and {} differ by about {gap:.0} ms (more than their estimates' uncertainty): the merged duration and throughputs are off by up to that much",
                    a.0, b.0
                ));
            }
        }
    }
    out
}

/// The shards' verdicts in one: client-bound when any shard was, else server-late when any
/// was, else usage-implausible when any was; reasons prefixed with their shard; CPU time and
/// cores summed, utilisation the busiest shard's, achieved rate the sum of the shards' rates.
/// `None` when no shard judged itself.
fn combined_validity(shards: &[&Input], offered_rate: Option<f64>) -> Option<Validity> {
    let judged: Vec<(Shard, &Validity)> = shards
        .iter()
        .filter_map(|s| Some((s.shard, s.result.validity.as_ref()?)))
        .collect();
    judged.first()?;
    let any = |v: Verdict| judged.iter().any(|(_, j)| j.verdict == v);
    let rates: Option<Vec<f64>> = judged.iter().map(|(_, j)| j.achieved_rate).collect();
    Some(Validity {
        verdict: if any(Verdict::ClientBound) {
            Verdict::ClientBound
        } else if any(Verdict::ServerLate) {
            Verdict::ServerLate
        } else if any(Verdict::UsageImplausible) {
            Verdict::UsageImplausible
        } else {
            Verdict::Valid
        },
        reasons: judged
            .iter()
            .flat_map(|(s, j)| j.reasons.iter().map(move |r| format!("shard {s}: {r}")))
            .collect(),
        event_loop_lag_ms: None,
        client_cpu_s: judged.iter().map(|(_, j)| j.client_cpu_s).sum(),
        client_cpu_utilisation: judged
            .iter()
            .map(|(_, j)| j.client_cpu_utilisation)
            .fold(0.0, f64::max),
        cores: judged.iter().map(|(_, j)| j.cores).sum(),
        achieved_rate: rates.map(|r| r.iter().sum()),
        offered_rate,
        server_stats: None,
        client_threads: (judged.iter())
            .map(|(_, j)| j.client_threads)
            .sum::<Option<u64>>(),
    })
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
