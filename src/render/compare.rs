//! Side-by-side comparison of saved results, sweeps and imports: every metric at every load
//! step, the value of each input, the ratio to the first (B/A), and the better one marked
//! (lower is better for latencies, higher for throughputs; token totals are not judged).
//!
//! Inputs are [`View`]s. The first input is the baseline. Each of its series is paired with the
//! most comparable series of every other input (same workload first, then most shared load
//! values); steps are matched by load value. Two single-step inputs are compared directly,
//! whatever their load. Workload differences (model, dataset, input or output length) do not
//! stop a comparison: the table is still shown, under a warning line.
//!
//! Where both inputs carry 95% intervals (servebench results do, for means, medians and
//! percentiles), B/A gets its own interval and a verdict: better, worse, or no significant
//! difference ([`judge`]); `servebench compare --fail-if-worse` gates on it. It renders aligned
//! text or Markdown.

use std::fmt::Write as _;

use crate::render::escape::{self, terminal_line};
use crate::render::format::{fmt_load, fmt_value};
use crate::results::stats::ci::Z95;
use crate::views::keys::{higher_is_better, ordered_keys};
use crate::views::model::{Series, Step, View};

/// One metric at one load step, across the inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub metric: String,
    pub values: Vec<Option<f64>>,
    /// Index of the better value, when the metric has a direction and there is no tie.
    pub best: Option<usize>,
    /// For each input after the first: how it compares with the first (`None` for the first,
    /// and where either value is missing or not positive).
    pub judged: Vec<Option<Judged>>,
}

/// One input against the baseline on one metric: B/A, its 95% interval, and the verdict.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judged {
    pub ratio: f64,
    pub ci95: Option<[f64; 2]>,
    pub verdict: Verdict,
}

/// What B/A's interval says (docs/metrics.md, "Comparing two runs").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Better,
    Worse,
    /// The interval reaches within [`MIN_EFFECT`] of equality.
    NoSignificantDifference,
    /// An input has no interval for this metric (an import without per-request samples, or
    /// too few samples for a percentile's interval).
    NoInterval,
    /// The metric has no better direction (token totals).
    NotJudged,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::NoInterval => "no interval",
            Verdict::NotJudged => "",
        }
    }
}

/// The smallest difference called significant: 1%. Each run's interval covers only its own
/// requests' spread, not what changes from one run to the next (the machine, the network, the
/// server's state), which is about this size on a quiet machine; `--repeat` measures it.
pub const MIN_EFFECT: f64 = 0.01;

/// B against A on `key` (values `a`, `b`; intervals `ia`, `ib`). Each interval is read as a
/// normal interval on the log scale, and the two runs as independent: the ratio's interval is
/// B/A · exp(±1.96 · √(σ²_A + σ²_B)), with σ = (ln high − ln low) / (2 · 1.96).
pub fn judge(
    key: &str,
    a: f64,
    b: f64,
    ia: Option<[f64; 2]>,
    ib: Option<[f64; 2]>,
) -> Option<Judged> {
    if !(a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite()) {
        return None;
    }
    let ratio = b / a;
    let sigma = |ci: Option<[f64; 2]>| {
        let [lo, hi] = ci?;
        (lo > 0.0 && hi >= lo).then(|| (hi.ln() - lo.ln()) / (2.0 * Z95))
    };
    let ci95 = sigma(ia).zip(sigma(ib)).map(|(sa, sb)| {
        let half = Z95 * (sa * sa + sb * sb).sqrt();
        [ratio * (-half).exp(), ratio * half.exp()]
    });
    let verdict = match (higher_is_better(key), ci95) {
        (None, _) => Verdict::NotJudged,
        (_, None) => Verdict::NoInterval,
        (Some(higher), Some([lo, hi])) => {
            if lo > 1.0 + MIN_EFFECT {
                if higher {
                    Verdict::Better
                } else {
                    Verdict::Worse
                }
            } else if hi < 1.0 - MIN_EFFECT {
                if higher {
                    Verdict::Worse
                } else {
                    Verdict::Better
                }
            } else {
                Verdict::NoSignificantDifference
            }
        }
    };
    Some(Judged {
        ratio,
        ci95,
        verdict,
    })
}

/// One load step of a group.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRows {
    /// "num_prompts = 512".
    pub title: String,
    pub rows: Vec<Row>,
}

/// A baseline series and its counterparts in the other inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// "A = ... [series]" for each input.
    pub members: Vec<String>,
    pub warnings: Vec<String>,
    pub steps: Vec<StepRows>,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub groups: Vec<Group>,
    /// Series of other inputs that no baseline series was paired with.
    pub unpaired: Vec<String>,
}

/// The name of input `i` in the tables: A, B, C, ...
pub fn letter(i: usize) -> String {
    let c = (b'A' + (i % 26) as u8) as char;
    if i < 26 {
        c.to_string()
    } else {
        format!("{c}{}", i / 26)
    }
}

/// How well `b` matches `a`: comparable workload first, then shared load values.
fn score(a: &Series, b: &Series) -> (bool, usize) {
    let comparable =
        a.workload().differences(&b.workload()).is_empty() && a.parameter == b.parameter;
    let shared = a
        .steps
        .iter()
        .filter_map(|s| s.load_value(a.parameter))
        .filter(|v| b.step_at(*v).is_some())
        .count();
    (comparable, shared)
}

/// Compares `views` (the first is the baseline). `metrics` limits the rows to those keys.
pub fn compare(views: &[View], metrics: Option<&[String]>) -> Comparison {
    let mut groups = Vec::new();
    let mut used: Vec<Vec<bool>> = views.iter().map(|v| vec![false; v.series.len()]).collect();
    let Some(base) = views.first() else {
        return Comparison {
            groups,
            unpaired: Vec::new(),
        };
    };
    for a in &base.series {
        let mut members = vec![format!("A = {} [{}]", base.label, a.name)];
        let mut paired: Vec<Option<&Series>> = vec![Some(a)];
        let mut warnings = Vec::new();
        for (xi, x) in views.iter().enumerate().skip(1) {
            // Only a series varying the same parameter can be matched step by step.
            let best = x
                .series
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    s.parameter == a.parameter || (a.steps.len() == 1 && s.steps.len() == 1)
                })
                .max_by_key(|(i, s)| (score(a, s), std::cmp::Reverse(*i)));
            match best {
                Some((si, s)) => {
                    used[xi][si] = true;
                    members.push(format!("{} = {} [{}]", letter(xi), x.label, s.name));
                    let diffs = a.workload().differences(&s.workload());
                    if !diffs.is_empty() {
                        warnings.push(format!(
                            "warning: A and {} are not comparable: different workload ({})",
                            letter(xi),
                            diffs.join("; ")
                        ));
                    }
                    paired.push(Some(s));
                }
                None => {
                    members.push(format!(
                        "{} = {} [no series varying {}]",
                        letter(xi),
                        x.label,
                        a.parameter.as_str()
                    ));
                    paired.push(None);
                }
            }
        }
        let steps = if paired.iter().flatten().all(|s| s.steps.len() == 1) {
            single_steps(a, &paired, metrics, &mut warnings)
        } else {
            matched_steps(a, &paired, metrics)
        };
        groups.push(Group {
            members,
            warnings,
            steps,
        });
    }
    let mut unpaired = Vec::new();
    for (xi, x) in views.iter().enumerate().skip(1) {
        for (si, s) in x.series.iter().enumerate() {
            if !used[xi][si] {
                unpaired.push(format!(
                    "{} [{}] has no counterpart in A and is not compared",
                    x.label, s.name
                ));
            }
        }
    }
    Comparison { groups, unpaired }
}

fn single_steps(
    a: &Series,
    paired: &[Option<&Series>],
    metrics: Option<&[String]>,
    warnings: &mut Vec<String>,
) -> Vec<StepRows> {
    let steps: Vec<Option<&Step>> = paired
        .iter()
        .map(|s| s.and_then(|s| s.steps.first()))
        .collect();
    let loads: Vec<String> = steps
        .iter()
        .map(|s| {
            s.and_then(|s| s.load_value(a.parameter))
                .map_or("?".into(), fmt_load)
        })
        .collect();
    let mut distinct = loads.clone();
    distinct.dedup();
    let title = if distinct.len() == 1 {
        format!("{} = {}", a.parameter.as_str(), loads[0])
    } else {
        warnings.push(format!(
            "warning: different load: {} = {}",
            a.parameter.as_str(),
            loads.join(" vs ")
        ));
        format!("{} = {}", a.parameter.as_str(), loads.join(" vs "))
    };
    vec![StepRows {
        title,
        rows: rows(&steps, metrics),
    }]
}

fn matched_steps(
    a: &Series,
    paired: &[Option<&Series>],
    metrics: Option<&[String]>,
) -> Vec<StepRows> {
    let mut values: Vec<f64> = paired
        .iter()
        .flatten()
        .flat_map(|s| s.steps.iter().filter_map(|st| st.load_value(a.parameter)))
        .collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    values
        .into_iter()
        .map(|v| {
            let steps: Vec<Option<&Step>> = paired
                .iter()
                .map(|s| s.and_then(|s| s.step_at(v)))
                .collect();
            StepRows {
                title: format!("{} = {}", a.parameter.as_str(), fmt_load(v)),
                rows: rows(&steps, metrics),
            }
        })
        .collect()
}

fn rows(steps: &[Option<&Step>], metrics: Option<&[String]>) -> Vec<Row> {
    let keys = match metrics {
        Some(m) => m.to_vec(),
        None => ordered_keys(steps.iter().flatten().flat_map(|s| s.metrics.keys())),
    };
    keys.into_iter()
        .map(|k| {
            let values: Vec<Option<f64>> =
                steps.iter().map(|s| s.and_then(|s| s.metric(&k))).collect();
            let interval = |s: &Option<&Step>| s.and_then(|s| s.intervals.get(&k).copied());
            let judged = (0..values.len())
                .map(|i| match (i, values[0], values[i]) {
                    (1.., Some(a), Some(b)) => {
                        judge(&k, a, b, interval(&steps[0]), interval(&steps[i]))
                    }
                    _ => None,
                })
                .collect();
            let best = best_of(&k, &values);
            Row {
                metric: k,
                values,
                best,
                judged,
            }
        })
        .filter(|r| r.values.iter().any(Option::is_some))
        .collect()
}

fn best_of(key: &str, values: &[Option<f64>]) -> Option<usize> {
    let higher = higher_is_better(key)?;
    let present: Vec<(usize, f64)> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i, v)))
        .collect();
    if present.len() < 2 {
        return None;
    }
    let pick = present.iter().copied().reduce(|a, b| {
        let b_better = if higher { b.1 > a.1 } else { b.1 < a.1 };
        if b_better {
            b
        } else {
            a
        }
    })?;
    let ties = present.iter().filter(|(_, v)| *v == pick.1).count();
    (ties == 1).then_some(pick.0)
}

/// B/A, with its interval and verdict where there is one.
fn ratio(a: Option<f64>, b: Option<f64>, judged: Option<Judged>) -> String {
    match (a, b, judged) {
        (
            _,
            _,
            Some(Judged {
                ratio,
                ci95: Some([lo, hi]),
                verdict,
            }),
        ) => {
            format!("{ratio:.3} [{lo:.3}, {hi:.3}] {}", verdict.as_str())
        }
        (Some(a), Some(b), _) if a != 0.0 => format!("{:.2}", b / a),
        _ => "—".into(),
    }
}

/// The header cells of a table with `n` inputs: metric, A, B, B/A, C, C/A, ...
fn header(n: usize) -> Vec<String> {
    let mut h = vec!["metric".to_string(), "A".to_string()];
    for i in 1..n {
        h.push(letter(i));
        h.push(format!("{}/A", letter(i)));
    }
    h
}

/// The cells of a row; `mark` decorates each value: `(text, is_best)`.
fn cells(r: &Row, mark: &dyn Fn(String, bool) -> String) -> Vec<String> {
    let value = |i: usize| {
        let s = r.values[i].map_or("—".to_string(), |v| fmt_value(&r.metric, v));
        mark(s, r.best == Some(i))
    };
    let mut c = vec![r.metric.clone(), value(0)];
    for i in 1..r.values.len() {
        c.push(value(i));
        c.push(ratio(
            r.values[0],
            r.values[i],
            r.judged.get(i).copied().flatten(),
        ));
    }
    c
}

/// Aligned text for a terminal; the better value carries a `*`.
pub fn text(c: &Comparison) -> String {
    let mut out = String::new();
    for g in &c.groups {
        // Labels and notes from the documents each stay on their line.
        for m in &g.members {
            let _ = writeln!(out, "{}", terminal_line(m));
        }
        for w in &g.warnings {
            let _ = writeln!(out, "{}", terminal_line(w));
        }
        let n = g.members.len();
        let table: Vec<Vec<Vec<String>>> = g
            .steps
            .iter()
            .map(|s| {
                s.rows
                    .iter()
                    .map(|r| {
                        cells(r, &|v, best| {
                            format!("{v} {}", if best { '*' } else { ' ' })
                        })
                    })
                    .collect()
            })
            .collect();
        // Value columns end in a marker slot; their headers get one too, to stay aligned.
        let head: Vec<String> = header(n)
            .into_iter()
            .enumerate()
            .map(|(i, h)| {
                if i == 1 || (i >= 2 && i % 2 == 0) {
                    format!("{h}  ")
                } else {
                    h
                }
            })
            .collect();
        let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
        for row in table.iter().flatten() {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut l = String::new();
            for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                if i == 0 {
                    let _ = write!(l, "  {cell:<w$}");
                } else {
                    // Values right-aligned; the marker (or a space) follows each value.
                    let pad = w - cell.chars().count();
                    let _ = write!(l, "  {}{cell}", " ".repeat(pad));
                }
            }
            l.trim_end().to_string()
        };
        for (s, rows) in g.steps.iter().zip(&table) {
            let _ = writeln!(out, "\n{}", terminal_line(&s.title));
            let _ = writeln!(out, "{}", line(&head));
            for r in rows {
                let _ = writeln!(out, "{}", line(r));
            }
        }
        out.push('\n');
    }
    for u in &c.unpaired {
        let _ = writeln!(out, "note: {}", terminal_line(u));
    }
    out
}

/// Markdown: one table per load step; the better value in bold; every string through
/// `escape::markdown`.
pub fn markdown(c: &Comparison) -> String {
    let mut out = String::new();
    for g in &c.groups {
        for m in &g.members {
            let _ = writeln!(out, "- {}", escape::markdown(m));
        }
        for w in &g.warnings {
            let _ = writeln!(out, "\n> **{}**", escape::markdown(w));
        }
        let n = g.members.len();
        let head = header(n);
        for s in &g.steps {
            let _ = writeln!(out, "\n#### {}\n", escape::markdown(&s.title));
            let _ = writeln!(out, "| {} |", head.join(" | "));
            let aligns: Vec<&str> = (0..head.len())
                .map(|i| if i == 0 { "---" } else { "---:" })
                .collect();
            let _ = writeln!(out, "| {} |", aligns.join(" | "));
            for r in &s.rows {
                let c = cells(r, &|v, best| if best { format!("**{v}**") } else { v });
                let c: Vec<String> = c.iter().map(|c| escape::markdown(c)).collect();
                let _ = writeln!(out, "| {} |", c.join(" | "));
            }
        }
        out.push('\n');
    }
    for u in &c.unpaired {
        let _ = writeln!(out, "Note: {}\n", escape::markdown(u));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::sweep::LoadParameter;
    use crate::views::model::{Load, Origin, Workload};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn view(label: &str, model: &str, steps: &[(u64, f64, f64)]) -> View {
        View {
            label: label.into(),
            origin: Origin::Imported,
            format: "test".into(),
            path: PathBuf::from(label),
            series: vec![Series {
                name: "s".into(),
                parameter: LoadParameter::NumPrompts,
                steps: steps
                    .iter()
                    .map(|&(n, tput, ttft)| Step {
                        load: Load {
                            num_prompts: Some(n),
                            ..Load::default()
                        },
                        workload: Workload {
                            model: Some(model.into()),
                            ..Workload::default()
                        },
                        metrics: BTreeMap::from([
                            ("output_throughput".to_string(), tput),
                            ("mean_ttft_ms".to_string(), ttft),
                        ]),
                        ..Step::default()
                    })
                    .collect(),
            }],
            notes: vec![],
            llmperf_requests: vec![],
        }
    }

    #[test]
    fn marks_the_better_side_and_the_ratio() {
        let a = view("a", "m", &[(1, 10.0, 100.0), (2, 20.0, 150.0)]);
        let b = view("b", "m", &[(1, 5.0, 50.0), (2, 40.0, 150.0)]);
        let c = compare(&[a, b], None);
        assert!(c.groups[0].warnings.is_empty());
        let s1 = &c.groups[0].steps[0];
        assert_eq!(s1.title, "num_prompts = 1");
        assert_eq!(s1.rows[0].metric, "output_throughput");
        assert_eq!(s1.rows[0].best, Some(0)); // higher throughput
        assert_eq!(s1.rows[1].best, Some(1)); // lower TTFT
        assert_eq!(c.groups[0].steps[1].rows[1].best, None); // tie
        let t = text(&c);
        assert!(t.contains("10.00 *"), "{t}");
        assert!(t.contains("0.50"), "{t}");
    }

    #[test]
    fn different_models_warn_but_still_compare() {
        let a = view("a", "m1", &[(1, 10.0, 100.0)]);
        let b = view("b", "m2", &[(1, 5.0, 50.0)]);
        let c = compare(&[a, b], None);
        assert!(c.groups[0].warnings[0].contains("not comparable"));
        assert_eq!(c.groups[0].steps.len(), 1);
    }
}
