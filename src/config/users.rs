//! Users with a fixed gap (`--users N --user-gap S`): N closed-loop users, each sending its
//! next unit of the run (a request, a conversation, a job) S seconds after its previous one
//! ended, the way a KV cache's time-to-live is tested. [`check`] holds the rules between
//! these flags and the rest of the load: users set when units are sent, so an arrival rate, a
//! time window, stages, a ramp, a trace's own timestamps, a mix's classes or a shard of the
//! schedule cannot be asked beside them. `drive::users` runs them. Pure values, no I/O.

use super::error::ConfigError;
use super::limits::check_span;
use super::load::RequestRate;
use super::run::RunConfig;

/// The most users a run may have (each is a task holding its own unit in flight).
pub const MAX_USERS: u32 = 100_000;

/// The refusal of `--users` beside `flag`, and why: one line naming both.
fn beside(flag: &str, why: &str) -> Result<(), ConfigError> {
    Err(ConfigError::invalid(
        "--users",
        format!("not with {flag}: {why}"),
    ))
}

/// Checks `--users` and `--user-gap` and how they combine with the rest of `cfg`.
pub fn check(cfg: &RunConfig) -> Result<(), ConfigError> {
    let (load, shape) = (&cfg.load, &cfg.load.shape);
    let Some(users) = shape.users else {
        if shape.user_gap_s.is_some() {
            let why = "is the gap between one user's units: give --users N";
            return Err(ConfigError::invalid("--user-gap", why));
        }
        return Ok(());
    };
    if !(1..=MAX_USERS).contains(&users) {
        return Err(ConfigError::invalid(
            "--users",
            format!("{users} is not in 1..={MAX_USERS}"),
        ));
    }
    let Some(gap) = shape.user_gap_s else {
        let why = "each user sends its next unit a fixed time after its previous one ended: give --user-gap SECONDS";
        return Err(ConfigError::invalid("--users", why));
    };
    check_span(gap, true).map_err(|why| ConfigError::limit("--user-gap", why))?;
    let closed = "each user sends its next unit a gap after its previous one ended (a closed loop), not at an arrival rate";
    if let RequestRate::PerSecond(_) = load.request_rate {
        return beside("--request-rate", closed);
    }
    if shape.ramp.is_some() {
        return beside("--ramp-up-strategy", closed);
    }
    if !shape.stages.is_empty() {
        return beside("--stages", closed);
    }
    if shape.duration_s.is_some() {
        return beside(
            "--duration",
            "a users run ends when its --num-prompts units were taken",
        );
    }
    if let Some(c) = load.max_concurrency.filter(|&c| c != u64::from(users)) {
        return beside(
            &format!("--max-concurrency {c}"),
            &format!("{users} users keep at most {users} units in flight (leave it out, or give {users})"),
        );
    }
    if cfg.workload.dataset.own_schedule().is_some() {
        return beside(
            "--dataset-name trace",
            "a trace is replayed on its own timestamps",
        );
    }
    if cfg.mix.is_some() {
        return beside("--mix", "a mix's classes have their own arrival rates");
    }
    if load.shard.is_some() {
        return beside(
            "--shard",
            "the users take the units in schedule order, in one process",
        );
    }
    if u64::from(users) > load.num_prompts {
        return beside(
            &format!("--num-prompts {}", load.num_prompts),
            &format!("{users} users need at least {users} units, one each"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::shape::Stage;

    fn cfg(users: Option<u32>, gap: Option<f64>) -> RunConfig {
        let mut c = RunConfig::default();
        c.load.num_prompts = 10;
        c.load.shape.users = users;
        c.load.shape.user_gap_s = gap;
        c
    }

    /// The refusal of `c`: its flag and message (one line, naming `other` too).
    fn refused(c: &RunConfig, flag: &str, other: &str) {
        let e = check(c).unwrap_err();
        let text = e.to_string();
        assert_eq!(e.option(), flag, "{text}");
        assert!(text.contains(other) && !text.contains('\n'), "{text}");
    }

    #[test]
    fn users_need_a_gap_and_a_gap_needs_users() {
        assert!(check(&cfg(None, None)).is_ok());
        assert!(check(&cfg(Some(3), Some(0.2))).is_ok());
        assert!(check(&cfg(Some(3), Some(0.0))).is_ok());
        refused(&cfg(Some(3), None), "--users", "--user-gap");
        refused(&cfg(None, Some(1.0)), "--user-gap", "--users");
        refused(&cfg(Some(0), Some(1.0)), "--users", "1..=");
        refused(&cfg(Some(MAX_USERS + 1), Some(1.0)), "--users", "1..=");
        for bad in [-1.0, f64::NAN, 1e300] {
            assert_eq!(
                check(&cfg(Some(2), Some(bad))).unwrap_err().option(),
                "--user-gap"
            );
        }
    }

    #[test]
    fn an_arrival_schedule_beside_users_is_refused_naming_both_flags() {
        let mut c = cfg(Some(3), Some(1.0));
        c.load.request_rate = RequestRate::PerSecond(2.0);
        refused(&c, "--users", "--request-rate");
        let mut c = cfg(Some(3), Some(1.0));
        c.load.max_concurrency = Some(2);
        refused(&c, "--users", "--max-concurrency 2");
        c.load.max_concurrency = Some(3);
        assert!(check(&c).is_ok());
        let mut c = cfg(Some(3), Some(1.0));
        c.load.shape.duration_s = Some(5.0);
        refused(&c, "--users", "--duration");
        let mut c = cfg(Some(3), Some(1.0));
        c.load.shape.stages = vec![Stage {
            rate: 1.0,
            seconds: 2.0,
        }];
        refused(&c, "--users", "--stages");
        let mut c = cfg(Some(30), Some(1.0));
        refused(&c, "--users", "--num-prompts 10");
        c.load.num_prompts = 30;
        assert!(check(&c).is_ok());
    }
}
