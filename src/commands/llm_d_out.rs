//! `run --save-llm-d`: once a session's results are saved, its runs (or its sweep's or
//! stages' steps) written again as llm-d's Benchmark Report (`render::llm_d`), read back from
//! what was saved, so the report says what the result says. A leaf beside `session.rs`:
//! imports nothing from this folder.

use std::path::{Path, PathBuf};

use crate::views::model::View;

/// Writes the llm-d report of `sweep_doc` (a sweep or staged run: `Some`) or of the `saved`
/// results to `out`; `Err`: why not (the results themselves are saved already).
pub fn save(sweep_doc: Option<&Path>, saved: &[PathBuf], out: &Path) -> anyhow::Result<()> {
    let view = match sweep_doc {
        Some(doc) => crate::views::open::load(doc)?,
        None => {
            let mut views = saved.iter().map(|p| crate::views::open::load(p));
            let Some(first) = views.next() else {
                anyhow::bail!("no run was saved, so there is nothing to write");
            };
            let mut view: View = first?;
            for v in views {
                view.series.extend(v?.series);
            }
            view
        }
    };
    crate::render::print::write_file(out, &crate::render::llm_d::text(&view))?;
    Ok(())
}
