//! The HTML report's first screen: the answer before anything else. A run's headline figures
//! with their units and 95% intervals, its validity verdict and SLO attainment; a sweep's
//! headline table (a row per step), its saturation point (`views::saturation`) and its
//! prefix-cache cliff (`views::cliff`). Labels and units come from the figures' keys
//! (`FigureKey::label_with_unit`), never the raw keys.
//!
//! Lays out what the view holds; computes nothing. Every string from a file goes through
//! `escape::html`.

use std::fmt::Write as _;

use crate::config::figure::{FigureKey, RunFigure};
use crate::config::metric::{MetricKey, Stat};
use crate::config::Metric;
use crate::render::escape::html as esc;
use crate::render::format::{fmt_load, fmt_value};
use crate::views::model::{Judged, Series, Step, View};

/// The figures a first screen leads with, in this order, where the step has them.
pub fn headline_keys() -> Vec<FigureKey> {
    let m = |stat, metric| FigureKey::Latency(MetricKey::new(stat, metric));
    let p99 = Stat::Percentile(99.0);
    vec![
        RunFigure::OutputThroughput.into(),
        RunFigure::RequestThroughput.into(),
        m(Stat::Mean, Metric::Ttft),
        m(p99, Metric::Ttft),
        m(Stat::Mean, Metric::Tpot),
        m(p99, Metric::Itl),
        m(p99, Metric::E2el),
        RunFigure::Completed.into(),
        RunFigure::Failed.into(),
    ]
}

/// The first screen of `view`.
pub fn first_screen(view: &View) -> String {
    let mut h = String::from("<section id=\"answer\">\n");
    for n in &view.notes {
        let _ = writeln!(h, "<p class=\"note\">Note: {}</p>", esc(n));
    }
    for s in &view.series {
        match s.steps.as_slice() {
            [step] => run_screen(&mut h, step),
            _ => sweep_screen(&mut h, s),
        }
    }
    h.push_str("</section>\n");
    h
}

/// A value with its unit and, where it has one, its 95% interval.
fn value_html(step: &Step, key: &FigureKey, v: f64) -> String {
    let unit = key.unit().map(|u| u.as_str()).filter(|u| *u != "fraction");
    let mut out = esc(&fmt_value(key, v));
    if let Some(u) = unit {
        let _ = write!(out, " <span class=\"unit\">{}</span>", esc(u));
    }
    if let Some([lo, hi]) = step.intervals.get(key) {
        let _ = write!(
            out,
            " <span class=\"ci\" title=\"95% confidence interval\">95% CI {}–{}</span>",
            esc(&fmt_value(key, *lo)),
            esc(&fmt_value(key, *hi))
        );
    }
    out
}

fn run_screen(h: &mut String, step: &Step) {
    h.push_str("<div class=\"cards\">\n");
    for key in headline_keys() {
        let Some(v) = step.metric(&key) else { continue };
        let _ = writeln!(
            h,
            "<div class=\"card\" data-key=\"{}\"><div class=\"label\">{}</div>\
             <div class=\"value\">{}</div></div>",
            esc(&key.name()),
            esc(&key.label()),
            value_html(step, &key, v)
        );
    }
    h.push_str("</div>\n");
    verdict_html(h, step.judged.as_ref());
    slo_html(h, step);
    for n in &step.notes {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(n));
    }
}

/// The measurement's verdict: valid, or what distorted it and why.
fn verdict_html(h: &mut String, judged: Option<&Judged>) {
    let Some(verdict) = judged.and_then(|j| j.verdict.as_deref()) else {
        h.push_str("<p class=\"verdict\">Measurement: not judged (no validity data in this document).</p>\n");
        return;
    };
    let class = if verdict == "valid" { "ok" } else { "bad" };
    let _ = writeln!(
        h,
        "<p class=\"verdict {class}\">Measurement: <strong>{}</strong></p>",
        esc(verdict)
    );
    let reasons = judged.map(|j| j.reasons.as_slice()).unwrap_or_default();
    if !reasons.is_empty() {
        h.push_str("<ul class=\"reasons\">");
        for r in reasons {
            let _ = write!(h, "<li>{}</li>", esc(r));
        }
        h.push_str("</ul>\n");
    }
}

/// SLO attainment and goodput, or that no SLO was given.
fn slo_html(h: &mut String, step: &Step) {
    let Some(j) = &step.judged else { return };
    let Some(att) = j.slo_attainment() else {
        h.push_str(
            "<p class=\"slo\">SLO attainment: no SLOs given (<code>--goodput ttft:MS,tpot:MS</code> \
             judges each request).</p>\n",
        );
        return;
    };
    let goodput = step
        .metric(RunFigure::RequestGoodput)
        .map(|g| format!("; request goodput {g:.2} requests/s"))
        .unwrap_or_default();
    let _ = writeln!(
        h,
        "<p class=\"slo\">SLO attainment: <strong>{:.1}%</strong> ({} of {} measured requests met {}){}</p>",
        100.0 * att,
        j.good.unwrap_or(0),
        j.measured,
        esc(&j.slos.join(", ")),
        esc(&goodput)
    );
}

fn sweep_screen(h: &mut String, s: &Series) {
    let _ = writeln!(h, "<h2>{}</h2>", esc(&s.name));
    if let Some(sat) = crate::views::saturation::saturation(s.parameter, &s.steps) {
        let _ = writeln!(
            h,
            "<p class=\"saturation\"><strong>{}</strong></p>",
            esc(&sat.line())
        );
    }
    if let Some(c) = crate::views::cliff::cliff(s.parameter, &s.steps) {
        let _ = writeln!(
            h,
            "<p class=\"cliff\"><strong>{}</strong></p>",
            esc(&c.line())
        );
    }
    let keys: Vec<FigureKey> = headline_keys()
        .into_iter()
        .filter(|k| s.steps.iter().any(|st| st.metric(k).is_some()))
        .collect();
    let judged = s.steps.iter().any(|st| st.judged.is_some());
    let slo = s.steps.iter().any(|st| {
        st.judged
            .as_ref()
            .is_some_and(|j| j.slo_attainment().is_some())
    });
    let _ = write!(
        h,
        "<div class=\"wide\"><table class=\"headline\"><tr><th>{}</th>",
        esc(s.parameter.as_str())
    );
    for k in &keys {
        let _ = write!(h, "<th>{}</th>", esc(&k.label_with_unit()));
    }
    if slo {
        h.push_str("<th>SLO attainment (%)</th>");
    }
    if judged {
        h.push_str("<th>Measurement</th>");
    }
    h.push_str("</tr>\n");
    for st in &s.steps {
        let load = st.load_value(s.parameter).map_or("?".into(), fmt_load);
        let _ = write!(h, "<tr><td>{}</td>", esc(&load));
        for k in &keys {
            let cell = st.metric(k).map_or("—".into(), |v| {
                let mut c = esc(&fmt_value(k, v));
                if let Some([lo, hi]) = st.intervals.get(k) {
                    let _ = write!(
                        c,
                        "<br><span class=\"ci\">{}–{}</span>",
                        esc(&fmt_value(k, *lo)),
                        esc(&fmt_value(k, *hi))
                    );
                }
                c
            });
            let _ = write!(h, "<td>{cell}</td>");
        }
        let j = st.judged.as_ref();
        if slo {
            let a = j.and_then(Judged::slo_attainment);
            let _ = write!(
                h,
                "<td>{}</td>",
                a.map_or("—".into(), |a| format!("{:.1}", 100.0 * a))
            );
        }
        if judged {
            let v = j.and_then(|j| j.verdict.as_deref()).unwrap_or("not judged");
            let class = if v == "valid" { "ok" } else { "bad" };
            let _ = write!(h, "<td class=\"{class}\">{}</td>", esc(v));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></div>\n");
    if keys
        .iter()
        .any(|k| s.steps.iter().any(|st| st.intervals.contains_key(k)))
    {
        h.push_str("<p class=\"hint\">Ranges under a value are its 95% confidence interval.</p>\n");
    }
    sweep_verdicts(h, s);
}

/// One line for the sweep's measurement: valid at every step, or the steps that were not.
fn sweep_verdicts(h: &mut String, s: &Series) {
    let bad: Vec<String> = (s.steps.iter())
        .filter_map(|st| {
            let v = st.judged.as_ref()?.verdict.as_deref()?;
            let load = st.load_value(s.parameter).map_or("?".into(), fmt_load);
            (v != "valid").then(|| format!("{} {load}: {v}", s.parameter.as_str()))
        })
        .collect();
    if !bad.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"verdict bad\">Measurement not valid at {}</p>",
            esc(&bad.join("; "))
        );
    } else if s.steps.iter().all(|st| {
        st.judged
            .as_ref()
            .and_then(|j| j.verdict.as_ref())
            .is_some()
    }) {
        h.push_str(
            "<p class=\"verdict ok\">Measurement: <strong>valid</strong> at every step</p>\n",
        );
    }
    for st in &s.steps {
        let load = st.load_value(s.parameter).map_or("?".into(), fmt_load);
        for n in &st.notes {
            let _ = writeln!(
                h,
                "<p class=\"note\">{} {}: {}</p>",
                esc(s.parameter.as_str()),
                esc(&load),
                esc(n)
            );
        }
    }
}

#[cfg(test)]
#[path = "html_first_tests.rs"]
mod tests;
