//! Multi-LoRA traffic (`--lora-modules NAME[:WEIGHT],...`): the adapters a run's requests are
//! sent to, each request's `model` one of them drawn by weight (`workload::lora`). vLLM's own
//! form of the flag, names without weights (`--lora-modules a b c`), means equal weights; a
//! vLLM server's `NAME=PATH` is taken as its name. Pure values and their rules: the bounds
//! below, each named in one line.

use serde::{Deserialize, Serialize};

/// The most adapters one run may name.
pub const MAX_ADAPTERS: usize = 1024;
/// The longest adapter name, bytes.
pub const MAX_ADAPTER_NAME: usize = 256;
/// The largest weight: weights are relative, so any mix is within it.
pub const MAX_WEIGHT: f64 = 1e6;

/// One adapter and its share of the requests (relative to the others' weights).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoraModule {
    pub name: String,
    pub weight: f64,
}

/// A `--lora-modules` item that is not `NAME[:WEIGHT]`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LoraError {
    #[error("'{0}': an adapter needs a name")]
    NoName(String),
    #[error("adapter '{0}': a name is at most {MAX_ADAPTER_NAME} bytes without spaces or control characters")]
    BadName(String),
    #[error("adapter '{name}': weight {weight} is not a number in (0, {MAX_WEIGHT}]")]
    BadWeight { name: String, weight: String },
    #[error("adapter '{0}' is named twice")]
    Twice(String),
    #[error("{0} adapters: at most {MAX_ADAPTERS}")]
    TooMany(usize),
}

impl LoraModule {
    /// One item: `NAME`, `NAME:WEIGHT` or vLLM serve's `NAME=PATH` (the name is kept). A
    /// suffix after the last `:` that is not a number is part of the name.
    pub fn parse(item: &str) -> Result<LoraModule, LoraError> {
        let item = item.trim();
        let item = item.split_once('=').map_or(item, |(name, _path)| name);
        let (name, weight) = match item.rsplit_once(':') {
            Some((name, w)) if w.trim().parse::<f64>().is_ok() || w.trim().is_empty() => {
                (name, Some(w.trim()))
            }
            _ => (item, None),
        };
        if name.is_empty() {
            return Err(LoraError::NoName(item.to_string()));
        }
        let weight = match weight {
            None => 1.0,
            Some(w) => w.parse::<f64>().unwrap_or(f64::NAN),
        };
        let module = LoraModule {
            name: name.to_string(),
            weight,
        };
        module.check()?;
        Ok(module)
    }

    fn check(&self) -> Result<(), LoraError> {
        let n = &self.name;
        let bad_char = |c: char| c.is_whitespace() || c.is_control();
        if n.is_empty() || n.len() > MAX_ADAPTER_NAME || n.chars().any(bad_char) {
            let shown: String = n.chars().take(64).filter(|c| !c.is_control()).collect();
            return Err(LoraError::BadName(shown));
        }
        if !(self.weight.is_finite() && self.weight > 0.0 && self.weight <= MAX_WEIGHT) {
            return Err(LoraError::BadWeight {
                name: n.clone(),
                weight: self.weight.to_string(),
            });
        }
        Ok(())
    }
}

/// The rules on a whole list: each item's, no name twice, at most [`MAX_ADAPTERS`].
pub fn check(modules: &[LoraModule]) -> Result<(), LoraError> {
    if modules.len() > MAX_ADAPTERS {
        return Err(LoraError::TooMany(modules.len()));
    }
    let mut seen = std::collections::HashSet::new();
    for m in modules {
        m.check()?;
        if !seen.insert(m.name.as_str()) {
            return Err(LoraError::Twice(m.name.clone()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapters_take_weights_or_vllm_s_bare_names() {
        let m = |name: &str, weight: f64| LoraModule {
            name: name.into(),
            weight,
        };
        assert_eq!(LoraModule::parse("a").unwrap(), m("a", 1.0));
        assert_eq!(LoraModule::parse("a:3").unwrap(), m("a", 3.0));
        assert_eq!(LoraModule::parse(" b:0.5 ").unwrap(), m("b", 0.5));
        assert_eq!(LoraModule::parse("org/x:v1").unwrap(), m("org/x:v1", 1.0));
        assert_eq!(LoraModule::parse("sql=/models/sql").unwrap(), m("sql", 1.0));
        for (bad, named) in [
            ("", "needs a name"),
            (":2", "needs a name"),
            ("a:0", "weight 0"),
            ("a:-1", "weight -1"),
            ("a:inf", "weight inf"),
            ("a:", "weight NaN"),
            ("a b", "without spaces"),
        ] {
            let e = LoraModule::parse(bad).unwrap_err().to_string();
            assert!(e.contains(named), "{bad}: {e}");
        }
        let long = "x".repeat(MAX_ADAPTER_NAME + 1);
        assert!(LoraModule::parse(&long).is_err());
        assert!(check(&[m("a", 1.0), m("b", 2.0)]).is_ok());
        let twice = check(&[m("a", 1.0), m("a", 2.0)]).unwrap_err().to_string();
        assert!(twice.contains("'a' is named twice"), "{twice}");
        let many: Vec<_> = (0..=MAX_ADAPTERS)
            .map(|i| m(&format!("a{i}"), 1.0))
            .collect();
        assert!(check(&many).unwrap_err().to_string().contains("at most"));
    }
}
