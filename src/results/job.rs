//! One agentic job's figures from its calls' records (docs/metrics.md, "Jobs"): its status
//! (completed, failed, cut), its completion time, its critical path and the time beyond it,
//! its calls, tokens and prefix-cache hits, and its first call's TTFT.
//!
//! A [`JobCalls`] gathers what each call's record says (a few numbers, not the record) until
//! the job is whole or the run's records end; [`JobCalls::finish`] then judges it. Times are
//! the records' (`sent_ns` and `end_ns`, on the run's clock), read in the server's time
//! (`time_scale`), as every other figure; a call's gap is already in the server's time. The
//! run's figures over jobs are `results::jobs`'.

use std::collections::BTreeMap;

use crate::measure::record::{FailureKind, RequestRecord, TokenSource};

/// What one call's record says, as a job's figures need it.
#[derive(Clone, Debug, PartialEq)]
struct Call {
    after: Vec<u32>,
    gap_ms: f64,
    sent_ns: u64,
    end_ns: u64,
    ok: bool,
    /// Failed by a stop or a time window's end (`cancelled`): the job was cut, not failed.
    cancelled: bool,
    /// First output chunk − send, ns; `None` for a call with no output chunk.
    ttft_ns: Option<u64>,
    prompt_tokens: u64,
    output_tokens: u64,
    /// (cached tokens, the server's prompt tokens) when the server gave both.
    cache: Option<(u64, u64)>,
}

/// How a job ended (docs/metrics.md, "Job status").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// Every one of its calls has a record, and each succeeded.
    Completed,
    /// A call of it failed (other than by being cancelled when the run stopped).
    Failed,
    /// Fewer of its calls have records than it has, and none failed: the run stopped (or its
    /// time window ended) first.
    Cut,
}

/// One job's figures. The times are `None` unless it completed.
#[derive(Clone, Debug, PartialEq)]
pub struct JobOutcome {
    pub job: u64,
    pub status: JobStatus,
    /// The first call's send to the last call's end, ms.
    pub jct_ms: Option<f64>,
    /// The longest chain through `after` of each call's gap and send-to-end time, ms.
    pub critical_path_ms: Option<f64>,
    /// JCT − critical path, ms.
    pub beyond_ms: Option<f64>,
    /// Its first call's (call 0's) TTFT, ms.
    pub first_ttft_ms: Option<f64>,
    /// Calls with a record.
    pub calls: u64,
    /// Prompt and output tokens of its successful calls (each record's one source).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Σ cached tokens and Σ the server's prompt tokens, over its successful calls whose
    /// server gave both; `None`: none did.
    pub cache: Option<(u64, u64)>,
}

/// A job's calls gathered so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobCalls {
    /// Its calls by number; a second record of one number is not kept.
    calls: BTreeMap<u32, Call>,
    /// How many calls the job has: the most any of its records says.
    of: u32,
}

impl JobCalls {
    /// Adds a call's record (a record with no place is the only call of its job).
    pub fn add(&mut self, r: &RequestRecord) {
        let place = r.call.clone().unwrap_or_default();
        self.of = self.of.max(place.of).max(place.call.saturating_add(1));
        let cache = match (
            r.cached_prompt_tokens,
            r.prompt_tokens,
            r.prompt_tokens_source,
        ) {
            (Some(c), Some(p), Some(TokenSource::ServerUsage)) => Some((c.min(p), p)),
            _ => None,
        };
        let call = Call {
            after: place.after,
            gap_ms: if place.gap_ms.is_finite() {
                place.gap_ms.max(0.0)
            } else {
                0.0
            },
            sent_ns: r.sent_ns,
            end_ns: r.end_ns.max(r.sent_ns),
            ok: r.is_ok(),
            cancelled: r.outcome.failure_kind() == Some(FailureKind::Cancelled),
            ttft_ns: r.first_chunk_ns().map(|t| t.saturating_sub(r.sent_ns)),
            prompt_tokens: r.prompt_tokens.unwrap_or(0),
            output_tokens: r.output_tokens.unwrap_or(r.chunk_ns.len() as u64),
            cache,
        };
        self.calls.entry(place.call).or_insert(call);
    }

    /// True once every call of the job has a record.
    pub fn is_whole(&self) -> bool {
        self.calls.len() as u64 >= u64::from(self.of)
    }

    /// The job's figures, in a clock `time_scale` times slower (the simulated server's).
    pub fn finish(&self, job: u64, time_scale: f64) -> JobOutcome {
        let calls = self.calls.values();
        let failed = calls.clone().any(|c| !c.ok && !c.cancelled);
        let status = if failed {
            JobStatus::Failed
        } else if self.is_whole() && self.calls.values().all(|c| c.ok) {
            JobStatus::Completed
        } else {
            JobStatus::Cut
        };
        let ok = || self.calls.values().filter(|c| c.ok);
        let cache = ok()
            .filter_map(|c| c.cache)
            .reduce(|a, b| (a.0.saturating_add(b.0), a.1.saturating_add(b.1)));
        let ms = |ns: u64| ns as f64 * time_scale / 1e6;
        let mut out = JobOutcome {
            job,
            status,
            jct_ms: None,
            critical_path_ms: None,
            beyond_ms: None,
            first_ttft_ms: None,
            calls: self.calls.len() as u64,
            input_tokens: ok().fold(0u64, |n, c| n.saturating_add(c.prompt_tokens)),
            output_tokens: ok().fold(0u64, |n, c| n.saturating_add(c.output_tokens)),
            cache,
        };
        if status == JobStatus::Completed {
            let first = self.calls.values().map(|c| c.sent_ns).min().unwrap_or(0);
            let last = self.calls.values().map(|c| c.end_ns).max().unwrap_or(first);
            let jct = ms(last.saturating_sub(first));
            let critical = self.critical_path_ms(time_scale);
            out.jct_ms = Some(jct);
            out.critical_path_ms = Some(critical);
            out.beyond_ms = Some(jct - critical);
            out.first_ttft_ms = (self.calls.get(&0)).and_then(|c| c.ttft_ns).map(ms);
        }
        out
    }

    /// The longest chain through `after`: each call finishes at the latest finish of the
    /// calls it waits for, plus its gap, plus its own send-to-end time; the path is the
    /// latest finish. Calls are numbered upstream first, so one pass in order suffices; an
    /// `after` naming no earlier call of the job counts as the job's start.
    fn critical_path_ms(&self, time_scale: f64) -> f64 {
        let mut finish: BTreeMap<u32, f64> = BTreeMap::new();
        for (&n, c) in &self.calls {
            let start = (c.after.iter())
                .filter(|&&a| a < n)
                .filter_map(|a| finish.get(a).copied())
                .fold(0.0, f64::max);
            let own = c.end_ns.saturating_sub(c.sent_ns) as f64 * time_scale / 1e6;
            finish.insert(n, start + c.gap_ms + own);
        }
        finish.values().copied().fold(0.0, f64::max)
    }
}
