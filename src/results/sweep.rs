//! The sweep document (`<stem>.sweep.json`): the swept parameter, its values and the step
//! results it links, rewritten after every step by `drive::sweep`, read by `views::open`.
//! Fields a hand-written or older document may lack read as their defaults (`complete`: true),
//! as the view reader always allowed; what is written is unchanged.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::sweep::{LoadParameter, SweepValue};
use crate::results::document::BenchResult;
use crate::results::error::ResultsError;

/// One finished step in the sweep document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepStep {
    pub value: SweepValue,
    /// The step's result file, relative to the sweep document's directory.
    pub result: PathBuf,
    #[serde(default = "yes")]
    pub complete: bool,
}

/// The sweep document: links the step results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepDoc {
    pub schema_version: u32,
    /// Always `"sweep"`.
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub servebench_version: String,
    #[serde(default)]
    pub started_at: String,
    pub parameter: LoadParameter,
    #[serde(default)]
    pub values: Vec<SweepValue>,
    pub steps: Vec<SweepStep>,
    /// True when every value ran to completion.
    #[serde(default = "yes")]
    pub complete: bool,
    /// `--stop-saturated on`: the step where the sweep stopped escalating, and why
    /// (`results::saturated`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation: Option<crate::results::saturated::SaturationStop>,
    /// The values not run because the sweep stopped at saturation (skipped, not failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SweepValue>,
}

fn yes() -> bool {
    true
}

impl SweepDoc {
    pub fn save(&self, path: &Path) -> Result<(), ResultsError> {
        crate::results::document::save_json(path, self)
    }

    /// Reads a sweep document (bounded as every saved document,
    /// `results::document::read_json`) and the step results it links.
    pub fn load(path: &Path) -> Result<(SweepDoc, Vec<BenchResult>), ResultsError> {
        Self::from_json(path, crate::results::document::read_json(path)?)
    }

    /// The sweep document `value` read from `path`, and the step results it links (each read
    /// once, bounded).
    pub fn from_json(
        path: &Path,
        value: serde_json::Value,
    ) -> Result<(SweepDoc, Vec<BenchResult>), ResultsError> {
        let doc: SweepDoc = serde_json::from_value(value).map_err(|e| ResultsError::BadResult {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let steps = doc
            .steps
            .iter()
            .map(|s| BenchResult::load(&dir.join(&s.result)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((doc, steps))
    }
}
