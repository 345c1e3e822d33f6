//! [`ValidConfig`]: a [`RunConfig`] that passed every rule. [`ValidConfig::new`] is the one
//! caller of `RunConfig::validate`, and a run (`drive::run`) takes only a `ValidConfig`, so no
//! config reaches a server unchecked and none is checked twice. A sweep step's or a search
//! probe's config is derived from a valid one and checked again ([`ValidConfig::step`]): a
//! larger load may break a rule the base kept (the tokens `--num-prompts` asks to build).

use std::ops::Deref;

use super::error::ConfigError;
use super::run::RunConfig;
use super::sweep::{step_config, LoadParameter, SweepValue};

/// A run's config, validated; read it through `Deref`.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidConfig(RunConfig);

impl ValidConfig {
    /// `cfg`, when it keeps every rule; the error names the option that breaks one.
    pub fn new(cfg: RunConfig) -> Result<ValidConfig, ConfigError> {
        cfg.validate()?;
        Ok(ValidConfig(cfg))
    }

    /// This config with `param` at `value` (a sweep step, a search probe), checked.
    pub fn step(
        &self,
        param: LoadParameter,
        value: SweepValue,
    ) -> Result<ValidConfig, ConfigError> {
        ValidConfig::new(step_config(&self.0, param, value))
    }

    /// The config itself.
    pub fn into_inner(self) -> RunConfig {
        self.0
    }
}

impl Deref for ValidConfig {
    type Target = RunConfig;
    fn deref(&self) -> &RunConfig {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RequestRate;

    #[test]
    fn only_a_config_that_keeps_the_rules_is_valid_and_so_is_each_step() {
        let bad = RunConfig {
            base_url: "localhost:8000".into(),
            ..RunConfig::default()
        };
        assert_eq!(ValidConfig::new(bad).unwrap_err().option(), "--base-url");
        let base = ValidConfig::new(RunConfig::default()).unwrap();
        let rate = SweepValue::Rate(RequestRate::PerSecond(4.0));
        let step = base.step(LoadParameter::RequestRate, rate).unwrap();
        assert_eq!(step.load.request_rate, RequestRate::PerSecond(4.0));
        // A step whose load asks for more prompt tokens than a run builds is refused.
        let huge = SweepValue::Count(crate::config::MAX_PROMPTS);
        let err = base.step(LoadParameter::NumPrompts, huge).unwrap_err();
        assert_eq!(err.option(), "--num-prompts", "{err}");
    }
}
