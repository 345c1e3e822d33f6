//! Pure statistics: every figure servebench prints is computed here, from records (and from the
//! server metrics scraped during a run), and only here.
//!
//! The definitions are in `docs/metrics.md`; each function names the one it implements.
//! No async, no I/O, no formatting. Inputs are [`RequestRecord`]s; outputs are plain numbers in
//! the units their names carry (`_ms`, `_s`, per second).
//!
//! Percentiles use one method everywhere: linear interpolation between order statistics
//! (numpy's default `linear` method, so the same samples give the numbers vLLM prints).
//!
//! To add a figure: define it in `docs/metrics.md`, compute it in [`summarize`], add a field to
//! [`RunSummary`] (with `#[serde(default)]`), and test it against a hand-computed value.
//!
//! Files: `adapters` (each LoRA adapter's figures), `bootstrap` (the percentile bootstrap's
//! intervals, over jobs), `ci` (95% confidence intervals),
//! `distribution` (one set of samples, the percentile method), `mix` (a workload mix's
//! classes and Jain's index), `mix_alone` (a class alone against mixed, `--mix-alone`), `reasoning` (the reasoning and answer phases), `request` (one
//! record's figures), `samples` (exact-then-HDR sample sets), `second_token` (time to
//! second token, output tokens/s per user), `slices` (the figures per time window,
//! `--time-slice`), `steady` (the steady window,
//! MSER-5 and batch means), `structured` (structured output and tool calls), `summary` (a run's figures), `users` (users
//! with a fixed gap: per-user rates and units).

pub mod adapters;
pub mod audio;
pub mod bootstrap;
mod breakdown;
pub mod buckets;
mod cache;
pub mod ci;
mod distribution;
pub mod endpoints;
pub mod media;
pub mod mix;
pub mod mix_alone;
mod reasoning;
mod request;
mod samples;
pub mod second_token;
pub mod server_account;
pub mod slices;
#[cfg(test)]
mod slices_tests;
pub mod steady;
mod structured;
mod summarizer;
mod summary;
#[cfg(test)]
mod tests;
mod turns;
pub mod users;

pub use breakdown::{TtftBreakdown, PARTS as TTFT_PARTS, REST as TTFT_REST};
pub use cache::PrefixCacheRates;
pub use distribution::{percentile, Distribution, PercentileMethod};
pub use reasoning::ReasoningFigures;
pub use request::{itl_gaps_ns, itl_per_token_ns, RequestMetrics, ServerTimings, TimingsForm};
pub use samples::{SampleSet, EXACT_SAMPLES_MAX, HDR_RELATIVE_ERROR};
pub use server_account::{Disagreement, ServerAccount};
pub use structured::StructuredFigures;
pub use summarizer::{summarize, Summarizer};
pub use summary::{RunSummary, SummaryOptions};
pub use turns::{ConversationTotals, TurnTtft};
