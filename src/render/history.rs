//! `servebench history` printed (`views::history`): per configuration, a table of each run
//! (oldest first) with each figure and its 95% interval, then the newest run's verdict per
//! figure (a regression, or none); as text, Markdown, CSV (a row per run and figure), JSON,
//! or an HTML page with a chart per figure over time (the value and its interval's bounds,
//! drawn with `plot`'s chart code). Formats only: the verdicts are `views::history`'s.

use std::fmt::Write as _;

use crate::render::error::RenderError;
use crate::render::escape::{csv_cell, html as esc, markdown as md, terminal, terminal_line};
use crate::render::format::fmt_value;
use crate::render::plot::chart::{Chart, Dash, LegendEntry, Line};
use crate::render::plot::draw::chart_svg;
use crate::views::history::{Group, History, Judgement, Point, Trend};

/// A value with its interval: `12.34 [11.90, 12.80]`.
fn cell(key: &crate::config::figure::FigureKey, p: Option<Point>) -> String {
    match p {
        None => "—".into(),
        Some(Point { value, ci95: None }) => fmt_value(key, value),
        Some(Point {
            value,
            ci95: Some([lo, hi]),
        }) => format!(
            "{} [{}, {}]",
            fmt_value(key, value),
            fmt_value(key, lo),
            fmt_value(key, hi)
        ),
    }
}

/// The figure's column head: its name and unit.
fn head(key: &crate::config::figure::FigureKey) -> String {
    match key.unit() {
        Some(u) if !u.as_str().is_empty() => format!("{key} ({})", u.as_str()),
        _ => key.to_string(),
    }
}

/// The verdict on one figure, in words.
fn verdict(j: &Judgement) -> String {
    let n = j.against.len();
    match (j.trend, j.worse_by) {
        (Trend::Regression, Some(by)) => format!(
            "REGRESSION: the newest run is worse than each of the {n} before it, by {:.1}% at least",
            by * 100.0
        ),
        (Trend::NoRegression, _) => format!("no regression against the {n} before it"),
        (Trend::NoInterval, _) => "no interval: cannot be judged".into(),
        _ => "not judged (no direction, or one run)".into(),
    }
}

/// The rows of one group's table: `#`, start, file, then one cell per figure.
fn rows(g: &Group) -> Vec<Vec<String>> {
    (g.runs.iter().enumerate())
        .map(|(i, r)| {
            let mut row = vec![
                (i + 1).to_string(),
                r.started_at.clone(),
                r.file.display().to_string(),
            ];
            row.extend(g.figures.iter().zip(&r.figures).map(|(k, p)| cell(k, *p)));
            row
        })
        .collect()
}

fn heads(g: &Group) -> Vec<String> {
    let mut h = vec!["#".to_string(), "started_at".into(), "file".into()];
    h.extend(g.figures.iter().map(head));
    h
}

/// The aligned text tables.
pub fn text(h: &History) -> String {
    let mut out = String::new();
    for g in &h.groups {
        let _ = writeln!(
            out,
            "history of {} ({} runs, oldest first; the newest judged against up to {} before it)",
            terminal(&g.name),
            g.runs.len(),
            h.window
        );
        let heads = heads(g);
        let rows = rows(g);
        let widths: Vec<usize> = (0..heads.len())
            .map(|c| {
                let cells = rows.iter().map(|r| r[c].chars().count());
                cells.chain([heads[c].chars().count()]).max().unwrap_or(0)
            })
            .collect();
        for row in std::iter::once(&heads).chain(&rows) {
            let line: Vec<String> = (row.iter().zip(&widths))
                .map(|(c, w)| format!("{:<w$}", terminal(c)))
                .collect();
            let _ = writeln!(out, "  {}", line.join("  ").trim_end());
        }
        for j in &g.judgements {
            let _ = writeln!(out, "  {}: {}", j.figure, verdict(j));
        }
        for n in &g.notes {
            let _ = writeln!(out, "  note: workload differs: {}", terminal(n));
        }
        out.push('\n');
    }
    for n in &h.notes {
        let _ = writeln!(out, "note: {}", terminal(n));
    }
    out
}

/// Markdown tables.
pub fn markdown(h: &History) -> String {
    let mut out = String::new();
    for g in &h.groups {
        let _ = writeln!(out, "### History of {}\n", md(&g.name));
        let heads = heads(g);
        let _ = writeln!(
            out,
            "| {} |",
            heads.iter().map(|c| md(c)).collect::<Vec<_>>().join(" | ")
        );
        let _ = writeln!(out, "|{}", "---|".repeat(heads.len()));
        for row in rows(g) {
            let _ = writeln!(
                out,
                "| {} |",
                row.iter().map(|c| md(c)).collect::<Vec<_>>().join(" | ")
            );
        }
        out.push('\n');
        for j in &g.judgements {
            let _ = writeln!(out, "- `{}`: {}", j.figure, verdict(j));
        }
        for n in &g.notes {
            let _ = writeln!(out, "- note: workload differs: {}", md(n));
        }
        out.push('\n');
    }
    for n in &h.notes {
        let _ = writeln!(out, "- note: {}", md(n));
    }
    out
}

/// CSV: a row per run and figure, the newest run's verdict on its rows.
pub fn csv(h: &History) -> String {
    let mut out = String::from(
        "group,run,started_at,file,figure,value,ci95_low,ci95_high,verdict,worse_by\n",
    );
    let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for g in &h.groups {
        let last = g.runs.len().saturating_sub(1);
        for (i, r) in g.runs.iter().enumerate() {
            for ((k, p), j) in g.figures.iter().zip(&r.figures).zip(&g.judgements) {
                let [lo, hi] = p
                    .and_then(|p| p.ci95)
                    .map_or([None, None], |[a, b]| [Some(a), Some(b)]);
                let (trend, by) = if i == last {
                    (j.trend.as_str(), num(j.worse_by))
                } else {
                    ("", String::new())
                };
                let _ = writeln!(
                    out,
                    "{},{},{},{},{},{},{},{},{},{}",
                    csv_cell(&g.name),
                    i + 1,
                    csv_cell(&r.started_at),
                    csv_cell(&r.file.display().to_string()),
                    csv_cell(&k.to_string()),
                    num(p.map(|p| p.value)),
                    num(lo),
                    num(hi),
                    trend,
                    by
                );
            }
        }
    }
    out
}

/// JSON: the history as `views::history` holds it.
pub fn json(h: &History) -> String {
    serde_json::to_string_pretty(h).unwrap_or_default() + "\n"
}

/// One chart per figure: the value over days since the group's first run, and its interval's
/// bounds dashed.
fn charts(g: &Group, n: usize) -> Vec<Chart> {
    let t0 = g.runs.first().map_or(0.0, |r| r.unix_s);
    (g.figures.iter().enumerate())
        .map(|(i, k)| {
            let points = |f: &dyn Fn(Point) -> Option<f64>| -> Vec<(f64, f64)> {
                (g.runs.iter())
                    .filter_map(|r| Some(((r.unix_s - t0) / 86400.0, f(r.figures[i]?)?)))
                    .filter(|(x, y)| x.is_finite() && y.is_finite())
                    .collect()
            };
            let line = |name: &str, dash, pts| Line {
                name: name.into(),
                color: 0,
                dash,
                points: pts,
                markers: dash == Dash::Solid,
            };
            let lines = vec![
                line(&k.to_string(), Dash::Solid, points(&|p| Some(p.value))),
                line("95% low", Dash::Dashed, points(&|p| Some(p.ci95?[0]))),
                line("95% high", Dash::Dashed, points(&|p| Some(p.ci95?[1]))),
            ];
            Chart {
                name: format!("history-{n}-{k}"),
                title: format!("{k} over time: {}", terminal_line(&g.name)),
                x_label: "days since the first run".into(),
                y_label: head(k),
                x_log: false,
                y_log: false,
                legend: (lines.iter())
                    .map(|l| LegendEntry {
                        name: l.name.clone(),
                        color: Some(0),
                        dash: l.dash,
                    })
                    .collect(),
                lines,
            }
        })
        .collect()
}

/// One self-contained HTML page: per group its verdicts, a chart per figure, and the table.
pub fn html(h: &History) -> Result<String, RenderError> {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>servebench history</title><style>{}</style></head><body>\n\
         <h1>servebench history</h1>\n",
        crate::render::html::STYLE
    );
    for (n, g) in h.groups.iter().enumerate() {
        let _ = writeln!(
            out,
            "<h2>{} ({} runs)</h2>\n<ul>",
            esc(&g.name),
            g.runs.len()
        );
        for j in &g.judgements {
            let class = if j.trend == Trend::Regression {
                "bad"
            } else {
                "ok"
            };
            let _ = writeln!(
                out,
                "<li><code>{}</code>: <span class=\"verdict {class}\">{}</span></li>",
                esc(&j.figure.to_string()),
                esc(&verdict(j))
            );
        }
        out.push_str("</ul>\n");
        for c in charts(g, n) {
            let svg = chart_svg(&c).map_err(|source| RenderError::Draw {
                what: format!("the chart {} of the history page", c.name),
                source,
            })?;
            let _ = writeln!(out, "<figure class=\"chart\">{svg}</figure>");
        }
        out.push_str("<div class=\"wide\"><table>\n<tr>");
        for c in heads(g) {
            let _ = write!(out, "<th>{}</th>", esc(&c));
        }
        out.push_str("</tr>\n");
        for row in rows(g) {
            out.push_str("<tr>");
            for c in row {
                let _ = write!(out, "<td>{}</td>", esc(&c));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table></div>\n");
        for note in &g.notes {
            let _ = writeln!(out, "<p class=\"note\">workload differs: {}</p>", esc(note));
        }
    }
    for note in &h.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(note));
    }
    out.push_str("</body></html>\n");
    Ok(out)
}
