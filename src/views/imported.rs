//! The `imported` document (`<stem>.imported.json`): a [`View`] of a foreign file, saved by
//! `servebench import` and read back by `compare`, `plot` and `report` like a native result.
//!
//! Owns the document's shape and its [`IMPORTED_SCHEMA_VERSION`]; it reads no foreign format
//! (that is `views::import`) and knows no other document (`views::open` sniffs which one a
//! file is). Changing the shape requires bumping the version; an added optional field
//! (`#[serde(default)]`) does not.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::views::error::ViewError;
use crate::views::model::{LlmperfRequest, Origin, Series, View};

/// Version of the `imported` document written by `servebench import`.
pub const IMPORTED_SCHEMA_VERSION: u32 = 1;

/// The `imported` document: a [`View`] saved by `servebench import`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImportedDoc {
    pub schema_version: u32,
    /// Always `"imported"`.
    pub kind: String,
    pub servebench_version: String,
    /// The file imported, as given.
    pub source: PathBuf,
    #[serde(flatten)]
    pub view: ImportedView,
}

/// The part of a [`View`] an imported document stores (its path is where it is read from).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImportedView {
    pub label: String,
    pub format: String,
    pub series: Vec<Series>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub llmperf_requests: Vec<LlmperfRequest>,
}

impl ImportedDoc {
    pub fn new(view: &View) -> ImportedDoc {
        ImportedDoc {
            schema_version: IMPORTED_SCHEMA_VERSION,
            kind: "imported".into(),
            servebench_version: env!("CARGO_PKG_VERSION").to_string(),
            source: view.path.clone(),
            view: ImportedView {
                label: view.label.clone(),
                format: view.format.clone(),
                series: view.series.clone(),
                notes: view.notes.clone(),
                llmperf_requests: view.llmperf_requests.clone(),
            },
        }
    }

    /// Writes the document as pretty JSON.
    pub fn save(&self, path: &Path) -> Result<(), ViewError> {
        let err = |error| ViewError::Write {
            path: path.to_path_buf(),
            error,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let mut text = serde_json::to_string_pretty(self).map_err(|e| err(e.into()))?;
        text.push('\n');
        std::fs::write(path, text).map_err(err)
    }
}

/// Reads an imported document (already parsed as JSON) into its view.
pub fn open(path: &Path, value: Value) -> Result<View, ViewError> {
    match value.get("schema_version").and_then(Value::as_u64) {
        Some(v) if v == IMPORTED_SCHEMA_VERSION as u64 => {}
        Some(v) => {
            return Err(ViewError::parse(
                path,
                format!(
                    "imported schema_version {v} is not supported (this build reads {IMPORTED_SCHEMA_VERSION})"
                ),
            ))
        }
        None => return Err(ViewError::parse(path, "imported document without schema_version")),
    }
    let doc: ImportedDoc =
        serde_json::from_value(value).map_err(|e| ViewError::parse(path, e.to_string()))?;
    let v = doc.view;
    Ok(View {
        label: v.label,
        origin: Origin::Imported,
        format: v.format,
        path: path.to_path_buf(),
        series: v.series,
        notes: v.notes,
        llmperf_requests: v.llmperf_requests,
    })
}
