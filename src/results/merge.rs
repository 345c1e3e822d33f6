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
    let count = first.shard.count;
    let mut by_index: BTreeMap<u64, &Input> = BTreeMap::new();
    for input in &inputs {
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
    let shards: Vec<&Input> = by_index.into_values().collect();
    // Each shard's records are its own, and its planned count the one its config makes.
    let mut seen = std::collections::HashSet::new();
    let mut planned = Vec::new();
    for s in &shards {
        let r = &s.result;
        let counts = ShardCounts {
            measured: r.summary.completed + r.summary.failed,
            unsent: r.unsent,
            planned: r.planned,
        };
        let checked = check_records(&r.config, s.shard, counts, &s.records, &mut seen);
        planned.push(checked.map_err(|why| ResultsError::Invalid {
            path: s.path.clone(),
            why,
        })?);
    }
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
    let summary = summarize(
        &records,
        &SummaryOptions {
            percentiles: config.metric_percentiles.clone(),
            goodput: config.goodput.clone(),
            time_scale: config.time_scale,
            valid_output: config.goodput_valid_output,
        },
    );
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
    let offered = match result.config.load.request_rate {
        RequestRate::PerSecond(r) => Some(r),
        RequestRate::Infinite => None,
    };
    result.validity = combined_validity(&shards, offered);
    result.merged_from = Some(MergedFrom {
        count,
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

/// Where two shards' configs differ, other than in the shard itself (`None`: they agree).
fn config_difference(a: &Input, b: &Input) -> Option<String> {
    let value = |i: &Input| {
        let mut c = i.result.config.clone();
        c.load.shard = None;
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
mod tests {
    use super::*;
    use crate::config::RunConfig;
    use crate::measure::record::{FailureKind, Outcome, TokenSource};

    const MS: u64 = 1_000_000;

    /// Request `id` of one made-up run, its times on a clock whose zero is `zero` ns after the
    /// run's: varied latencies, chunk counts and lengths, and every seventh request failed.
    fn record(id: u64, zero: u64) -> RequestRecord {
        let sched = 1000 * MS + id * 37 * MS - zero;
        let sent = sched + (id % 3) * MS;
        let chunks: Vec<u64> = (0..2 + id % 5)
            .map(|k| sent + (20 + id % 11) * MS + k * (5 + id % 4) * MS + id * 1_001)
            .collect();
        let end = chunks.last().unwrap() + MS;
        RequestRecord {
            id,
            scheduled_ns: sched,
            sent_ns: sent,
            chunk_ns: chunks.clone(),
            end_ns: end,
            outcome: if id % 7 == 3 {
                Outcome::failed(FailureKind::HttpStatus, "HTTP 500")
            } else {
                Outcome::Ok
            },
            prompt_tokens: Some(100 + id),
            prompt_tokens_source: Some(TokenSource::ServerUsage),
            output_tokens: Some(chunks.len() as u64),
            output_tokens_source: Some(TokenSource::ServerUsage),
            ..RequestRecord::default()
        }
    }

    fn config(seed: u64, shard: Option<Shard>) -> RunConfig {
        let mut c = RunConfig {
            metric_percentiles: vec![50.0, 90.0, 99.0],
            ..RunConfig::default()
        };
        c.load.num_prompts = 40;
        c.load.seed = seed;
        c.load.shard = shard;
        // Labels, metadata and the price travel with every shard and survive the merge.
        c.tags.label = Some("tgi-2.3".into());
        c.tags.metadata.insert("gpu".into(), "H100".into());
        c.tags.cost_per_hour = Some(98.32);
        c
    }

    fn options(c: &RunConfig) -> SummaryOptions {
        SummaryOptions {
            percentiles: c.metric_percentiles.clone(),
            goodput: c.goodput.clone(),
            time_scale: c.time_scale,
            valid_output: c.goodput_valid_output,
        }
    }

    /// Saves shard `index` of 4 of the made-up run, as a shard process whose clock started
    /// `zero` ns after the run's would have: its own requests, on its own clock.
    fn save_shard(dir: &Path, index: u64, zero: u64, seed: u64) -> PathBuf {
        let shard = Shard { index, count: 4 };
        let records: Vec<RequestRecord> = (0..40)
            .filter(|&id| shard.owns(id))
            .map(|id| record(id, zero))
            .collect();
        let cfg = config(seed, Some(shard));
        let summary = summarize(&records, &options(&cfg));
        let path = dir.join(format!("shard{index}.json"));
        let mut result = BenchResult::new(cfg, summary, &records, "t".into(), "d".into(), 0, None);
        result.timebase = Some(Timebase {
            start_at: None,
            anchor_unix_ns: 1_700_000_000_000_000_000 + zero,
            start_unix_ns: 1_700_000_000_000_000_000 + 1000 * MS,
            clock_offset: None,
        });
        let mut merged = Merged {
            result,
            records,
            warnings: vec![],
            stopped: vec![],
        };
        merged.save(&path).unwrap();
        path
    }

    #[test]
    fn merged_shards_give_exactly_the_one_process_figures() {
        let dir = tempfile::tempdir().unwrap();
        // The shards' clocks started at different times (up to 0.9 s apart).
        let paths: Vec<PathBuf> = [0, 300 * MS + 17, 900 * MS, 5]
            .iter()
            .enumerate()
            .map(|(i, &zero)| save_shard(dir.path(), i as u64, zero, 7))
            .collect();
        let merged = merge(&paths, false).unwrap();
        let all: Vec<RequestRecord> = (0..40).map(|id| record(id, 0)).collect();
        let cfg = config(7, None);
        let one = BenchResult::new(
            cfg.clone(),
            summarize(&all, &options(&cfg)),
            &all,
            "t".into(),
            "d".into(),
            0,
            None,
        );
        assert_eq!(merged.result.summary, one.summary, "bit-exact figures");
        assert_eq!(merged.result.config, one.config);
        assert_eq!(merged.result.vllm, one.vllm, "per-request arrays too");
        assert_eq!(merged.result.vllm["label"], "tgi-2.3");
        assert!(merged.result.cost.is_some() && merged.result.cost == one.cost);
        assert!(merged.result.complete && merged.warnings.is_empty());
        assert_eq!(merged.records.len(), 40);
        let m = merged.result.merged_from.unwrap();
        assert_eq!((m.count, m.shards.len(), m.missing.len()), (4, 4, 0));
    }

    #[test]
    fn missing_duplicate_and_foreign_shards_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let p: Vec<PathBuf> = (0..4).map(|i| save_shard(d, i, i * MS, 7)).collect();
        let err = |paths: &[PathBuf]| merge(paths, false).unwrap_err().to_string();

        let e = err(&[p[0].clone(), p[1].clone(), p[3].clone()]);
        assert!(e.contains("missing shard results: 2/4"), "{e}");
        let partial = merge(&[p[0].clone(), p[3].clone()], true).unwrap();
        assert_eq!(
            partial.result.merged_from.as_ref().unwrap().missing,
            vec![1, 2]
        );
        assert!(!partial.result.complete);
        assert_eq!(
            partial.result.summary.completed + partial.result.summary.failed,
            20
        );
        assert!(partial.warnings[0].contains("missing shards 1/4, 2/4"));
        let report = crate::render::report::text(&partial.result);
        assert!(report.contains("Merged shards:                           2 of 4"));
        assert!(report.contains("no (shards 1/4, 2/4 missing)"), "{report}");

        let e = err(&[p[0].clone(), p[0].clone()]);
        assert!(e.contains("shard 0/4 is given twice"), "{e}");

        let other_seed = tempfile::tempdir().unwrap();
        let q = save_shard(other_seed.path(), 1, 0, 8);
        let e = err(&[p[0].clone(), q, p[2].clone(), p[3].clone()]);
        assert!(e.contains("config.load.seed (7 vs 8)"), "{e}");
    }

    /// A crafted shard (a shard count of 10^12; chunk times going backwards)
    /// is refused or its impossible request failed, never a hang or an absurd TPOT.
    #[test]
    fn crafted_shards_are_refused_or_their_bad_records_failed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let paths: Vec<PathBuf> = (0..4).map(|i| save_shard(d, i, 0, 7)).collect();
        let before = merge(&paths, false).unwrap().result.summary;

        // Chunk times going backwards in one successful record of shard 1.
        let records_path = paths[1].with_extension("records.jsonl");
        let text = std::fs::read_to_string(&records_path).unwrap();
        let mut lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let ok = lines
            .iter()
            .position(|v| {
                v["outcome"]["status"] == "ok" && v["chunk_ns"].as_array().unwrap().len() > 1
            })
            .unwrap();
        lines[ok]["chunk_ns"].as_array_mut().unwrap().reverse();
        let crafted: Vec<String> = lines.iter().map(|v| v.to_string()).collect();
        std::fs::write(&records_path, crafted.join("\n") + "\n").unwrap();
        let merged = merge(&paths, false).unwrap();
        let s = &merged.result.summary;
        assert_eq!(
            (s.completed, s.failed),
            (before.completed - 1, before.failed + 1)
        );
        let malformed = |s: &crate::results::stats::RunSummary| {
            s.failures_by_kind
                .get("malformed_stream")
                .copied()
                .unwrap_or(0)
        };
        assert_eq!(malformed(s), malformed(&before) + 1);
        let tpot = s.tpot_ms.as_ref().unwrap();
        assert!(tpot.max < 1000.0, "{tpot:?}");

        // A shard count of 10^12: refused at once.
        let text = std::fs::read_to_string(&paths[2]).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["config"]["load"]["shard"]["count"] = serde_json::json!(1_000_000_000_000u64);
        std::fs::write(&paths[2], v.to_string()).unwrap();
        let e = merge(&paths, false).unwrap_err().to_string();
        assert!(e.contains("at most 65536 shards"), "{e}");
    }
}
