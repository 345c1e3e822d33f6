//! A workload mix's run-time parts (`--mix`, issue 27 §2): the run's requests built class by
//! class (each with its own lengths and seed, in the mix's order: `workload::mix`), and the
//! probes (`--probe-request-rate`): one request at a time, at a fixed low rate while the
//! measured load runs, outside its concurrency cap, each class's in turn; their records are
//! kept apart from the run's (`results::stats::mix` reports them per class).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::config::mix::{Mix, MixAlone};
use crate::config::RunConfig;
use crate::measure::client::{Client, RequestSpec};
use crate::measure::clock::Clock;
use crate::measure::record::RequestRecord;
use crate::workload::error::WorkloadError;
use crate::workload::{self, PromptTokenizer};

/// The most probes of one run (the records are kept in memory until the run ends).
pub const MAX_PROBES: u64 = 100_000;

/// The run's `pool` requests of `mix`: each class's share built with its own workload and a
/// seed of its own from `seed`, then put in the mix's order and tagged. A class's run alone
/// (`--mix-alone`, `MixAlone::Class`) builds only that class's, from the same seed, so its
/// requests are the ones it sent in the mixed run (the random dataset draws them in order).
pub(super) async fn build(
    mix: &Mix,
    cfg: &RunConfig,
    tokenizer: &PromptTokenizer,
    client: &Client,
    pool: u64,
    seed: u64,
) -> Result<Vec<RequestSpec>, WorkloadError> {
    let order = match cfg.mix_alone {
        Some(MixAlone::Class(k)) => vec![k; usize::try_from(pool).unwrap_or(0)],
        _ => mix.order(pool),
    };
    let mut per_class = Vec::with_capacity(mix.classes.len());
    for i in 0..mix.classes.len() {
        let w = mix.workload_of(i, &cfg.workload);
        let count = workload::mix::count(&order, i);
        if count == 0 {
            per_class.push(Vec::new());
            continue;
        }
        let seed = seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let (base, model) = (client.base_url(), &cfg.model);
        let built =
            workload::build_for(&w, tokenizer, client, base, model, count, seed, false).await?;
        per_class.push(built);
    }
    Ok(workload::mix::interleave(mix, &order, per_class))
}

/// The first request of each class in `requests`, in the classes' order: what the probes send.
pub(super) fn probe_specs(mix: &Mix, requests: &[RequestSpec]) -> Vec<RequestSpec> {
    (0..mix.classes.len() as u32)
        .filter_map(|c| {
            (requests.iter())
                .find(|r| r.class.as_ref().is_some_and(|t| t.index == c))
                .cloned()
        })
        .collect()
}

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
