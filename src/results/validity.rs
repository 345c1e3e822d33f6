//! Run validity: whether a run's figures can be trusted, judged from what the client watched
//! while it measured.
//!
//! During a run `drive::monitor::Monitor` samples the runtime's scheduling delay (how late a
//! task that wakes every 10 ms runs: the event-loop lag every in-flight stream also suffers,
//! a stall included, also one at the very end of the run), and
//! measures the process's CPU time. At the end [`Validity::judge`] combines these with the
//! schedule lag and the achieved vs offered request rate, when the server is servebench's
//! simulator with the simulator's own count of chunks it sent late, and with the requests
//! whose server reported numbers the client found implausible. The rules and thresholds
//! are in `docs/metrics.md` ("Run validity"). This module reads the clock and `/proc`; it
//! computes no benchmark figure.

use serde::{Deserialize, Serialize};

use crate::results::stats::Distribution;

/// Event-loop lag p99 above this makes the client the bottleneck.
pub const MAX_LOOP_LAG_P99_MS: f64 = 5.0;
/// One event-loop stall longer than this (the longest lag sample) makes the run client-bound,
/// however rare: every stream in flight then was read late and every request due then left late.
pub const MAX_STALL_MS: f64 = 50.0;
/// Open-loop runs: schedule lag p99 above this means requests left late.
pub const MAX_SCHEDULE_LAG_P99_MS: f64 = 5.0;
/// Client CPU above this share of the cores it may use means it was saturated.
pub const MAX_CPU_UTILISATION: f64 = 0.9;
/// Achieved send rate below this share of the offered rate.
pub const MIN_RATE_RATIO: f64 = 0.95;
/// Simulator chunks sent more than 1 ms late, above this share of all chunks.
pub const MAX_LATE_CHUNK_SHARE: f64 = 0.01;

/// The run's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Nothing suggests the measurement was distorted.
    Valid,
    /// The client could not keep up: latencies include its own delays.
    ClientBound,
    /// The (simulated) server could not keep its own schedule.
    ServerLate,
    /// The server reported token counts or timings that contradict what the client saw:
    /// those figures were not believed.
    UsageImplausible,
}

impl Verdict {
    /// The verdict as reports write it: `valid`, or the distortion in capitals.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::ClientBound => "CLIENT-BOUND",
            Verdict::ServerLate => "SERVER-LATE",
            Verdict::UsageImplausible => "USAGE-IMPLAUSIBLE",
        }
    }
}

/// What the monitor saw, and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    pub verdict: Verdict,
    /// Why, and which figures are affected. Empty when valid.
    pub reasons: Vec<String>,
    /// How late a task woken every 10 ms ran on the runtime, ms (its max: the longest stall).
    pub event_loop_lag_ms: Option<Distribution>,
    /// Process CPU time during the run, seconds (user + system).
    pub client_cpu_s: f64,
    /// client_cpu_s / (wall time × cores available to the process).
    pub client_cpu_utilisation: f64,
    pub cores: u32,
    /// Requests per second sent, first to last send.
    pub achieved_rate: Option<f64>,
    /// The configured rate, when finite.
    pub offered_rate: Option<f64>,
    /// The simulator's own counters over this run, when the server is servebench's simulator.
    pub server_stats: Option<serde_json::Value>,
    /// The client threads that drove the load (`--client-threads`); absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_threads: Option<u64>,
}

/// The facts `judge` needs besides the monitor's own samples.
#[derive(Clone, Debug, Default)]
pub struct RunFacts {
    pub wall_s: f64,
    pub schedule_lag_p99_ms: Option<f64>,
    /// True when no concurrency gate holds requests back (lag then means the client was late).
    pub open_loop: bool,
    pub offered_rate: Option<f64>,
    pub achieved_rate: Option<f64>,
    pub server_stats: Option<serde_json::Value>,
    /// Measured requests, and those whose server reported implausible numbers, by what
    /// (`RunSummary::implausible_usage`, `implausible_usage_by_field`).
    pub measured: u64,
    pub implausible_usage: u64,
    pub implausible_usage_by_field: std::collections::BTreeMap<String, u64>,
}

impl Validity {
    /// Applies the rules of docs/metrics.md.
    pub fn judge(lags_ms: &mut [f64], cpu_s: f64, facts: RunFacts) -> Validity {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        let lag = Distribution::of(lags_ms, &[99.0]);
        let utilisation = if facts.wall_s > 0.0 {
            cpu_s / (facts.wall_s * cores as f64)
        } else {
            0.0
        };
        let mut client = Vec::new();
        if let Some(p99) = lag
            .as_ref()
            .and_then(|d| d.at(99.0))
            .filter(|&p| p > MAX_LOOP_LAG_P99_MS)
        {
            client.push(format!(
                "event-loop lag p99 {p99:.1} ms > {MAX_LOOP_LAG_P99_MS} ms: TTFT, ITL, TPOT and E2EL include up to that much client delay"
            ));
        }
        if let Some(longest) = lag.as_ref().map(|d| d.max).filter(|&m| m > MAX_STALL_MS) {
            client.push(format!(
                "the client's event loop stalled for {longest:.1} ms at once (> {MAX_STALL_MS} ms): requests due then left late, and streams then were read late (their times, where not the kernel's stamps, include it)"
            ));
        }
        if utilisation > MAX_CPU_UTILISATION {
            client.push(format!(
                "client CPU {:.0}% of {cores} cores: every latency may include client queueing",
                100.0 * utilisation
            ));
        }
        if let (true, Some(p99)) = (facts.open_loop, facts.schedule_lag_p99_ms) {
            if p99 > MAX_SCHEDULE_LAG_P99_MS {
                client.push(format!(
                    "schedule lag p99 {p99:.1} ms > {MAX_SCHEDULE_LAG_P99_MS} ms: requests left later than scheduled; the offered load was not applied (TTFT from scheduled, throughput)"
                ));
            }
        }
        if let (Some(offered), Some(achieved)) = (facts.offered_rate, facts.achieved_rate) {
            if achieved < MIN_RATE_RATIO * offered {
                client.push(format!(
                    "achieved {achieved:.2} req/s < {:.0}% of the offered {offered:.2} req/s: throughput figures describe a lighter load",
                    100.0 * MIN_RATE_RATIO
                ));
            }
        }
        let mut server = Vec::new();
        if let Some(s) = &facts.server_stats {
            let late = s
                .get("late_chunks")
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(0.0);
            let chunks = s.get("chunks").and_then(serde_json::Value::as_f64);
            let share = chunks.filter(|&c| c > 0.0).map(|c| late / c);
            // Only the exact mode is ground truth; an engine preset models a server, whose
            // token bursts may leave a few ms after the model's step (reported, not judged).
            let ground_truth = s.get("mode").and_then(serde_json::Value::as_str) != Some("engine");
            let late_share =
                share.is_some_and(|x| x > MAX_LATE_CHUNK_SHARE) || (chunks.is_none() && late > 0.0);
            if ground_truth && late_share {
                server.push(format!(
                    "the simulator sent {late:.0} chunks more than 1 ms late: it did not keep its schedule, so it is no ground truth for this load"
                ));
            }
        }
        let mut usage = Vec::new();
        if facts.implausible_usage > 0 {
            let what: Vec<String> = (facts.implausible_usage_by_field.iter())
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            usage.push(format!(
                "the server's usage is implausible: {} of {} requests reported numbers that contradict the stream ({}); they were not believed (output counts from the tokenizer, else the chunks; prompt counts as built; timings left out)",
                facts.implausible_usage,
                facts.measured,
                what.join(", ")
            ));
        }
        let verdict = if !client.is_empty() {
            Verdict::ClientBound
        } else if !server.is_empty() {
            Verdict::ServerLate
        } else if !usage.is_empty() {
            Verdict::UsageImplausible
        } else {
            Verdict::Valid
        };
        client.extend(server);
        client.extend(usage);
        Validity {
            verdict,
            reasons: client,
            event_loop_lag_ms: lag,
            client_cpu_s: cpu_s,
            client_cpu_utilisation: utilisation,
            cores,
            achieved_rate: facts.achieved_rate,
            offered_rate: facts.offered_rate,
            server_stats: facts.server_stats,
            client_threads: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_run_is_valid() {
        let v = Validity::judge(
            &mut [0.01; 100],
            0.1,
            RunFacts {
                wall_s: 10.0,
                ..RunFacts::default()
            },
        );
        assert_eq!(v.verdict, Verdict::Valid);
        assert!(v.reasons.is_empty());
    }

    #[test]
    fn lagging_loop_or_late_sends_make_it_client_bound() {
        let mut lags = vec![0.1; 90];
        lags.extend([20.0; 10]);
        let v = Validity::judge(
            &mut lags,
            0.1,
            RunFacts {
                wall_s: 10.0,
                ..RunFacts::default()
            },
        );
        assert_eq!(v.verdict, Verdict::ClientBound);
        assert!(v.reasons[0].contains("event-loop lag"));
        let facts = RunFacts {
            wall_s: 10.0,
            open_loop: true,
            schedule_lag_p99_ms: Some(40.0),
            offered_rate: Some(100.0),
            achieved_rate: Some(60.0),
            ..RunFacts::default()
        };
        let v = Validity::judge(&mut [0.1], 0.1, facts);
        assert_eq!(v.verdict, Verdict::ClientBound);
        assert_eq!(v.reasons.len(), 2);
        // With a concurrency gate, schedule lag is queueing by design, not the client's fault.
        let gated = RunFacts {
            wall_s: 10.0,
            open_loop: false,
            schedule_lag_p99_ms: Some(400.0),
            ..RunFacts::default()
        };
        assert_eq!(
            Validity::judge(&mut [0.1], 0.1, gated).verdict,
            Verdict::Valid
        );
    }

    /// One stall of the event loop (300 ms among a thousand quiet ticks) moves no p99, yet
    /// every stream in flight then had its reads, and its sends, held back: the run is not
    /// valid, and the reason names the stall.
    #[test]
    fn one_stall_makes_the_run_client_bound() {
        let mut lags = vec![0.1; 999];
        lags.push(300.0);
        let facts = RunFacts {
            wall_s: 10.0,
            ..RunFacts::default()
        };
        let v = Validity::judge(&mut lags, 0.1, facts);
        assert_eq!(v.verdict, Verdict::ClientBound, "{:?}", v.reasons);
        assert!(
            v.reasons.iter().any(|r| r.contains("stalled for 300.0 ms")),
            "{:?}",
            v.reasons
        );
    }

    /// Requests whose server reported implausible numbers make the verdict
    /// say so, naming how many and what.
    #[test]
    fn implausible_usage_is_a_verdict_naming_what() {
        let facts = RunFacts {
            wall_s: 1.0,
            measured: 20,
            implausible_usage: 20,
            implausible_usage_by_field: [("output_tokens".to_string(), 20)].into(),
            ..RunFacts::default()
        };
        let v = Validity::judge(&mut [0.1], 0.0, facts);
        assert_eq!(v.verdict, Verdict::UsageImplausible);
        assert!(
            v.reasons[0].contains("20 of 20 requests") && v.reasons[0].contains("output_tokens 20"),
            "{:?}",
            v.reasons
        );
    }

    #[test]
    fn late_simulator_is_server_late() {
        let facts = |mode: &str| RunFacts {
            wall_s: 1.0,
            server_stats: Some(
                serde_json::json!({"late_chunks": 50, "chunks": 1000, "mode": mode}),
            ),
            ..RunFacts::default()
        };
        let v = Validity::judge(&mut [0.1], 0.0, facts("exact"));
        assert_eq!(v.verdict, Verdict::ServerLate);
        // An engine preset is a model, not ground truth: its lateness is not a verdict.
        assert_eq!(
            Validity::judge(&mut [0.1], 0.0, facts("engine")).verdict,
            Verdict::Valid
        );
    }
}
