//! The search document (`<stem>.search.json`): every probe and the answer, with a 95% Wilson
//! interval for the good fraction at the answer. A probe that was stopped before it was done
//! (a signal, a records file that could not be written) is kept, marked `stopped`: it is
//! neither a pass nor a fail, and the search ends there (`stopped_at`), incomplete; the answer
//! is the highest *completed* passing probe.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::search::SearchSpec;
use crate::results::error::ResultsError;

/// One probe's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub value: f64,
    pub good: u64,
    pub total: u64,
    pub good_fraction: f64,
    /// Always false for a `stopped` probe.
    pub passed: bool,
    /// Why the probe was stopped before it was done (a signal, a records file that could not
    /// be written): neither a pass nor a fail. Absent for a probe that ran to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The probe's result file, relative to the search document.
    pub result: PathBuf,
    /// A search over `prefixes`: the probe's designed and measured prefix-cache hit rates
    /// (docs/metrics.md, "Prefix-cache hit rate"); absent for other axes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub designed_hit_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_hit_rate: Option<f64>,
}

/// The search document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchDoc {
    pub schema_version: u32,
    /// Always `"search"`.
    pub kind: String,
    pub spec: SearchSpec,
    pub probes: Vec<Probe>,
    /// The highest passing value, when one passed.
    pub answer: Option<f64>,
    /// The lowest failing value above the answer, when one failed.
    pub first_failing: Option<f64>,
    /// 95% Wilson interval of the good fraction at the answer.
    pub answer_good_fraction_ci95: Option<(f64, f64)>,
    pub complete: bool,
    /// `--stop-saturated on`: the probe where doubling stopped, and why; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation: Option<crate::results::saturated::SaturationStop>,
    /// The load doubling would have probed next, not run (skipped, not failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<f64>,
    /// The load the search was at when it was stopped (Ctrl-C, SIGTERM, `q`, a records file
    /// that could not be written): its probe there was stopped part-way, or never began.
    /// Absent when it was not stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<f64>,
}

impl SearchDoc {
    pub fn save(&self, path: &Path) -> Result<(), ResultsError> {
        crate::results::document::save_json(path, self)
    }
}
