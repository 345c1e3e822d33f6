//! A workload mix's values (`--mix FILE`): classes of requests sharing one run, each with
//! its weight (its share of the requests), its priority (vLLM's `priority` request field:
//! a lower value is served first), its tenant (sent in a header), its lengths and its SLOs.
//!
//! The file is JSON, read by `cli::plan` (the I/O) and parsed here ([`Mix::from_json`]):
//! unknown keys are refused with their line and column, and every value is bounded
//! ([`Mix::check`]) before it decides anything. A class name is a label from outside: it is
//! escaped wherever it is printed. Which request belongs to which class is decided here too
//! ([`Mix::order`]: a smooth weighted round robin, so every prefix of the run holds each
//! class in proportion to its weight, within one request). No I/O, and nothing of the run
//! beyond its workload: a mix within a run (its rules against the run's other options, the
//! config of a class's run alone) is `mix.rs`'s, which re-exports everything here.

use serde::{Deserialize, Serialize};

use super::error::{ConfigError, HeaderError};
use super::limits::{MAX_TOKENS, MAX_WAIT_S};
use super::slo::{Slo, SloMetric};
use super::workload::{Dataset, WorkloadSpec};

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
pub(super) const EXACT_ORDER_MAX: u64 = 1_000_000;
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
        mix.check().map_err(|e| e.in_file(file))?;
        Ok(mix)
    }

    /// Every value within its bounds and the classes consistent; the message names the class
    /// and the field.
    pub fn check(&self) -> Result<(), ConfigError> {
        let bad =
            |why: String| -> Result<(), ConfigError> { Err(ConfigError::invalid("--mix", why)) };
        let n = self.classes.len();
        if n == 0 {
            return bad("the mix has no classes: give at least one in \"classes\"".into());
        }
        if n > MAX_CLASSES {
            return bad(format!("{n} classes, more than {MAX_CLASSES}"));
        }
        check_header_name(&self.tenant_header).map_err(|e| ConfigError::invalid("--mix", e))?;
        let shares = self.classes.iter().filter(|c| c.share.is_some()).count();
        for (i, c) in self.classes.iter().enumerate() {
            let at = format!("class {} ({})", i + 1, label(&c.name));
            let chars = c.name.chars().count();
            if chars == 0 || chars > MAX_NAME_CHARS {
                return bad(format!(
                    "{at}: \"name\" must be 1 to {MAX_NAME_CHARS} characters"
                ));
            }
            if c.name.chars().any(char::is_control) {
                return bad(format!("{at}: \"name\" holds a control character"));
            }
            if self.classes[..i].iter().any(|o| o.name == c.name) {
                return bad(format!("{at}: the name is given to two classes"));
            }
            match (c.weight, c.share) {
                (Some(_), Some(_)) => {
                    return bad(format!("{at}: give \"weight\" or \"share\", not both"))
                }
                (None, None) => {
                    return bad(format!(
                        "{at}: give its \"weight\" (or every class a \"share\")"
                    ))
                }
                (Some(_), None) if shares > 0 => {
                    return bad(format!(
                        "{at}: a mix gives every class a \"share\" or every class a \"weight\", not both kinds"
                    ));
                }
                (Some(w), None) if !(w.is_finite() && w > 0.0 && w <= MAX_WEIGHT) => {
                    return bad(format!(
                        "{at}: \"weight\" {w} is not a number above 0 and at most {MAX_WEIGHT:e}"
                    ))
                }
                (None, Some(s)) if !(s.is_finite() && s > 0.0 && s <= 1.0) => {
                    return bad(format!("{at}: \"share\" {s} is not in (0, 1]"))
                }
                _ => {}
            }
            if let Some(t) = &c.tenant {
                check_header_value(t).map_err(|why| {
                    ConfigError::invalid("--mix", format!("{at}: \"tenant\" {why}"))
                })?;
            }
            for (field, len) in [("input_len", c.input_len), ("output_len", c.output_len)] {
                if len.is_some_and(|l| l == 0 || l > MAX_TOKENS) {
                    return bad(format!(
                        "{at}: \"{field}\" must be 1 to {MAX_TOKENS} tokens"
                    ));
                }
            }
            for slo in c.slo.slos() {
                let ms = slo.max_ms;
                if !(ms.is_finite() && ms > 0.0 && ms <= MAX_WAIT_S * 1e3) {
                    return bad(format!(
                        "{at}: \"slo\".\"{}_ms\" {ms} is not a number of ms above 0 and at most a week",
                        slo.metric.key()
                    ));
                }
            }
        }
        if shares > 0 {
            let sum: f64 = self.classes.iter().filter_map(|c| c.share).sum();
            if (sum - 1.0).abs() > 1e-6 {
                return bad(format!(
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

/// `--mix-alone`: each class of a mix run alone after the mixed run, so its
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

/// A class name quoted for a message (control characters were refused or are shown escaped).
fn label(name: &str) -> String {
    format!("'{}'", name.escape_debug())
}

/// A header name: an HTTP token (RFC 9110), 1 to 64 characters, not one servebench sets.
fn check_header_name(name: &str) -> Result<(), HeaderError> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || name.len() > 64 || !name.bytes().all(token) {
        return Err(HeaderError::NotAName(label(name)));
    }
    let own = [
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
    ];
    if own.iter().any(|o| o.eq_ignore_ascii_case(name)) {
        return Err(HeaderError::OwnHeader(label(name)));
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
        return Err(HeaderError::Credentials(label(name)));
    }
    Ok(())
}

/// A header value: 1 to [`MAX_TENANT_BYTES`] visible ASCII characters or inner spaces.
fn check_header_value(v: &str) -> Result<(), HeaderError> {
    let ok = !v.is_empty()
        && v.len() <= MAX_TENANT_BYTES
        && v.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        && !v.starts_with(' ')
        && !v.ends_with(' ');
    if ok {
        Ok(())
    } else {
        Err(HeaderError::NotAValue {
            value: label(v),
            most: MAX_TENANT_BYTES,
        })
    }
}

#[cfg(test)]
#[path = "mix_tests.rs"]
mod tests;
