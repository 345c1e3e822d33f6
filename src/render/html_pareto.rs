//! The HTML report's Pareto section: the chart of output tokens/s per user against per GPU
//! with the front marked (`plot::pareto`), and a table naming the steps on the front
//! (`views::pareto`; docs/metrics.md, "Pareto front"). Empty when no two steps make a line.
//!
//! Formatting only: every label from a document goes through `escape::html`.

use std::fmt::Write as _;

use crate::render::error::RenderError;
use crate::render::escape::html as esc;
use crate::render::html_figure::figure;
use crate::render::plot::pareto;
use crate::views::model::View;
use crate::views::pareto::summary;

/// The section, or nothing when there is no chart.
pub fn section(views: &[View]) -> Result<String, RenderError> {
    let Some(chart) = pareto::chart(views) else {
        return Ok(String::new());
    };
    let fig = figure(&chart)?;
    let f = summary(views);
    let mut h = String::new();
    let _ = writeln!(
        h,
        "<h2 id=\"pareto\">Pareto front</h2>\n<p>Each step is a point of output tokens/s per \
         user (1000 / mean TPOT) against {}; the steps on the front (no other step is higher \
         on both) are dashed and listed.</p>",
        esc(f.basis.axis())
    );
    h.push_str(&fig);
    let _ = writeln!(
        h,
        "<table class=\"pareto\"><tr><th>configuration</th><th>step</th>\
         <th>output tokens/s per user</th><th>{}</th></tr>",
        esc(f.basis.axis())
    );
    for p in &f.front {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td></tr>",
            esc(&p.configuration),
            esc(&p.step),
            p.per_user,
            p.per_gpu
        );
    }
    h.push_str("</table>\n");
    Ok(h)
}
