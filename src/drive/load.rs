//! Arrival processes and the one driver that sends a run's requests.
//!
//! [`arrival_offsets`] turns a [`LoadSpec`] into send offsets (a pure, seeded function, so a
//! run's schedule is reproducible). [`drive`] sends each request at its offset, gated by the
//! concurrency limit, and hands every finished [`RequestRecord`] to a channel. It does not
//! compute statistics, print, or write files.
//!
//! Every arrival process goes through the same driver: to add one, add a case to
//! [`arrival_offsets`].
//!
//! Client-side queueing is never hidden: a record keeps both the scheduled and the actual send
//! time, so the wait for a concurrency slot shows up as schedule lag.

use std::sync::Arc;

use rand::SeedableRng;
use rand_distr::{Distribution, Gamma};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::{LoadSpec, RequestRate};
use crate::drive::progress::Live;
use crate::measure::client::{Client, RequestSpec};
use crate::measure::clock::Clock;
use crate::measure::record::RequestRecord;

/// Send offsets in nanoseconds from the start of the run, one per request, non-decreasing.
///
/// `inf` rate: all at offset 0 (as vLLM's default). A finite rate λ: inter-arrival gaps drawn
/// from Gamma(shape = burstiness, scale = 1 / (λ · burstiness)), so the mean rate is λ and
/// burstiness 1 is a Poisson process. The first request goes at offset 0. Gaps are not
/// rescaled to land the last request at N/λ (newer vLLM does that); each gap is independent.
pub fn arrival_offsets(spec: &LoadSpec, n: u64) -> impl Iterator<Item = u64> {
    let gamma = match spec.request_rate {
        RequestRate::Infinite => None,
        RequestRate::PerSecond(rate) => {
            Gamma::new(spec.burstiness, 1.0 / (rate * spec.burstiness)).ok()
        }
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(spec.seed);
    let mut t_s = 0.0f64;
    (0..n).map(move |i| {
        if let (Some(g), true) = (&gamma, i > 0) {
            t_s += g.sample(&mut rng);
        }
        (t_s * 1e9) as u64
    })
}

/// Where the driver reports: finished records, and the live `sent` counter.
#[derive(Clone, Debug)]
pub struct Sink {
    pub records: mpsc::UnboundedSender<RequestRecord>,
    pub live: Arc<Live>,
    /// The simulated server's clock speed-up (`--time-scale`); 1 for real servers.
    pub time_scale: f64,
    /// Cancelled to end the grace period at once (a second Ctrl-C).
    pub abort: CancellationToken,
}

/// What the driver did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriveSummary {
    /// Requests handed to the client.
    pub sent: u64,
    /// Requests never sent because the run was stopped.
    pub unsent: u64,
}

/// Sends `requests` (ids ascending, from the run's schedule numbered from 0) by the schedule of
/// `spec`, starting `start_ns` after the clock's anchor.
///
/// When `stop` is cancelled no new request is sent; in-flight requests get `spec.grace_s`
/// to finish, then they are cancelled and end as `cancelled`. Every sent request's
/// record reaches `sink.records`, in completion order.
pub async fn drive(
    client: Arc<Client>,
    requests: Vec<RequestSpec>,
    spec: &LoadSpec,
    clock: Clock,
    start_ns: u64,
    stop: CancellationToken,
    sink: Sink,
) -> DriveSummary {
    let time_scale = if sink.time_scale > 0.0 {
        sink.time_scale
    } else {
        1.0
    };
    let cancel = CancellationToken::new();
    let total = requests.len() as u64;
    let gate = spec
        .concurrency_cap()
        .map(|c| Arc::new(Semaphore::new(c.min(Semaphore::MAX_PERMITS as u64) as usize)));
    let mut tasks = JoinSet::new();
    let mut sent = 0u64;
    // A request's send offset is the `id`-th of the run's one schedule, so a shard, which
    // sends only some ids, keeps their global send times (see `shard`).
    let last_id = requests.last().map_or(0, |r| r.id);
    let mut schedule = (0u64..).zip(arrival_offsets(spec, last_id + 1));
    for req in requests {
        let Some((_, offset)) = schedule.find(|&(id, _)| id == req.id) else {
            break;
        };
        // The schedule is in the server's time: a simulator running `time_scale` times faster
        // than real time gets it compressed by the same factor.
        let scheduled_ns = start_ns.saturating_add((offset as f64 / time_scale) as u64);
        let at = clock.instant_at(scheduled_ns);
        if at > tokio::time::Instant::now() {
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                () = tokio::time::sleep_until(at) => {}
            }
        } else if stop.is_cancelled() {
            break;
        }
        let permit = match &gate {
            Some(g) => tokio::select! {
                biased;
                () = stop.cancelled() => break,
                p = g.clone().acquire_owned() => p.ok(),
            },
            None => None,
        };
        let (client, cancel, out) = (client.clone(), cancel.clone(), sink.records.clone());
        tasks.spawn(async move {
            let record = client.send(&req, scheduled_ns, &clock, &cancel).await;
            drop(permit);
            let _ = out.send(record);
        });
        sent += 1;
        sink.live
            .sent
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        while tasks.try_join_next().is_some() {}
    }
    let unsent = total - sent;
    // In-flight requests run to their end; once `stop` is cancelled (now or later, also after
    // every request was sent) they have the grace period, and `abort` ends it at once.
    let grace = async {
        stop.cancelled().await;
        tokio::time::sleep(spec.grace()).await;
    };
    tokio::pin!(grace);
    loop {
        tokio::select! {
            joined = tasks.join_next() => if joined.is_none() { break },
            () = &mut grace => { cancel.cancel(); break }
            () = sink.abort.cancelled() => { cancel.cancel(); break }
        }
    }
    while tasks.join_next().await.is_some() {}
    DriveSummary { sent, unsent }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(rate: RequestRate, burstiness: f64, seed: u64) -> LoadSpec {
        LoadSpec {
            request_rate: rate,
            burstiness,
            seed,
            ..LoadSpec::default()
        }
    }

    #[test]
    fn infinite_rate_sends_everything_at_zero() {
        let v: Vec<_> = arrival_offsets(&spec(RequestRate::Infinite, 1.0, 0), 5).collect();
        assert_eq!(v, vec![0; 5]);
    }

    #[test]
    fn poisson_offsets_are_seeded_monotone_and_have_the_right_mean_rate() {
        let s = spec(RequestRate::PerSecond(20.0), 1.0, 7);
        let a: Vec<_> = arrival_offsets(&s, 20_000).collect();
        let b: Vec<_> = arrival_offsets(&s, 20_000).collect();
        assert_eq!(a, b);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        let rate = (a.len() - 1) as f64 / (*a.last().unwrap() as f64 / 1e9);
        assert!((rate - 20.0).abs() < 0.6, "rate {rate}");
        let other: Vec<_> =
            arrival_offsets(&spec(RequestRate::PerSecond(20.0), 1.0, 8), 10).collect();
        assert_ne!(&a[..10], &other[..]);
    }

    #[test]
    fn burstiness_changes_the_spread_not_the_mean() {
        let gaps = |b: f64| {
            let v: Vec<f64> = arrival_offsets(&spec(RequestRate::PerSecond(10.0), b, 3), 20_000)
                .map(|x| x as f64 / 1e9)
                .collect();
            let g: Vec<f64> = v.windows(2).map(|w| w[1] - w[0]).collect();
            let mean = g.iter().sum::<f64>() / g.len() as f64;
            let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / g.len() as f64;
            (mean, var.sqrt() / mean)
        };
        let (m1, cv1) = gaps(1.0);
        let (m4, cv4) = gaps(4.0);
        assert!((m1 - 0.1).abs() < 0.005 && (m4 - 0.1).abs() < 0.005);
        // Coefficient of variation of Gamma(k) gaps is 1/sqrt(k).
        assert!((cv1 - 1.0).abs() < 0.05, "cv1 {cv1}");
        assert!((cv4 - 0.5).abs() < 0.05, "cv4 {cv4}");
    }
}
