//! The errors of configuration values, by topic: [`ConfigError`], a value that breaks a rule
//! (the message names the option), and [`ValueError`], text that is not the value it should
//! be (a flag's, or a saved document's field). The bounds' own error is
//! `limits::LimitError`.

use std::fmt::Display;

use super::limits::LimitError;

/// A configuration value is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid {option}: {why}")]
    Invalid { option: String, why: String },
    /// A time span or a rate past its bounds (the message holds the bound's: it is no
    /// `source`, which would print it twice).
    #[error("invalid {option}: {why}")]
    Limit { option: String, why: LimitError },
}

impl ConfigError {
    /// `option` (a flag, `--num-prompts`) is wrong: `why`.
    pub fn invalid(option: impl Into<String>, why: impl Display) -> ConfigError {
        ConfigError::Invalid {
            option: option.into(),
            why: why.to_string(),
        }
    }

    /// `option` is past a bound.
    pub fn limit(option: impl Into<String>, why: LimitError) -> ConfigError {
        ConfigError::Limit {
            option: option.into(),
            why,
        }
    }

    /// The same error about the file `file` (a mix, a schema): its why starts with the
    /// file's name.
    pub fn in_file(self, file: &str) -> ConfigError {
        match self {
            ConfigError::Invalid { option, why } => ConfigError::Invalid {
                option,
                why: format!("{file}: {why}"),
            },
            other => other,
        }
    }

    /// The option that is wrong.
    pub fn option(&self) -> &str {
        match self {
            ConfigError::Invalid { option, .. } | ConfigError::Limit { option, .. } => option,
        }
    }
}

/// Text that is not the value it stands for. Each message quotes the text and says what was
/// expected, in one line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("invalid request rate '{0}' (expected a positive number or 'inf')")]
    Rate(String),
    #[error("unknown metric '{0}' (expected ttft, tpot, itl, e2el, ttst or output_tps_per_user)")]
    Metric(String),
    #[error("invalid goodput SLO '{0}' (expected METRIC:MS, e.g. ttft:500; METRIC is ttft, tpot, e2el, ttfa, or jct for a job)")]
    Slo(String),
    #[error("invalid goodput term '{0}': valid_output takes 1 (a good request's answer is valid)")]
    ValidOutput(String),
    #[error("goodput SLOs take ttft, tpot, e2el or ttfa (ITL is not per request)")]
    SloOfItl,
    #[error("invalid goodput SLO '{slo}': '{ms}' is not a positive number of ms")]
    SloBound { slo: String, ms: String },
    #[error("invalid stage '{0}' (expected RATE:SECONDS, e.g. 5:30)")]
    Stage(String),
    #[error("invalid stage '{0}' (expected RATE:SECONDS, e.g. 5:30): rate and seconds must be positive numbers")]
    StageNotPositive(String),
    #[error("invalid stage '{stage}': {part} {why}")]
    StageBound {
        stage: String,
        /// `rate` or `seconds`.
        part: &'static str,
        why: LimitError,
    },
    #[error("'{0}' is not a statistic (mean, median, std or pNN, e.g. p99)")]
    Stat(String),
    #[error("'{0}' is not a metric key (STAT_METRIC_ms, e.g. p99_ttft_ms)")]
    MetricKey(String),
    #[error("'{0}' is not a whole number of at least 1")]
    Count(String),
    #[error("'{0}': a range is written A,B,...,C (e.g. 1,2,...,4096)")]
    Range(String),
    #[error("'{0}': B must be a multiple of A greater than A (the ratio of the progression)")]
    RangeRatio(String),
    #[error("unknown search axis '{0}' (expected rate or concurrency)")]
    Axis(String),
    #[error("invalid shard '{shard}': {why}")]
    Shard { shard: String, why: ShardWhy },
    #[error(
        "invalid start time '{text}': {reason} (expected RFC 3339, e.g. 2026-05-01T12:00:00Z)"
    )]
    StartAt { text: String, reason: String },
    #[error("'{0}' is not KEY=VALUE")]
    Pair(String),
    /// `--client-threads`: the text, and the most threads a run may ask for.
    #[error("invalid --client-threads '{0}' (expected auto or a whole number from 1 to {1})")]
    ClientThreads(String, u16),
    /// `--source-addresses`: the text, and what is wrong with it.
    #[error("invalid --source-addresses '{0}': {1}")]
    SourceAddresses(String, SourceWhy),
    /// `--audio-duration-s`: not a number.
    /// A `--hook` (its text shown escaped, in one line; the option is named by the caller).
    #[error("'{spec}': {why}")]
    Hook { spec: String, why: HookWhy },
    #[error("'{0}' is not a number of seconds")]
    Seconds(String),
    /// `--audio-duration-s`: zero, negative or not finite.
    #[error("{0} s: give a positive number of seconds")]
    SecondsNotPositive(String),
    /// `--audio-duration-s`: more seconds than a `Duration` holds.
    #[error("{0} s: too long")]
    SecondsTooLong(String),
}

/// What is wrong with a header a mix file names (its `tenant_header`) or sends (a class's
/// `tenant`); each message quotes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error(
        "\"tenant_header\" {0} is not a header name (1 to 64 letters, digits or !#$%&'*+-.^_`|~)"
    )]
    NotAName(String),
    #[error("\"tenant_header\" {0} is a header servebench sets itself")]
    OwnHeader(String),
    #[error("\"tenant_header\" {0} carries credentials, and a mix is saved in the result: use --header or --api-key")]
    Credentials(String),
    /// A header value that is not 1 to `most` visible ASCII characters or inner spaces.
    #[error("{value} is not 1 to {most} visible ASCII characters")]
    NotAValue { value: String, most: usize },
}

/// A JSON schema (`--json-schema-path`, a tool's `parameters`) that uses what the answer check
/// does not check; `at` is where in the schema (`schema.properties.city`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    #[error("{at}: nested deeper than {most} levels")]
    TooDeep { at: String, most: usize },
    #[error("{at}: a schema must be a JSON object")]
    NotAnObject { at: String },
    /// A keyword outside the checked ones (`checked`: their list, comma-separated).
    #[error("{at}: keyword '{keyword}' is not one servebench checks (it checks {checked})")]
    Unchecked {
        at: String,
        keyword: String,
        checked: String,
    },
    #[error("{at}: '{key}' has a value of the wrong shape: {value}")]
    Shape {
        at: String,
        key: String,
        value: String,
    },
}

/// What is wrong with a `--source-addresses` list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceWhy {
    #[error("no address given")]
    Empty,
    /// The count named, and the most a run may name.
    #[error("{0} addresses, at most {1}")]
    TooMany(usize, usize),
    #[error("'{0}' is not an IP address")]
    NotAnAddress(String),
    #[error("{0} is not a local address to bind to")]
    NotLocal(std::net::IpAddr),
    #[error("{0} is named twice")]
    Twice(std::net::IpAddr),
    #[error("mixes IPv4 and IPv6 (a server is reached over one)")]
    MixedFamilies,
}

/// What is wrong with a `--shard INDEX/COUNT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShardWhy {
    #[error("expected INDEX/COUNT, e.g. 0/4")]
    Shape,
    #[error("INDEX and COUNT must be whole numbers, e.g. 0/4")]
    NotNumbers,
    #[error("COUNT must be at least 1")]
    NoCount,
    /// Past the most shards a run may be split into.
    #[error("COUNT must be at most {0}")]
    TooMany(u64),
    #[error("INDEX counts from 0 and must be below COUNT")]
    IndexPastCount,
}

/// What is wrong with a `--hook EVENT=METHOD:PATH`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookWhy {
    #[error("expected EVENT=METHOD:PATH, e.g. before-step=POST:/reset_prefix_cache")]
    Shape,
    #[error("unknown event '{0}' (expected before-run, before-step, measure-start, measure-end, after-step or after-run)")]
    Event(String),
    #[error("unknown method '{0}' (expected GET, POST, PUT or DELETE)")]
    Method(String),
    #[error("the path must start with / (it is on the server's base URL)")]
    NotAbsolute,
    #[error("the path must be visible ASCII characters: no space or control character (percent-encode them)")]
    NotVisible,
    #[error("the path is at most {0} bytes")]
    TooLong(usize),
}

/// A `--bucket-by` value that cannot be read: what was given, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("'{given}' is not a bucketing: {why} (e.g. input_len:0,512,2048,8192)")]
pub struct BucketError {
    pub given: String,
    pub why: &'static str,
}
