//! A workload mix's probes (`--mix` with `--probe-request-rate`): one request at a time, at a
//! fixed low rate while the measured load runs, outside its concurrency cap, each class's in
//! turn; their records are kept apart from the run's (`results::stats::mix` reports them per
//! class). What the probes send, like the mix's requests class by class, is built by
//! `workload::requests`; this file only sends it.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::measure::client::{Client, RequestSpec};
use crate::measure::clock::Clock;
use crate::measure::record::RequestRecord;

/// The most probes of one run (the records are kept in memory until the run ends).
pub const MAX_PROBES: u64 = 100_000;

/// Probes being sent.
pub(super) struct Probes {
    stop: CancellationToken,
    task: JoinHandle<Vec<RequestRecord>>,
}

impl Probes {
    /// Sends `specs` in turn, one every 1/`rate` s from now (a fixed schedule), each on its own
    /// task (no cap), until [`Probes::finish`] or [`MAX_PROBES`]; `abort` cancels those in
    /// flight (a second Ctrl-C).
    pub(super) fn start(
        client: Arc<Client>,
        specs: Vec<RequestSpec>,
        rate: f64,
        clock: Clock,
        abort: CancellationToken,
    ) -> Probes {
        let stop = CancellationToken::new();
        let halt = stop.clone();
        let gap = Duration::try_from_secs_f64(1.0 / rate).unwrap_or(Duration::from_secs(1));
        let task = tokio::spawn(async move {
            let start = tokio::time::Instant::now();
            let mut sending = JoinSet::new();
            let mut records = Vec::new();
            for k in 0..MAX_PROBES {
                let Some(spec) = specs.get(k as usize % specs.len().max(1)) else {
                    break;
                };
                let at = start + gap.mul_f64(k as f64);
                tokio::select! {
                    biased;
                    () = halt.cancelled() => break,
                    () = tokio::time::sleep_until(at) => {}
                }
                let mut spec = spec.clone();
                spec.id = k;
                let (client, abort) = (client.clone(), abort.clone());
                let scheduled_ns = clock.now_ns();
                sending
                    .spawn(async move { client.send(&spec, scheduled_ns, &clock, &abort).await });
                while let Some(Ok(r)) = sending.try_join_next() {
                    records.push(r);
                }
            }
            while let Some(joined) = sending.join_next().await {
                records.extend(joined.ok());
            }
            // A probe still waiting at the prefill gate when the run ended was never sent.
            records.retain(|r| !Client::stopped_at_gate(r));
            records
        });
        Probes { stop, task }
    }

    /// Stops sending and waits for the probes in flight: every probe's record.
    pub(super) async fn finish(self) -> Vec<RequestRecord> {
        self.stop.cancel();
        self.task.await.unwrap_or_default()
    }
}
