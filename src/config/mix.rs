//! A workload mix (`--mix FILE`, issue 27 §2): classes of requests sharing one run, each with
//! its weight (its share of the requests), its priority (vLLM's `priority` request field:
//! a lower value is served first), its tenant (sent in a header), its lengths and its SLOs.
//!
//! The file is JSON, read by `cli::plan` (the I/O) and parsed here ([`Mix::from_json`]):
//! unknown keys are refused with their line and column, and every value is bounded
//! ([`Mix::check`]) before it decides anything. A class name is a label from outside: it is
//! escaped wherever it is printed. Which request belongs to which class is decided here too
//! ([`Mix::order`]: a smooth weighted round robin, so every prefix of the run holds each
//! class in proportion to its weight, within one request). No I/O.

use serde::{Deserialize, Serialize};

use super::error::ConfigError;
use super::limits::{MAX_TOKENS, MAX_WAIT_S};
use super::{Dataset, RequestRate, RunConfig, Slo, SloMetric, WorkloadSpec};

/// The most classes of a mix.
pub const MAX_CLASSES: usize = 16;
/// The longest class name, characters.
pub const MAX_NAME_CHARS: usize = 64;
/// The longest tenant id (a header value), bytes.
pub const MAX_TENANT_BYTES: usize = 256;
/// The largest weight (weights are relative: a larger one is surely a typo).
pub const MAX_WEIGHT: f64 = 1e6;
/// The largest mix file read, bytes.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// Runs up to this many requests have their order checked whole ([`Mix::check_run`]).
const EXACT_ORDER_MAX: u64 = 1_000_000;
/// The highest `--probe-request-rate`, probes per second.
pub const MAX_PROBE_RATE: f64 = 100.0;
/// The tenant header when the file names none.
pub const DEFAULT_TENANT_HEADER: &str = "x-tenant-id";

/// The classes of a run and the header that carries their tenant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mix {
    /// The header each class's `tenant` is sent in.
    #[serde(default = "default_tenant_header")]
    pub tenant_header: String,
    pub classes: Vec<MixClass>,
}

fn default_tenant_header() -> String {
    DEFAULT_TENANT_HEADER.into()
}

/// One class of a mix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixClass {
    /// A label, unique in the mix.
    pub name: String,
    /// Relative weight: the class's share of the requests is weight / the sum of weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// Its share of the requests as a fraction; the shares of a mix sum to 1 (a mix gives
    /// either weights or shares).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// vLLM's `priority` request field (lower is served first under
    /// `--scheduling-policy priority`); sent only when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// The tenant id, sent in the mix's `tenant_header`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Prompt length of the class's requests (the random dataset only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_len: Option<u64>,
    /// Output tokens asked of the class's requests (`max_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_len: Option<u64>,
    /// The class's SLOs for its goodput; none given: the run's `--goodput`.
    #[serde(default, skip_serializing_if = "ClassSlo::is_empty")]
    pub slo: ClassSlo,
}

/// A class's SLOs, milliseconds (as `--goodput`'s).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassSlo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2el_ms: Option<f64>,
}

impl ClassSlo {
    fn is_empty(&self) -> bool {
        self.slos().is_empty()
    }

    /// The SLOs given, as `--goodput`'s.
    pub fn slos(&self) -> Vec<Slo> {
        [
            (SloMetric::Ttft, self.ttft_ms),
            (SloMetric::Tpot, self.tpot_ms),
            (SloMetric::E2el, self.e2el_ms),
        ]
        .into_iter()
        .filter_map(|(metric, ms)| ms.map(|max_ms| Slo { metric, max_ms }))
        .collect()
    }
}

impl Mix {
    /// Parses a mix file's text; an error names `file`, the line and column, and what was
    /// wrong (an unknown key, a value of the wrong type), then checks it ([`Mix::check`]).
    pub fn from_json(text: &str, file: &str) -> Result<Mix, ConfigError> {
        let mix: Mix = serde_json::from_str(text).map_err(|e| {
            let why = e.to_string();
            // serde_json ends its message with " at line L column C": say it first.
            let why = why.split(" at line ").next().unwrap_or(&why).to_string();
            ConfigError::invalid(
                "--mix",
                format!("{file} line {} column {}: {why}", e.line(), e.column()),
            )
        })?;
        mix.check()
            .map_err(|why| ConfigError::invalid("--mix", format!("{file}: {why}")))?;
        Ok(mix)
    }

    /// Every value within its bounds and the classes consistent; the message names the class
    /// and the field.
    pub fn check(&self) -> Result<(), String> {
        let n = self.classes.len();
        if n == 0 {
            return Err("the mix has no classes: give at least one in \"classes\"".into());
        }
        if n > MAX_CLASSES {
            return Err(format!("{n} classes, more than {MAX_CLASSES}"));
        }
        check_header_name(&self.tenant_header)?;
        let shares = self.classes.iter().filter(|c| c.share.is_some()).count();
        for (i, c) in self.classes.iter().enumerate() {
            let at = format!("class {} ({})", i + 1, label(&c.name));
            let chars = c.name.chars().count();
            if chars == 0 || chars > MAX_NAME_CHARS {
                return Err(format!(
                    "{at}: \"name\" must be 1 to {MAX_NAME_CHARS} characters"
                ));
            }
            if c.name.chars().any(char::is_control) {
                return Err(format!("{at}: \"name\" holds a control character"));
            }
            if self.classes[..i].iter().any(|o| o.name == c.name) {
                return Err(format!("{at}: the name is given to two classes"));
            }
            match (c.weight, c.share) {
                (Some(_), Some(_)) => {
                    return Err(format!("{at}: give \"weight\" or \"share\", not both"))
                }
                (None, None) => {
                    return Err(format!(
                        "{at}: give its \"weight\" (or every class a \"share\")"
                    ))
                }
                (Some(_), None) if shares > 0 => {
                    return Err(format!(
                        "{at}: a mix gives every class a \"share\" or every class a \"weight\", not both kinds"
                    ));
                }
                (Some(w), None) if !(w.is_finite() && w > 0.0 && w <= MAX_WEIGHT) => {
                    return Err(format!(
                        "{at}: \"weight\" {w} is not a number above 0 and at most {MAX_WEIGHT:e}"
                    ))
                }
                (None, Some(s)) if !(s.is_finite() && s > 0.0 && s <= 1.0) => {
                    return Err(format!("{at}: \"share\" {s} is not in (0, 1]"))
                }
                _ => {}
            }
            if let Some(t) = &c.tenant {
                check_header_value(t).map_err(|why| format!("{at}: \"tenant\" {why}"))?;
            }
            for (field, len) in [("input_len", c.input_len), ("output_len", c.output_len)] {
                if len.is_some_and(|l| l == 0 || l > MAX_TOKENS) {
                    return Err(format!(
                        "{at}: \"{field}\" must be 1 to {MAX_TOKENS} tokens"
                    ));
                }
            }
            for slo in c.slo.slos() {
                let ms = slo.max_ms;
                if !(ms.is_finite() && ms > 0.0 && ms <= MAX_WAIT_S * 1e3) {
                    return Err(format!(
                        "{at}: \"slo\".\"{}_ms\" {ms} is not a number of ms above 0 and at most a week",
                        slo.metric.key()
                    ));
                }
            }
        }
        if shares > 0 {
            let sum: f64 = self.classes.iter().filter_map(|c| c.share).sum();
            if (sum - 1.0).abs() > 1e-6 {
                return Err(format!(
                    "the shares sum to {sum}, not 1 (give fractions that sum to 1, or relative \"weight\"s)"
                ));
            }
        }
        Ok(())
    }

    /// The class's weight: its `weight`, or its `share`.
    fn raw_weight(c: &MixClass) -> f64 {
        c.weight.or(c.share).unwrap_or(0.0)
    }

    /// Each class's configured share of the requests, weight / the sum of weights, in order.
    pub fn weight_shares(&self) -> Vec<f64> {
        let sum: f64 = self.classes.iter().map(Self::raw_weight).sum();
        (self.classes.iter())
            .map(|c| Self::raw_weight(c) / sum)
            .collect()
    }

    /// The class of each of `n` requests, in order: a smooth weighted round robin (each step
    /// adds every class's share to its credit and picks the largest credit, which then pays
    /// 1; ties go to the first class), so the first `k` requests hold each class `k·share`
    /// times within one.
    pub fn order(&self, n: u64) -> Vec<u32> {
        let shares = self.weight_shares();
        let mut credit = vec![0.0; shares.len()];
        let mut order = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
        for _ in 0..n {
            let mut best = 0;
            for (i, s) in shares.iter().enumerate() {
                credit[i] += s;
                if credit[i] > credit[best] + 1e-12 {
                    best = i;
                }
            }
            credit[best] -= 1.0;
            order.push(best as u32);
        }
        order
    }

    /// Checks the mix against the run: a class must get at least one of `requests`, and a
    /// class's `input_len` needs the random dataset.
    pub fn check_run(&self, requests: u64, workload: &WorkloadSpec) -> Result<(), ConfigError> {
        // The order gives a class within one of requests × its share: past a million
        // requests, one is enough not to be counted.
        let order = self.order(requests.min(EXACT_ORDER_MAX));
        let shares = self.weight_shares();
        for (i, c) in self.classes.iter().enumerate() {
            let gets_one = match requests > EXACT_ORDER_MAX {
                true => requests as f64 * shares[i] >= 1.0,
                false => order.contains(&(i as u32)),
            };
            if !gets_one {
                return Err(ConfigError::invalid(
                    "--mix",
                    format!(
                        "class {} gets none of the run's {requests} requests: raise --num-prompts or its weight",
                        label(&c.name)
                    ),
                ));
            }
            if c.input_len.is_some() && !matches!(workload.dataset, Dataset::Random { .. }) {
                return Err(ConfigError::invalid(
                    "--mix",
                    format!(
                        "class {}: \"input_len\" needs --dataset-name random (the {} dataset gives its own prompts)",
                        label(&c.name),
                        workload.dataset
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The workload of class `i`: `workload` with the class's `input_len` and `output_len`
    /// (the random dataset's lengths; `output_len` also caps other datasets' answers).
    pub fn workload_of(&self, i: usize, workload: &WorkloadSpec) -> WorkloadSpec {
        let mut w = workload.clone();
        let Some(c) = self.classes.get(i) else {
            return w;
        };
        if let Dataset::Random {
            input_len,
            output_len,
            ..
        } = &mut w.dataset
        {
            *input_len = c.input_len.unwrap_or(*input_len);
            *output_len = c.output_len.or(*output_len);
        }
        w
    }
}

/// `--mix-alone` (issue 27 §2): each class of a mix run alone after the mixed run, so its
/// latency alone stands beside its latency mixed (`results::stats::mix_alone`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MixAlone {
    /// The mixed run: each class is run alone after it (saved as `"each_class"`).
    EachClass,
    /// A run of one class alone: class N's requests only, at its share of the mixed run's
    /// load ([`alone_config`]; saved as `{"class": N}`).
    Class(u32),
}

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
        mix.check()
            .map_err(|why| ConfigError::invalid("--mix", why))?;
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
        super::limits::check_rate(r)
            .map_err(|why| ConfigError::limit("--probe-request-rate", why))?;
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

/// A class name quoted for a message (control characters were refused or are shown escaped).
fn label(name: &str) -> String {
    format!("'{}'", name.escape_debug())
}

/// A header name: an HTTP token (RFC 9110), 1 to 64 characters, not one servebench sets.
fn check_header_name(name: &str) -> Result<(), String> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || name.len() > 64 || !name.bytes().all(token) {
        return Err(format!(
            "\"tenant_header\" {} is not a header name (1 to 64 letters, digits or !#$%&'*+-.^_`|~)",
            label(name)
        ));
    }
    let own = [
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
    ];
    if own.iter().any(|o| o.eq_ignore_ascii_case(name)) {
        return Err(format!(
            "\"tenant_header\" {} is a header servebench sets itself",
            label(name)
        ));
    }
    // The mix is saved in the result: a credential does not belong in it (`--header`,
    // `--api-key` keep theirs unsaved).
    let secret = [
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
    ];
    if secret.iter().any(|o| o.eq_ignore_ascii_case(name)) {
        return Err(format!(
            "\"tenant_header\" {} carries credentials, and a mix is saved in the result: use --header or --api-key",
            label(name)
        ));
    }
    Ok(())
}

/// A header value: 1 to [`MAX_TENANT_BYTES`] visible ASCII characters or inner spaces.
fn check_header_value(v: &str) -> Result<(), String> {
    let ok = !v.is_empty()
        && v.len() <= MAX_TENANT_BYTES
        && v.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        && !v.starts_with(' ')
        && !v.ends_with(' ');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{} is not 1 to {MAX_TENANT_BYTES} visible ASCII characters",
            label(v)
        ))
    }
}

#[cfg(test)]
#[path = "mix_tests.rs"]
mod tests;
