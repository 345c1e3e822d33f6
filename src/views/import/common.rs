//! What the import formats share: a view's label and the load parameter its steps vary.
//!
//! Used by every importer in `views::import`; it reads no file and knows no format. To share
//! one more helper between formats, put it here (not in `import/mod.rs`, which calls the
//! formats and so must not be called back by them).

use std::path::Path;

use crate::config::sweep::LoadParameter;
use crate::views::model::{file_stem, Step};

pub fn label_of(server: Option<&str>, model: Option<&str>, path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    parts.extend(server.map(str::to_string));
    parts.extend(model.map(str::to_string));
    parts.push(format!("({})", file_stem(path)));
    parts.join(" ")
}

/// The load parameter that varies across steps (num_prompts when nothing does).
pub fn varying_parameter(steps: &[Step]) -> LoadParameter {
    let distinct = |p: LoadParameter| {
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
    for p in LoadParameter::ALL {
        if distinct(p) > 1 {
            return p;
        }
    }
    LoadParameter::NumPrompts
}
