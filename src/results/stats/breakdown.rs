//! Where a request's time to first token went (docs/metrics.md, "TTFT breakdown"): the
//! client's own queueing and connection setup, which servebench measures, and the server's
//! queueing and prefill, which only the server can say (vLLM's per-request `metrics`,
//! llama.cpp's `timings`, servebench's simulator). What is left of TTFT once the server's own
//! time to first token is known is the first token's way to the client. A part nobody reported
//! is absent, never guessed.

use serde::{Deserialize, Serialize};

use super::distribution::{Distribution, NS_PER_MS};
use super::request::{RequestMetrics, ServerTimings};
use super::samples::SampleSet;
use crate::config::figure::TtftPart;
use crate::measure::record::RequestRecord;

/// TTFT's parts, ms, each over the successful requests where it is known.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TtftBreakdown {
    /// When the client began the request (connect, or write) − its scheduled time.
    pub client_queue_ms: Option<Distribution>,
    /// A new connection's setup; requests on a reused connection count 0.
    pub connection_setup_ms: Option<Distribution>,
    /// The server's queueing before prefill (vLLM `queue_time_ms`).
    pub server_queue_ms: Option<Distribution>,
    /// Prefill: the server's TTFT less its queueing (vLLM), or `prompt_ms` (llama.cpp).
    pub prefill_ms: Option<Distribution>,
    /// TTFT − the server's own TTFT (from its receipt of the request to its first token):
    /// the request's and the first token's way across the network and through both sides'
    /// stacks.
    pub first_token_transfer_ms: Option<Distribution>,
}

/// The parts in order: the name the report prints and the part (a view holds its mean under
/// `config::figure::FigureKey::TtftPart`).
pub const PARTS: [(&str, TtftPart); 5] = [
    ("client queue", TtftPart::ClientQueue),
    ("connection setup", TtftPart::ConnectionSetup),
    ("server queue", TtftPart::ServerQueue),
    ("prefill", TtftPart::Prefill),
    ("first-token transfer", TtftPart::FirstTokenTransfer),
];

/// The rest of mean TTFT that no server part accounts for (see
/// [`TtftBreakdown::rest_of_ttft_ms`]): charts stack it on the parts so a bar is as tall as
/// the mean TTFT from scheduled.
pub const REST: (&str, TtftPart) = ("TTFT not broken down", TtftPart::Rest);

impl TtftBreakdown {
    /// The parts in the order of [`PARTS`], with their names as the report prints them.
    pub fn parts(&self) -> [(&'static str, Option<&Distribution>); 5] {
        let d = [
            &self.client_queue_ms,
            &self.connection_setup_ms,
            &self.server_queue_ms,
            &self.prefill_ms,
            &self.first_token_transfer_ms,
        ];
        std::array::from_fn(|i| (PARTS[i].0, d[i].as_ref()))
    }

    /// Mean TTFT less the means of the server's parts that are known (server queue, prefill,
    /// first-token transfer), at least 0: all of it where the server reported nothing.
    pub fn rest_of_ttft_ms(&self, mean_ttft_ms: f64) -> f64 {
        let server: f64 = self.parts()[2..]
            .iter()
            .filter_map(|(_, d)| d.map(|d| d.mean))
            .sum();
        (mean_ttft_ms - server).max(0.0)
    }

    /// Each known part's mean, and the rest of `mean_ttft_ms` ([`REST`]).
    pub fn part_means(&self, mean_ttft_ms: f64) -> impl Iterator<Item = (TtftPart, f64)> + '_ {
        PARTS
            .iter()
            .zip(self.parts())
            .filter_map(|((_, part), (_, d))| Some((*part, d?.mean)))
            .chain([(REST.1, self.rest_of_ttft_ms(mean_ttft_ms))])
    }
}

/// The samples of each part as records arrive (mergeable, as the summarizer is).
#[derive(Clone, Debug)]
pub(super) struct BreakdownSets([SampleSet; 5]);

impl BreakdownSets {
    pub(super) fn new(set: impl Fn() -> SampleSet) -> BreakdownSets {
        BreakdownSets([set(), set(), set(), set(), set()])
    }

    /// Adds a successful request; `m` are its figures already in the server's time, `k` the
    /// time scale for raw record times.
    pub(super) fn add(&mut self, r: &RequestRecord, m: &RequestMetrics, k: f64) {
        let ms_k = |ns: u64| ns as f64 * k / NS_PER_MS;
        let server = ServerTimings::of(r);
        let [client, setup, queue, prefill, transfer] = &mut self.0;
        client.add(ms_k(r.began_ns().saturating_sub(r.scheduled_ns)));
        if r.connection_reused.is_some() {
            setup.add(r.setup_ns().map_or(0.0, ms_k));
        }
        queue.extend(server.queue_ms);
        prefill.extend(server.prefill_ms());
        transfer.extend(
            server
                .server_ttft_ms
                .map(|t| m.ttft_ns as f64 / NS_PER_MS - t),
        );
    }

    pub(super) fn merge(&mut self, other: BreakdownSets) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            a.merge(b);
        }
    }

    pub(super) fn finish(self, ps: &[f64]) -> TtftBreakdown {
        let [client, setup, queue, prefill, transfer] = self.0;
        TtftBreakdown {
            client_queue_ms: client.finish(ps),
            connection_setup_ms: setup.finish(ps),
            server_queue_ms: queue.finish(ps),
            prefill_ms: prefill.finish(ps),
            first_token_transfer_ms: transfer.finish(ps),
        }
    }
}
