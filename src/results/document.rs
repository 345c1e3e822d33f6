//! The versioned result document: what a run saves, and what every report is rendered from.
//!
//! A [`BenchResult`] holds the full config, the computed [`RunSummary`], run facts
//! (complete or interrupted), and — so tools written for vLLM read it unchanged — the top-level
//! keys vLLM's `--save-result` writes for the same quantities (`duration`, `completed`,
//! `mean_ttft_ms`, `p99_itl_ms`, `ttfts`, `itls`, ...), with the same names and units.
//!
//! The per-request arrays (`input_lens`, `output_lens`, `ttfts`, `itls`, `generated_texts`,
//! `errors`) are written for runs of up to [`PER_REQUEST_ARRAYS_MAX`] measured requests and
//! [`PER_REQUEST_CHUNKS_MAX`] output chunks; a larger run's document says in `per_request_arrays_omitted` that they are left out (the
//! records file has every request), so the document stays small and quick to re-read.
//!
//! Changing the shape of the document requires bumping [`SCHEMA_VERSION`]. Adding an optional
//! field that older documents lack (`#[serde(default)]`) does not change the shape: old
//! documents still load, and readers of version 1 that ignore unknown keys read new ones.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::config::RunConfig;
use crate::measure::record::RequestRecord;
use crate::results::error::ResultsError;
pub use crate::results::read::{read_json, MAX_DOCUMENT_BYTES};
use crate::results::server_metrics::ServerMetrics;
use crate::results::shard::{MergedFrom, Timebase};
use crate::results::stats::RunSummary;
use crate::results::validity::Validity;
pub use crate::results::vllm_keys::PER_REQUEST_ARRAYS;
use crate::results::vllm_keys::{per_request_columns, vllm_keys};

pub const SCHEMA_VERSION: u32 = 1;

/// The most measured requests whose vLLM per-request arrays a result document holds (see the
/// module doc); beyond that the records file is the per-request source.
pub const PER_REQUEST_ARRAYS_MAX: u64 = 100_000;

/// The most output chunks (so inter-token gaps in `itls`) whose per-request arrays a result
/// document holds. Each gap is a JSON value of 32 bytes while the document is built, so
/// 8,000,000 chunks (4,096 prompts of 1,953 tokens, say) hold about 256 MB; 100,000 requests
/// of 200 chunks (20,000,000, about 640 MB and a 400 MB document) would not fit the 1 GB a run
/// may use with the rest.
pub const PER_REQUEST_CHUNKS_MAX: u64 = 8_000_000;

/// Planned requests never sent, by why (docs/metrics.md, "Every planned request is accounted
/// for").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unsent {
    /// The run stopped first: Ctrl-C, SIGTERM, `q` in the dashboard, `--max-errors` or
    /// `--max-error-rate`, a records file that could not be written.
    #[serde(default)]
    pub stopped: u64,
    /// A turn before them in their conversation failed (the conversation ends there).
    #[serde(default)]
    pub earlier_turn_failed: u64,
    /// Due inside the time window, still waiting for a `--max-concurrency` slot or at the
    /// prefill gate when it ended.
    #[serde(default)]
    pub window_ended: u64,
    /// Calls of a job that wait, directly or through others, for a call of it that failed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub upstream_failed: u64,
}

impl Unsent {
    pub fn total(&self) -> u64 {
        self.stopped
            .saturating_add(self.earlier_turn_failed)
            .saturating_add(self.window_ended)
            .saturating_add(self.upstream_failed)
    }

    pub fn is_none(&self) -> bool {
        self.total() == 0
    }

    /// Both counts together (a merge of shards).
    pub fn add(&mut self, other: &Unsent) {
        self.stopped = self.stopped.saturating_add(other.stopped);
        self.earlier_turn_failed =
            (self.earlier_turn_failed).saturating_add(other.earlier_turn_failed);
        self.window_ended = self.window_ended.saturating_add(other.window_ended);
        self.upstream_failed = (self.upstream_failed).saturating_add(other.upstream_failed);
    }

    /// "52 after the run stopped, 3 after …", the non-zero reasons.
    pub fn describe(&self) -> String {
        let parts = [
            (self.stopped, "after the run stopped"),
            (
                self.earlier_turn_failed,
                "after an earlier turn of their conversation failed",
            ),
            (
                self.window_ended,
                "waiting for a concurrency slot when the time window ended",
            ),
            (
                self.upstream_failed,
                "after a call of their job they wait for failed",
            ),
        ];
        (parts.iter())
            .filter(|(n, _)| *n > 0)
            .map(|(n, why)| format!("{n} {why}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One run's saved result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    pub schema_version: u32,
    pub servebench_version: String,
    /// Start of the run, RFC 3339.
    pub started_at: String,
    /// False when anything the run planned was not sent, or the run was stopped, failed to
    /// write its records, or (a time-bounded run) did not reach its window's end
    /// ([`BenchResult::judge_complete`]; docs/metrics.md, "Every planned request is
    /// accounted for").
    pub complete: bool,
    /// Planned requests never sent (every turn of a conversation is a request): the sum of
    /// `unsent_by`.
    pub unsent: u64,
    /// The requests the run planned: `completed + failed + unsent`. `None` where there is no
    /// fixed count (a time window at an unbounded rate, a merge with shards missing) and in
    /// documents older than this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<u64>,
    /// Why the `unsent` requests were not sent.
    #[serde(default, skip_serializing_if = "Unsent::is_none")]
    pub unsent_by: Unsent,
    /// Why the run stopped early, when something failed during it (a records file that could
    /// not be written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Of the measured requests (`completed + failed`), those whose record is not in the
    /// records file because a write failed (a full disk, a file-size limit): their figures are
    /// in the summary, their records are lost (docs/metrics.md, "Records lost"). Never more
    /// than `completed + failed`; a run with any is incomplete (`error` says why).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub records_lost: u64,
    /// The run's steady window and its figures (`--steady-state auto`; docs/metrics.md,
    /// "Steady state").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<crate::results::stats::steady::SteadyState>,
    /// The run's figures per window of `--time-slice` seconds (docs/metrics.md, "Time
    /// slices"); absent when not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slices: Option<crate::results::stats::slices::Slices>,
    /// The run's figures per bucket of its requests' lengths (`--bucket-by`; docs/metrics.md,
    /// "Figures by length bucket"); absent when not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<crate::results::stats::buckets::Buckets>,
    /// A workload mix's figures per class and Jain's fairness index (`--mix`;
    /// docs/metrics.md, "Workload mix").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<crate::results::stats::mix::MixFigures>,
    /// An agentic run's figures over its jobs (docs/metrics.md, "Jobs"); absent for a run
    /// without jobs and in older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<crate::results::jobs::JobFigures>,
    /// Users with a fixed gap (`--users`, `--user-gap`): per-user rates and units
    /// (docs/metrics.md, "Users with a fixed gap").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<crate::results::stats::users::UsersFigures>,
    /// The server's account of the run's requests (`servebench join RESULT TRACE --save`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<crate::results::join::saved::JoinFigures>,
    /// `--max-errors` or `--max-error-rate` stopped the sends: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<String>,
    /// Its goodput re-judged from its records under other SLOs (`report --goodput`, `plan
    /// --goodput`); never saved by a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejudged: Option<crate::results::rejudged::Rejudged>,
    /// A time-bounded run (`--duration`, `--stages`) that reached its end: what was in
    /// flight then, drained and cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_end: Option<crate::config::shape::WindowEnd>,
    /// Path of the per-request JSON Lines file.
    pub records_file: Option<PathBuf>,
    pub config: RunConfig,
    pub summary: RunSummary,
    /// Whether the measurement can be trusted (absent in imported or older results).
    #[serde(default)]
    pub validity: Option<Validity>,
    /// The server's own metrics, scraped during the run (`--scrape-metrics`): the series and
    /// its summary. Optional and absent from older documents, so `SCHEMA_VERSION` stays 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<ServerMetrics>,
    /// Sharded runs (`--shard`, `--start-at`): where the records lie on the shared wall clock,
    /// and this machine's clock against the server's. Optional, absent from older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timebase: Option<Timebase>,
    /// A `servebench merge` result: the shards it was merged from, and those missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<MergedFrom>,
    /// `--cost-per-hour`: what the measured window cost, per million tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::config::tags::Cost>,
    /// A DCGM exporter scraped with `--scrape-metrics`: the window's GPU energy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<crate::config::tags::Energy>,
    /// Multi-LoRA runs (`--lora-modules`, a jsonl line's `model`): each adapter's figures and
    /// its share of the requests sent (docs/metrics.md, "Multi-LoRA traffic"); absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_adapter: BTreeMap<String, crate::results::stats::adapters::AdapterFigures>,
    /// Each hook call made for this run (`--hook`, `--reset-prefix-cache`, `--profile`), in
    /// the order made; absent without hooks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<crate::results::hooks::HookCall>,
    /// An autoscaler benchmark's figures (`--load-shape`, `--replicas-metric`,
    /// `--replicas-file`; docs/metrics.md, "Autoscaler benchmarks"); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscale: Option<crate::results::autoscale::AutoscaleFigures>,
    /// `run --adaptive`: the SLO controller's windows and the sustained load
    /// (docs/metrics.md, "The SLO controller"); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<crate::results::adaptive::AdaptiveFigures>,
    /// Several endpoints (`--base-url` more than once): each endpoint's figures
    /// (docs/metrics.md, "Several endpoints"); absent for one endpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_endpoint: Vec<crate::results::stats::endpoints::EndpointFigures>,
    /// vLLM-compatible keys (see the module doc).
    #[serde(flatten)]
    pub vllm: BTreeMap<String, Value>,
}

impl BenchResult {
    /// Builds the document, vLLM-compatible keys included, from a run's records.
    pub fn new(
        config: RunConfig,
        summary: RunSummary,
        records: &[RequestRecord],
        started_at: String,
        date: String,
        unsent: u64,
        records_file: Option<PathBuf>,
    ) -> BenchResult {
        let vllm = vllm_keys(&config, &summary, date);
        let mut result = BenchResult {
            schema_version: SCHEMA_VERSION,
            servebench_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at,
            complete: unsent == 0 && !summary.failures_by_kind.contains_key("cancelled"),
            unsent,
            planned: None,
            unsent_by: Unsent::default(),
            error: None,
            records_lost: 0,
            steady_state: None,
            slices: None,
            buckets: None,
            mix: None,
            jobs: None,
            users: None,
            join: None,
            stopped_early: None,
            rejudged: None,
            window_end: None,
            records_file,
            config,
            summary,
            validity: None,
            server_metrics: None,
            timebase: None,
            merged_from: None,
            cost: None,
            energy: None,
            per_adapter: BTreeMap::new(),
            hooks: Vec::new(),
            autoscale: None,
            adaptive: None,
            per_endpoint: Vec::new(),
            vllm,
        };
        result.set_cost_and_energy();
        result.set_per_request_arrays(records);
        result
    }

    /// Sets what the run planned and what it left unsent, and judges `complete` by the one
    /// rule (docs/metrics.md, "Every planned request is accounted for"): nothing planned
    /// unsent, no records write error, no early stop, and a count-bounded run with no request
    /// cancelled by a stop, a time-bounded one that reached its window's end (`window_end`
    /// set before this call; what its end cancelled is by design), an SLO controller that
    /// reached its end (`adaptive`, set before this call).
    pub fn judge_complete(&mut self, planned: Option<u64>, unsent: Unsent) {
        self.planned = planned;
        self.unsent_by = unsent;
        self.unsent = unsent.total();
        let windowed = self.config.load.shape.window_s().is_some();
        let cancelled = self.summary.failures_by_kind.contains_key("cancelled");
        self.complete = self.unsent == 0
            && self.adaptive.as_ref().is_none_or(|a| a.complete)
            && self.error.is_none()
            && self.stopped_early.is_none()
            && if windowed {
                self.window_end.is_some()
            } else {
                !cancelled
            };
    }

    /// Why the run was stopped before it was done, by something other than its own verdict
    /// on the server (`--max-errors`, `--max-error-rate`: a measurement, not an
    /// interruption): a signal (Ctrl-C, SIGTERM, `q`), or a records file that could not be
    /// written. `None` for a run that ended as planned, or stopped early by those limits.
    /// An interrupted run is neither a pass nor a fail of a search or a plan
    /// (docs/metrics.md, "Interrupted runs").
    pub fn interrupted(&self) -> Option<String> {
        if self.complete || self.stopped_early.is_some() {
            return None;
        }
        let cancelled = (self.summary.failures_by_kind.get("cancelled")).copied();
        let windowed = self.config.load.shape.window_s().is_some();
        if self.error.is_some() {
            Some("stopped when its records file could not be written".into())
        } else if self.unsent_by.stopped > 0 {
            Some(format!(
                "stopped with {} planned requests unsent",
                self.unsent_by.stopped
            ))
        } else if let Some(n) = cancelled.filter(|_| !windowed) {
            Some(format!("stopped with {n} requests in flight cancelled"))
        } else if windowed && self.window_end.is_none() {
            Some("stopped before the end of its time window".into())
        } else if self.adaptive.as_ref().is_some_and(|a| !a.complete) {
            Some("stopped before the SLO controller's end".into())
        } else {
            None
        }
    }

    /// Sets `cost` from `--cost-per-hour` and `energy` from the scraped GPU power, over the
    /// summary's duration and tokens (docs/metrics.md, "Cost and energy"), and vLLM's
    /// speculative-decoding keys ([`BenchResult::set_spec_decode_keys`]); called again when
    /// the server's metrics are added.
    pub fn set_cost_and_energy(&mut self) {
        self.set_spec_decode_keys();
        let s = &self.summary;
        self.energy = (self.server_metrics.as_ref()).and_then(|m| {
            let power = m.summary.gpu_power_mean_w?;
            let util = m.summary.gpu_util_mean_pct;
            Some(crate::config::tags::Energy::of(
                power,
                util,
                s.duration_s,
                s.total_output_tokens,
            ))
        });
        let s = &self.summary;
        self.cost = (self.config.tags.cost_per_hour).map(|usd| {
            crate::config::tags::Cost::of(
                usd,
                s.duration_s,
                s.total_input_tokens,
                s.total_output_tokens,
            )
        });
    }

    /// vLLM's `vllm bench serve` keys of speculative decoding, from the server's counters over
    /// the run (docs/metrics.md, "Speculative decoding"): `spec_decode_acceptance_rate` (a
    /// percentage, as vLLM saves it), `spec_decode_acceptance_length`,
    /// `spec_decode_num_drafts`, `spec_decode_draft_tokens`, `spec_decode_accepted_tokens`,
    /// `spec_decode_per_position_acceptance_rates`; absent when the server reported none.
    pub fn set_spec_decode_keys(&mut self) {
        let spec = (self.server_metrics.as_ref()).and_then(|m| m.summary.spec_decode.as_ref());
        let Some(f) = spec else {
            return;
        };
        let keys = [
            (
                "spec_decode_acceptance_rate",
                f.acceptance_rate.map(|r| 100.0 * r),
            ),
            ("spec_decode_acceptance_length", f.acceptance_length),
            ("spec_decode_num_drafts", f.num_drafts),
            ("spec_decode_draft_tokens", f.draft_tokens),
            ("spec_decode_accepted_tokens", f.accepted_tokens),
        ];
        for (k, v) in keys {
            if let Some(v) = v {
                // Counts as integers, as vLLM writes them.
                let v = match v.fract() == 0.0 && v.abs() < 9e15 && !k.ends_with("_rate") {
                    true => json!(v as i64),
                    false => json!(v),
                };
                self.vllm.insert(k.into(), v);
            }
        }
        if !f.per_position_acceptance_rates.is_empty() {
            let rates = json!(f.per_position_acceptance_rates);
            (self.vllm).insert("spec_decode_per_position_acceptance_rates".into(), rates);
        }
    }

    /// Whether the document holds the per-request arrays: at most [`PER_REQUEST_ARRAYS_MAX`]
    /// measured requests and [`PER_REQUEST_CHUNKS_MAX`] output chunks.
    pub fn keeps_per_request_arrays(&self) -> bool {
        self.summary.completed + self.summary.failed <= PER_REQUEST_ARRAYS_MAX
            && self.summary.total_output_chunks <= PER_REQUEST_CHUNKS_MAX
    }

    /// Sets vLLM's per-request arrays from the run's records (warm-ups skipped, ordered by id),
    /// or, when the run is too large to keep them, says they are omitted without reading
    /// `records`.
    pub fn set_per_request_arrays<R: Borrow<RequestRecord>>(
        &mut self,
        records: impl IntoIterator<Item = R>,
    ) {
        const OMITTED: &str = "per_request_arrays_omitted";
        if !self.keeps_per_request_arrays() {
            PER_REQUEST_ARRAYS.iter().for_each(|k| {
                self.vllm.remove(*k);
            });
            let requests = self.summary.completed + self.summary.failed;
            let size = if requests > PER_REQUEST_ARRAYS_MAX {
                format!("{requests} measured requests are more than {PER_REQUEST_ARRAYS_MAX}")
            } else {
                format!(
                    "{} output chunks are more than {PER_REQUEST_CHUNKS_MAX}",
                    self.summary.total_output_chunks
                )
            };
            let why = format!(
                "{size}: {} are in the records file",
                PER_REQUEST_ARRAYS.join(", ")
            );
            self.vllm.insert(OMITTED.into(), json!(why));
            return;
        }
        self.vllm.remove(OMITTED);
        let columns = per_request_columns(records, self.config.time_scale);
        for (key, col) in PER_REQUEST_ARRAYS.into_iter().zip(columns) {
            self.vllm.insert(key.into(), Value::Array(col));
        }
    }

    /// Writes the document as pretty JSON, atomically.
    pub fn save(&self, path: &Path) -> Result<(), ResultsError> {
        save_json(path, self)
    }

    /// Reads a saved document; the error says what is wrong with the file.
    pub fn load(path: &Path) -> Result<BenchResult, ResultsError> {
        BenchResult::from_value(path, read_json(path)?)
    }

    /// A result from `value`, a document read from `path` (named by the error).
    pub fn from_value(path: &Path, value: Value) -> Result<BenchResult, ResultsError> {
        let bad = |why: String| ResultsError::BadResult {
            path: path.to_path_buf(),
            why,
        };
        match value.get("schema_version").and_then(Value::as_u64) {
            Some(v) if v == SCHEMA_VERSION as u64 => {}
            Some(v) => {
                return Err(bad(format!(
                    "schema_version {v} is not supported (this build reads {SCHEMA_VERSION})"
                )))
            }
            None => return Err(bad("no schema_version".into())),
        }
        serde_json::from_value(value).map_err(|e| bad(e.to_string()))
    }
}

/// An error naming the first of `paths` that exists, unless `overwrite`.
pub fn refuse_existing<'a>(
    overwrite: bool,
    paths: impl IntoIterator<Item = &'a PathBuf>,
) -> Result<(), ResultsError> {
    match paths.into_iter().find(|p| !overwrite && p.exists()) {
        Some(path) => Err(ResultsError::Exists { path: path.clone() }),
        None => Ok(()),
    }
}

/// Writes `value` as pretty JSON to `path` atomically (a temporary file, synced, then renamed
/// over it), creating the directory: a crash never leaves a half-written document.
pub fn save_json(path: &Path, value: &impl Serialize) -> Result<(), ResultsError> {
    let write_err = |source| ResultsError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(write_err)?;
    }
    let tmp = path.with_extension("json.tmp");
    let write = || {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        serde_json::to_writer_pretty(&mut f, value)?;
        f.write_all(b"\n")?;
        f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    // A document that could not be written whole (a full disk) leaves no part of itself.
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        write_err(e)
    })
}

/// A result of no request under the default configuration: what tests fill by hand.
#[cfg(test)]
impl BenchResult {
    pub(crate) fn empty() -> BenchResult {
        let summary = crate::results::stats::summarize(&[], &Default::default());
        BenchResult::new(
            RunConfig::default(),
            summary,
            &[],
            String::new(),
            String::new(),
            0,
            None,
        )
    }
}

#[cfg(test)]
#[path = "document_tests.rs"]
mod tests;
