//! A run's own per-request spans as OpenTelemetry traces in the OTLP JSON format
//! (`--otel-file`, `--otel-endpoint`), so a tracing stack (Jaeger, Tempo) shows the client's
//! side of each request next to the server's. Each request is a trace of its own, named by its
//! id (`measure::traceid`: the `traceparent` the client sent, when it sent one), holding:
//!
//! - `servebench.request`, the root: from when the schedule wanted it sent to its end, with the
//!   events `send` (its first byte written), `first_token` and `last_token` (its first and last
//!   output chunks' arrival);
//! - `client_queue`: from its scheduled time until the client began it (a concurrency slot,
//!   a late schedule), when it waited at all;
//! - `connect`: a new connection's setup;
//! - `response`: from the send to the end.
//!
//! Times are Unix ns on this machine's clock (the run's `started_at` is the records' zero).
//! The request's ids go in `servebench.request_id` and `servebench.server_request_id`, never
//! in `gen_ai.request.id`, so a file holding both sides is still joined with the server's
//! spans only. Built from the records after the run, never during it.

use serde_json::{json, Value};

use crate::measure::record::RequestRecord;
use crate::measure::traceid::{span_id, trace_id};
use crate::results::document::BenchResult;

/// Requests per OTLP document (one POST, or one line of the file).
pub const REQUESTS_PER_DOCUMENT: usize = 512;

/// The run's records as OTLP JSON documents of at most [`REQUESTS_PER_DOCUMENT`] requests;
/// records without an id (a run with `--request-id-header none`) get one from their number.
pub fn documents<'a>(
    result: &'a BenchResult,
    records: impl Iterator<Item = RequestRecord> + 'a,
) -> impl Iterator<Item = Value> + 'a {
    let anchor = anchor_unix_ns(result);
    let mut records = records.peekable();
    std::iter::from_fn(move || {
        records.peek()?;
        let spans: Vec<Value> = (records.by_ref())
            .take(REQUESTS_PER_DOCUMENT)
            .flat_map(|r| request_spans(&r, anchor))
            .collect();
        Some(document(result, spans))
    })
}

fn document(result: &BenchResult, spans: Vec<Value>) -> Value {
    let mut resource = vec![
        attr("service.name", string("servebench")),
        attr("service.version", string(&result.servebench_version)),
        attr("server.address", string(&result.config.base_url)),
    ];
    if let Some(label) = &result.config.tags.label {
        resource.push(attr("servebench.label", string(label)));
    }
    json!({"resourceSpans": [{
        "resource": {"attributes": resource},
        "scopeSpans": [{"scope": {"name": "servebench", "version": result.servebench_version}, "spans": spans}],
    }]})
}

/// Unix time of the records' zero, ns (0 when the result's `started_at` cannot be read).
fn anchor_unix_ns(result: &BenchResult) -> u64 {
    let fmt = time::format_description::well_known::Rfc3339;
    time::OffsetDateTime::parse(&result.started_at, &fmt)
        .map_or(0, |t| u64::try_from(t.unix_timestamp_nanos()).unwrap_or(0))
}

fn attr(key: &str, value: Value) -> Value {
    json!({"key": key, "value": value})
}

fn string(s: &str) -> Value {
    json!({"stringValue": s})
}

fn int(n: u64) -> Value {
    json!({"intValue": n.to_string()})
}

/// One request's spans (module doc).
fn request_spans(r: &RequestRecord, anchor: u64) -> Vec<Value> {
    let id = (r.request_id.clone())
        .unwrap_or_else(|| format!("{}{}", if r.warmup { "w" } else { "" }, r.id));
    let trace = format!("{:032x}", trace_id(&id));
    let root = format!("{:016x}", span_id(&id, "request"));
    let at = |ns: u64| (anchor + ns).to_string();
    let span = |name: &str,
                from: u64,
                to: u64,
                parent: Option<&str>,
                attributes: Vec<Value>,
                events: Vec<Value>| {
        let mut s = json!({
            "traceId": trace,
            "spanId": if parent.is_some() { format!("{:016x}", span_id(&id, name)) } else { root.clone() },
            "name": name,
            "kind": 3,
            "startTimeUnixNano": at(from),
            "endTimeUnixNano": at(to.max(from)),
            "attributes": attributes,
            "events": events,
        });
        if let Some(p) = parent {
            s["parentSpanId"] = json!(p);
        }
        s
    };
    let event = |name: &str, ns: u64| json!({"name": name, "timeUnixNano": at(ns)});
    let mut attributes = vec![
        attr("servebench.request.number", int(r.id)),
        attr("servebench.request_id", string(&id)),
        attr("servebench.warmup", json!({"boolValue": r.warmup})),
        attr(
            "servebench.outcome",
            string(r.outcome.failure_kind().map_or("ok", |k| k.as_str())),
        ),
    ];
    if let Some(s) = &r.server_request_id {
        attributes.push(attr("servebench.server_request_id", string(s)));
    }
    if let Some(status) = r.http_status {
        attributes.push(attr("http.response.status_code", int(u64::from(status))));
    }
    if let Some(n) = r.output_tokens {
        attributes.push(attr("gen_ai.usage.output_tokens", int(n)));
    }
    let mut events = vec![event("send", r.sent_ns)];
    if let (Some(first), Some(last)) = (r.first_chunk_ns(), r.last_chunk_ns()) {
        events.push(event("first_token", first));
        events.push(event("last_token", last));
    }
    let mut spans = vec![span(
        "servebench.request",
        r.scheduled_ns,
        r.end_ns,
        None,
        attributes,
        events,
    )];
    if r.began_ns() > r.scheduled_ns {
        spans.push(span(
            "client_queue",
            r.scheduled_ns,
            r.began_ns(),
            Some(&root),
            vec![],
            vec![],
        ));
    }
    if let (Some(a), Some(b)) = (r.connect_start_ns, r.connect_end_ns) {
        spans.push(span("connect", a, b, Some(&root), vec![], vec![]));
    }
    spans.push(span(
        "response",
        r.sent_ns,
        r.end_ns,
        Some(&root),
        vec![],
        vec![],
    ));
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunConfig;
    use crate::results::stats::{summarize, SummaryOptions};

    /// A request's spans are its client queue, connect and response under one
    /// root, with its send, first and last token, in Unix ns from the run's start, all in the
    /// trace its `traceparent` named; a run is cut into documents of 512 requests.
    #[test]
    fn client_spans_follow_the_record() {
        const MS: u64 = 1_000_000;
        let summary = summarize(&[], &SummaryOptions::default());
        let at = "2026-01-01T00:00:00Z".to_string();
        let result = BenchResult::new(
            RunConfig::default(),
            summary,
            &[],
            at,
            String::new(),
            0,
            None,
        );
        let r = RequestRecord {
            id: 3,
            scheduled_ns: 10 * MS,
            connect_start_ns: Some(12 * MS),
            connect_end_ns: Some(13 * MS),
            sent_ns: 13 * MS,
            chunk_ns: vec![40 * MS, 50 * MS],
            end_ns: 51 * MS,
            request_id: Some("sb1-3".into()),
            ..RequestRecord::default()
        };
        let docs: Vec<Value> = documents(&result, std::iter::repeat_n(r, 513)).collect();
        assert_eq!(docs.len(), 2);
        let spans = docs[1]["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array()
            .unwrap();
        let names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["servebench.request", "client_queue", "connect", "response"]
        );
        let parent = crate::measure::traceid::traceparent("sb1-3");
        for s in spans {
            assert!(parent.contains(s["traceId"].as_str().unwrap()));
        }
        assert!(parent.ends_with(&format!("{}-01", spans[0]["spanId"].as_str().unwrap())));
        let anchor: u64 = 1_767_225_600_000_000_000;
        assert_eq!(
            spans[1]["startTimeUnixNano"],
            (anchor + 10 * MS).to_string()
        );
        assert_eq!(spans[1]["endTimeUnixNano"], (anchor + 12 * MS).to_string());
        let events = spans[0]["events"].as_array().unwrap();
        assert_eq!(events[1]["name"], "first_token");
        assert_eq!(events[1]["timeUnixNano"], (anchor + 40 * MS).to_string());
        assert_eq!(events[2]["timeUnixNano"], (anchor + 50 * MS).to_string());
    }
}
