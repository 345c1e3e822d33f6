//! A run's request timeline for the HTML report (docs/analysis.md, "Request timeline"): one
//! [`Row`] per measured request, sampled evenly in schedule order to at most
//! [`TIMELINE_ROWS`], each split into its phases: the client's queue (scheduled → began), a
//! new connection's setup, the wait for the first token (with the server's queue and prefill
//! where the server said them, `results::stats::ServerTimings::of`), the decode (first → last
//! token), and its inter-token gaps longer than a threshold.
//!
//! Reads the records file twice, one line at a time: once for every measured request's place
//! in the schedule, once for the sampled ones, so memory holds the rows and 16 bytes per
//! request, whatever the file's size. Times are seconds from the first scheduled send, on the
//! client's clock. Draws nothing (that is `render::html_timeline`).

use std::collections::HashSet;
use std::path::Path;

use crate::measure::record::RequestRecord;
use crate::results::stats::ServerTimings;
use crate::views::error::ViewError;
use crate::views::samples::records_in;

/// Rows drawn at most: more requests are sampled evenly in schedule order.
pub const TIMELINE_ROWS: usize = 2000;
/// Slow gaps drawn at most per row (all are counted).
pub const SLOW_MARKS_PER_ROW: usize = 32;
/// `report --timeline-itl-ms`'s default: a gap between output chunks longer than this is
/// marked slow (a stall a reader of a stream notices).
pub const DEFAULT_SLOW_ITL_MS: f64 = 100.0;

/// A span of time, seconds from the first scheduled send: (start, end).
pub type Span = (f64, f64);

/// One request on the timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The request's place in the run's schedule (its record's `id`).
    pub id: u64,
    /// `None` for a success, else its failure kind (`timeout`, `http_status`, ...).
    pub failure: Option<&'static str>,
    pub scheduled: f64,
    /// When the client began it: a new connection's setup, else the first byte's write.
    pub began: f64,
    pub connect: Option<Span>,
    pub sent: f64,
    /// The server's queue and prefill, placed ending at the first token (the server's account
    /// carries durations, not times on the client's clock); absent where the server said none.
    pub server_queue: Option<Span>,
    pub prefill: Option<Span>,
    pub first_token: Option<f64>,
    pub last_token: Option<f64>,
    pub end: f64,
    /// Gaps between output chunks longer than the threshold, at most [`SLOW_MARKS_PER_ROW`].
    pub slow: Vec<Span>,
    /// Every such gap of the request, drawn or not.
    pub slow_count: u64,
}

/// The sampled rows and what the page says of them.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestTimeline {
    pub rows: Vec<Row>,
    /// Measured requests in the records file (warm-ups are not).
    pub total: u64,
    /// The latest end of a drawn row, seconds.
    pub span_s: f64,
    /// The slow-gap threshold, ms.
    pub slow_itl_ms: f64,
    /// Rows with the server's queue or prefill.
    pub server_rows: u64,
    /// The run's steady window, seconds, when it has one.
    pub steady: Option<Span>,
    /// Records left out because their times are not in the order they happen (a file edited
    /// by hand or corrupted), and lines of the file that were not records.
    pub disordered: u64,
    pub unreadable_lines: u64,
}

impl RequestTimeline {
    /// What the page says of the sampling: "all 40 measured requests" or "2000 of 12345
    /// measured requests, sampled evenly in schedule order" (rows left out for their times are
    /// counted as chosen: the page says so apart).
    pub fn sampling(&self) -> String {
        let chosen = self.rows.len() as u64 + self.disordered;
        if chosen == self.total {
            format!("all {chosen} measured requests")
        } else {
            format!(
                "{chosen} of {} measured requests, sampled evenly in schedule order",
                self.total
            )
        }
    }
}

/// The timeline of the records file `path`; `steady_ns` is the run's steady window on the
/// records' clock, `slow_itl_ms` the slow-gap threshold.
pub fn timeline(
    path: &Path,
    steady_ns: Option<[u64; 2]>,
    slow_itl_ms: f64,
) -> Result<RequestTimeline, ViewError> {
    let mut order: Vec<(u64, u64)> = records_in(path)?
        .filter(|r| !r.warmup)
        .map(|r| (r.scheduled_ns, r.id))
        .collect();
    order.sort_unstable();
    let total = order.len();
    let t0 = order.first().map_or(0, |o| o.0);
    let keep: HashSet<(u64, u64)> = (0..total.min(TIMELINE_ROWS))
        .map(|i| order[i * total / total.min(TIMELINE_ROWS)])
        .collect();
    drop(order);
    let sec = |ns: u64| ns.saturating_sub(t0) as f64 / 1e9;
    let slow_ns = slow_itl_ms * 1e6;
    let mut rows = Vec::with_capacity(keep.len());
    let mut seen = HashSet::new();
    let (mut disordered, mut server_rows) = (0, 0);
    let mut lines = crate::measure::record::read_jsonl(path).map_err(|error| ViewError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    for r in lines.by_ref() {
        let key = (r.scheduled_ns, r.id);
        if r.warmup || !keep.contains(&key) || !seen.insert(key) {
            continue;
        }
        if !r.times_are_ordered() {
            disordered += 1;
            continue;
        }
        let row = row_of(&r, &sec, slow_ns);
        server_rows += u64::from(row.server_queue.is_some() || row.prefill.is_some());
        rows.push(row);
    }
    rows.sort_by(|a, b| a.scheduled.total_cmp(&b.scheduled).then(a.id.cmp(&b.id)));
    Ok(RequestTimeline {
        span_s: rows.iter().map(|r| r.end).fold(0.0, f64::max),
        rows,
        total: total as u64,
        slow_itl_ms,
        server_rows,
        steady: steady_ns.map(|[a, z]| (sec(a), sec(z))),
        disordered,
        unreadable_lines: lines.skipped().count,
    })
}

/// One record's row (its times already checked to be in order).
fn row_of(r: &RequestRecord, sec: &dyn Fn(u64) -> f64, slow_ns: f64) -> Row {
    let sent = sec(r.sent_ns);
    let first = r.first_chunk_ns().map(sec);
    let server = ServerTimings::of(r);
    let (mut server_queue, mut prefill) = (None, None);
    if let (Some(first), Some(p)) = (first, server.prefill_ms()) {
        let at = |ms: f64| (first - ms / 1e3).max(sent);
        let start = at(p);
        prefill = Some((start, first));
        if let (Some(ttft), Some(_)) = (server.server_ttft_ms, server.queue_ms) {
            server_queue = Some((at(ttft), start));
        }
    }
    let gaps = r
        .chunk_ns
        .windows(2)
        .filter(|w| (w[1] - w[0]) as f64 > slow_ns);
    let slow_count = gaps.clone().count() as u64;
    Row {
        id: r.id,
        failure: (!r.is_ok()).then(|| r.outcome.failure_kind().map_or("failed", |k| k.as_str())),
        scheduled: sec(r.scheduled_ns),
        began: sec(r.began_ns()),
        connect: r
            .connect_start_ns
            .zip(r.connect_end_ns)
            .map(|(a, z)| (sec(a), sec(z))),
        sent,
        server_queue,
        prefill,
        first_token: first,
        last_token: r.last_chunk_ns().map(sec),
        end: sec(r.end_ns),
        slow: gaps
            .take(SLOW_MARKS_PER_ROW)
            .map(|w| (sec(w[0]), sec(w[1])))
            .collect(),
        slow_count,
    }
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
mod tests;
