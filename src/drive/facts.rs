//! What a run's validity is judged on, gathered around the measured load: the simulator's
//! counters before and after it (when the server is servebench's simulator) and the facts of
//! the run itself (schedule lag, offered and achieved rate), for `results::validity`.

use crate::config::RunConfig;
use crate::drive::records::Sends;
use crate::measure::client::Client;
use crate::results::validity::RunFacts;

/// The simulator's counters (`/sim/stats`) and its mode (`/sim/info`: the mode decides whether
/// its lateness invalidates a run, see `monitor`); `None` when the server is not servebench's
/// simulator.
pub(super) async fn simulator_snapshot(
    client: &Client,
    base_url: &str,
) -> Option<serde_json::Value> {
    let mut stats = client.get_json(base_url, "/sim/stats").await?;
    let info = client.get_json(base_url, "/sim/info").await;
    if let (Some(map), Some(mode)) = (
        stats.as_object_mut(),
        info.and_then(|i| i.get("mode").cloned()),
    ) {
        map.insert("mode".into(), mode);
    }
    Some(stats)
}

/// What validity judging needs from the run: schedule lag, offered vs achieved rate, and the
/// simulator's counters over this run (the difference of two `/sim/stats` snapshots).
pub(super) fn run_facts(
    cfg: &RunConfig,
    sends: Sends,
    wall_s: f64,
    sim_before: Option<serde_json::Value>,
    sim_after: Option<serde_json::Value>,
) -> RunFacts {
    let (first, last, sent) = (sends.first, sends.last, sends.count);
    let achieved_rate =
        (sent > 1 && last > first).then(|| (sent - 1) as f64 / ((last - first) as f64 / 1e9));
    let server_stats = match (sim_before, sim_after) {
        (Some(before), Some(serde_json::Value::Object(after))) => {
            let diffed = after.into_iter().map(|(k, v)| {
                let b = before.get(&k).and_then(serde_json::Value::as_u64);
                let v = match (k.starts_with("max_"), v.as_u64(), b) {
                    (false, Some(a), Some(b)) => serde_json::json!(a.saturating_sub(b)),
                    _ => v,
                };
                (k, v)
            });
            Some(serde_json::Value::Object(diffed.collect()))
        }
        _ => None,
    };
    let gated = (cfg.load.max_concurrency).or(cfg.routing.max_prefill_concurrency);
    RunFacts {
        wall_s,
        schedule_lag_p99_ms: sends.lags.finish(&[99.0]).and_then(|d| d.at(99.0)),
        // Only a finite rate promises send times; `inf` just means "as fast as possible".
        open_loop: gated.is_none()
            && (cfg.load.shape.curve.is_some() || cfg.load.request_rate.is_finite()),
        offered_rate: match cfg.load.request_rate {
            // A shard sends every Nth request of the schedule: 1/N of the rate.
            crate::config::RequestRate::PerSecond(r) => {
                Some(r / cfg.load.shard.map_or(1, |s| s.count) as f64)
            }
            crate::config::RequestRate::Infinite => None,
        },
        achieved_rate: achieved_rate.filter(|_| {
            matches!(
                cfg.load.request_rate,
                crate::config::RequestRate::PerSecond(_)
            )
        }),
        server_stats,
        ..RunFacts::default()
    }
}
