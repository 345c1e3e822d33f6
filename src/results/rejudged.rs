//! The mark of a result whose goodput was re-judged (`rejudge.rs`): saved in the result
//! document (`document.rs`), so it lives apart from the code that re-judges.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::Slo;

/// A result whose goodput was recomputed under SLOs it was not measured under.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rejudged {
    /// The SLOs it was measured under (empty: none).
    pub measured_under: Vec<Slo>,
    /// The SLOs its goodput now answers.
    pub slos: Vec<Slo>,
    /// The records file it was recomputed from.
    pub records_file: PathBuf,
}

impl Rejudged {
    /// One line: `goodput re-judged under ttft:500 from its records (measured under none)`.
    pub fn describe(&self) -> String {
        format!(
            "goodput re-judged under {} from its records (measured under {})",
            slos_text(&self.slos),
            slos_text(&self.measured_under)
        )
    }
}

/// `ttft:500 tpot:50`, or `none`.
fn slos_text(slos: &[Slo]) -> String {
    let parts: Vec<String> = (slos.iter())
        .map(|s| format!("{}:{}", s.metric.key(), s.max_ms))
        .collect();
    match parts.is_empty() {
        true => "none".into(),
        false => parts.join(" "),
    }
}
