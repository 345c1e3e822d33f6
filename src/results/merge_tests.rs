//! Tests of `merge`: crafted shards merged, refused or their bad records failed.

use super::*;
use crate::config::RunConfig;
use crate::measure::record::{FailureKind, Outcome, TokenSource};
use crate::results::jobs::{JobFigures, JobRun};

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
        // Each request is a job of one call (a job's calls are one arrival: one shard's).
        job: Some(id),
        call: Some(crate::measure::job::CallPlace {
            of: 1,
            ..Default::default()
        }),
        ..RequestRecord::default()
    }
}

/// The job figures of `records` over `duration_s`, `planned` jobs planned.
fn jobs_of(records: &[RequestRecord], duration_s: f64, planned: u64) -> JobFigures {
    let run = JobRun {
        duration_s,
        time_scale: 1.0,
        planned: Some(planned),
        slos: &[],
    };
    JobFigures::of(records.iter().cloned(), run)
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
    c.tags.gpus = Some(8);
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
    let mut cfg = config(seed, Some(shard));
    // Each shard's machine sends from its own address: not a difference between shards.
    cfg.load.source_addresses = vec![std::net::IpAddr::from([127, 0, 0, 2 + index as u8])];
    let summary = summarize(&records, &options(&cfg));
    let path = dir.join(format!("shard{index}.json"));
    let mut result = BenchResult::new(cfg, summary, &records, "t".into(), "d".into(), 0, None);
    result.jobs = Some(jobs_of(&records, result.summary.duration_s, 10));
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
    // The jobs of every shard, as one process would have them.
    let jobs = jobs_of(&all, one.summary.duration_s, 40);
    assert_eq!((jobs.completed, jobs.failed), (34, 6));
    assert_eq!(merged.result.jobs, Some(jobs));
    assert_eq!(merged.result.vllm["label"], "tgi-2.3");
    assert_eq!(
        merged.result.config.tags.gpus,
        Some(8),
        "the GPU count survives"
    );
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
        .position(|v| v["outcome"]["status"] == "ok" && v["chunk_ns"].as_array().unwrap().len() > 1)
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
