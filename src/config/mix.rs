//! A workload mix within a run (`--mix FILE`): the rules between a run's mix and its other
//! options ([`check_config`], a step of `RunConfig::validate`: no conversation, trace or batch;
//! every class gets a request; `--probe-request-rate`, `--mix-alone`), and the config of a
//! class's run alone after the mixed one ([`alone_config`], `--mix-alone`). The mix's own
//! values (its classes, their bounds, the order of its requests) are `mix_spec.rs`'s,
//! re-exported here so a mix is read as `config::mix`. No I/O.

pub use super::mix_spec::{
    ClassSlo, Mix, MixAlone, MixClass, DEFAULT_TENANT_HEADER, MAX_CLASSES, MAX_FILE_BYTES,
    MAX_NAME_CHARS, MAX_PROBE_RATE, MAX_TENANT_BYTES, MAX_WEIGHT,
};

use super::error::ConfigError;
use super::limits;
use super::load::RequestRate;
use super::mix_spec::EXACT_ORDER_MAX;
use super::run::RunConfig;

/// The config of class `k`'s run alone after the mixed run `cfg`: the same mix, workload,
/// seed and SLOs; its own requests only (as many as the mixed run sent of it, built from the
/// same seed: `drive::mix`), at its weight share `s` of the load (`--request-rate` × s, a
/// `--max-concurrency` cap × s rounded up, at least 1); no warm-ups (the mixed run warmed the
/// server) and no probes.
pub fn alone_config(cfg: &RunConfig, k: u32) -> RunConfig {
    let mut c = cfg.clone();
    let Some(mix) = &cfg.mix else {
        return c;
    };
    let share = mix.weight_shares().get(k as usize).copied().unwrap_or(1.0);
    let order = mix.order(cfg.load.num_prompts.min(EXACT_ORDER_MAX));
    c.load.num_prompts = match cfg.load.num_prompts > EXACT_ORDER_MAX {
        true => (cfg.load.num_prompts as f64 * share).round().max(1.0) as u64,
        false => order.iter().filter(|&&o| o == k).count() as u64,
    };
    if let RequestRate::PerSecond(r) = cfg.load.request_rate {
        c.load.request_rate = RequestRate::PerSecond(r * share);
    }
    c.load.max_concurrency =
        (cfg.load.max_concurrency).map(|cap| ((cap as f64 * share).ceil() as u64).min(cap).max(1));
    c.load.num_warmups = 0;
    c.probe_request_rate = None;
    c.mix_alone = Some(MixAlone::Class(k));
    c
}

/// The rules of a run's mix (`--mix`), its probes (`--probe-request-rate`) and `--mix-alone`,
/// for `RunConfig::validate`.
pub(super) fn check_config(cfg: &RunConfig) -> Result<(), ConfigError> {
    let bad = |option: &str, why: String| Err(ConfigError::invalid(option, why));
    let w = &cfg.workload;
    if let Some(mix) = &cfg.mix {
        mix.check()?;
        let conversation = w.dataset.multi_turn() || cfg.load.shape.turns() > 1;
        if conversation || w.dataset.own_schedule().is_some() || cfg.inputs_per_request > 1 {
            return bad("--mix", "classes take single requests: not with a conversation (--multi-turn, --turns), a trace or --embedding-batch-size".into());
        }
        // A class's run alone sends that class only (its mixed run was checked).
        if !matches!(cfg.mix_alone, Some(MixAlone::Class(_))) {
            mix.check_run(cfg.load.num_prompts, w)?;
        }
    }
    if let Some(r) = cfg.probe_request_rate {
        if cfg.mix.is_none() {
            return bad(
                "--probe-request-rate",
                "probes send each class's requests in turn: give --mix".into(),
            );
        }
        limits::check_rate(r).map_err(|why| ConfigError::limit("--probe-request-rate", why))?;
        if r > MAX_PROBE_RATE {
            return bad("--probe-request-rate", format!("{r} is more than {MAX_PROBE_RATE} probes a second: probes are a low rate beside the load"));
        }
    }
    let Some(alone) = cfg.mix_alone else {
        return Ok(());
    };
    let Some(mix) = &cfg.mix else {
        return bad(
            "--mix-alone",
            "runs each class of a mix alone: give --mix".into(),
        );
    };
    if cfg.load.shape.sets_schedule() {
        return bad("--mix-alone", "runs each class at its share of a count of requests at one rate: not with --duration, --stages or a ramp".into());
    }
    if cfg.load.shard.is_some() {
        return bad(
            "--mix-alone",
            "not with --shard: run the mix alone on one machine".into(),
        );
    }
    if let MixAlone::Class(k) = alone {
        if k as usize >= mix.classes.len() {
            return bad(
                "--mix-alone",
                format!("class {k} is not one of the mix's {}", mix.classes.len()),
            );
        }
    }
    Ok(())
}
