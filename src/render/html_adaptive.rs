//! The HTML page's "SLO controller" section (`run --adaptive`; docs/metrics.md, "The SLO
//! controller"): the sustained load with its bracket and interval in one line, then `plot`'s
//! two panels (the load per window with the verdicts and the sustained load; the good
//! fraction with its interval and the target) on one time axis. Computes nothing.

use std::fmt::Write as _;

use crate::render::error::RenderError;
use crate::render::html_figure::figure;
use crate::render::plot::adaptive::charts;
use crate::views::model::View;

fn load(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

/// The section, empty when no step of `view` has the controller's figures.
pub fn section(view: &View) -> Result<String, RenderError> {
    let mut h = String::new();
    let found: Vec<_> = view.steps().filter_map(|s| s.adaptive.as_ref()).collect();
    if found.is_empty() {
        return Ok(h);
    }
    h.push_str("<h2 id=\"adaptive\">SLO controller</h2>\n");
    for a in &found {
        let judged = a.windows.iter().filter(|w| w.verdict.is_some()).count();
        let early = a.windows.iter().filter(|w| w.early).count();
        let ci = a.sustained_ci95.map_or_else(
            || "-".into(),
            |(lo, hi)| format!("[{:.1}%, {:.1}%]", lo * 100.0, hi * 100.0),
        );
        let _ = writeln!(
            h,
            "<p class=\"adaptive\">Sustained {on}: <strong>{}</strong> (hold's good fraction \
             95% CI {ci}, target {:.1}%); bracket: last pass {}, first fail {}; {judged} \
             windows judged, {early} decided early; controller time {:.1} s{}.</p>",
            load(a.sustained),
            a.spec.target * 100.0,
            load(a.last_pass),
            load(a.first_fail),
            a.controller_s,
            if a.complete {
                ""
            } else {
                " (stopped: not complete)"
            },
            on = a.spec.on.as_str(),
        );
    }
    for c in charts(std::slice::from_ref(view)) {
        h.push_str(&figure(&c)?);
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_holds_the_sustained_load_and_both_figures() {
        let mut v = crate::views::pareto::test_sweep("run", None, &[(1, 1.0, 1.0)]);
        assert_eq!(section(&v).unwrap(), "");
        v.series[0].steps[0].adaptive = Some(crate::render::plot::adaptive::tests::figures());
        let h = section(&v).unwrap();
        assert!(
            h.contains("Sustained concurrency: <strong>2.000</strong>"),
            "{h}"
        );
        assert!(h.contains("2 decided early"), "{h}");
        for id in ["adaptive-load", "adaptive-goodput"] {
            assert!(
                h.contains(&format!("<figure class=\"chart\" id=\"{id}\"><svg")),
                "{id}"
            );
        }
        let page = crate::render::html::page(&v, &Default::default()).unwrap();
        assert!(page.contains("<h2 id=\"adaptive\">SLO controller</h2>"));
    }
}
