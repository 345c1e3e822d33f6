//! A simulated autoscaler (`SimConfig::autoscale`, `servebench sim --autoscale
//! MIN,MAX,TARGET_IN_FLIGHT,DELAY_S`) over exact mode's slots: the server runs as `replicas`
//! replicas of `SimConfig::slots` slots each, from MIN. Every [`DECISION_INTERVAL_S`] of the
//! simulator's clock from its start (at 1·I, 2·I, …) it takes the requests in flight (holding
//! a slot or waiting for one), and the desired count `ceil(in_flight / TARGET_IN_FLIGHT)`
//! clamped to [MIN, MAX]; when that differs from the count last decided, the change takes
//! effect DELAY_S later (at decision time + DELAY_S exactly: a change due at the same instant
//! as a decision is applied first). The slots follow the count (`Slots::resize`).
//!
//! Every change is logged at its exact simulated time (`GET /sim/replicas`), and the count
//! at any instant is the last change due by then, so what `/metrics` (the gauge
//! [`REPLICAS_GAUGE`]) and `/api/v1/query` answer is exactly the log's value at the instant
//! asked, whatever the task's wake-ups.
//!
//! # What it must not touch
//! Streams and sockets: it only counts and resizes the slots.

use std::collections::VecDeque;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::error::SimConfigError;
use super::slots::Slots;

/// Simulated seconds between two decisions.
pub const DECISION_INTERVAL_S: f64 = 1.0;
/// The Prometheus gauge the replica count is exposed as.
pub const REPLICAS_GAUGE: &str = "servebench_sim_replicas";
/// The most replicas the simulator models.
pub const MAX_SIM_REPLICAS: u32 = 10_000;
/// The most changes logged (a longer run keeps its first ones; the count stays exact).
const MAX_LOG: usize = 100_000;

/// The autoscaler's settings: `MIN,MAX,TARGET_IN_FLIGHT,DELAY_S`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoscaleConfig {
    pub min: u32,
    pub max: u32,
    pub target_in_flight: f64,
    /// Simulated seconds from a decision to its effect.
    pub delay_s: f64,
}

impl FromStr for AutoscaleConfig {
    type Err = SimConfigError;
    fn from_str(s: &str) -> Result<Self, SimConfigError> {
        let rule = || {
            SimConfigError::setting(
                "autoscale",
                format!("{s:?} is not MIN,MAX,TARGET_IN_FLIGHT,DELAY_S"),
            )
        };
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        let [min, max, target, delay] = parts.as_slice() else {
            return Err(rule());
        };
        let cfg = AutoscaleConfig {
            min: min.parse().map_err(|_| rule())?,
            max: max.parse().map_err(|_| rule())?,
            target_in_flight: target.parse().map_err(|_| rule())?,
            delay_s: delay.parse().map_err(|_| rule())?,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

impl AutoscaleConfig {
    /// 1 ≤ MIN ≤ MAX ≤ [`MAX_SIM_REPLICAS`], a target above 0, a delay from 0 to a day.
    pub fn validate(&self) -> Result<(), SimConfigError> {
        let bad = |why: String| Err(SimConfigError::setting("autoscale", why));
        if self.min == 0 || self.min > self.max || self.max > MAX_SIM_REPLICAS {
            return bad(format!(
                "MIN {} and MAX {} must hold 1 <= MIN <= MAX <= {MAX_SIM_REPLICAS}",
                self.min, self.max
            ));
        }
        if !(self.target_in_flight.is_finite() && self.target_in_flight > 0.0) {
            return bad(format!(
                "TARGET_IN_FLIGHT {} is not above 0",
                self.target_in_flight
            ));
        }
        if !(self.delay_s.is_finite() && (0.0..=86_400.0).contains(&self.delay_s)) {
            return bad(format!(
                "DELAY_S {} is not 0 to 86400 seconds",
                self.delay_s
            ));
        }
        Ok(())
    }
}

/// The autoscaler of a running server.
pub(crate) struct Autoscaler {
    cfg: AutoscaleConfig,
    per_replica: usize,
    slots: Arc<Slots>,
    start: Instant,
    time_scale: f64,
    state: Mutex<State>,
}

struct State {
    replicas: u32,
    /// Changes decided and not yet due: (simulated seconds, replicas).
    pending: VecDeque<(f64, u32)>,
    /// Every change applied: (simulated seconds from the start, replicas), from (0, MIN).
    log: Vec<(f64, u32)>,
    /// Decisions made (the next is at `(decided + 1) · I`).
    decided: u64,
}

impl Autoscaler {
    /// Starts at MIN replicas: `slots` (made with MIN × `per_replica` slots) follows.
    pub(crate) fn new(
        cfg: AutoscaleConfig,
        per_replica: usize,
        slots: Arc<Slots>,
        time_scale: f64,
    ) -> Autoscaler {
        Autoscaler {
            cfg,
            per_replica,
            slots,
            start: Instant::now(),
            time_scale,
            state: Mutex::new(State {
                replicas: cfg.min,
                pending: VecDeque::new(),
                log: vec![(0.0, cfg.min)],
                decided: 0,
            }),
        }
    }

    /// The instant of `sim_s` simulated seconds from the start.
    fn instant(&self, sim_s: f64) -> Instant {
        self.start + Duration::from_secs_f64((sim_s / self.time_scale).clamp(0.0, 1e9))
    }

    /// Applies every change due by `now`, and every decision due by then, in time order.
    fn advance(&self, state: &mut State, now: Instant) {
        loop {
            let next_decision = (state.decided + 1) as f64 * DECISION_INTERVAL_S;
            let next_change = state.pending.front().map(|p| p.0);
            // A change due with a decision goes first.
            if let Some(at) = next_change.filter(|&at| at <= next_decision) {
                if self.instant(at) > now {
                    return;
                }
                let Some((at, to)) = state.pending.pop_front() else {
                    return;
                };
                self.apply(state, at, to);
                continue;
            }
            if self.instant(next_decision) > now {
                return;
            }
            state.decided += 1;
            let in_flight = self.slots.in_flight() as f64;
            let desired = (in_flight / self.cfg.target_in_flight).ceil();
            let desired = (desired as u32).clamp(self.cfg.min, self.cfg.max);
            let last = state.pending.back().map_or(state.replicas, |p| p.1);
            if desired != last {
                state
                    .pending
                    .push_back((next_decision + self.cfg.delay_s, desired));
            }
        }
    }

    fn apply(&self, state: &mut State, at: f64, to: u32) {
        let n = |r: u32| r as usize * self.per_replica;
        self.slots
            .resize(n(state.replicas), n(to), self.instant(at));
        state.replicas = to;
        if state.log.len() < MAX_LOG {
            state.log.push((at, to));
        }
    }

    /// The replica count now.
    pub(crate) fn replicas(&self) -> u32 {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.advance(&mut state, Instant::now());
        state.replicas
    }

    /// Every change so far: (simulated seconds from the server's start, replicas).
    pub(crate) fn log(&self) -> Vec<(f64, u32)> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.advance(&mut state, Instant::now());
        state.log.clone()
    }

    /// Wakes at every decision and change, until `stop` resolves.
    pub(crate) async fn run(self: Arc<Self>, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        loop {
            let wake = {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                self.advance(&mut state, Instant::now());
                let next_decision = (state.decided + 1) as f64 * DECISION_INTERVAL_S;
                let next = state
                    .pending
                    .front()
                    .map_or(next_decision, |p| p.0.min(next_decision));
                self.instant(next)
            };
            tokio::select! {
                () = &mut stop => return,
                () = tokio::time::sleep_until(wake) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_bad_ones_are_refused() {
        let c: AutoscaleConfig = "1,4,2,3".parse().unwrap();
        assert_eq!(
            (c.min, c.max, c.target_in_flight, c.delay_s),
            (1, 4, 2.0, 3.0)
        );
        for bad in [
            "0,4,2,3", "5,4,2,3", "1,4,0,3", "1,4,2,-1", "1,4,2", "a,4,2,3",
        ] {
            let e = bad.parse::<AutoscaleConfig>().unwrap_err().to_string();
            assert!(e.contains("autoscale") && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn replicas_follow_the_in_flight_requests_a_delay_after_each_decision() {
        let slots = Slots::new(2, false);
        let a = Autoscaler::new("1,3,2,2.5".parse().unwrap(), 2, slots.clone(), 1.0);
        // Five requests: two hold the slots, three wait.
        let mut held = Vec::new();
        for _ in 0..2 {
            held.push(slots.take(Instant::now(), 0).await.0);
        }
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let s = slots.clone();
                tokio::spawn(async move { s.take(Instant::now(), 0).await.0 })
            })
            .collect();
        tokio::task::yield_now().await;
        assert_eq!(slots.in_flight(), 5);
        tokio::time::advance(Duration::from_millis(3400)).await;
        // Decided at 1 s (ceil(5/2) = 3, clamped to 3), due at 3.5 s: not yet.
        assert_eq!(a.replicas(), 1);
        tokio::time::advance(Duration::from_millis(200)).await;
        assert_eq!(a.replicas(), 3);
        // The new slots went to the waiters.
        for w in waiters {
            held.push(w.await.unwrap());
        }
        assert_eq!(a.log(), vec![(0.0, 1), (3.5, 3)]);
        drop(held);
        // Nothing in flight: decided at 4 s (1), due at 6.5 s.
        tokio::time::advance(Duration::from_millis(3000)).await;
        assert_eq!(a.log(), vec![(0.0, 1), (3.5, 3), (6.5, 1)]);
        assert_eq!(slots.in_flight(), 0);
    }
}
