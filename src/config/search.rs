//! What `servebench search` varies and when it stops. Pure values; the search itself is
//! `drive::search`, its document `results::search`.
//!
//! A search varies a [`LoadParameter`], but only the request rate, the concurrency or the
//! prefix dataset's number of distinct prefixes: on the command line (`--by`) and in the saved
//! [`SearchSpec`] those are spelled `rate`, `concurrency` and `prefixes` ([`axis_word`],
//! [`parse_axis`]), as search documents always stored the first two. A search over `prefixes`
//! runs at a fixed load and finds the largest number of prefixes whose measured
//! prefix-cache hit rate stays at least [`PREFIX_HIT_SHARE`] of its designed one: the cliff.

use serde::{Deserialize, Serialize};

use super::error::ValueError;
use super::sweep::LoadParameter;

/// A `--by prefixes` probe passes while its measured prefix-cache hit rate is at least this
/// share of its designed one (the cliff's rule: `views::cliff`).
pub const PREFIX_HIT_SHARE: f64 = 0.5;

/// The word a search uses for its axis (`rate`, `concurrency`, `prefixes`); `None` for a
/// parameter a search cannot vary.
pub fn axis_word(p: LoadParameter) -> Option<&'static str> {
    match p {
        LoadParameter::RequestRate => Some("rate"),
        LoadParameter::MaxConcurrency => Some("concurrency"),
        LoadParameter::NumPrefixes => Some("prefixes"),
        LoadParameter::NumPrompts | LoadParameter::InputLen | LoadParameter::UserGap => None,
    }
}

/// The parameter a search axis word names: `rate`, `concurrency` or `prefixes`.
pub fn parse_axis(s: &str) -> Result<LoadParameter, ValueError> {
    match s {
        "rate" => Ok(LoadParameter::RequestRate),
        "concurrency" => Ok(LoadParameter::MaxConcurrency),
        "prefixes" => Ok(LoadParameter::NumPrefixes),
        other => Err(ValueError::Axis(other.to_string())),
    }
}

/// [`SearchSpec::by`] saved as `"rate"` or `"concurrency"`.
mod axis {
    use serde::de::Error as _;
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    use super::{axis_word, parse_axis, LoadParameter};

    pub fn serialize<S: Serializer>(p: &LoadParameter, s: S) -> Result<S::Ok, S::Error> {
        let word = axis_word(*p)
            .ok_or_else(|| S::Error::custom(format!("a search cannot vary {}", p.as_str())))?;
        s.serialize_str(word)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LoadParameter, D::Error> {
        let word = String::deserialize(d)?;
        parse_axis(&word).map_err(D::Error::custom)
    }
}

/// Search bounds and stopping rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchSpec {
    /// `RequestRate`, `MaxConcurrency` or `NumPrefixes` (saved as `rate`, `concurrency`,
    /// `prefixes`).
    #[serde(with = "axis")]
    pub by: LoadParameter,
    pub start: f64,
    pub max: f64,
    /// Stop bisecting when (fail − pass) / fail ≤ precision.
    pub precision: f64,
    /// Fraction of requests that must be good.
    pub target: f64,
    pub max_probes: u32,
    /// `--stop-saturated on`: stop doubling at the first saturated probe
    /// (`results::saturated`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stop_saturated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_axis_keeps_its_saved_names() {
        let spec = |by| SearchSpec {
            by,
            start: 1.0,
            max: 8.0,
            precision: 0.05,
            target: 0.9,
            max_probes: 20,
            stop_saturated: false,
        };
        for (by, word) in [
            (LoadParameter::RequestRate, "rate"),
            (LoadParameter::MaxConcurrency, "concurrency"),
            (LoadParameter::NumPrefixes, "prefixes"),
        ] {
            let text = serde_json::to_string(&spec(by)).unwrap();
            assert!(text.starts_with(&format!(r#"{{"by":"{word}","#)), "{text}");
            assert_eq!(serde_json::from_str::<SearchSpec>(&text).unwrap(), spec(by));
        }
        assert!(serde_json::to_string(&spec(LoadParameter::NumPrompts)).is_err());
        let bad = r#"{"by":"num_prompts","start":1,"max":8,"precision":0.05,"target":0.9,"max_probes":2}"#;
        assert!(serde_json::from_str::<SearchSpec>(bad).is_err());
    }
}
