//! The HTML report's full table, last on the page: every figure of every step, a row per
//! figure labelled with its name for people and its unit (`FigureKey::label_with_unit`); the
//! key documents save it under is the row's tooltip and `data-key`, so a reader can find it in
//! the JSON. Wide sweeps scroll inside their own box.
//!
//! Lays out the view's figures; computes nothing. Every string from a file goes through
//! `escape::html`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::render::escape::html as esc;
use crate::render::format::{fmt_load, fmt_value};
use crate::views::model::View;

/// A table per series: its figures (rows) by step (columns).
pub fn full_tables(view: &View) -> String {
    let mut h = String::new();
    for s in &view.series {
        let keys: BTreeSet<_> = s.steps.iter().flat_map(|st| st.metrics.keys()).collect();
        if keys.is_empty() {
            continue;
        }
        let _ = writeln!(h, "<h2 id=\"series\">Every figure: {}</h2>", esc(&s.name));
        h.push_str("<div class=\"wide\"><table class=\"steps\"><tr><th>figure (unit)</th>");
        for st in &s.steps {
            let v = st.load_value(s.parameter).map_or("?".into(), fmt_load);
            let _ = write!(h, "<th>{} {}</th>", esc(s.parameter.as_str()), esc(&v));
        }
        h.push_str("</tr>\n");
        for k in keys {
            let name = k.name();
            let _ = write!(
                h,
                "<tr data-key=\"{}\"><td title=\"{}\">{}</td>",
                esc(&name),
                esc(&name),
                esc(&k.label_with_unit())
            );
            for st in &s.steps {
                let v = st.metric(k).map_or("—".into(), |v| fmt_value(k, v));
                let _ = write!(h, "<td>{}</td>", esc(&v));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table></div>\n");
    }
    h
}
