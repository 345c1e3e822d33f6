//! The simulator's error: a setting (of [`crate::sim::SimConfig`], its engine, limits or
//! faults) outside the values it may take, or a preset or metrics-flavour name that names
//! none. The message names the setting as `servebench sim` and the tests spell it
//! (`faults.error_rate`, `engine.max_num_seqs`, `time_scale`) and says what it must be.

/// A simulator setting or name that breaks a rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimConfigError {
    /// A setting outside the values it may take: "`setting` `rule`".
    #[error("{setting} {rule}")]
    Setting { setting: String, rule: String },
    /// A preset or metrics flavour that does not exist.
    #[error("unknown {what} '{name}' (expected {expected})")]
    Unknown {
        what: &'static str,
        name: String,
        expected: String,
    },
}

impl SimConfigError {
    /// `setting` breaks `rule` ("must be at least 1").
    pub(crate) fn setting(setting: impl Into<String>, rule: impl Into<String>) -> Self {
        SimConfigError::Setting {
            setting: setting.into(),
            rule: rule.into(),
        }
    }
}

/// For callers whose own errors are still text (the command line's flag parsers).
impl From<SimConfigError> for String {
    fn from(e: SimConfigError) -> String {
        e.to_string()
    }
}
