//! The join's rules on hand-made records and traces: matching by id with
//! vLLM's names, the split, and the bad input (no match, a malformed file, ids duplicated,
//! absurd timestamps).

use std::path::Path;

use serde_json::{json, Value};

use super::{join, otlp_read, Join, JoinRecord};
use crate::config::RunConfig;
use crate::measure::record::RequestRecord;
use crate::results::document::BenchResult;
use crate::results::stats::{summarize, SummaryOptions};

const MS: u64 = 1_000_000;
/// 2026-01-01T00:00:00Z, ns.
const ANCHOR: u64 = 1_767_225_600_000_000_000;

fn result() -> BenchResult {
    let summary = summarize(&[], &SummaryOptions::default());
    let (at, date) = ("2026-01-01T00:00:00Z".to_string(), String::new());
    BenchResult::new(RunConfig::default(), summary, &[], at, date, 0, None)
}

/// Request `i`: sent at `100·i` ms, first chunk 50 ms later.
fn record(i: u64) -> RequestRecord {
    let sent = 100 * i * MS;
    RequestRecord {
        id: i,
        sent_ns: sent,
        chunk_ns: vec![sent + 50 * MS],
        end_ns: sent + 60 * MS,
        request_id: Some(format!("sb1-{i}")),
        ..RequestRecord::default()
    }
}

/// A span of request `i` named `id`, arriving 1 ms after its send: 10 ms queued, 30 ms of
/// prefill, first token 45 ms after arrival.
fn span(i: u64, id: &str) -> Value {
    let start = ANCHOR + 100 * i * MS + MS;
    let s = |v: f64| json!({"doubleValue": v});
    json!({
        "name": "llm_request",
        "startTimeUnixNano": start.to_string(),
        "endTimeUnixNano": (start + 55 * MS).to_string(),
        "attributes": [
            {"key": "gen_ai.request.id", "value": {"stringValue": id}},
            {"key": "gen_ai.latency.time_in_queue", "value": s(0.010)},
            {"key": "gen_ai.latency.time_in_model_prefill", "value": s(0.030)},
            {"key": "gen_ai.latency.time_to_first_token", "value": s(0.045)},
        ],
    })
}

fn otlp_text(spans: Vec<Value>) -> Vec<u8> {
    let doc = json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]});
    doc.to_string().into_bytes()
}

/// What the join keeps of `records`.
fn slim(records: &[RequestRecord]) -> Vec<JoinRecord> {
    records.iter().cloned().filter_map(JoinRecord::of).collect()
}

fn joined(records: &[RequestRecord], spans: Vec<Value>) -> Join {
    let trace = otlp_read::parse(&otlp_text(spans)).expect("a trace");
    join(
        &result(),
        &slim(records),
        trace,
        (Path::new("r.json"), Path::new("t.json")),
    )
}

/// Spans named as vLLM names requests (`cmpl-<id>-0`, `chatcmpl-<id>`) or by the
/// id itself match their requests, and each TTFT is split exactly: 5 ms of network, 10 ms
/// queued, 30 ms of prefill, 5 ms else in the server.
#[test]
fn join_matches_vllm_names_and_splits_ttft() {
    let records: Vec<_> = (0..3).map(record).collect();
    let spans = vec![
        span(0, "cmpl-sb1-0-0"),
        span(1, "chatcmpl-sb1-1"),
        span(2, "sb1-2"),
        span(3, "other-request"),
    ];
    let j = joined(&records, spans);
    assert_eq!(
        (j.matched, j.unmatched_spans, j.unmatched_requests),
        (3, 1, 0)
    );
    assert_eq!(j.implausible, 0, "{:?}", j.implausible_first);
    for r in &j.joined {
        assert!((r.network_ms - 5.0).abs() < 1e-6, "{r:?}");
        assert!((r.queue_ms.unwrap() - 10.0).abs() < 1e-6, "{r:?}");
        assert!((r.prefill_ms.unwrap() - 30.0).abs() < 1e-6, "{r:?}");
        assert!((r.server_other_ms.unwrap() - 5.0).abs() < 1e-6, "{r:?}");
        // No probed offset: the span is placed, but no one-way time is claimed.
        assert_eq!(r.uplink_ms, None);
    }
    let network = j.parts.iter().find(|p| p.name == "network").unwrap();
    assert_eq!(network.count, 3);
}

/// An id on two spans joins neither of them (nor its request), and is named.
#[test]
fn join_duplicated_ids_match_nothing() {
    let records: Vec<_> = (0..2).map(record).collect();
    let spans = vec![span(0, "sb1-0"), span(0, "cmpl-sb1-0-0"), span(1, "sb1-1")];
    let j = joined(&records, spans);
    assert_eq!(j.matched, 1);
    assert_eq!(j.duplicate_ids, 1);
    assert_eq!(j.first_duplicate.as_deref(), Some("cmpl-sb1-0-0"));
    assert_eq!(j.joined.len(), 1);
    assert_eq!(j.joined[0].request_id, "sb1-1");
}

/// Absurd timestamps (a start in 1970, an end before the start, a start an hour
/// from the request's send, a duration that is negative, a first token later than the
/// client's) make a span implausible, named, and out of every figure.
#[test]
fn join_absurd_timestamps_are_implausible() {
    let records: Vec<_> = (0..5).map(record).collect();
    let mut spans: Vec<Value> = (0..5).map(|i| span(i, &format!("sb1-{i}"))).collect();
    spans[0]["startTimeUnixNano"] = json!("5");
    spans[1]["endTimeUnixNano"] = json!("1");
    let hour_later = ANCHOR + 100 * MS + 3_600_000 * MS;
    spans[2]["startTimeUnixNano"] = json!(hour_later.to_string());
    spans[2]["endTimeUnixNano"] = json!((hour_later + MS).to_string());
    spans[3]["attributes"][1]["value"] = json!({"doubleValue": -0.5});
    spans[4]["attributes"][3]["value"] = json!({"doubleValue": 9.0});
    let j = joined(&records, spans);
    assert_eq!((j.matched, j.implausible), (5, 5), "{:?}", j.joined);
    assert!(j.joined.is_empty() && j.parts.is_empty());
    let why: Vec<&str> = j.implausible_first.iter().map(|i| i.why.as_str()).collect();
    assert!(why[0].contains("not plausible"), "{why:?}");
    assert!(why[1].contains("not plausible"), "{why:?}");
    assert!(why[2].contains("away from the request's send"), "{why:?}");
    assert!(
        why[3].contains("time_in_queue is not a duration"),
        "{why:?}"
    );
    assert!(why[4].contains("longer than the client's TTFT"), "{why:?}");
}

/// A file that is not OTLP JSON is refused naming the line and column; a trace
/// whose ids match no request joins nothing.
#[test]
fn join_malformed_or_unmatched_trace() {
    let mut text = otlp_text(vec![span(0, "sb1-0")]);
    text.extend(b"\n{\"resourceSpans\": [{\"scopeSpans\": 5}]}");
    let e = otlp_read::parse(&text).unwrap_err().to_string();
    assert!(
        e.contains("starting at line 2") && e.contains("expected a sequence"),
        "{e}"
    );
    let e = otlp_read::parse(b"{\"resourceSpans\": [\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("line 2 column") && e.contains("not JSON"),
        "{e}"
    );
    assert!(otlp_read::parse(b"")
        .unwrap_err()
        .to_string()
        .contains("empty"));
    let e = otlp_read::parse(
        b"{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [{\"startTimeUnixNano\": []}]}]}]}",
    );
    assert!(e
        .unwrap_err()
        .to_string()
        .contains("not an OTLP JSON trace"));
    let j = joined(&[record(0)], vec![span(0, "someone-else")]);
    assert_eq!(
        (j.matched, j.unmatched_spans, j.unmatched_requests),
        (0, 1, 1)
    );
}

/// The OTel Collector's file exporter writes one document per line: each is read; so is a
/// line of the server log format, and an object that is neither is refused.
#[test]
fn join_reads_one_document_per_line() {
    let mut text = otlp_text(vec![span(0, "sb1-0")]);
    text.push(b'\n');
    text.extend(otlp_text(vec![span(1, "sb1-1")]));
    text.extend(br#"
{"request_id": "sb1-2", "start_unix_ns": "1767225600201000000", "end_unix_ns": 1767225600256000000, "time_in_queue": 0.010, "time_in_model_prefill": 0.030, "time_to_first_token": 0.045}"#);
    let trace = otlp_read::parse(&text).unwrap();
    assert_eq!(trace.spans.len(), 3);
    let records: Vec<_> = (0..3).map(record).collect();
    let j = join(
        &result(),
        &slim(&records),
        trace,
        (Path::new("r"), Path::new("t")),
    );
    assert_eq!(
        (j.matched, j.implausible),
        (3, 0),
        "{:?}",
        j.implausible_first
    );
    assert!((j.joined[2].queue_ms.unwrap() - 10.0).abs() < 1e-6);
    assert!(otlp_read::parse(b"{\"spans\": []}")
        .unwrap_err()
        .to_string()
        .contains("neither resourceSpans nor request_id"));
}

/// The trace is read span by span and only the spans whose ids name a request are kept
/// (a trace far larger than the run held every span, and the whole file, in memory): the
/// others are counted as unmatched, the first id is still named, and the join is the same.
#[test]
fn join_keeps_only_the_spans_that_name_a_request() {
    let records: Vec<_> = (0..3).map(record).collect();
    let mut spans: Vec<Value> = (0..1000)
        .map(|i| span(0, &format!("cmpl-other-{i}-0")))
        .collect();
    spans.extend((0..3).map(|i| span(i, &format!("cmpl-sb1-{i}-0"))));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    // Two documents, the second over several lines.
    let mut text = otlp_text(spans);
    text.extend(b"\n{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [\n]}]}]}\n");
    std::fs::write(&path, &text).unwrap();
    let ids = ["sb1-0", "sb1-1", "sb1-2"];
    let keep = |id: &str| super::candidates(id).any(|c| ids.contains(&c));
    let trace = otlp_read::read(&path, &keep).unwrap();
    assert_eq!((trace.spans.len(), trace.request_spans), (3, 1003));
    assert_eq!(trace.first_id.as_deref(), Some("cmpl-other-0-0"));
    let j = join(&result(), &slim(&records), trace, (Path::new("r"), &path));
    assert_eq!(
        (j.spans, j.matched, j.unmatched_spans, j.implausible),
        (1003, 3, 1000, 0)
    );
    // A bad document after good ones: named by the line it starts on.
    let mut text = otlp_text(vec![span(0, "sb1-0")]);
    text.extend(b"\n\n{\"resourceSpans\":\n [{\"scopeSpans\": 5}]}");
    let e = otlp_read::parse(&text).unwrap_err().to_string();
    assert!(e.contains("starting at line 3"), "{e}");
    let mut text = otlp_text(vec![span(0, "sb1-0")]);
    text.extend(b"\n{\"resourceSpans\": [\n");
    let e = otlp_read::parse(&text).unwrap_err().to_string();
    assert!(e.starts_with("line 3 column"), "{e}");
}
