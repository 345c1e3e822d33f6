//! The report's line layout, shared by every section file: section rules 50 wide, `label
//! value` lines padded as vLLM pads them (labels to 40 columns, values to 10), vLLM's latency
//! section names, and a distribution's mean, median and percentile lines. A leaf: it imports
//! no section file, and the sections import it rather than their parent.

use std::fmt::Write as _;

use crate::config::metric::percentile_word;
use crate::config::Metric;
use crate::results::stats::Distribution;

pub(super) const WIDTH: usize = 50;

pub(super) fn rule(title: &str, fill: char) -> String {
    let pad = WIDTH.saturating_sub(title.chars().count());
    let left = pad / 2;
    let fill_s = |n| std::iter::repeat_n(fill, n).collect::<String>();
    format!("{}{}{}\n", fill_s(left), title, fill_s(pad - left))
}

/// One `label value` line; the value (it may hold a label, metadata or a server's message) is
/// kept on its line, every control character in it made visible.
pub(super) fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let value = value.to_string();
    let value = crate::render::escape::terminal_line(&value);
    let _ = writeln!(out, "{:<40} {:<10}", label, value);
}

pub(super) fn num(out: &mut String, label: &str, value: f64) {
    line(out, label, format!("{value:.2}"));
}

/// Header and name of each latency section, as vLLM prints them.
pub(super) fn section(m: Metric) -> (&'static str, &'static str) {
    match m {
        Metric::Ttft => ("Time to First Token", "TTFT"),
        Metric::Tpot => ("Time per Output Token (excl. 1st token)", "TPOT"),
        Metric::Itl => ("Inter-token Latency", "ITL"),
        Metric::E2el => ("End-to-end Latency", "E2EL"),
        Metric::Ttst => ("Time to Second Token", "TTST"),
        Metric::OutputTpsPerUser => ("Output Tokens per Second per User", "Output tok/s/user"),
    }
}

pub(super) fn distribution(
    out: &mut String,
    name: &str,
    unit: &str,
    d: Option<&Distribution>,
    ps: &[f64],
) {
    let value = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.2}"));
    line(
        out,
        &format!("Mean {name} ({unit}):"),
        value(d.map(|d| d.mean)),
    );
    line(
        out,
        &format!("Median {name} ({unit}):"),
        value(d.map(|d| d.median)),
    );
    for &p in ps {
        line(
            out,
            &format!("P{} {name} ({unit}):", percentile_word(p)),
            value(d.and_then(|d| d.at(p))),
        );
    }
}
