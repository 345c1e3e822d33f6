//! `servebench join`: each request of a run joined with the server's own account of it
//! (docs/metrics.md, "The server's account of a request"). The run's records
//! carry the id servebench sent (`request_id`) and the one the server returned
//! (`server_request_id`); a server's trace ([`otlp_read`]) carries, per request, its id and its
//! time in the queue, in prefill, in KV transfer and to its first token. A request and a span
//! are matched by id: the span's id as it is, without vLLM's `cmpl-`/`chatcmpl-` prefix, or
//! without that prefix and a `-N` suffix too (vLLM names a completion's prompt `cmpl-<id>-0`).
//! Each matched request's TTFT is then split into the network (the client's TTFT less the
//! server's, clock-free), the server's queue, prefill, KV transfer and the rest of its time to
//! the first token; where the run probed the server's clock (`timebase.clock_offset`), the
//! network splits further into the way there (the span's start, moved onto servebench's clock,
//! less the send) and the way back.
//!
//! A request the trace does not join (no span names it, its id is ambiguous, or its span is
//! not believed) falls back to the server's account in its own answer
//! (`results::stats::ServerTimings::of`: vLLM's `metrics`, SGLang's `meta_info`), when that
//! account has a server TTFT: its TTFT is split the same way, clock-free, without the way there
//! and back or KV transfer. Each joined request names its source ([`Source`]), and the join
//! counts both. An account whose TTFT is longer than the client's is not believed (counted).
//!
//! Nothing from the trace is believed unchecked: an id on two spans, or on two requests,
//! matches neither (counted); a span whose times are not times, whose parts exceed its TTFT,
//! whose TTFT exceeds the client's, or whose start lies outside the request's life on
//! servebench's clock is named and left out of every figure.

mod error;
pub mod otlp_read;
pub mod saved;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::measure::record::{read_jsonl, records_next_to, RequestRecord};
use crate::results::document::BenchResult;
use crate::results::shard::ClockOffset;
use crate::results::stats::{percentile, ServerTimings};
pub use error::{JoinError, SpanError, TraceError};
pub use otlp_read::{ServerSpan, Trace};
pub use saved::{JoinFigures, Part};

/// How far two clocks are taken to be apart when the run did not probe the server's
/// (`timebase.clock_offset`): a span starting farther than this from its request's life on
/// servebench's clock is implausible.
pub const UNPROBED_CLOCK_SLACK_NS: u64 = 60_000_000_000;
/// Rounding allowed between the server's figures and the client's (ms).
const ROUNDING_MS: f64 = 1.0;
/// Implausible spans listed by name in a join (the rest are counted).
const MAX_LISTED: usize = 20;
/// Unix times a span may start in: 2000-01-01 to 2100-01-01, ns.
const PLAUSIBLE_UNIX_NS: (u64, u64) = (946_684_800_000_000_000, 4_102_444_800_000_000_000);

/// Where a joined request's server side came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The server's OpenTelemetry span (preferred).
    #[default]
    Span,
    /// The server's own account in its answer (no span joined it).
    Answer,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Span => "span",
            Source::Answer => "answer",
        }
    }
}

/// One request joined with its span: its TTFT split, ms on servebench's clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JoinedRequest {
    /// The record's id (its place in the run's schedule).
    pub id: u64,
    pub request_id: String,
    /// The span's `gen_ai.request.id`.
    pub span_id: String,
    pub ttft_ms: f64,
    pub server_ttft_ms: f64,
    pub network_ms: f64,
    pub queue_ms: Option<f64>,
    pub prefill_ms: Option<f64>,
    pub kv_transfer_ms: Option<f64>,
    pub server_other_ms: Option<f64>,
    pub uplink_ms: Option<f64>,
    pub downlink_ms: Option<f64>,
    /// Whether the split is the span's or the answer's own account.
    #[serde(default)]
    pub source: Source,
}

/// A matched request whose span was not believed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Implausible {
    pub request_id: String,
    pub why: String,
}

/// What `servebench join` found: the counts of each side, what matched, the figures and each
/// joined request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Join {
    pub result: PathBuf,
    pub trace: PathBuf,
    /// Measured requests that succeeded with an id (warm-ups and failures are not joined).
    pub requests: u64,
    /// Spans with `gen_ai.request.id`, and the trace's other spans.
    pub spans: u64,
    pub other_spans: u64,
    pub matched: u64,
    pub unmatched_requests: u64,
    pub unmatched_spans: u64,
    /// Ids found on more than one span or request (none of them joined), and the first.
    pub duplicate_ids: u64,
    pub first_duplicate: Option<String>,
    /// Matched requests whose spans were not believed: how many, and the first few.
    pub implausible: u64,
    pub implausible_first: Vec<Implausible>,
    /// Joined requests by source: by their span, and (no span joined them) by the account in
    /// their own answer.
    #[serde(default)]
    pub from_spans: u64,
    #[serde(default)]
    pub from_answers: u64,
    /// Requests without a span whose answer's account had a server TTFT longer than the
    /// client's TTFT (not believed, in no part).
    #[serde(default)]
    pub implausible_answers: u64,
    /// The server's clock against servebench's, when the run probed it.
    pub clock_offset: Option<ClockOffset>,
    /// The server's clock speed-up (the simulator's `--time-scale`; 1 for a real server).
    pub time_scale: f64,
    pub parts: Vec<Part>,
    pub joined: Vec<JoinedRequest>,
}

impl Join {
    /// Its figures as the result keeps them (`join --save`): the counts and the parts.
    pub fn figures(&self) -> JoinFigures {
        JoinFigures {
            trace: self.trace.clone(),
            requests: self.requests,
            spans: self.spans,
            matched: self.matched,
            unmatched_requests: self.unmatched_requests,
            unmatched_spans: self.unmatched_spans,
            duplicate_ids: self.duplicate_ids,
            implausible: self.implausible,
            from_spans: self.from_spans,
            from_answers: self.from_answers,
            parts: self.parts.clone(),
        }
    }
}

/// What the join needs of a record (the rest of it is not kept: a run's records file may
/// be larger than its trace).
#[derive(Clone, Debug, PartialEq)]
pub struct JoinRecord {
    pub id: u64,
    pub request_id: String,
    pub server_request_id: Option<String>,
    pub sent_ns: u64,
    /// Its first chunk, or its end when it has none.
    pub first_ns: u64,
    /// The server's account in its answer (empty when it had none).
    pub account: ServerTimings,
}

impl JoinRecord {
    /// A measured request that succeeded with an id and a first chunk: what the join needs of
    /// it; `None` for any other.
    pub fn of(r: RequestRecord) -> Option<JoinRecord> {
        if r.warmup || !r.is_ok() {
            return None;
        }
        let first_ns = r.first_chunk_ns()?;
        let account = ServerTimings::of(&r);
        Some(JoinRecord {
            id: r.id,
            request_id: r.request_id?,
            server_request_id: r.server_request_id,
            sent_ns: r.sent_ns,
            first_ns,
            account,
        })
    }
}

/// Joins the result at `result_path` (its records beside it) with the trace at `trace_path`.
/// Both are read as they are parsed: of the records, what the join needs; of the trace, only
/// the spans whose ids name a request.
pub fn join_files(result_path: &Path, trace_path: &Path) -> Result<Join, JoinError> {
    let result = BenchResult::load(result_path)?;
    let records_path = records_next_to(result_path, result.records_file.as_deref())
        .ok_or_else(|| JoinError::NoRecords(result_path.to_path_buf()))?;
    let records: Vec<JoinRecord> = read_jsonl(&records_path)
        .map_err(|e| JoinError::read(&records_path, e))?
        .filter_map(JoinRecord::of)
        .collect();
    if records.is_empty() {
        return Err(JoinError::NoIds(result_path.to_path_buf()));
    }
    let ids: HashSet<&str> = records.iter().flat_map(JoinRecord::ids).collect();
    let keep = |span_id: &str| candidates(span_id).any(|c| ids.contains(c));
    let trace = otlp_read::read(trace_path, &keep)?;
    let first_span = trace.first_id.clone();
    let join = join(&result, &records, trace, (result_path, trace_path));
    // A trace that names none of the run's requests is the wrong file, even where every
    // answer carries its own account: that fallback is for the requests a trace missed.
    if join.matched == 0 {
        return Err(JoinError::NoMatch {
            trace: trace_path.to_path_buf(),
            result: result_path.to_path_buf(),
            spans: join.spans as usize,
            requests: records.len(),
            first_span: first_span.unwrap_or_default(),
            first_request: records[0].request_id.clone(),
        });
    }
    Ok(join)
}

impl JoinRecord {
    /// The ids the request goes by: the one sent, and the server's when it differs.
    fn ids(&self) -> impl Iterator<Item = &str> {
        let server = (self.server_request_id.as_deref()).filter(|s| *s != self.request_id);
        std::iter::once(self.request_id.as_str()).chain(server)
    }
}

/// The ids a span's id may name a request by: as it is, without vLLM's prefix, and without
/// the prefix and a `-N` suffix.
fn candidates(span_id: &str) -> impl Iterator<Item = &str> {
    let bare = ["chatcmpl-", "cmpl-"]
        .iter()
        .find_map(|p| span_id.strip_prefix(*p));
    let unsuffixed = bare.and_then(|b| {
        let (head, n) = b.rsplit_once('-')?;
        (!n.is_empty() && n.bytes().all(|c| c.is_ascii_digit())).then_some(head)
    });
    [Some(span_id), bare, unsuffixed].into_iter().flatten()
}

/// Joins `records` (measured, successful, with ids) with `trace`'s spans.
pub fn join(
    result: &BenchResult,
    records: &[JoinRecord],
    trace: Trace,
    (result_path, trace_path): (&Path, &Path),
) -> Join {
    // Each id a request goes by; an id two requests share names neither.
    let mut by_id: HashMap<&str, Option<usize>> = HashMap::new();
    let mut duplicates: Vec<String> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        for id in r.ids() {
            let slot = by_id.entry(id).or_insert(Some(i));
            if *slot != Some(i) {
                if slot.is_some() {
                    duplicates.push(id.to_string());
                }
                *slot = None;
            }
        }
    }
    // Each request's span; a request two spans name is joined with neither. The spans not
    // kept while reading named no request.
    let mut span_of: Vec<Option<Option<usize>>> = vec![None; records.len()];
    let mut unmatched_spans = trace.request_spans.saturating_sub(trace.spans.len() as u64);
    for (j, s) in trace.spans.iter().enumerate() {
        let found = candidates(&s.request_id).find_map(|c| by_id.get(c));
        match found {
            Some(Some(i)) => {
                let slot = &mut span_of[*i];
                if slot.is_some() {
                    duplicates.push(s.request_id.clone());
                    *slot = Some(None);
                } else {
                    *slot = Some(Some(j));
                }
            }
            // An id two requests share: already counted.
            Some(None) => {}
            None => unmatched_spans += 1,
        }
    }
    let offset = (result.timebase.as_ref()).and_then(|t| t.clock_offset.clone());
    let anchor = anchor_unix_ns(result);
    let time_scale = if result.config.time_scale > 0.0 {
        result.config.time_scale
    } else {
        1.0
    };
    let mut joined = Vec::new();
    let mut implausible = Vec::new();
    let mut matched = 0;
    let (mut from_answers, mut implausible_answers) = (0, 0);
    for (r, slot) in records.iter().zip(&span_of) {
        if let Some(Some(j)) = slot {
            matched += 1;
            let span = &trace.spans[*j];
            match split(r, span, (anchor, offset.as_ref(), time_scale)) {
                Ok(one) => {
                    joined.push(one);
                    continue;
                }
                Err(why) => implausible.push(Implausible {
                    request_id: r.request_id.clone(),
                    why: why.to_string(),
                }),
            }
        }
        match split_answer(r, time_scale) {
            Some(Ok(one)) => {
                from_answers += 1;
                joined.push(one);
            }
            Some(Err(_)) => implausible_answers += 1,
            None => {}
        }
    }
    let from_spans = joined.len() as u64 - from_answers;
    let unmatched_requests = span_of.iter().filter(|s| s.is_none()).count() as u64;
    duplicates.sort();
    duplicates.dedup();
    Join {
        result: result_path.to_path_buf(),
        trace: trace_path.to_path_buf(),
        requests: records.len() as u64,
        spans: trace.request_spans,
        other_spans: trace.other_spans,
        matched,
        unmatched_requests,
        unmatched_spans,
        duplicate_ids: duplicates.len() as u64,
        first_duplicate: duplicates.first().cloned(),
        implausible: implausible.len() as u64,
        implausible_first: implausible.into_iter().take(MAX_LISTED).collect(),
        from_spans,
        from_answers,
        implausible_answers,
        clock_offset: offset,
        time_scale,
        parts: parts(&joined),
        joined,
    }
}

/// Unix time of the records' zero, ns: the run's `started_at` (the clock's anchor).
fn anchor_unix_ns(result: &BenchResult) -> Option<i128> {
    let fmt = time::format_description::well_known::Rfc3339;
    let t = time::OffsetDateTime::parse(&result.started_at, &fmt).ok()?;
    Some(t.unix_timestamp_nanos())
}

/// One request's TTFT split by its span, or why the span is not believed.
fn split(
    r: &JoinRecord,
    s: &ServerSpan,
    (anchor, offset, k): (Option<i128>, Option<&ClockOffset>, f64),
) -> Result<JoinedRequest, SpanError> {
    const MS: f64 = 1e6;
    if let Some(bad) = &s.bad {
        return Err(SpanError::Bad(bad.clone()));
    }
    let (Some(start), Some(end)) = (s.start_unix_ns, s.end_unix_ns) else {
        return Err(SpanError::NoTimes);
    };
    if !(PLAUSIBLE_UNIX_NS.0..=PLAUSIBLE_UNIX_NS.1).contains(&start) || end < start {
        return Err(SpanError::Times { start, end });
    }
    let first = r.first_ns;
    let ttft_ms = first.saturating_sub(r.sent_ns) as f64 / MS;
    let ms = |v: Option<f64>| v.map(|s| s * 1e3 / k);
    let Some(server_ttft_ms) = ms(s.ttft_s) else {
        return Err(SpanError::NoTtft);
    };
    if server_ttft_ms > ttft_ms + ROUNDING_MS {
        return Err(SpanError::TtftLonger {
            server_ttft_ms,
            ttft_ms,
        });
    }
    let (queue_ms, prefill_ms, kv_transfer_ms) =
        (ms(s.queue_s), ms(s.prefill_s), ms(s.kv_transfer_s));
    let inside: f64 = [queue_ms, prefill_ms, kv_transfer_ms]
        .iter()
        .flatten()
        .sum();
    if inside > server_ttft_ms + ROUNDING_MS {
        return Err(SpanError::PartsLonger {
            inside,
            server_ttft_ms,
        });
    }
    let server_other_ms =
        (queue_ms.is_some() && prefill_ms.is_some()).then(|| (server_ttft_ms - inside).max(0.0));
    let network_ms = ttft_ms - server_ttft_ms;
    // The span's start on servebench's clock, against the request's life there.
    let mut uplink_ms = None;
    if let Some(anchor) = anchor {
        let (shift, slack) = match offset {
            Some(o) => (o.offset_ms * MS, o.uncertainty_ms * MS + ROUNDING_MS * MS),
            None => (0.0, UNPROBED_CLOCK_SLACK_NS as f64),
        };
        let local = start as f64 - shift - anchor as f64;
        let (lo, hi) = (r.sent_ns as f64 - slack, first as f64 + slack);
        if local < lo || local > hi {
            return Err(SpanError::OffClock {
                away_s: (local - r.sent_ns as f64) / 1e9,
                slack_s: slack / 1e9,
            });
        }
        if offset.is_some() {
            uplink_ms = Some((local - r.sent_ns as f64) / MS);
        }
    }
    Ok(JoinedRequest {
        id: r.id,
        request_id: r.request_id.clone(),
        span_id: s.request_id.clone(),
        ttft_ms,
        server_ttft_ms,
        network_ms,
        queue_ms,
        prefill_ms,
        kv_transfer_ms,
        server_other_ms,
        uplink_ms,
        downlink_ms: uplink_ms.map(|u| network_ms - u),
        source: Source::Span,
    })
}

/// One request's TTFT split by the account in its own answer (`k`: the server's time scale);
/// `None` when the account has no server TTFT, an error when that is longer than the client's.
fn split_answer(r: &JoinRecord, k: f64) -> Option<Result<JoinedRequest, SpanError>> {
    let a = &r.account;
    let server_ttft_ms = a.server_ttft_ms? / k;
    let ttft_ms = r.first_ns.saturating_sub(r.sent_ns) as f64 / 1e6;
    if server_ttft_ms > ttft_ms + ROUNDING_MS {
        return Some(Err(SpanError::TtftLonger {
            server_ttft_ms,
            ttft_ms,
        }));
    }
    let queue_ms = a.queue_ms.map(|q| q / k);
    let prefill_ms = a.prefill_ms().map(|p| p / k);
    let server_other_ms = match (queue_ms, prefill_ms) {
        (Some(q), Some(p)) => Some((server_ttft_ms - q - p).max(0.0)),
        _ => None,
    };
    Some(Ok(JoinedRequest {
        id: r.id,
        request_id: r.request_id.clone(),
        span_id: String::new(),
        ttft_ms,
        server_ttft_ms,
        network_ms: ttft_ms - server_ttft_ms,
        queue_ms,
        prefill_ms,
        kv_transfer_ms: None,
        server_other_ms,
        uplink_ms: None,
        downlink_ms: None,
        source: Source::Answer,
    }))
}

/// Each part's figures over the joined requests that have it.
fn parts(joined: &[JoinedRequest]) -> Vec<Part> {
    type Get = fn(&JoinedRequest) -> Option<f64>;
    let table: [(&str, Get); 9] = [
        ("ttft", |j| Some(j.ttft_ms)),
        ("network", |j| Some(j.network_ms)),
        ("server_ttft", |j| Some(j.server_ttft_ms)),
        ("queue", |j| j.queue_ms),
        ("prefill", |j| j.prefill_ms),
        ("kv_transfer", |j| j.kv_transfer_ms),
        ("server_other", |j| j.server_other_ms),
        ("uplink", |j| j.uplink_ms),
        ("downlink", |j| j.downlink_ms),
    ];
    let mut out = Vec::new();
    for (name, get) in table {
        let mut v: Vec<f64> = joined.iter().filter_map(get).collect();
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        out.push(Part {
            name: name.into(),
            count: v.len() as u64,
            mean_ms: v.iter().sum::<f64>() / v.len() as f64,
            median_ms: percentile(&v, 50.0).unwrap_or(f64::NAN),
            p99_ms: percentile(&v, 99.0).unwrap_or(f64::NAN),
        });
    }
    out
}

#[cfg(test)]
mod tests;
