//! `servebench plan`'s outputs (docs/metrics.md, "Capacity per dollar"): the text tables (a
//! row per configuration: its sustained load, bracket, good fraction's 95% interval,
//! throughputs, $ per 1M input and output tokens, replicas for the demand; then every step),
//! the CSV (a row per step, the configuration's answer on each), the chart of $ per 1M output
//! tokens against load with the SLO frontier, the steps on the Pareto front of output tokens/s
//! per user against per GPU, and the HTML page (the tables, the front and the chart).
//!
//! Formats what `results::capacity` computed; computes nothing. Every string from a file (a
//! label, a path) is escaped for its output (`render::escape`).

use std::fmt::Write as _;

use crate::render::error::{DrawError, RenderError};
use crate::render::escape::{csv_cell, html as esc};
use crate::render::format::fmt_load;
use crate::render::plot::chart::{Chart, Dash, LegendEntry, Line};
use crate::results::capacity::{slos_text, CapacityPlan, CapacityStep, Configuration, Demand};
use crate::results::pareto::Basis;

fn money(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{v:.4}"))
}

fn rate(v: f64) -> String {
    format!("{v:.2}")
}

fn share(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{:.1}%", v * 100.0))
}

fn demand_text(d: Demand) -> String {
    match d {
        Demand::RequestRate(r) => format!("{} req/s", fmt_load(r)),
        Demand::OutputThroughput(t) => format!("{} output tok/s", fmt_load(t)),
    }
}

/// The one-line statement of what the plan was asked.
fn heading(p: &CapacityPlan) -> String {
    let share = match p.spec.input_share {
        Some(f) => format!("input share {:.1}% (--input-share)", f * 100.0),
        None => "input share: each load's mean TTFT ÷ mean E2EL".into(),
    };
    format!(
        "Capacity plan for {}: ≥ {}% of requests within --goodput {}; load: {}; {share}",
        p.model,
        fmt_load(p.spec.target * 100.0),
        slos_text(&p.spec.slos),
        p.parameter.as_str()
    )
}

/// The answer of each configuration as table cells.
fn answer_row(p: &CapacityPlan, i: usize, c: &Configuration) -> Vec<String> {
    let mut row = vec![c.name.clone(), format!("{:.2}", c.usd_per_hour)];
    match &c.sustained {
        Some(s) => {
            let at = &c.steps[s.step];
            row.push(fmt_load(s.load));
            row.push(match s.first_failing {
                Some(f) => format!("[{}, {})", fmt_load(s.load), fmt_load(f)),
                None => format!("[{}, —)", fmt_load(s.load)),
            });
            row.push(match s.good_fraction_ci95 {
                Some((lo, hi)) => format!(
                    "{:.1}% [{:.1}, {:.1}]",
                    at.good_fraction * 100.0,
                    lo * 100.0,
                    hi * 100.0
                ),
                None => "—".into(),
            });
            row.push(rate(at.request_throughput));
            row.push(rate(at.input_throughput));
            row.push(rate(at.output_throughput));
            row.push(share(at.input_share));
            row.push(money(at.usd_per_1m_input));
            row.push(money(at.usd_per_1m_output));
        }
        None => {
            row.push("none".into());
            let lowest = c.steps.first().map_or("—".into(), |s| fmt_load(s.load));
            row.push(format!("fails at {lowest}"));
            row.extend(std::iter::repeat_n("—".to_string(), 7));
        }
    }
    if p.spec.demand.is_some() {
        row.push(c.replicas.map_or("—".into(), |r| r.count.to_string()));
        row.push(
            c.replicas
                .map_or("—".into(), |r| format!("{:.2}", r.usd_per_hour)),
        );
        row.push(
            if p.cheapest == Some(i) {
                "cheapest"
            } else {
                ""
            }
            .into(),
        );
    }
    row
}

fn answer_head(p: &CapacityPlan) -> Vec<String> {
    let mut head: Vec<String> = [
        "configuration",
        "$/h",
        "sustained",
        "bracket",
        "good [95% CI]",
        "req/s",
        "in tok/s",
        "out tok/s",
        "input share",
        "$/1M in",
        "$/1M out",
    ]
    .map(String::from)
    .to_vec();
    if p.spec.demand.is_some() {
        head.extend(["replicas", "$/h (replicas)", ""].map(String::from));
    }
    head
}

fn step_head() -> Vec<String> {
    [
        "configuration",
        "load",
        "good",
        "within SLOs",
        "req/s",
        "$/1M in",
        "$/1M out",
    ]
    .map(String::from)
    .to_vec()
}

fn step_row(c: &Configuration, s: &CapacityStep) -> Vec<String> {
    vec![
        c.name.clone(),
        fmt_load(s.load),
        format!("{}/{} ({:.1}%)", s.good, s.total, s.good_fraction * 100.0),
        if s.passed { "yes" } else { "no" }.into(),
        rate(s.request_throughput),
        money(s.usd_per_1m_input),
        money(s.usd_per_1m_output),
    ]
}

/// Columns padded to their widest cell (counted in characters).
fn aligned(head: &[String], rows: &[Vec<String>]) -> String {
    let mut width = vec![0usize; head.len()];
    for r in std::iter::once(head).chain(rows.iter().map(Vec::as_slice)) {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(head).chain(rows.iter().map(Vec::as_slice)) {
        let cells: Vec<String> = (r.iter().zip(&width))
            .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

/// The cheapest configuration's line, or why there is none.
fn verdict(p: &CapacityPlan) -> Option<String> {
    let d = p.spec.demand?;
    Some(match p.cheapest {
        Some(i) => {
            let c = &p.configurations[i];
            let r = c.replicas?;
            format!(
                "Cheapest for {}: {} × {} replica{} = ${:.2}/h",
                demand_text(d),
                c.name,
                r.count,
                if r.count == 1 { "" } else { "s" },
                r.usd_per_hour
            )
        }
        None => format!(
            "No configuration carries {}: none sustains a load within the SLOs",
            demand_text(d)
        ),
    })
}

/// The text report.
pub fn text(p: &CapacityPlan) -> String {
    let mut out = format!("{}\n\n", heading(p));
    let rows: Vec<Vec<String>> = (p.configurations.iter().enumerate())
        .map(|(i, c)| answer_row(p, i, c))
        .collect();
    out.push_str(&aligned(&answer_head(p), &rows));
    // Steps measured under other SLOs, judged here from their records: said so.
    for c in p.configurations.iter().filter(|c| c.rejudged > 0) {
        let _ = writeln!(
            out,
            "{}: goodput re-judged from the records of {} of {} steps (measured under other SLOs)",
            c.name,
            c.rejudged,
            c.steps.len()
        );
    }
    if let Some(v) = verdict(p) {
        let _ = writeln!(out, "\n{v}");
    }
    let steps: Vec<Vec<String>> = (p.configurations.iter())
        .flat_map(|c| c.steps.iter().map(move |s| step_row(c, s)))
        .collect();
    let _ = writeln!(out, "\nSteps ({}):", p.parameter.as_str());
    out.push_str(&aligned(&step_head(), &steps));
    for line in front_lines(p) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The Pareto front's lines: a title naming the axes, then each step on it (its
/// configuration, load, both figures and whether it is within the SLOs), by descending
/// throughput; nothing when no step can be placed.
fn front_lines(p: &CapacityPlan) -> Vec<String> {
    let axis = p.front.basis.axis();
    let mut on: Vec<(&Configuration, &CapacityStep, f64, f64)> = Vec::new();
    let mut placed = 0;
    for (c, front) in p.configurations.iter().zip(&p.front.steps) {
        for (s, f) in c.steps.iter().zip(front) {
            if let (Some(u), Some(g)) = (f.per_user, f.per_gpu) {
                placed += 1;
                if f.on_front {
                    on.push((c, s, u, g));
                }
            }
        }
    }
    if placed == 0 {
        return Vec::new();
    }
    on.sort_by(|a, b| b.3.total_cmp(&a.3));
    let mut out = vec![format!(
        "\nPareto front of output tokens/s per user vs {axis} ({} of {placed} steps on it):",
        on.len()
    )];
    for (c, s, u, g) in on {
        let slos = if s.passed { "within" } else { "beyond" };
        out.push(format!(
            "  {}, {}={}: {u:.1} tokens/s per user, {g:.1} {axis}; {slos} the SLOs",
            crate::render::escape::terminal_line(&c.name),
            p.parameter.as_str(),
            fmt_load(s.load)
        ));
    }
    out
}

/// The CSV: a row per step, with its configuration's answer on each row.
pub fn csv(p: &CapacityPlan) -> String {
    let head = [
        "configuration",
        "source",
        "usd_per_hour",
        "load_parameter",
        "load",
        "good",
        "total",
        "good_fraction",
        "within_slos",
        "request_throughput",
        "input_throughput",
        "output_throughput",
        "input_share",
        "usd_per_1m_input_tokens",
        "usd_per_1m_output_tokens",
        "sustained",
        "sustained_load",
        "first_failing_load",
        "good_fraction_ci95_low",
        "good_fraction_ci95_high",
        "replicas",
        "replicas_usd_per_hour",
        "cheapest",
        "output_tokens_per_s_per_user",
        "output_tokens_per_s_per_gpu",
        "pareto_basis",
        "on_pareto_front",
        "rejudged_steps",
    ];
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(head);
    let basis = match p.front.basis {
        Basis::PerGpu => "per_gpu",
        Basis::PerServer => "per_server",
    };
    for (i, c) in p.configurations.iter().enumerate() {
        for (k, s) in c.steps.iter().enumerate() {
            let sus = c.sustained.as_ref();
            let front = p.front.steps.get(i).and_then(|f| f.get(k));
            let row = [
                c.name.clone(),
                c.source.display().to_string(),
                c.usd_per_hour.to_string(),
                p.parameter.as_str().to_string(),
                fmt_load(s.load),
                s.good.to_string(),
                s.total.to_string(),
                s.good_fraction.to_string(),
                s.passed.to_string(),
                s.request_throughput.to_string(),
                s.input_throughput.to_string(),
                s.output_throughput.to_string(),
                opt(s.input_share),
                opt(s.usd_per_1m_input),
                opt(s.usd_per_1m_output),
                sus.is_some_and(|x| x.step == k).to_string(),
                opt(sus.map(|x| x.load)),
                opt(sus.and_then(|x| x.first_failing)),
                opt(sus.and_then(|x| x.good_fraction_ci95).map(|x| x.0)),
                opt(sus.and_then(|x| x.good_fraction_ci95).map(|x| x.1)),
                c.replicas.map_or(String::new(), |r| r.count.to_string()),
                opt(c.replicas.map(|r| r.usd_per_hour)),
                (p.cheapest == Some(i)).to_string(),
                opt(front.and_then(|f| f.per_user)),
                opt(front.and_then(|f| f.per_gpu)),
                basis.to_string(),
                front.is_some_and(|f| f.on_front).to_string(),
                c.rejudged.to_string(),
            ];
            // Writing to memory cannot fail.
            let _ = w.write_record(row.iter().map(|c| csv_cell(c).into_owned()));
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The frontier's palette index: grey.
const FRONTIER: usize = 7;

/// The chart: $ per 1M output tokens against load, a line per configuration (its steps within
/// the SLOs solid, beyond them dotted), and the SLO frontier (dashed, grey) through each
/// configuration's sustained load.
pub fn chart(p: &CapacityPlan) -> Chart {
    let mut lines = Vec::new();
    let mut legend = Vec::new();
    let mut frontier = Vec::new();
    for (i, c) in p.configurations.iter().enumerate() {
        let point = |s: &CapacityStep| {
            (s.usd_per_1m_output)
                .filter(|v| v.is_finite() && s.load.is_finite())
                .map(|v| (s.load, v))
        };
        let limit = c.sustained.as_ref().map(|s| s.step);
        let within: Vec<_> = (c.steps.iter().enumerate())
            .filter(|(k, _)| limit.is_some_and(|l| *k <= l))
            .filter_map(|(_, s)| point(s))
            .collect();
        let beyond: Vec<_> = (c.steps.iter().enumerate())
            .filter(|(k, _)| limit.is_none_or(|l| *k >= l))
            .filter_map(|(_, s)| point(s))
            .collect();
        if let Some(s) = &c.sustained {
            frontier.extend(point(&c.steps[s.step]));
        }
        for (points, dash) in [(within, Dash::Solid), (beyond, Dash::Dotted)] {
            if !points.is_empty() {
                lines.push(Line {
                    name: c.name.clone(),
                    color: i,
                    dash,
                    points,
                    markers: true,
                });
            }
        }
        legend.push(LegendEntry {
            name: format!("{} (${:.2}/h)", c.name, c.usd_per_hour),
            color: Some(i),
            dash: Dash::Solid,
        });
    }
    frontier.sort_by(|a, b| a.0.total_cmp(&b.0));
    if !frontier.is_empty() {
        lines.push(Line {
            name: "SLO frontier".into(),
            color: FRONTIER,
            dash: Dash::Dashed,
            points: frontier,
            markers: true,
        });
    }
    legend.push(LegendEntry {
        name: "dotted: beyond the SLOs".into(),
        color: None,
        dash: Dash::Dotted,
    });
    legend.push(LegendEntry {
        name: "SLO frontier: each configuration's sustained load".into(),
        color: Some(FRONTIER),
        dash: Dash::Dashed,
    });
    Chart {
        name: "plan-cost".into(),
        title: format!("$ per 1M output tokens vs {}", p.parameter.as_str()),
        x_label: p.parameter.as_str().into(),
        y_label: "$ per 1M output tokens".into(),
        x_log: false,
        y_log: false,
        lines,
        legend,
    }
}

/// The chart as SVG.
pub fn chart_svg(p: &CapacityPlan) -> Result<String, RenderError> {
    crate::render::plot::draw::chart_svg(&chart(p)).map_err(|source: DrawError| RenderError::Draw {
        what: "the plan's chart".into(),
        source,
    })
}

/// One self-contained HTML page: the heading, the tables and the chart.
pub fn html(p: &CapacityPlan) -> Result<String, RenderError> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>servebench plan: {}</title><style>body{{font-family:sans-serif;margin:24px auto;max-width:1100px}}\
         table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ddd;padding:3px 7px;text-align:right}}\
         td:first-child,th:first-child{{text-align:left}}svg{{max-width:100%;height:auto}}</style></head><body>\n",
        esc(&p.model)
    );
    let _ = writeln!(h, "<h1>servebench plan</h1>\n<p>{}</p>", esc(&heading(p)));
    let table = |h: &mut String, head: &[String], rows: &[Vec<String>]| {
        h.push_str("<table><tr>");
        for c in head {
            let _ = write!(h, "<th>{}</th>", esc(c));
        }
        h.push_str("</tr>\n");
        for r in rows {
            h.push_str("<tr>");
            for c in r {
                let _ = write!(h, "<td>{}</td>", esc(c));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    };
    let rows: Vec<Vec<String>> = (p.configurations.iter().enumerate())
        .map(|(i, c)| answer_row(p, i, c))
        .collect();
    // The answer first: the cheapest configuration for the demand, then every configuration.
    match verdict(p) {
        Some(v) => {
            let _ = writeln!(h, "<p class=\"cheapest\"><strong>{}</strong></p>", esc(&v));
        }
        None => h.push_str(
            "<p class=\"cheapest\">No demand given: <code>--demand-request-rate</code> or \
             <code>--demand-output-throughput</code> names the cheapest configuration for it.</p>\n",
        ),
    }
    table(&mut h, &answer_head(p), &rows);
    let _ = writeln!(h, "<h2>Steps ({})</h2>", esc(p.parameter.as_str()));
    let steps: Vec<Vec<String>> = (p.configurations.iter())
        .flat_map(|c| c.steps.iter().map(move |s| step_row(c, s)))
        .collect();
    table(&mut h, &step_head(), &steps);
    let front = front_lines(p);
    if let Some((title, steps)) = front.split_first() {
        let _ = writeln!(
            h,
            "<h2>Pareto front</h2>\n<p>{}</p>\n<ul>",
            esc(title.trim())
        );
        for s in steps {
            let _ = writeln!(h, "<li>{}</li>", esc(s.trim()));
        }
        h.push_str("</ul>\n");
    }
    let _ = writeln!(
        h,
        "<h2>Cost against load</h2>\n<figure class=\"chart\" id=\"plan-cost\">{}</figure>",
        chart_svg(p)?
    );
    h.push_str("</body></html>\n");
    Ok(h)
}
