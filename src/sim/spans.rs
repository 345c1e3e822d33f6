//! The simulator's own account of each request, as OpenTelemetry spans: what `GET /sim/otlp`
//! serves, in the OTLP JSON file format (`resourceSpans` → `scopeSpans` → `spans`), with
//! vLLM's span name (`llm_request`) and attribute names (`gen_ai.request.id`,
//! `gen_ai.latency.time_in_queue`, `.time_to_first_token`, `.time_in_model_prefill`,
//! `.time_in_model_decode`, `.e2e`, in seconds), so `servebench join` is tested against a
//! server whose queue and prefill times are known exactly.
//!
//! # What it owns
//! [`SpanLog`]: the most recent [`MAX_SPANS`] finished requests' spans (older ones are
//! dropped and counted), and their OTLP JSON. Times are the simulator's: the start is the
//! request's arrival (`t0`), the end when its last chunk (or its whole answer) was handed
//! over, both on this machine's wall clock; the attributes are simulated seconds, as the
//! `metrics` object of the usage event.
//!
//! # What it must not touch
//! Nothing of `sim` (it sits on the bottom layers); nothing of servebench's client side.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

/// The most spans kept: the newest; older ones are dropped (counted in the export).
pub(crate) const MAX_SPANS: usize = 65_536;

/// One finished request, as the server saw it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Span {
    /// The request's number on the simulator.
    pub(crate) n: u64,
    /// `gen_ai.request.id`: as vLLM forms it from the request's `x-request-id`.
    pub(crate) request_id: String,
    /// Arrival and end, on the simulator's clock.
    pub(crate) start: Instant,
    pub(crate) end: Instant,
    /// Simulated durations: queueing, prefill, arrival to first token, decode.
    pub(crate) queue: Duration,
    pub(crate) prefill: Duration,
    pub(crate) ttft: Duration,
    pub(crate) decode: Duration,
    pub(crate) prompt_tokens: u64,
    pub(crate) output_tokens: u32,
}

/// The newest finished requests' spans.
pub(crate) struct SpanLog {
    /// An instant and the Unix time (ns) at the same moment: the spans' wall clock.
    anchor: (Instant, i128),
    spans: Mutex<(VecDeque<Span>, u64)>,
}

impl Default for SpanLog {
    fn default() -> Self {
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        SpanLog {
            anchor: (Instant::now(), unix),
            spans: Mutex::new((VecDeque::new(), 0)),
        }
    }
}

impl SpanLog {
    /// Keeps `span`, dropping the oldest past [`MAX_SPANS`].
    pub(crate) fn push(&self, span: Span) {
        let mut guard = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        let (spans, dropped) = &mut *guard;
        if spans.len() >= MAX_SPANS {
            spans.pop_front();
            *dropped += 1;
        }
        spans.push_back(span);
    }

    /// Unix time of `t`, ns, on this machine's clock.
    fn unix_ns(&self, t: Instant) -> i128 {
        let (at, unix) = self.anchor;
        if t >= at {
            unix + (t - at).as_nanos() as i128
        } else {
            unix - (at - t).as_nanos() as i128
        }
    }

    /// Every span kept, as one OTLP JSON document (`servebench.sim.dropped_spans` on the
    /// resource counts those no longer kept).
    pub(crate) fn otlp_json(&self) -> Value {
        let guard = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        let (spans, dropped) = &*guard;
        let spans: Vec<Value> = spans.iter().map(|s| self.span_json(s)).collect();
        json!({"resourceSpans": [{
            "resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": "servebench-sim"}},
                {"key": "servebench.sim.dropped_spans", "value": {"intValue": dropped.to_string()}},
            ]},
            "scopeSpans": [{"scope": {"name": "servebench.sim"}, "spans": spans}],
        }]})
    }

    fn span_json(&self, s: &Span) -> Value {
        let secs = |d: Duration| json!({"doubleValue": d.as_secs_f64()});
        let int = |n: u64| json!({"intValue": n.to_string()});
        let attr = |key: &str, value: Value| json!({"key": key, "value": value});
        json!({
            "traceId": format!("{:032x}", u128::from(s.n) + 1),
            "spanId": format!("{:016x}", s.n + 1),
            "name": "llm_request",
            "kind": 2,
            "startTimeUnixNano": self.unix_ns(s.start).to_string(),
            "endTimeUnixNano": self.unix_ns(s.end).to_string(),
            "attributes": [
                attr("gen_ai.request.id", json!({"stringValue": s.request_id})),
                attr("gen_ai.latency.time_in_queue", secs(s.queue)),
                attr("gen_ai.latency.time_to_first_token", secs(s.ttft)),
                attr("gen_ai.latency.time_in_model_prefill", secs(s.prefill)),
                attr("gen_ai.latency.time_in_model_decode", secs(s.decode)),
                attr("gen_ai.latency.e2e", secs(s.ttft + s.decode)),
                attr("gen_ai.usage.prompt_tokens", int(s.prompt_tokens)),
                attr("gen_ai.usage.completion_tokens", int(u64::from(s.output_tokens))),
            ],
            "status": {},
        })
    }
}
