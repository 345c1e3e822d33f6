//! The "Server's account" block: over a run's successful requests, how many carried the
//! server's own account of their timing (any form: `request::ServerTimings`), the client's and
//! network's part of TTFT, the server's queue, prefill, decode and ITL, and the records where
//! the server's account and the client's disagree, by kind (docs/metrics.md, "The server's
//! account").

use serde::{Deserialize, Serialize};

use super::distribution::{Distribution, NS_PER_MS};
use super::request::{RequestMetrics, ServerTimings, TimingsForm};
use super::samples::SampleSet;
use crate::config::account_figure::AccountFigure;
use crate::measure::record::{Implausible, RequestRecord};

/// The percentiles of the block's distributions (its median is always there).
pub const ACCOUNT_PERCENTILES: [f64; 3] = [50.0, 90.0, 99.0];

/// How much longer than the client's TTFT the server's may be before they disagree: the
/// plausibility slack of a server's duration (1% and 1 ms: rounding and clock rates).
pub const TTFT_SLACK_REL: f64 = 0.01;
pub const TTFT_SLACK_ABS_MS: f64 = 1.0;
/// How much longer than the server's decode the stream the client saw (first output chunk to
/// last) may be before they disagree: 10% and 10 ms, for the delivery of the last token
/// delayed by the network or a busy client.
pub const DECODE_SLACK_REL: f64 = 0.10;
pub const DECODE_SLACK_ABS_MS: f64 = 10.0;

/// A way a request's server account and the client's own times cannot both be true.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Disagreement {
    /// The server's TTFT (or, where it sends none, its prompt time) is longer than the TTFT
    /// the client measured, beyond [`TTFT_SLACK_REL`] and [`TTFT_SLACK_ABS_MS`].
    ServerTtftLonger,
    /// The server's decode is shorter than the stream the client saw, beyond
    /// [`DECODE_SLACK_REL`] and [`DECODE_SLACK_ABS_MS`].
    DecodeShorter,
    /// The server's cached prompt tokens are more than its prompt tokens.
    CachedAbovePrompt,
}

impl Disagreement {
    pub fn as_str(self) -> &'static str {
        match self {
            Disagreement::ServerTtftLonger => "server_ttft_longer",
            Disagreement::DecodeShorter => "decode_shorter",
            Disagreement::CachedAbovePrompt => "cached_above_prompt",
        }
    }

    /// The disagreements of one successful record, given its figures `m` in the server's
    /// time (`k`: the time scale of its raw times).
    pub fn of(r: &RequestRecord, m: &RequestMetrics, k: f64) -> Vec<Disagreement> {
        let s = ServerTimings::of(r);
        let ttft = m.ttft_ns as f64 / NS_PER_MS;
        let server_ttft = s.server_ttft_ms.or(s.prompt_ms);
        let stream_ms = match (r.first_chunk_ns(), r.last_chunk_ns()) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 * k / NS_PER_MS,
            _ => 0.0,
        };
        let mut out = Vec::new();
        if server_ttft.is_some_and(|t| t > ttft * (1.0 + TTFT_SLACK_REL) + TTFT_SLACK_ABS_MS) {
            out.push(Disagreement::ServerTtftLonger);
        }
        if s.decode_ms
            .is_some_and(|d| stream_ms > d * (1.0 + DECODE_SLACK_REL) + DECODE_SLACK_ABS_MS)
        {
            out.push(Disagreement::DecodeShorter);
        }
        if let (Some(c), Some(p)) = (s.cached_tokens, s.prompt_tokens) {
            if c > p {
                out.push(Disagreement::CachedAbovePrompt);
            }
        }
        out
    }
}

/// The block in a run's summary (`summary.server_account`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerAccount {
    /// Successful measured requests whose answer carried a believed account, of
    /// `successful_requests`.
    pub requests_with_account: u64,
    pub successful_requests: u64,
    /// Those by the form the account came in.
    #[serde(default)]
    pub by_form: FormCounts,
    /// Successful requests whose account was flagged implausible (and so not read).
    #[serde(default)]
    pub implausible: u64,
    /// Client TTFT − server TTFT, ms: the client's and the network's part.
    #[serde(default)]
    pub client_part_ms: Option<Distribution>,
    #[serde(default)]
    pub queue_ms: Option<Distribution>,
    #[serde(default)]
    pub prefill_ms: Option<Distribution>,
    #[serde(default)]
    pub decode_ms: Option<Distribution>,
    #[serde(default)]
    pub itl_ms: Option<Distribution>,
    /// Requests with each disagreement.
    #[serde(default)]
    pub disagreements: DisagreementCounts,
}

impl ServerAccount {
    /// Its figures as views show them and `compare` judges them (`AccountFigure`): coverage,
    /// the mean and p99 of the client's part of TTFT, of the queue and of prefill (each where
    /// some request had it), and the disagreements summed over their kinds.
    pub fn figures(&self) -> Vec<(AccountFigure, f64)> {
        use AccountFigure as F;
        let mut out = Vec::new();
        if self.successful_requests > 0 {
            let share = self.requests_with_account as f64 / self.successful_requests as f64;
            out.push((F::Coverage, share));
        }
        for (d, mean, p99) in [
            (&self.client_part_ms, F::MeanClientPart, F::P99ClientPart),
            (&self.queue_ms, F::MeanQueue, F::P99Queue),
            (&self.prefill_ms, F::MeanPrefill, F::P99Prefill),
        ] {
            let Some(d) = d else { continue };
            out.push((mean, d.mean));
            out.extend(d.at(99.0).map(|v| (p99, v)));
        }
        let disagreements = self.disagreements.all().iter().map(|(_, n)| n).sum::<u64>();
        out.push((F::Disagreements, disagreements as f64));
        out.retain(|(_, v)| v.is_finite());
        out
    }
}

/// Requests by the form of their account (every form a key, so CSV columns stay put).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FormCounts {
    pub vllm: u64,
    pub llamacpp: u64,
    pub tgi: u64,
    pub sglang: u64,
}

/// Requests with each [`Disagreement`] (every kind a key, named by [`Disagreement::as_str`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DisagreementCounts {
    pub server_ttft_longer: u64,
    pub decode_shorter: u64,
    pub cached_above_prompt: u64,
}

impl FormCounts {
    fn count(&mut self, f: TimingsForm) {
        *match f {
            TimingsForm::Vllm => &mut self.vllm,
            TimingsForm::Llamacpp => &mut self.llamacpp,
            TimingsForm::Tgi => &mut self.tgi,
            TimingsForm::Sglang => &mut self.sglang,
        } += 1;
    }
    fn merge(&mut self, o: &FormCounts) {
        self.vllm += o.vllm;
        self.llamacpp += o.llamacpp;
        self.tgi += o.tgi;
        self.sglang += o.sglang;
    }
    /// `(form, count)` of the forms seen.
    pub fn seen(&self) -> Vec<(&'static str, u64)> {
        let all = [
            ("vllm", self.vllm),
            ("llamacpp", self.llamacpp),
            ("tgi", self.tgi),
            ("sglang", self.sglang),
        ];
        all.into_iter().filter(|(_, n)| *n > 0).collect()
    }
}

impl DisagreementCounts {
    fn count(&mut self, d: Disagreement) {
        *match d {
            Disagreement::ServerTtftLonger => &mut self.server_ttft_longer,
            Disagreement::DecodeShorter => &mut self.decode_shorter,
            Disagreement::CachedAbovePrompt => &mut self.cached_above_prompt,
        } += 1;
    }
    fn merge(&mut self, o: &DisagreementCounts) {
        self.server_ttft_longer += o.server_ttft_longer;
        self.decode_shorter += o.decode_shorter;
        self.cached_above_prompt += o.cached_above_prompt;
    }
    /// `(kind, count)` of every kind, in [`Disagreement`]'s order.
    pub fn all(&self) -> [(&'static str, u64); 3] {
        [
            ("server_ttft_longer", self.server_ttft_longer),
            ("decode_shorter", self.decode_shorter),
            ("cached_above_prompt", self.cached_above_prompt),
        ]
    }
}

/// The block's samples as records arrive (mergeable, as the summarizer is).
#[derive(Clone, Debug)]
pub(super) struct AccountSets {
    with: u64,
    successful: u64,
    implausible: u64,
    by_form: FormCounts,
    disagreements: DisagreementCounts,
    sets: [SampleSet; 5],
}

/// The forms whose flag means a record's account was not read.
const FLAGS: [Implausible; 4] = [
    Implausible::ServerTimings,
    Implausible::ServerRequestMetrics,
    Implausible::ServerTimingHeaders,
    Implausible::ServerMetaInfo,
];

impl AccountSets {
    pub(super) fn new(set: impl Fn() -> SampleSet) -> AccountSets {
        AccountSets {
            with: 0,
            successful: 0,
            implausible: 0,
            by_form: FormCounts::default(),
            disagreements: DisagreementCounts::default(),
            sets: [set(), set(), set(), set(), set()],
        }
    }

    /// Adds a successful request; `m` are its figures in the server's time.
    pub(super) fn add(&mut self, r: &RequestRecord, m: &RequestMetrics, k: f64) {
        self.successful += 1;
        self.implausible += FLAGS.iter().any(|f| r.implausible_usage.contains(f)) as u64;
        let s = ServerTimings::of(r);
        for d in Disagreement::of(r, m, k) {
            self.disagreements.count(d);
        }
        let Some(form) = s.form else { return };
        self.with += 1;
        self.by_form.count(form);
        let [client, queue, prefill, decode, itl] = &mut self.sets;
        let ttft = m.ttft_ns as f64 / NS_PER_MS;
        client.extend(s.server_ttft_ms.map(|t| ttft - t));
        queue.extend(s.queue_ms);
        prefill.extend(s.prefill_ms());
        decode.extend(s.decode_ms);
        itl.extend(s.itl_ms);
    }

    pub(super) fn merge(&mut self, other: AccountSets) {
        self.with += other.with;
        self.successful += other.successful;
        self.implausible += other.implausible;
        self.by_form.merge(&other.by_form);
        self.disagreements.merge(&other.disagreements);
        for (a, b) in self.sets.iter_mut().zip(other.sets) {
            a.merge(b);
        }
    }

    /// The block; `None` when no successful request carried an account or a flagged one.
    pub(super) fn finish(self) -> Option<ServerAccount> {
        if self.with == 0 && self.implausible == 0 {
            return None;
        }
        let [client, queue, prefill, decode, itl] = self.sets;
        let ps = &ACCOUNT_PERCENTILES;
        Some(ServerAccount {
            requests_with_account: self.with,
            successful_requests: self.successful,
            by_form: self.by_form,
            implausible: self.implausible,
            client_part_ms: client.finish(ps),
            queue_ms: queue.finish(ps),
            prefill_ms: prefill.finish(ps),
            decode_ms: decode.finish(ps),
            itl_ms: itl.finish(ps),
            disagreements: self.disagreements,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::TokenSource;
    use serde_json::json;

    /// A successful record sent at 0 whose chunks came at `chunks` ms.
    fn record(chunks: &[u64]) -> RequestRecord {
        RequestRecord {
            chunk_ns: chunks.iter().map(|ms| ms * 1_000_000).collect(),
            end_ns: chunks.last().unwrap() * 1_000_000,
            prompt_tokens: Some(30),
            prompt_tokens_source: Some(TokenSource::ServerUsage),
            output_tokens: Some(chunks.len() as u64),
            ..RequestRecord::default()
        }
    }

    fn disagreements(r: &RequestRecord) -> Vec<Disagreement> {
        Disagreement::of(r, &RequestMetrics::of(r).unwrap(), 1.0)
    }

    /// Each form read into one account, by hand.
    #[test]
    fn every_form_is_read_into_one_account() {
        let mut r = record(&[100, 110, 120]);
        r.server_request_metrics = Some(json!({"time_to_first_token_ms": 80.0,
            "queue_time_ms": 30.0, "generation_time_ms": 20.0, "mean_itl_ms": 10.0}));
        let s = ServerTimings::of(&r);
        assert_eq!(s.form, Some(TimingsForm::Vllm));
        assert_eq!(
            (s.prefill_ms(), s.decode_ms, s.itl_ms),
            (Some(50.0), Some(20.0), Some(10.0))
        );
        assert_eq!(s.prompt_tokens, Some(30));
        let mut r = record(&[100, 110, 120]);
        r.server_timings = Some(json!({"prompt_n": 20, "cache_n": 10, "prompt_ms": 60.0,
            "predicted_n": 3, "predicted_ms": 20.0, "predicted_per_token_ms": 10.0}));
        let s = ServerTimings::of(&r);
        assert_eq!(s.form, Some(TimingsForm::Llamacpp));
        assert_eq!((s.prompt_tokens, s.cached_tokens), (Some(30), Some(10)));
        assert_eq!((s.prefill_ms(), s.decode_ms), (Some(60.0), Some(20.0)));
        let mut r = record(&[100, 110, 120]);
        r.server_timing_headers = Some(json!({"x-queue-time": "7", "x-time-per-token": "40",
            "x-prompt-tokens": "30"}));
        let s = ServerTimings::of(&r);
        assert_eq!(s.form, Some(TimingsForm::Tgi));
        assert_eq!(
            (s.queue_ms, s.itl_ms, s.server_ttft_ms),
            (Some(7.0), Some(40.0), None)
        );
        let mut r = record(&[100, 110, 120]);
        r.server_meta_info = Some(json!({"prompt_tokens": 30, "cached_tokens": 4,
            "completion_tokens": 3, "queue_time": 0.01, "request_received_ts": 100.0,
            "prefill_finished_ts": 100.09, "decode_finished_ts": 100.11}));
        let s = ServerTimings::of(&r);
        assert_eq!(s.form, Some(TimingsForm::Sglang));
        let near = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-6;
        assert!(near(s.server_ttft_ms, 90.0) && near(s.queue_ms, 10.0));
        assert!(near(s.prefill_ms(), 80.0) && near(s.decode_ms, 20.0) && near(s.itl_ms, 10.0));
    }

    /// A form the client flagged is not read; the block counts it as implausible.
    #[test]
    fn hostile_accounts_are_flagged_not_read() {
        let mut r = record(&[100, 110]);
        r.server_timing_headers = Some(json!({"x-queue-time": "1e18"}));
        r.implausible_usage = vec![Implausible::ServerTimingHeaders];
        assert_eq!(
            ServerTimings::of(&r),
            ServerTimings {
                prompt_tokens: Some(30),
                ..ServerTimings::default()
            }
        );
        let mut sets = AccountSets::new(SampleSet::default);
        sets.add(&r, &RequestMetrics::of(&r).unwrap(), 1.0);
        let a = sets.finish().unwrap();
        assert_eq!((a.requests_with_account, a.implausible), (0, 1));
        // A NaN or negative number in an unflagged object is not read either.
        let mut r = record(&[100, 110]);
        r.server_request_metrics =
            Some(json!({"queue_time_ms": -3.0, "time_to_first_token_ms": "x"}));
        let s = ServerTimings::of(&r);
        assert_eq!((s.queue_ms, s.server_ttft_ms), (None, None));
    }

    /// Each disagreement at its tolerance's edge.
    #[test]
    fn disagreements_by_hand() {
        // Client TTFT 100 ms: the server's may be up to 102 ms (1% and 1 ms).
        let mut r = record(&[100, 110, 300]);
        r.server_request_metrics = Some(json!({"time_to_first_token_ms": 101.9}));
        assert_eq!(disagreements(&r), []);
        r.server_request_metrics = Some(json!({"time_to_first_token_ms": 102.1}));
        assert_eq!(disagreements(&r), [Disagreement::ServerTtftLonger]);
        // llama.cpp: its prompt time stands in for the server's TTFT.
        r.server_request_metrics = None;
        r.server_timings = Some(json!({"prompt_ms": 150.0}));
        assert_eq!(disagreements(&r), [Disagreement::ServerTtftLonger]);
        // The client's stream is 200 ms: a decode of 173 ms is within 10% and 10 ms.
        r.server_timings = Some(json!({"predicted_ms": 173.0}));
        assert_eq!(disagreements(&r), []);
        r.server_timings = Some(json!({"predicted_ms": 170.0}));
        assert_eq!(disagreements(&r), [Disagreement::DecodeShorter]);
        r.server_timings = Some(json!({"cache_n": 31, "prompt_n": 0}));
        r.prompt_tokens = Some(30);
        r.server_timings = None;
        r.server_meta_info = Some(json!({"prompt_tokens": 30, "cached_tokens": 31}));
        assert_eq!(disagreements(&r), [Disagreement::CachedAbovePrompt]);
        let mut sets = AccountSets::new(SampleSet::default);
        sets.add(&r, &RequestMetrics::of(&r).unwrap(), 1.0);
        let a = sets.finish().unwrap();
        assert_eq!(a.disagreements.cached_above_prompt, 1);
        assert_eq!(a.by_form.sglang, 1);
    }
}
