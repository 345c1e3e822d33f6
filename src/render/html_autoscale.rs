//! The HTML page's "Autoscaler" section (docs/metrics.md, "Autoscaler benchmarks"): the run's
//! replica-hours, cost, attainment and recoveries in a few lines, then `plot`'s three panels
//! (load, replicas, attainment) on one time axis. Computes nothing.

use std::fmt::Write as _;

use crate::render::error::RenderError;
use crate::render::escape::html as esc;
use crate::render::html_figure::figure;
use crate::render::plot::autoscale::charts;
use crate::views::model::View;

/// A number to `d` places, or "-".
fn fixed(v: Option<f64>, d: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.d$}"))
}

/// The section, empty when no step of `view` has the figures.
pub fn section(view: &View) -> Result<String, RenderError> {
    let mut h = String::new();
    let figures: Vec<_> = view.steps().filter_map(|s| s.autoscale.as_ref()).collect();
    if figures.is_empty() {
        return Ok(h);
    }
    h.push_str("<h2 id=\"autoscale\">Autoscaler</h2>\n");
    for a in &figures {
        let pct = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{:.1}%", v * 100.0));
        let recoveries: Vec<String> = (a.recoveries.iter())
            .map(|r| match r.recovery_s {
                Some(s) => format!("{:.1} s: {s:.2} s", r.burst_start_s),
                None => format!("{:.1} s: not recovered", r.burst_start_s),
            })
            .collect();
        let dips: Vec<String> = (a.dips.iter())
            .map(|d| match d.recovery_s {
                Some(s) => format!("{:.1} s: {s:.2} s", d.start_s),
                None => format!("{:.1} s: not recovered", d.start_s),
            })
            .collect();
        let _ =
            writeln!(
            h,
            "<p class=\"autoscale\">SLO attainment over the run: <strong>{}</strong> (target {}); \
             replica-hours {}, mean replicas {}, cost {} USD; over-provisioned replica-hours {}; \
             recovery after each burst (from its start): {}; after each dip below the target \
             (from its first window below): {}. Replicas from <code>{}</code>.</p>",
            pct(a.attainment),
            pct(Some(a.attainment_target)),
            fixed(a.replica_hours, 6),
            fixed(a.mean_replicas, 3),
            fixed(a.cost, 4),
            fixed(a.over_provisioned_replica_hours, 6),
            esc(&if recoveries.is_empty() { "none".to_string() } else { recoveries.join(", ") }),
            esc(&if dips.is_empty() { "none".to_string() } else { dips.join(", ") }),
            esc(a.replicas.as_ref().map_or("-", |s| s.source.as_str())),
        );
    }
    for c in charts(std::slice::from_ref(view)) {
        h.push_str(&figure(&c)?);
    }
    Ok(h)
}
