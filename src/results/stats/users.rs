//! Users with a fixed gap (`--users N --user-gap S`; docs/metrics.md, "Users with a fixed
//! gap"): what each user did ([`UserTally`], counted by the driver as its records pass), the
//! users together ([`UserCounts`]: sums, least and most, so its size does not grow with N),
//! and the figures a result saves ([`UsersFigures`]: per-user request rate and completed
//! units, the smallest gap a user left between two units, the span of the staggered starts).

use serde::{Deserialize, Serialize};

/// What one user did, as its records passed the driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserTally {
    /// Its measured requests that ended ok.
    pub ok_requests: u64,
    /// Units (a request, a conversation, a job) it took from the run's pool.
    pub units_taken: u64,
    /// Of those, units whose every request was sent and ended ok.
    pub units_completed: u64,
    /// The smallest time from a unit's last end to the user's next send (real ns).
    pub min_gap_ns: Option<u64>,
    /// Its first send (clock ns).
    pub first_send_ns: Option<u64>,
}

/// A count's sum, least and most over the users.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spread {
    pub sum: u64,
    pub min: u64,
    pub max: u64,
}

impl Spread {
    fn add(&mut self, v: u64, first: bool) {
        self.sum = self.sum.saturating_add(v);
        self.min = if first { v } else { self.min.min(v) };
        self.max = self.max.max(v);
    }
}

/// The users' tallies together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserCounts {
    pub users: u32,
    pub ok_requests: Spread,
    pub units_completed: Spread,
    pub units_taken: u64,
    pub min_gap_ns: Option<u64>,
    /// The first and the last of the users' first sends (clock ns).
    pub first_sends: Option<(u64, u64)>,
}

impl UserCounts {
    /// Adds one user's tally.
    pub fn add(&mut self, t: &UserTally) {
        let first = self.users == 0;
        self.users = self.users.saturating_add(1);
        self.ok_requests.add(t.ok_requests, first);
        self.units_completed.add(t.units_completed, first);
        self.units_taken = self.units_taken.saturating_add(t.units_taken);
        self.min_gap_ns = match (self.min_gap_ns, t.min_gap_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(s) = t.first_send_ns {
            self.first_sends = Some(match self.first_sends {
                Some((lo, hi)) => (lo.min(s), hi.max(s)),
                None => (s, s),
            });
        }
    }
}

/// A per-user figure's mean, least and most over the users.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerUser {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

/// The users block of a result (docs/metrics.md, "Users with a fixed gap").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UsersFigures {
    /// `--users`.
    pub users: u32,
    /// `--user-gap`, seconds (server time).
    pub gap_s: f64,
    /// Units the users took from the pool, and of those the units whose every request was
    /// sent and ended ok.
    pub units_taken: u64,
    pub units_completed: u64,
    /// Each user's completed units.
    pub completed_units_per_user: PerUser,
    /// Each user's successful requests over the run's duration (req/s, server time): the mean
    /// times the users is the request throughput.
    pub request_rate_per_user: PerUser,
    /// The smallest time from the end of a user's unit to its next send, seconds (server
    /// time): at least `gap_s`. Absent when no user sent two units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_observed_gap_s: Option<f64>,
    /// From the first user's first send to the last user's, seconds (server time): the
    /// staggered start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_span_s: Option<f64>,
}

impl UsersFigures {
    /// The figures of `c`, a run of `gap_s` seconds between units that lasted `duration_s`,
    /// its clock `time_scale` times faster than real time (1 for a real server).
    pub fn of(c: &UserCounts, gap_s: f64, duration_s: f64, time_scale: f64) -> UsersFigures {
        let k = if time_scale > 0.0 { time_scale } else { 1.0 };
        let n = f64::from(c.users.max(1));
        let per = |s: &Spread, over: f64| PerUser {
            mean: s.sum as f64 / n / over,
            min: s.min as f64 / over,
            max: s.max as f64 / over,
        };
        let rate = if duration_s > 0.0 {
            per(&c.ok_requests, duration_s)
        } else {
            PerUser::default()
        };
        UsersFigures {
            users: c.users,
            gap_s,
            units_taken: c.units_taken,
            units_completed: c.units_completed.sum,
            completed_units_per_user: per(&c.units_completed, 1.0),
            request_rate_per_user: rate,
            min_observed_gap_s: c.min_gap_ns.map(|g| g as f64 * k / 1e9),
            start_span_s: c.first_sends.map(|(lo, hi)| (hi - lo) as f64 * k / 1e9),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_user_figures_are_the_users_counts_over_the_duration() {
        let mut c = UserCounts::default();
        let tally = |ok, done, gap, first| UserTally {
            ok_requests: ok,
            units_taken: done + 1,
            units_completed: done,
            min_gap_ns: gap,
            first_send_ns: Some(first),
        };
        c.add(&tally(4, 4, Some(300_000_000), 0));
        c.add(&tally(2, 1, Some(250_000_000), 50_000_000));
        c.add(&tally(6, 5, None, 101_000));
        let f = UsersFigures::of(&c, 0.2, 2.0, 1.0);
        assert_eq!((f.users, f.units_taken, f.units_completed), (3, 13, 10));
        assert_eq!(
            f.request_rate_per_user,
            PerUser {
                mean: 2.0,
                min: 1.0,
                max: 3.0
            }
        );
        assert_eq!(f.completed_units_per_user.min, 1.0);
        assert_eq!(f.completed_units_per_user.max, 5.0);
        assert!((f.completed_units_per_user.mean - 10.0 / 3.0).abs() < 1e-12);
        // The mean rate times the users is the requests over the duration: 12 / 2 s.
        assert!((f.request_rate_per_user.mean * 3.0 - 6.0).abs() < 1e-12);
        assert_eq!(f.min_observed_gap_s, Some(0.25));
        assert_eq!(f.start_span_s, Some(0.05));
        // A simulator 10x faster: its server's time.
        let g = UsersFigures::of(&c, 0.2, 2.0, 10.0);
        assert_eq!(g.min_observed_gap_s, Some(2.5));
    }
}
