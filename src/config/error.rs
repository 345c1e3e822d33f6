//! The error of a configuration value that breaks a rule. The message names the option.

/// A configuration value is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid {option}: {why}")]
    Invalid { option: String, why: String },
}
