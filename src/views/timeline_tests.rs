//! The timeline of a records file: phases, the server's account, slow gaps, even sampling.

use super::*;
use crate::measure::record::{FailureKind, Outcome};

const MS: u64 = 1_000_000;

fn rec(id: u64, sched_ms: u64, sent_ms: u64, chunks_ms: &[u64]) -> RequestRecord {
    RequestRecord {
        id,
        scheduled_ns: sched_ms * MS,
        sent_ns: sent_ms * MS,
        chunk_ns: chunks_ms.iter().map(|c| c * MS).collect(),
        end_ns: chunks_ms.last().map_or(sent_ms, |c| *c) * MS + MS,
        http_status: Some(200),
        ..RequestRecord::default()
    }
}

fn write(dir: &Path, records: &[RequestRecord]) -> std::path::PathBuf {
    let path = dir.join("t.records.jsonl");
    let lines: Vec<String> = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn phases_come_from_the_record_and_the_servers_account() {
    let dir = tempfile::tempdir().unwrap();
    // Scheduled at 1000 ms, connect 1002..1005, sent at 1005, first token at 1105: the server
    // says its TTFT was 80 ms of which 30 queued (prefill 50), so queue 1025..1055 and prefill
    // 1055..1105. Chunks 1105, 1115, 1315 (a 200 ms gap), 1325.
    let mut a = rec(0, 1000, 1005, &[1105, 1115, 1315, 1325]);
    a.connect_start_ns = Some(1002 * MS);
    a.connect_end_ns = Some(1005 * MS);
    a.server_request_metrics = Some(serde_json::json!({
        "time_to_first_token_ms": 80.0, "queue_time_ms": 30.0
    }));
    let mut failed = rec(1, 1010, 1010, &[]);
    failed.outcome = Outcome::failed(FailureKind::Timeout, "timed out");
    let mut warm = rec(7, 0, 0, &[5]);
    warm.warmup = true;
    // Times out of order (sent before scheduled): left out, counted.
    let bad = rec(2, 1020, 1000, &[1100]);
    let path = write(dir.path(), &[failed, a, warm, bad]);
    let t = timeline(&path, Some([1000 * MS, 1200 * MS]), 100.0).unwrap();
    assert_eq!((t.total, t.rows.len(), t.disordered), (3, 2, 1));
    let r = &t.rows[0];
    let close = |x: f64, y: f64| (x - y).abs() < 1e-9;
    assert_eq!(r.id, 0);
    assert!(close(r.scheduled, 0.0) && close(r.began, 0.002) && close(r.sent, 0.005));
    let (q, p) = (r.server_queue.unwrap(), r.prefill.unwrap());
    assert!(close(q.0, 0.025) && close(q.1, 0.055), "{q:?}");
    assert!(close(p.0, 0.055) && close(p.1, 0.105), "{p:?}");
    assert_eq!(r.slow_count, 1);
    assert!(close(r.slow[0].0, 0.115) && close(r.slow[0].1, 0.315));
    assert_eq!(t.rows[1].failure, Some("timeout"));
    assert_eq!(t.server_rows, 1);
    assert_eq!(t.steady, Some((0.0, 0.2)));
    assert_eq!(t.sampling(), "all 3 measured requests");
}

#[test]
fn many_requests_are_sampled_evenly_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let n = 5 * TIMELINE_ROWS as u64;
    // Written out of schedule order, as a run's records are (by completion).
    let records: Vec<RequestRecord> = (0..n).rev().map(|i| rec(i, i, i, &[i + 3])).collect();
    let path = write(dir.path(), &records);
    let t = timeline(&path, None, 100.0).unwrap();
    assert_eq!(t.rows.len(), TIMELINE_ROWS);
    assert_eq!(t.total, n);
    // Every fifth request in schedule order, from the first.
    let ids: Vec<u64> = t.rows.iter().map(|r| r.id).collect();
    assert_eq!(ids[..3], [0, 5, 10]);
    assert_eq!(*ids.last().unwrap(), n - 5);
    assert_eq!(
        t.sampling(),
        format!("{TIMELINE_ROWS} of {n} measured requests, sampled evenly in schedule order")
    );
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let e = timeline(Path::new("/nonexistent/r.records.jsonl"), None, 100.0).unwrap_err();
    assert!(
        e.to_string().contains("/nonexistent/r.records.jsonl"),
        "{e}"
    );
}
