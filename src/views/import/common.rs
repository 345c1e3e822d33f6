//! What the importers share: the error of a file that is not what it seemed, the percentiles
//! of per-request imports, a view's label and the load parameter a series varies.

use std::path::Path;

use crate::views::error::ViewError;
use crate::views::view::{file_stem, Parameter, Step};

/// Percentiles computed for per-request imports (llmperf records).
pub(super) const PERCENTILES: [f64; 5] = [50.0, 75.0, 90.0, 95.0, 99.0];

pub(super) fn bad(path: &Path, why: impl Into<String>) -> ViewError {
    ViewError::Parse {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

pub(super) fn label_of(server: Option<&str>, model: Option<&str>, path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    parts.extend(server.map(str::to_string));
    parts.extend(model.map(str::to_string));
    parts.push(format!("({})", file_stem(path)));
    parts.join(" ")
}

/// The load parameter that varies across steps (num_prompts when nothing does).
pub(super) fn varying_parameter(steps: &[Step]) -> Parameter {
    let distinct = |p: Parameter| {
        let mut v: Vec<i64> = steps
            .iter()
            .filter_map(|s| s.load_value(p))
            .map(|x| {
                if x.is_finite() {
                    x.round() as i64
                } else {
                    i64::MAX
                }
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    for p in [
        Parameter::NumPrompts,
        Parameter::MaxConcurrency,
        Parameter::RequestRate,
        Parameter::InputLen,
    ] {
        if distinct(p) > 1 {
            return p;
        }
    }
    Parameter::NumPrompts
}
