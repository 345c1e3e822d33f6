//! The SLO controller's block (`run --adaptive`; docs/metrics.md, "The SLO controller"):
//! the sustained load with its bracket and interval, where escalation stopped at
//! saturation, and one line per window (phase, load, requests, good fraction with its 95%
//! interval, verdict).

use super::lines::{line, rule};
use crate::results::adaptive::AdaptiveFigures;
use crate::results::document::BenchResult;

fn ci(c: Option<(f64, f64)>) -> String {
    c.map_or_else(|| "-".into(), |(lo, hi)| format!("[{lo:.3}, {hi:.3}]"))
}

fn load(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

/// The block, where the run had a controller.
pub(super) fn block(out: &mut String, result: &BenchResult) {
    let Some(a) = &result.adaptive else {
        return;
    };
    out.push_str(&rule("SLO controller", '-'));
    let on = a.spec.on.as_str();
    line(
        out,
        &format!("Sustained {on}:"),
        match a.sustained {
            Some(v) => format!(
                "{v:.3} (hold passed, good fraction 95% CI {})",
                ci(a.sustained_ci95)
            ),
            None => "none confirmed".into(),
        },
    );
    line(
        out,
        "Bracket (last pass, first fail):",
        format!("{}, {}", load(a.last_pass), load(a.first_fail)),
    );
    line(
        out,
        "Target good fraction:",
        format!("{:.3}", a.spec.target),
    );
    line(
        out,
        "Controller time (s):",
        format!("{:.1}", a.controller_s),
    );
    if let Some(s) = &a.saturation {
        line(
            out,
            "Saturated at:",
            format!("{on} {:.3}: {}", s.load, s.evidence),
        );
    }
    if !a.skipped.is_empty() {
        let skipped: Vec<String> = a.skipped.iter().map(|v| format!("{v:.3}")).collect();
        line(out, "Skipped (not failed):", skipped.join(", "));
    }
    for n in &a.notes {
        line(out, "Note:", n);
    }
    windows(out, a);
}

fn windows(out: &mut String, a: &AdaptiveFigures) {
    for (i, w) in a.windows.iter().enumerate() {
        if !w.phase.judged() {
            continue;
        }
        let verdict = w.verdict.map_or("-", |v| v.as_str());
        let early = if w.early { " (decided early)" } else { "" };
        let good = w
            .good_fraction
            .map_or_else(|| "-".into(), |g| format!("{g:.3}"));
        line(
            out,
            &format!("Window {i} {}:", w.phase.as_str()),
            format!(
                "{:.3} at {:.1}-{:.1} s; {} sent, {} good ({good}, CI {}), {} unfinished: {verdict}{early}",
                w.load,
                w.start_s,
                w.end_s,
                w.sent,
                w.good,
                ci(w.good_fraction_ci95),
                w.unfinished
            ),
        );
    }
}
