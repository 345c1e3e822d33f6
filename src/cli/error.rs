//! The command line's errors, by topic: [`FlagError`], one flag's text that is not its value
//! (clap prints it after the flag's name), and [`PlanError`], what turning the flags into a
//! plan found wrong: a rule between flags, the simulator's settings, or an error of a layer
//! below (passed through unchanged, so every message reads as it did); and [`FileError`], a
//! file a flag names that cannot be read as text. Each is one line.

use crate::config::error::{ConfigError, ValueError};
use crate::config::limits::{LimitError, MAX_WAIT_S};
use crate::drive::error::RunError;
use crate::results::error::ResultsError;

/// The largest demand `plan --demand-request-rate` or `--demand-output-throughput` takes, per
/// second: a billion requests or tokens a second is past any service today, and a larger
/// number would only saturate the count of replicas instead of pricing them.
pub const MAX_DEMAND: f64 = 1e9;

/// One flag's value does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlagError {
    #[error(transparent)]
    Value(#[from] ValueError),
    #[error(transparent)]
    Limit(#[from] LimitError),
    #[error(transparent)]
    Bucket(#[from] crate::config::error::BucketError),
    #[error("'{0}' is not a time scale (a finite number > 0)")]
    TimeScale(String),
    #[error("'{0}' is not a number of seconds")]
    Seconds(String),
    #[error("'{0}' is not a positive number of seconds, at most a week")]
    Interval(String),
    #[error("must be a number of seconds > 0 and at most {max:.0}", max = MAX_WAIT_S)]
    TimeLimit,
    #[error("must be a whole number of bytes > 0 (suffixes KiB, MiB, GiB)")]
    Bytes,
    #[error("'{0}' is not NAME:VALUE")]
    Header(String),
    #[error("'{0}' has an empty header name")]
    EmptyHeaderName(String),
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("must be a JSON object, e.g. '{{\"top_k\": 5}}'")]
    NotAnObject,
    #[error("'{0}' is not a percentile in (0, 100]")]
    Percentile(String),
    #[error("'{0}' is not an http:// or https:// URL")]
    Url(String),
    #[error("'{0}' is not METRIC:PCT (e.g. tpot:5, p99_ttft_ms:10, output_throughput:3)")]
    Gate(String),
    /// `--request-id-header`: not an HTTP token of 1 to the given characters.
    #[error("not a header name (1 to {0} letters, digits and !#$%&'*+-.^_`|~), or none")]
    IdHeaderName(usize),
    /// `--request-id-header`: a header the client writes itself.
    #[error("{0} is a header servebench sets or frames the request with")]
    ReservedHeader(String),
    #[error("must start with http:// or https:// (an OTLP/HTTP endpoint, such as http://HOST:4318/v1/traces)")]
    OtlpEndpoint,
    #[error("'{0}' is not a number")]
    Number(String),
    /// `plan --target`: the share of requests that must meet the SLOs.
    #[error("{0} is not a fraction in (0, 1]")]
    Target(f64),
    /// `plan --input-share`: the share of the price that input tokens take.
    #[error("{0} is not a fraction in [0, 1]")]
    Share(f64),
    /// `plan --demand-*`: a demand that is no rate, or more than any service's.
    #[error("{0} is not a rate (> 0)")]
    Demand(f64),
    #[error("{0:e} per second is more than any service's demand (at most {max:e})", max = MAX_DEMAND)]
    AbsurdDemand(f64),
    /// `report --timeline-itl-ms`: not a duration in (0, an hour].
    #[error("'{0}' is not a number of milliseconds > 0 and at most 3600000")]
    Milliseconds(String),
}

/// A file a flag names (`--json-schema-path`, `--tools-path`, `--structured-output-grammar`)
/// that cannot be read as text.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Longer than the most bytes read.
    #[error("longer than {0} bytes")]
    TooLong(u64),
    #[error("not UTF-8 text")]
    NotUtf8,
}

/// What turning a command line into a plan found wrong.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("invalid --client-threads {asked}: more than {most}, {per_core} per core of this machine's {cores} core(s); more threads than cores read no more events (give auto, or at most {cores})")]
    ClientThreads {
        asked: u16,
        cores: u64,
        per_core: u64,
        most: u64,
    },
    #[error("a sweep varies one parameter: give a list to only one of --num-prompts, --max-concurrency, --request-rate")]
    SweepOfTwo,
    #[error("--shard and --start-at take a single run, not a sweep: run each step as its own sharded run")]
    ShardedSweep,
    #[error("--stages is one run whose stages are its steps: not with a sweep or --repeat")]
    StagesNotARun,
    #[error("--repeat takes a single run: not a sweep, --shard or --start-at")]
    RepeatNotARun,
    #[error("--summary-only prints only the table of a sweep, --stages or --repeat: a single run has none")]
    SummaryOfOne,
    #[error("--shard and --start-at take a single run, not a search")]
    ShardedSearch,
    #[error(
        "--mix-alone follows a single run: not a sweep, a search, --repeat, --stages or --start-at"
    )]
    MixAloneNotARun,
    #[error("search needs SLOs: give --goodput, e.g. --goodput ttft:500 tpot:50")]
    SearchWithoutSlo,
    #[error("search --by prefixes varies the prefix dataset's distinct prefixes: give --dataset-name prefix")]
    PrefixSearchDataset,
    #[error("invalid --target: {0} is not in (0, 1]")]
    Target(f64),
    #[error("invalid --start/--max: need 0 < start <= max")]
    StartMax,
    #[error("invalid --precision: {0} is not in (0, 1)")]
    Precision(f64),
    #[error("invalid --cooldown: {0}")]
    Cooldown(f64),
    #[error("invalid --metadata: the key '{0}' is given twice; give each key once")]
    MetadataTwice(String),
    /// `--sim-preset` or `--time-scale` with `--base-url`.
    #[error("{0} only applies to the built-in server (no --base-url)")]
    SimFlagWithServer(&'static str),
    #[error("--tokenizer is required with --base-url: give the served model's tokenizer (a tokenizer.json or its directory, a GGUF file, or a tiktoken encoding name such as cl100k_base), or `words` for a servebench sim")]
    TokenizerRequired,
    /// An engine-only `sim` flag with a preset that has no engine.
    #[error("{flag} needs an engine preset (--preset {preset} has no engine)")]
    EngineOnly { flag: &'static str, preset: String },
    #[error("invalid --{flag}: {value} is not a duration")]
    NotADuration { flag: &'static str, value: f64 },
    /// The simulator's settings break one of its rules (its own message).
    #[error("{0}")]
    Simulator(String),
    #[error("invalid --base-url: '{url}' is given twice (URLs {first} and {again}, once normalized): give each endpoint once")]
    UrlTwice {
        url: String,
        first: usize,
        again: usize,
    },
    #[error("invalid --base-urls-file {}: {why}", path.display())]
    UrlsFile {
        path: std::path::PathBuf,
        why: String,
    },
    #[error("cannot start the simulated server: {0}")]
    SimStart(std::io::Error),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error("--save-llm-d writes a run, a sweep or stages, not a search: give one probe's result to `servebench report --format llm-d`")]
    LlmDSearch,
    /// A controller flag without `--adaptive`.
    #[error("{0} tunes the SLO controller: give --adaptive (or drop {0})")]
    AdaptiveFlagAlone(&'static str),
    #[error("--adaptive runs one controlled run: not with a sweep (a list of loads), --repeat, --stages or search")]
    AdaptiveNotARun,
}
