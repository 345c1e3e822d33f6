//! The key of every figure a view shows and a comparison judges: [`FigureKey`], one of a run
//! figure ([`RunFigure`], vLLM's run-level keys), a latency statistic ([`MetricKey`]), a
//! price or energy figure ([`CostFigure`]), a TTFT part's mean ([`TtftPart`]), a figure under
//! llmperf's own definition ([`LlmperfFigure`]), a figure of an agentic run's jobs
//! ([`JobFigure`]), or a figure servebench does not know ([`FigureKey::Other`], kept under
//! its name, never judged).
//!
//! Each key knows its name (the one the documents save: `output_throughput`, `p99_ttft_ms`,
//! `mean_ttft_part_prefill_ms`, `llmperf_output_throughput`), its [`Unit`], which way is
//! [`Better`] (none for totals of what was asked, such as token counts), and its place in
//! the reading order of tables (`Ord`: run figures, then TTFT, TPOT, ITL and E2EL by
//! statistic, then the rest by name). Nothing reads a figure's meaning from its spelling.
//!
//! The units and directions are `unit.rs`'s, vLLM's run-level figures `run_figure.rs`'s (both
//! re-exported here, so every figure is read as `config::figure`).
//!
//! Pure values, no I/O. To add a figure: a variant in its enum with its name, unit and
//! direction below; a new kind of figure is a [`FigureKey`] variant and its arms, which the
//! compiler points to.

use std::cmp::Ordering;
use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use super::account_figure::AccountFigure;
pub use super::job_figure::JobFigure;
use super::metric::{Metric, MetricKey, Stat};
pub use super::run_figure::RunFigure;
pub use super::unit::{Better, Unit};

/// What a run cost (`--cost-per-hour`) and the energy it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostFigure {
    UsdPer1mOutputTokens,
    UsdPer1mTotalTokens,
    JoulesPerOutputToken,
}

impl CostFigure {
    pub const ALL: [CostFigure; 3] = [
        CostFigure::UsdPer1mOutputTokens,
        CostFigure::UsdPer1mTotalTokens,
        CostFigure::JoulesPerOutputToken,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CostFigure::UsdPer1mOutputTokens => "usd_per_1m_output_tokens",
            CostFigure::UsdPer1mTotalTokens => "usd_per_1m_total_tokens",
            CostFigure::JoulesPerOutputToken => "joules_per_output_token",
        }
    }

    pub fn unit(self) -> Unit {
        match self {
            CostFigure::UsdPer1mOutputTokens | CostFigure::UsdPer1mTotalTokens => {
                Unit::UsdPerMillionTokens
            }
            CostFigure::JoulesPerOutputToken => Unit::JoulesPerToken,
        }
    }
}

/// A part of TTFT (docs/metrics.md, "TTFT breakdown"), and the rest no server part accounts
/// for; a view holds each part's mean as `mean_ttft_part_<key>_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtftPart {
    ClientQueue,
    ConnectionSetup,
    ServerQueue,
    Prefill,
    FirstTokenTransfer,
    Rest,
}

impl TtftPart {
    pub const ALL: [TtftPart; 6] = [
        TtftPart::ClientQueue,
        TtftPart::ConnectionSetup,
        TtftPart::ServerQueue,
        TtftPart::Prefill,
        TtftPart::FirstTokenTransfer,
        TtftPart::Rest,
    ];

    /// The part's word in keys: `client_queue`, ..., `rest`.
    pub fn key(self) -> &'static str {
        match self {
            TtftPart::ClientQueue => "client_queue",
            TtftPart::ConnectionSetup => "connection_setup",
            TtftPart::ServerQueue => "server_queue",
            TtftPart::Prefill => "prefill",
            TtftPart::FirstTokenTransfer => "first_token_transfer",
            TtftPart::Rest => "rest",
        }
    }
}

/// A figure under llmperf's own definition, kept apart from servebench's figure of the same
/// name (docs/metrics.md, "Imported figures").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlmperfFigure {
    /// llmperf's inter-token latency (TTFT included), mean.
    MeanInterTokenLatency,
    P99InterTokenLatency,
    OutputThroughput,
    MeanRequestOutputThroughput,
    /// Output tokens per request, counted by llmperf's tokenizer.
    MeanNumberOutputTokens,
    /// The sample standard deviation (pandas', ddof = 1) of a metric.
    Std(Metric),
}

impl LlmperfFigure {
    pub fn name(self) -> String {
        match self {
            LlmperfFigure::MeanInterTokenLatency => "llmperf_mean_inter_token_latency_ms".into(),
            LlmperfFigure::P99InterTokenLatency => "llmperf_p99_inter_token_latency_ms".into(),
            LlmperfFigure::OutputThroughput => "llmperf_output_throughput".into(),
            LlmperfFigure::MeanRequestOutputThroughput => {
                "llmperf_mean_request_output_throughput".into()
            }
            LlmperfFigure::MeanNumberOutputTokens => "llmperf_mean_number_output_tokens".into(),
            LlmperfFigure::Std(m) => format!("llmperf_{}", MetricKey::new(Stat::Std, m)),
        }
    }

    pub fn unit(self) -> Unit {
        match self {
            LlmperfFigure::MeanInterTokenLatency
            | LlmperfFigure::P99InterTokenLatency
            | LlmperfFigure::Std(_) => Unit::Milliseconds,
            LlmperfFigure::OutputThroughput | LlmperfFigure::MeanRequestOutputThroughput => {
                Unit::TokensPerSecond
            }
            LlmperfFigure::MeanNumberOutputTokens => Unit::TokensPerRequest,
        }
    }

    pub fn better(self) -> Option<Better> {
        match self {
            LlmperfFigure::MeanInterTokenLatency
            | LlmperfFigure::P99InterTokenLatency
            | LlmperfFigure::Std(_) => Some(Better::Lower),
            LlmperfFigure::OutputThroughput | LlmperfFigure::MeanRequestOutputThroughput => {
                Some(Better::Higher)
            }
            LlmperfFigure::MeanNumberOutputTokens => None,
        }
    }

    fn parse(s: &str) -> Option<LlmperfFigure> {
        let fixed = [
            LlmperfFigure::MeanInterTokenLatency,
            LlmperfFigure::P99InterTokenLatency,
            LlmperfFigure::OutputThroughput,
            LlmperfFigure::MeanRequestOutputThroughput,
            LlmperfFigure::MeanNumberOutputTokens,
        ];
        let std = Metric::ALL.map(LlmperfFigure::Std);
        fixed.into_iter().chain(std).find(|f| f.name() == s)
    }
}

/// The key of one figure of a view (see the module doc). Saved under its name
/// ([`FigureKey::name`]); any name reads back, an unknown one as [`FigureKey::Other`].
#[derive(Clone, Debug)]
pub enum FigureKey {
    Run(RunFigure),
    Latency(MetricKey),
    Cost(CostFigure),
    /// The mean of a TTFT part.
    TtftPart(TtftPart),
    Llmperf(LlmperfFigure),
    /// A figure of an agentic run's jobs (`mean_jct_ms`, `jobs_per_s`).
    Job(JobFigure),
    /// A figure of the server's own account of its requests (`mean_account_queue_ms`).
    Account(AccountFigure),
    /// A figure servebench does not know (a newer tool's key): shown under its name, with no
    /// unit and no direction, so never judged.
    Other(String),
}

impl FigureKey {
    /// The name documents save it under.
    pub fn name(&self) -> String {
        self.to_string()
    }

    /// The figure named `s`, when servebench knows it.
    pub fn known(s: &str) -> Option<FigureKey> {
        if let Some(r) = RunFigure::ALL.into_iter().find(|r| r.name() == s) {
            return Some(FigureKey::Run(r));
        }
        if let Some(c) = CostFigure::ALL.into_iter().find(|c| c.name() == s) {
            return Some(FigureKey::Cost(c));
        }
        if let Some(part) = s
            .strip_prefix("mean_ttft_part_")
            .and_then(|p| p.strip_suffix("_ms"))
            .and_then(|p| TtftPart::ALL.into_iter().find(|t| t.key() == p))
        {
            return Some(FigureKey::TtftPart(part));
        }
        if let Some(j) = JobFigure::named(s) {
            return Some(FigureKey::Job(j));
        }
        if let Some(a) = AccountFigure::named(s) {
            return Some(FigureKey::Account(a));
        }
        if s.starts_with("llmperf_") {
            return LlmperfFigure::parse(s).map(FigureKey::Llmperf);
        }
        s.parse::<MetricKey>().ok().map(FigureKey::Latency)
    }

    /// The figure named `s`: a known one, else [`FigureKey::Other`].
    pub fn named(s: &str) -> FigureKey {
        FigureKey::known(s).unwrap_or_else(|| FigureKey::Other(s.to_string()))
    }

    /// `None` for a figure servebench does not know.
    pub fn unit(&self) -> Option<Unit> {
        match self {
            FigureKey::Run(r) => Some(r.unit()),
            FigureKey::Latency(k) => Some(k.metric.unit()),
            FigureKey::TtftPart(_) => Some(Unit::Milliseconds),
            FigureKey::Cost(c) => Some(c.unit()),
            FigureKey::Llmperf(l) => Some(l.unit()),
            FigureKey::Job(j) => Some(j.unit()),
            FigureKey::Account(a) => Some(a.unit()),
            FigureKey::Other(_) => None,
        }
    }

    /// Which way the figure is better: latencies, their spread, failures, time and cost are
    /// better lower; throughputs (a user's output rate among them) and completions higher; totals of what was asked have none,
    /// and neither has a figure servebench does not know.
    pub fn better(&self) -> Option<Better> {
        match self {
            FigureKey::Run(r) => r.better(),
            // A spread is better lower whichever way its metric is.
            FigureKey::Latency(k) if k.stat == Stat::Std => Some(Better::Lower),
            FigureKey::Latency(k) => Some(k.metric.better()),
            FigureKey::TtftPart(_) | FigureKey::Cost(_) => Some(Better::Lower),
            FigureKey::Llmperf(l) => l.better(),
            FigureKey::Job(j) => j.better(),
            FigureKey::Account(a) => a.better(),
            FigureKey::Other(_) => None,
        }
    }

    /// The reading order: run figures (in [`RunFigure`]'s order), then each metric's
    /// statistics (mean, median, percentiles ascending, std), then jobs' and the server's
    /// account's figures in their own order, then every other figure by name.
    fn rank(&self) -> (u8, u8, f64) {
        match self {
            FigureKey::Run(r) => (0, *r as u8, 0.0),
            FigureKey::Latency(k) => {
                let (stat, p) = match k.stat {
                    Stat::Mean => (0, 0.0),
                    Stat::Median => (1, 0.0),
                    Stat::Percentile(p) => (2, p),
                    Stat::Std => (3, 0.0),
                };
                (1 + k.metric as u8, stat, p)
            }
            FigureKey::Job(j) => (8, *j as u8, 0.0),
            FigureKey::Account(a) => (9, *a as u8, 0.0),
            _ => (10, 0, 0.0),
        }
    }
}

impl fmt::Display for FigureKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FigureKey::Run(r) => f.write_str(r.name()),
            FigureKey::Latency(k) => write!(f, "{k}"),
            FigureKey::Cost(c) => f.write_str(c.name()),
            FigureKey::TtftPart(p) => write!(f, "mean_ttft_part_{}_ms", p.key()),
            FigureKey::Llmperf(l) => f.write_str(&l.name()),
            FigureKey::Job(j) => f.write_str(j.name()),
            FigureKey::Account(a) => f.write_str(a.name()),
            FigureKey::Other(s) => f.write_str(s),
        }
    }
}

impl FromStr for FigureKey {
    type Err = Infallible;
    /// Never fails: a name servebench does not know is [`FigureKey::Other`].
    fn from_str(s: &str) -> Result<FigureKey, Infallible> {
        Ok(FigureKey::named(s))
    }
}

impl Ord for FigureKey {
    fn cmp(&self, other: &FigureKey) -> Ordering {
        let (a, b) = (self.rank(), other.rank());
        (a.0, a.1)
            .cmp(&(b.0, b.1))
            .then(a.2.total_cmp(&b.2))
            .then_with(|| match a.0 {
                10 => self.name().cmp(&other.name()),
                _ => Ordering::Equal,
            })
    }
}

impl PartialOrd for FigureKey {
    fn partial_cmp(&self, other: &FigureKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for FigureKey {
    fn eq(&self, other: &FigureKey) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for FigureKey {}

impl From<&FigureKey> for FigureKey {
    fn from(k: &FigureKey) -> FigureKey {
        k.clone()
    }
}

impl From<RunFigure> for FigureKey {
    fn from(r: RunFigure) -> FigureKey {
        FigureKey::Run(r)
    }
}

impl From<MetricKey> for FigureKey {
    fn from(k: MetricKey) -> FigureKey {
        FigureKey::Latency(k)
    }
}

impl From<CostFigure> for FigureKey {
    fn from(c: CostFigure) -> FigureKey {
        FigureKey::Cost(c)
    }
}

impl From<TtftPart> for FigureKey {
    fn from(p: TtftPart) -> FigureKey {
        FigureKey::TtftPart(p)
    }
}

impl From<LlmperfFigure> for FigureKey {
    fn from(l: LlmperfFigure) -> FigureKey {
        FigureKey::Llmperf(l)
    }
}

impl From<AccountFigure> for FigureKey {
    fn from(a: AccountFigure) -> FigureKey {
        FigureKey::Account(a)
    }
}

impl From<JobFigure> for FigureKey {
    fn from(j: JobFigure) -> FigureKey {
        FigureKey::Job(j)
    }
}

impl Serialize for FigureKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FigureKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FigureKey, D::Error> {
        Ok(FigureKey::named(&String::deserialize(d)?))
    }
}

#[cfg(test)]
#[path = "figure_tests.rs"]
mod tests;
