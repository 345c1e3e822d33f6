//! What every client of a run shares (each `--client-threads` lane has a client of its own,
//! made beside the first: `Client::new_beside`): the prefill gate (`--max-prefill-concurrency`)
//! and the [`Router`] that picks each request's endpoint among several (`--base-url` given more
//! than once): by `--balance`, keeping a session on its endpoint (`--affinity session`),
//! echoing a session's header (`--session-header`), and stopping an endpoint after K
//! consecutive connection failures (`--failover K`). docs/metrics.md, "Several endpoints" and
//! "Prefill gate", defines them.
//!
//! Per request: one pick and one end. With one endpoint and no failover the pick takes no
//! lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use rand::{RngExt, SeedableRng};
use tokio::sync::Semaphore;

use crate::config::routing::{Affinity, Balance, Routing};
use crate::measure::record::FailureKind;

/// The most sessions whose endpoint and echoed header are kept at once: past it the oldest
/// are forgotten (a forgotten session's next request is placed as a new one).
const MAX_SESSIONS: usize = 1 << 20;

/// The failure of a request that was still waiting for the prefill gate when the run stopped
/// or its time window ended (the gate was closed): never sent, so the driver counts it
/// unsent (`stopped` or `window_ended`), not failed.
pub(super) const GATE_CLOSED: &str =
    "the prefill gate closed (a stop or the window's end) while the request waited: never sent";

/// The state every lane's client shares.
pub(super) struct Shared {
    /// `--max-prefill-concurrency`: a permit is held from before the send to the first
    /// output chunk (or a whole answer's end, or any failure).
    pub(super) gate: Option<Arc<Semaphore>>,
    pub(super) router: Router,
}

impl Shared {
    pub(super) fn new(routing: &Routing, seed: u64) -> Shared {
        let gate = (routing.max_prefill_concurrency)
            .map(|k| Arc::new(Semaphore::new(k.min(Semaphore::MAX_PERMITS as u64) as usize)));
        Shared {
            gate,
            router: Router::new(routing, seed),
        }
    }
}

impl Shared {
    /// Closes the prefill gate: every request waiting for it, and every later one, ends
    /// unsent ([`GATE_CLOSED`]); those holding a permit go on.
    pub(super) fn close_gate(&self) {
        if let Some(g) = &self.gate {
            g.close();
        }
    }
}

/// Picks each request's endpoint, and hears how it ended.
pub(super) struct Router {
    balance: Balance,
    affinity: bool,
    failover: Option<u32>,
    /// Requests picked and not yet ended, per endpoint.
    in_flight: Vec<AtomicU64>,
    next: AtomicU64,
    state: Mutex<State>,
}

/// What the router keeps behind its lock.
struct State {
    rng: rand::rngs::StdRng,
    /// Each session's endpoint and the value of its echoed header, in the order they came.
    sessions: HashMap<u64, Session>,
    order: std::collections::VecDeque<u64>,
    /// Each endpoint's consecutive connection failures, and when it was stopped (clock ns).
    failures: Vec<u32>,
    stopped: Vec<Option<u64>>,
}

#[derive(Default)]
struct Session {
    endpoint: Option<usize>,
    echo: Option<String>,
}

/// One request's endpoint and the session header it sends back, if any.
pub(super) struct Picked {
    pub(super) index: usize,
    pub(super) echo: Option<String>,
}

impl Router {
    fn new(routing: &Routing, seed: u64) -> Router {
        let n = routing.endpoints();
        Router {
            balance: routing.balance,
            affinity: routing.affinity == Some(Affinity::Session),
            failover: routing.failover,
            in_flight: (0..n).map(|_| AtomicU64::new(0)).collect(),
            next: AtomicU64::new(0),
            state: Mutex::new(State {
                rng: rand::rngs::StdRng::seed_from_u64(seed ^ 0x656e_6470_6f69_6e74),
                sessions: HashMap::new(),
                order: std::collections::VecDeque::new(),
                failures: vec![0; n],
                stopped: vec![None; n],
            }),
        }
    }

    /// The endpoints.
    pub(super) fn len(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether picking needs the lock (several endpoints, or a failover to watch for).
    fn routes(&self) -> bool {
        self.len() > 1 || self.failover.is_some()
    }

    /// The endpoint of a request of `session` (a conversation's or a job's; `None`: a lone
    /// request): its session's when it has one that is not stopped, else by the balance among
    /// those not stopped; `first`: the first endpoint (the pre-flight request's). `None` when
    /// every endpoint was stopped (`--failover`).
    pub(super) fn pick(&self, session: Option<u64>, first: bool) -> Option<Picked> {
        if !self.routes() || first {
            self.in_flight[0].fetch_add(1, Relaxed);
            return Some(Picked {
                index: 0,
                echo: None,
            });
        }
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let session = session.filter(|_| self.affinity);
        let kept = session
            .and_then(|s| st.sessions.get(&s))
            .map(|s| (s.endpoint, s.echo.clone()));
        let (kept, echo) = kept.unwrap_or((None, None));
        let index = match kept.filter(|&i| st.stopped[i].is_none()) {
            Some(i) => i,
            None => self.balanced(&mut st)?,
        };
        if let Some(s) = session {
            st.session(s).endpoint = Some(index);
        }
        self.in_flight[index].fetch_add(1, Relaxed);
        Some(Picked { index, echo })
    }

    /// An endpoint not stopped, by the balance.
    fn balanced(&self, st: &mut State) -> Option<usize> {
        let up: Vec<usize> = (0..self.len())
            .filter(|&i| st.stopped[i].is_none())
            .collect();
        if up.is_empty() {
            return None;
        }
        Some(match self.balance {
            Balance::RoundRobin => up[(self.next.fetch_add(1, Relaxed) % up.len() as u64) as usize],
            Balance::LeastInFlight => {
                let load = |i: &&usize| self.in_flight[**i].load(Relaxed);
                *up.iter().min_by_key(load).unwrap_or(&up[0])
            }
            Balance::Random => up[st.rng.random_range(0..up.len())],
        })
    }

    /// A request to endpoint `index` ended at `end_ns` (failed with `failure`, or not); the
    /// response's session header `echo` is kept for its session's later requests. A connection
    /// failure that makes K in a row stops the endpoint (`--failover K`); any other end resets
    /// its count.
    pub(super) fn ended(
        &self,
        index: usize,
        session: Option<u64>,
        failure: Option<FailureKind>,
        end_ns: u64,
        echo: Option<String>,
    ) {
        self.in_flight[index].fetch_sub(1, Relaxed);
        if !self.routes() {
            return;
        }
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let (Some(s), Some(v)) = (session.filter(|_| self.affinity), echo) {
            st.session(s).echo = Some(v);
        }
        match failure {
            Some(FailureKind::Connect) => st.failures[index] = st.failures[index].saturating_add(1),
            // A cancelled request says nothing of the endpoint.
            Some(FailureKind::Cancelled) => {}
            _ => st.failures[index] = 0,
        }
        if let Some(k) = self.failover {
            if st.failures[index] >= k && st.stopped[index].is_none() {
                st.stopped[index] = Some(end_ns);
            }
        }
    }

    /// The endpoints stopped by `--failover` and when (clock ns), by index.
    pub(super) fn stopped(&self) -> Vec<Option<u64>> {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.stopped.clone()
    }
}

impl State {
    /// Session `s`'s entry, made when new; the oldest forgotten past [`MAX_SESSIONS`].
    fn session(&mut self, s: u64) -> &mut Session {
        if !self.sessions.contains_key(&s) {
            if self.order.len() >= MAX_SESSIONS {
                if let Some(old) = self.order.pop_front() {
                    self.sessions.remove(&old);
                }
            }
            self.order.push_back(s);
        }
        self.sessions.entry(s).or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routing(n: usize, balance: Balance) -> Routing {
        Routing {
            more_base_urls: (1..n).map(|i| format!("http://h{i}")).collect(),
            balance,
            ..Routing::default()
        }
    }

    fn picks(r: &Router, n: usize) -> Vec<usize> {
        (0..n).map(|_| r.pick(None, false).unwrap().index).collect()
    }

    #[test]
    fn round_robin_takes_each_in_turn() {
        let r = Router::new(&routing(3, Balance::RoundRobin), 1);
        assert_eq!(picks(&r, 7), [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn least_in_flight_takes_the_least_busy() {
        let r = Router::new(&routing(3, Balance::LeastInFlight), 1);
        assert_eq!(picks(&r, 3), [0, 1, 2]);
        r.ended(1, None, None, 5, None);
        assert_eq!(picks(&r, 2), [1, 0]);
    }

    #[test]
    fn random_is_seeded() {
        let a = picks(&Router::new(&routing(3, Balance::Random), 7), 50);
        let b = picks(&Router::new(&routing(3, Balance::Random), 7), 50);
        let c = picks(&Router::new(&routing(3, Balance::Random), 8), 50);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!((0..3).all(|i| a.contains(&i)));
    }

    #[test]
    fn a_session_stays_and_its_header_is_echoed() {
        let mut cfg = routing(3, Balance::RoundRobin);
        cfg.affinity = Some(Affinity::Session);
        let r = Router::new(&cfg, 1);
        let first = r.pick(Some(9), false).unwrap();
        assert_eq!(first.echo, None);
        r.ended(first.index, Some(9), None, 1, Some("tok".into()));
        picks(&r, 2);
        let again = r.pick(Some(9), false).unwrap();
        assert_eq!(again.index, first.index);
        assert_eq!(again.echo.as_deref(), Some("tok"));
        // Without affinity the same session's next request goes to the next endpoint.
        let free = Router::new(&routing(3, Balance::RoundRobin), 1);
        let one = free.pick(Some(9), false).unwrap().index;
        assert_ne!(free.pick(Some(9), false).unwrap().index, one);
    }

    #[test]
    fn failover_stops_after_k_connection_failures_in_a_row() {
        let mut cfg = routing(2, Balance::RoundRobin);
        cfg.failover = Some(2);
        let r = Router::new(&cfg, 1);
        r.ended(0, None, Some(FailureKind::Connect), 1, None);
        r.ended(0, None, Some(FailureKind::HttpStatus), 2, None);
        r.ended(0, None, Some(FailureKind::Connect), 3, None);
        assert_eq!(r.stopped(), [None, None]);
        r.ended(0, None, Some(FailureKind::Connect), 4, None);
        assert_eq!(r.stopped(), [Some(4), None]);
        assert_eq!(picks(&r, 3), [1, 1, 1]);
        r.ended(1, None, Some(FailureKind::Connect), 5, None);
        r.ended(1, None, Some(FailureKind::Connect), 6, None);
        assert!(r.pick(None, false).is_none());
        assert_eq!(r.pick(None, true).unwrap().index, 0);
    }
}
