//! The text of a sweep or an imported document (`servebench report x.sweep.json`, `import`):
//! one table per series (a row per step), the notes, and llmperf's per-request table.
//!
//! Reads a `views::model::View` and formats it (`render::format`); computes nothing, and does
//! not print a single result's report (that is `report/mod.rs`). To add a column, add it to
//! [`RUN_COLUMNS`] (a run, cost or energy figure and its heading) or [`LATENCY_COLUMNS`] (a
//! statistic of a metric, keyed by `config::metric::MetricKey`).

use std::fmt::Write as _;

use crate::config::figure::{CostFigure, FigureKey, RunFigure};
use crate::config::metric::{MetricKey, Stat};
use crate::config::sweep::LoadParameter;
use crate::config::Metric;
use crate::render::escape::{markdown, terminal_line};
use crate::render::format::{fmt_load, fmt_value};
use crate::results::document::BenchResult;
use crate::results::validity::Verdict;
use crate::views::model::{LlmperfRequest, Step, View};

/// The hit-rate columns of a sweep over `num_prefixes` (the prefix-cache cliff).
const CACHE_COLUMNS: [(FigureKey, &str); 2] = [
    (
        FigureKey::Run(RunFigure::DesignedPrefixHitRate),
        "designed hit",
    ),
    (
        FigureKey::Run(RunFigure::MeasuredPrefixHitRate),
        "measured hit",
    ),
];

/// Run-level columns of the per-step table of a sweep or an import (key, heading), then the
/// [`LATENCY_COLUMNS`], in this order when present.
const RUN_COLUMNS: [(FigureKey, &str); 7] = [
    (FigureKey::Run(RunFigure::Completed), "ok"),
    (FigureKey::Run(RunFigure::Failed), "failed"),
    (FigureKey::Run(RunFigure::Duration), "duration s"),
    (FigureKey::Run(RunFigure::RequestThroughput), "req/s"),
    (FigureKey::Run(RunFigure::OutputThroughput), "out tok/s"),
    (
        FigureKey::Cost(CostFigure::UsdPer1mOutputTokens),
        "$/1M out",
    ),
    (
        FigureKey::Cost(CostFigure::JoulesPerOutputToken),
        "J/out tok",
    ),
];

/// Latency columns, in ms, headed by the statistic and the metric (`p99 TTFT`).
const LATENCY_COLUMNS: [(Stat, Metric); 7] = [
    (Stat::Mean, Metric::Ttft),
    (Stat::Percentile(99.0), Metric::Ttft),
    (Stat::Mean, Metric::Tpot),
    (Stat::Mean, Metric::Itl),
    (Stat::Percentile(99.0), Metric::Itl),
    (Stat::Mean, Metric::E2el),
    (Stat::Percentile(99.0), Metric::E2el),
];

/// Every column (figure, heading), run figures first.
fn view_columns() -> Vec<(FigureKey, String)> {
    let run = RUN_COLUMNS.map(|(k, h)| (k, h.to_string()));
    let latency = LATENCY_COLUMNS.map(|(stat, metric)| {
        let heading = format!("{stat} {}", metric.key().to_uppercase());
        (MetricKey::new(stat, metric).into(), heading)
    });
    run.into_iter().chain(latency).collect()
}

fn table(out: &mut String, head: &[String], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    for r in std::iter::once(head).chain(rows.iter().map(Vec::as_slice)) {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    }
}

/// The table of `steps` (heading and a row per step, the columns any step has), with a
/// last column `extra` (heading, a cell per step) when given.
fn series_rows(
    parameter: LoadParameter,
    steps: &[Step],
    extra: Option<(&str, Vec<String>)>,
) -> (Vec<String>, Vec<Vec<String>>) {
    let mut cols = view_columns();
    // A sweep over the prefix cache's working set, or over the gap between a user's units:
    // its hit rates beside the TTFT.
    if matches!(
        parameter,
        LoadParameter::NumPrefixes | LoadParameter::UserGap
    ) {
        cols.extend(CACHE_COLUMNS.map(|(k, h)| (k, h.to_string())));
    }
    let cols: Vec<(FigureKey, String)> = (cols.into_iter())
        .filter(|(k, _)| steps.iter().any(|st| st.metrics.contains_key(k)))
        .collect();
    let mut head = vec![parameter.as_str().to_string()];
    head.extend(cols.iter().map(|(_, h)| h.clone()));
    let mut rows: Vec<Vec<String>> = (steps.iter())
        .map(|st| {
            let mut r = vec![st.load_value(parameter).map_or("?".into(), fmt_load)];
            r.extend(
                cols.iter()
                    .map(|(k, _)| st.metric(k).map_or("—".into(), |v| fmt_value(k, v))),
            );
            r
        })
        .collect();
    if let Some((heading, cells)) = extra {
        head.push(heading.to_string());
        for (r, c) in rows.iter_mut().zip(cells) {
            r.push(c);
        }
    }
    (head, rows)
}

/// A Markdown pipe table, every cell through `escape::markdown`.
pub fn markdown_table(out: &mut String, head: &[String], rows: &[Vec<String>]) {
    let cells = |r: &[String]| r.iter().map(|c| markdown(c)).collect::<Vec<_>>();
    let _ = writeln!(out, "| {} |", cells(head).join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(head.len()));
    for r in rows {
        let _ = writeln!(out, "| {} |", cells(r).join(" | "));
    }
}

/// A sweep's or an import's tables in Markdown: a heading and a table per series.
pub fn view_markdown(view: &View) -> String {
    let mut out = format!("## {}\n", markdown(&view.label));
    for n in &view.notes {
        let _ = writeln!(out, "\n> note: {}", markdown(n));
    }
    for s in &view.series {
        let _ = writeln!(out, "\n### {}\n", markdown(&s.name));
        let (head, rows) = series_rows(s.parameter, &s.steps, None);
        markdown_table(&mut out, &head, &rows);
        if let Some(c) = crate::views::cliff::cliff(s.parameter, &s.steps) {
            let _ = writeln!(out, "\n{}", markdown(&c.line()));
        }
    }
    out
}

/// A result's report in Markdown: each block a heading and a figure/value table (the text
/// report's lines, `label: value`).
pub fn result_markdown(text: &str) -> String {
    let mut out = String::new();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let flush = |out: &mut String, rows: &mut Vec<Vec<String>>| {
        if !rows.is_empty() {
            markdown_table(out, &["figure".into(), "value".into()], rows);
            rows.clear();
        }
    };
    for l in text.lines() {
        let title = l.trim_matches(|c| c == '=' || c == '-');
        if title.len() < l.len() {
            flush(&mut out, &mut rows);
            if !title.trim().is_empty() {
                let _ = writeln!(out, "\n### {}\n", markdown(title.trim()));
            }
        } else if let Some(i) = l
            .find(": ")
            .or_else(|| l.ends_with(':').then(|| l.len() - 1))
        {
            rows.push(vec![
                l[..i].trim().to_string(),
                l[i + 1..].trim().to_string(),
            ]);
        }
    }
    flush(&mut out, &mut rows);
    out
}

/// A row of [`step_table`]: a saved step's figures and its validity verdict.
pub type TableStep = (Step, Option<Verdict>);

/// The row of the result saved at `path` (its figures only: no records are read).
pub fn table_step(path: &std::path::Path, r: &BenchResult) -> TableStep {
    let verdict = r.validity.as_ref().map(|v| v.verdict);
    (crate::views::open::step_of(path, r, false), verdict)
}

/// The table that ends a sweep, `--stages` or `search`: a row per step as saved, with the
/// measurement's validity, then the commands that plot, compare and render it (`saved`: the
/// sweep document, or the step files).
pub fn step_table(
    parameter: LoadParameter,
    steps: &[TableStep],
    saved: &[std::path::PathBuf],
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:=^50}", " Steps ");
    let views: Vec<Step> = steps.iter().map(|(s, _)| s.clone()).collect();
    let validity = (steps.iter())
        .map(|(_, v)| match v {
            Some(Verdict::Valid) => "valid".to_string(),
            Some(Verdict::ClientBound) => "client-bound".to_string(),
            Some(Verdict::ServerLate) => "server-late".to_string(),
            Some(Verdict::UsageImplausible) => "usage-implausible".to_string(),
            None => "—".to_string(),
        })
        .collect();
    let (head, rows) = series_rows(parameter, &views, Some(("validity", validity)));
    table(&mut out, &head, &rows);
    if let Some(c) = crate::views::cliff::cliff(parameter, &views) {
        let _ = writeln!(out, "{}", c.line());
    }
    let files: Vec<String> = saved.iter().map(|p| p.display().to_string()).collect();
    let files = files.join(" ");
    let _ = writeln!(out, "Plot it:     servebench plot {files} --out-dir plots");
    let _ = writeln!(out, "Compare:     servebench compare {files} OTHER");
    let _ = writeln!(
        out,
        "HTML report: servebench report {files} --html report.html"
    );
    out
}

/// The text report of a sweep or an imported document: one table per series (a row per
/// step, latencies in ms), the notes, and llmperf's per-request table when there is one.
pub fn view_text(view: &View) -> String {
    let mut out = String::new();
    // A label, note or series name from an imported file stays on its own line.
    let _ = writeln!(
        out,
        "{} ({}, {})",
        terminal_line(&view.label),
        view.format,
        view.path.display()
    );
    for n in &view.notes {
        let _ = writeln!(out, "note: {}", terminal_line(n));
    }
    for s in &view.series {
        let _ = writeln!(out, "\n{}", terminal_line(&s.name));
        let (head, rows) = series_rows(s.parameter, &s.steps, None);
        table(&mut out, &head, &rows);
        if let Some(c) = crate::views::cliff::cliff(s.parameter, &s.steps) {
            let _ = writeln!(out, "{}", c.line());
        }
        for st in &s.steps {
            for n in &st.notes {
                let v = st.load_value(s.parameter).map_or("?".into(), fmt_load);
                let n = terminal_line(n);
                let _ = writeln!(out, "  note ({} {v}): {n}", s.parameter.as_str());
            }
        }
    }
    if !view.llmperf_requests.is_empty() {
        out.push_str(&llmperf_table(&view.llmperf_requests, usize::MAX));
    }
    out
}

/// llmperf's figures next to servebench's recomputation, one row per request (at most
/// `limit`), with what does not add up flagged (`!`) and explained below.
pub fn llmperf_table(reqs: &[LlmperfRequest], limit: usize) -> String {
    let f = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.2}"));
    let u = |v: Option<u64>| v.map_or("—".to_string(), |v| v.to_string());
    let head: Vec<String> = [
        "#",
        "TTFT ms",
        "E2E ms",
        "llmperf ITL ms",
        "llmperf N",
        "llmperf tok/s",
        "ITL×(N−1) s",
        "N",
        "TPOT ms",
        "N/E2E tok/s",
        "",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows: Vec<Vec<String>> = reqs
        .iter()
        .take(limit)
        .map(|r| {
            vec![
                r.index.to_string(),
                if r.ok {
                    f(Some(r.ttft_ms))
                } else {
                    "failed".into()
                },
                f(Some(r.e2el_ms)),
                f(Some(r.llmperf_itl_ms)),
                u(r.llmperf_output_tokens),
                f(r.llmperf_request_output_throughput),
                f(r.itl_times_n_minus_1_s),
                u(r.output_tokens),
                f(r.tpot_ms),
                f(r.request_output_throughput),
                if r.flags.is_empty() {
                    String::new()
                } else {
                    "!".into()
                },
            ]
        })
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nllmperf per request: its own figures | recomputed (N = round(E2E / llmperf ITL), TPOT = (E2E − TTFT) / (N − 1))"
    );
    table(&mut out, &head, &rows);
    if reqs.len() > limit {
        let _ = writeln!(out, "  ... {} more", reqs.len() - limit);
    }
    for r in reqs.iter().take(limit).filter(|r| !r.flags.is_empty()) {
        for fl in &r.flags {
            let _ = writeln!(out, "  ! #{}: {fl}", r.index);
        }
    }
    out
}

/// A short text account of an import: series, steps, notes, and the llmperf table.
pub fn import_summary(view: &View, out: &std::path::Path) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let steps: usize = view.series.iter().map(|x| x.steps.len()).sum();
    let _ = writeln!(
        s,
        "imported {} ({}): {} series, {} steps -> {}",
        view.path.display(),
        view.format,
        view.series.len(),
        steps,
        out.display()
    );
    for x in &view.series {
        let values: Vec<String> = x
            .steps
            .iter()
            .filter_map(|st| st.load_value(x.parameter))
            .map(fmt_load)
            .collect();
        let _ = writeln!(
            s,
            "  {}: {} steps, {} = {}",
            x.name,
            x.steps.len(),
            x.parameter.as_str(),
            values.join(", ")
        );
    }
    for n in &view.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    if !view.llmperf_requests.is_empty() {
        s.push_str(&llmperf_table(&view.llmperf_requests, 20));
    }
    s
}
