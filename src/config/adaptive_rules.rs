//! The rules between `--adaptive` (the SLO controller, `adaptive.rs`) and the rest of a run's
//! config: kept apart from the controller's own values, which the load spec holds.

use super::adaptive::AdaptiveOn;
use super::error::ConfigError;
use super::load::RequestRate;
use super::run::RunConfig;

/// The rules between `--adaptive` and the rest of `cfg`: it needs an SLO, and it sets the
/// load itself (no rate, cap, window, ramp, stages, users or shard of its own), over
/// one-request arrivals (no conversations, jobs or trace).
pub fn check(cfg: &RunConfig) -> Result<(), ConfigError> {
    let Some(a) = &cfg.load.adaptive else {
        return Ok(());
    };
    let bad = |why: &str| Err(ConfigError::invalid("--adaptive", why));
    a.validate()?;
    if cfg.goodput.is_empty() {
        return bad("judges each window by goodput: give --goodput SLOs (e.g. ttft:500)");
    }
    if cfg.load.request_rate != RequestRate::Infinite {
        return bad("sets the request rate itself: drop --request-rate");
    }
    if a.on == AdaptiveOn::Concurrency && cfg.load.max_concurrency.is_some() {
        return bad(
            "--adaptive-on concurrency sets the concurrency itself: drop --max-concurrency",
        );
    }
    let s = &cfg.load.shape;
    if s.window_s().is_some() || s.ramp.is_some() || s.users.is_some() {
        return bad("runs until its hold ends: not with --duration, --stages, a ramp or --users");
    }
    if cfg.load.shard.is_some() {
        return bad("one process judges every window: not with --shard");
    }
    let w = &cfg.workload.dataset;
    if s.turns() > 1 || w.jobs() || w.multi_turn() || w.own_schedule().is_some() {
        return bad("sends one request per arrival: not with conversations, jobs or a trace");
    }
    Ok(())
}
