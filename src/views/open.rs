//! Opening any file servebench reads into a [`View`]: it sniffs what the file is (a result, a
//! sweep document, an imported document, or another tool's output) and hands it to the reader
//! for that kind. The view model is `views::view`; other tools' formats are `views::import`.
//!
//! To open one more kind of document: recognize it in [`load`] and build its `View`.

use std::path::Path;

use serde_json::Value;

use crate::results::document::BenchResult;
use crate::results::sweep::SweepDoc;
use crate::views::error::ViewError;
use crate::views::import;
use crate::views::view::{
    file_stem, from_result, ImportedDoc, Origin, Parameter, Series, View, IMPORTED_SCHEMA_VERSION,
};

fn parse_err(path: &Path, why: impl Into<String>) -> ViewError {
    ViewError::Parse {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// Reads any supported file into a view: servebench result, sweep or imported document, or a
/// foreign file (`import`'s formats).
pub fn load(path: &Path) -> Result<View, ViewError> {
    let bytes = std::fs::read(path).map_err(|error| ViewError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    if let Ok(value) = serde_json::from_str::<Value>(&text) {
        match value.get("kind").and_then(Value::as_str) {
            Some("sweep") => return load_sweep(path, &value),
            Some("imported") => return load_imported(path, value),
            _ => {}
        }
        if value.get("schema_version").is_some() && value.get("config").is_some() {
            let result = BenchResult::load(path)?;
            return Ok(from_result(path, &result));
        }
    }
    import::parse(path, &text)
}

/// True when `path` holds a servebench result document (or cannot be read: the result
/// loader then says why).
pub fn is_result_file(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return true;
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(v) => v.get("kind").is_none() && v.get("config").is_some(),
        Err(_) => false,
    }
}

fn load_imported(path: &Path, value: Value) -> Result<View, ViewError> {
    match value.get("schema_version").and_then(Value::as_u64) {
        Some(v) if v == IMPORTED_SCHEMA_VERSION as u64 => {}
        Some(v) => {
            return Err(parse_err(
                path,
                format!(
                    "imported schema_version {v} is not supported (this build reads {IMPORTED_SCHEMA_VERSION})"
                ),
            ))
        }
        None => return Err(parse_err(path, "imported document without schema_version")),
    }
    let doc: ImportedDoc =
        serde_json::from_value(value).map_err(|e| parse_err(path, e.to_string()))?;
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

fn load_sweep(path: &Path, value: &Value) -> Result<View, ViewError> {
    let doc: SweepDoc =
        serde_json::from_value(value.clone()).map_err(|e| parse_err(path, e.to_string()))?;
    if doc.schema_version != 1 {
        return Err(parse_err(
            path,
            format!(
                "sweep schema_version {} is not supported (this build reads 1)",
                doc.schema_version
            ),
        ));
    }
    let parameter = Parameter::parse(doc.parameter.as_str()).ok_or_else(|| {
        parse_err(
            path,
            format!("unknown sweep parameter '{}'", doc.parameter.as_str()),
        )
    })?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut steps = Vec::new();
    let mut label = None;
    for s in &doc.steps {
        let file = dir.join(&s.result);
        let result = BenchResult::load(&file)?;
        let mut v = from_result(&file, &result);
        // Name the series after the sweep, not after its first step's file.
        label.get_or_insert_with(|| v.label.replace(&file_stem(&file), &file_stem(path)));
        let mut step = v.series.remove(0).steps.remove(0);
        if !s.complete {
            step.notes
                .push(format!("step {} was stopped before it completed", s.value));
        }
        steps.push(step);
    }
    let mut notes = Vec::new();
    if !doc.complete || doc.steps.len() < doc.values.len() {
        notes.push(format!(
            "sweep incomplete: {} of {} steps ran",
            doc.steps.len(),
            doc.values.len().max(doc.steps.len())
        ));
    }
    let stem = file_stem(path);
    Ok(View {
        label: label.unwrap_or_else(|| stem.clone()),
        origin: Origin::Sweep,
        format: "servebench".into(),
        path: path.to_path_buf(),
        series: vec![Series {
            name: format!("{} sweep ({stem})", parameter.as_str()),
            parameter,
            steps,
        }],
        notes,
        llmperf_requests: Vec::new(),
    })
}
