//! A comparison of several documents (`views::compare::Comparison`) written as aligned text
//! (the better value marked `*`), Markdown (the better value in bold) or JSON: every figure at
//! every load step, the value of each input, B/A with its 95% interval and verdict where
//! there is one.
//!
//! A multi-LoRA step's adapters follow its table, each under its own line and in the table's
//! columns ([`adapter_title`]); a value where an input's step has no such adapter reads
//! `absent`.
//!
//! Formatting only: the pairing of series, B/A, its interval, the verdict and the better
//! value come computed in the `Comparison` (`views::compare`, `results::compare`). Every
//! string from a document (an adapter's name too) goes through `escape` for its output. To
//! show one more thing per row, add it to `views::compare::Row` and write it in [`cells`] and
//! [`json`].

use std::fmt::Write as _;

use serde::Serialize;

use crate::config::figure::{Better, FigureKey, Unit};
use crate::render::escape::{self, terminal_line};
use crate::render::format::fmt_value;
use crate::results::compare::{Judged, Verdict};
use crate::views::compare::{letter, AdapterRows, Comparison, Row};
use crate::views::pareto::{Basis, Summary};

/// B/A, with its interval and verdict where there is one.
fn ratio(ratio: Option<f64>, judged: Option<Judged>) -> String {
    match (ratio, judged) {
        (
            _,
            Some(Judged {
                ratio,
                ci95: Some([lo, hi]),
                verdict,
            }),
        ) => {
            format!("{ratio:.3} [{lo:.3}, {hi:.3}] {}", verdict.as_str())
        }
        (Some(r), _) => format!("{r:.2}"),
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

/// The line above an adapter's rows, its name as the document has it (escape it for the
/// output): `LoRA adapter NAME`, then the inputs that lack it.
fn adapter_title(a: &AdapterRows) -> String {
    let absent: Vec<String> = (a.present.iter().enumerate())
        .filter(|(_, p)| !**p)
        .map(|(i, _)| letter(i))
        .collect();
    match absent.is_empty() {
        true => format!("LoRA adapter {}", a.name),
        false => format!("LoRA adapter {} (absent in {})", a.name, absent.join(", ")),
    }
}

/// The cells of a row; `mark` decorates each value: `(text, is_best)`. `present`: for an
/// adapter's row, whether each input has the adapter (`absent` where not).
fn cells(r: &Row, present: &[bool], mark: &dyn Fn(String, bool) -> String) -> Vec<String> {
    let value = |i: usize| {
        let s = match (r.values[i], present.get(i)) {
            (_, Some(false)) => "absent".to_string(),
            (None, _) => "—".to_string(),
            (Some(v), _) => fmt_value(&r.metric, v),
        };
        mark(s, r.best == Some(i))
    };
    let mut c = vec![r.metric.name(), value(0)];
    for i in 1..r.values.len() {
        c.push(value(i));
        c.push(ratio(
            r.ratios.get(i).copied().flatten(),
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
        let mark = |v: String, best: bool| format!("{v} {}", if best { '*' } else { ' ' });
        let table_of = |rows: &[Row], present: &[bool]| -> Vec<Vec<String>> {
            rows.iter().map(|r| cells(r, present, &mark)).collect()
        };
        // Per step: its rows, then each adapter's title and rows.
        let table: Vec<_> = g
            .steps
            .iter()
            .map(|s| {
                let adapters: Vec<(String, Vec<Vec<String>>)> = (s.adapters.iter())
                    .map(|a| (adapter_title(a), table_of(&a.rows, &a.present)))
                    .collect();
                (table_of(&s.rows, &[]), adapters)
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
        let all_rows = table.iter().flat_map(|(rows, adapters)| {
            rows.iter()
                .chain(adapters.iter().flat_map(|(_, rows)| rows.iter()))
        });
        for row in all_rows {
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
        for (s, (rows, adapters)) in g.steps.iter().zip(&table) {
            let _ = writeln!(out, "\n{}", terminal_line(&s.title));
            let _ = writeln!(out, "{}", line(&head));
            for r in rows {
                let _ = writeln!(out, "{}", line(r));
            }
            for (title, rows) in adapters {
                let _ = writeln!(out, "  {}", terminal_line(title));
                for r in rows {
                    let _ = writeln!(out, "{}", line(r));
                }
            }
        }
        out.push('\n');
    }
    for u in &c.unpaired {
        let _ = writeln!(out, "note: {}", terminal_line(u));
    }
    for line in pareto_lines(&c.pareto) {
        let _ = writeln!(out, "{}", terminal_line(&line));
    }
    out
}

/// The Pareto front's lines: a title, then each step on it (its input's letter, its
/// configuration, its load and both figures); nothing when no step has both figures.
fn pareto_lines(p: &Summary) -> Vec<String> {
    if p.points == 0 {
        return Vec::new();
    }
    let mut out = vec![format!(
        "Pareto front of output tokens/s per user vs {} ({} of {} steps on it):",
        p.basis.axis(),
        p.front.len(),
        p.points
    )];
    for n in &p.front {
        out.push(format!(
            "  {} = {}, {}: {:.1} tokens/s per user, {:.1} {}",
            letter(n.view),
            n.configuration,
            n.step,
            n.per_user,
            n.per_gpu,
            p.basis.axis()
        ));
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
            let bold = |v: String, best: bool| if best { format!("**{v}**") } else { v };
            for r in &s.rows {
                let c = cells(r, &[], &bold);
                let c: Vec<String> = c.iter().map(|c| escape::markdown(c)).collect();
                let _ = writeln!(out, "| {} |", c.join(" | "));
            }
            for a in &s.adapters {
                let _ = writeln!(out, "\n##### {}\n", escape::markdown(&adapter_title(a)));
                let _ = writeln!(out, "| {} |", head.join(" | "));
                let _ = writeln!(out, "| {} |", aligns.join(" | "));
                for r in &a.rows {
                    let c = cells(r, &a.present, &bold);
                    let c: Vec<String> = c.iter().map(|c| escape::markdown(c)).collect();
                    let _ = writeln!(out, "| {} |", c.join(" | "));
                }
            }
        }
        out.push('\n');
    }
    for u in &c.unpaired {
        let _ = writeln!(out, "Note: {}\n", escape::markdown(u));
    }
    for (i, line) in pareto_lines(&c.pareto).iter().enumerate() {
        let (item, end) = if i == 0 { ("", "\n") } else { ("- ", "") };
        let _ = writeln!(out, "{item}{}{end}", escape::markdown(line.trim_start()));
    }
    out
}

/// JSON for programs: the groups (their inputs and warnings), each step's rows (the figure,
/// its unit and better direction, each input's value, the better input, and each input's
/// B/A with its 95% interval and verdict; a multi-LoRA step's `adapters`, each its name,
/// which inputs have it and its rows), the series left unpaired, and the steps on the Pareto
/// front (`pareto_front`).
pub fn json(c: &Comparison) -> String {
    let doc = JsonComparison {
        groups: (c.groups.iter())
            .map(|g| JsonGroup {
                inputs: &g.members,
                warnings: &g.warnings,
                steps: (g.steps.iter())
                    .map(|s| JsonStep {
                        step: &s.title,
                        rows: s.rows.iter().map(json_row).collect(),
                        adapters: (s.adapters.iter())
                            .map(|a| JsonAdapter {
                                adapter: &a.name,
                                present: &a.present,
                                rows: a.rows.iter().map(json_row).collect(),
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
        unpaired: &c.unpaired,
        pareto_front: (c.pareto.points > 0).then(|| JsonPareto {
            basis: match c.pareto.basis {
                Basis::PerGpu => "per_gpu",
                Basis::PerServer => "per_server",
            },
            points: c.pareto.points,
            left_out: c.pareto.left_out,
            front: (c.pareto.front.iter())
                .map(|n| JsonFrontStep {
                    input: letter(n.view),
                    configuration: &n.configuration,
                    step: &n.step,
                    output_tokens_per_s_per_user: n.per_user,
                    output_tokens_per_s_per_gpu: n.per_gpu,
                })
                .collect(),
        }),
    };
    // Strings, finite numbers and lists of them always serialize.
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

fn json_row(r: &Row) -> JsonRow<'_> {
    let vs_a = (0..r.values.len())
        .map(|i| {
            let ratio = r.ratios.get(i).copied().flatten();
            let judged = r.judged.get(i).copied().flatten();
            match (i, ratio, judged) {
                (0, ..) | (_, None, None) => None,
                _ => Some(JsonVsA {
                    ratio: judged.map_or(ratio, |j| Some(j.ratio)),
                    ci95: judged.and_then(|j| j.ci95),
                    verdict: judged.map(|j| j.verdict),
                }),
            }
        })
        .collect();
    JsonRow {
        metric: &r.metric,
        unit: r.metric.unit().map(Unit::as_str),
        better: r.metric.better(),
        values: &r.values,
        best: r.best.map(letter),
        vs_a,
    }
}

#[derive(Serialize)]
struct JsonComparison<'a> {
    groups: Vec<JsonGroup<'a>>,
    unpaired: &'a [String],
    /// The steps on the Pareto front of all the inputs (absent when no step has both figures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pareto_front: Option<JsonPareto<'a>>,
}

/// The Pareto front: `basis` says whether the throughput is per GPU or per server (a GPU
/// count unknown); `output_tokens_per_s_per_gpu` is per server then.
#[derive(Serialize)]
struct JsonPareto<'a> {
    basis: &'static str,
    points: usize,
    left_out: usize,
    front: Vec<JsonFrontStep<'a>>,
}

#[derive(Serialize)]
struct JsonFrontStep<'a> {
    input: String,
    configuration: &'a str,
    step: &'a str,
    output_tokens_per_s_per_user: f64,
    output_tokens_per_s_per_gpu: f64,
}

#[derive(Serialize)]
struct JsonGroup<'a> {
    inputs: &'a [String],
    warnings: &'a [String],
    steps: Vec<JsonStep<'a>>,
}

#[derive(Serialize)]
struct JsonStep<'a> {
    step: &'a str,
    rows: Vec<JsonRow<'a>>,
    /// A multi-LoRA step's adapters (absent otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    adapters: Vec<JsonAdapter<'a>>,
}

/// One adapter's rows; `present`: whether each input's step has it (its values `null` where
/// not).
#[derive(Serialize)]
struct JsonAdapter<'a> {
    adapter: &'a str,
    present: &'a [bool],
    rows: Vec<JsonRow<'a>>,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    metric: &'a FigureKey,
    unit: Option<&'static str>,
    better: Option<Better>,
    values: &'a [Option<f64>],
    /// The better input's letter.
    best: Option<String>,
    /// Each input against A (`null` for A, and where there is no ratio).
    vs_a: Vec<Option<JsonVsA>>,
}

#[derive(Serialize)]
struct JsonVsA {
    ratio: Option<f64>,
    ci95: Option<[f64; 2]>,
    verdict: Option<Verdict>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::figure::RunFigure;
    use crate::views::compare::{Group, StepRows};
    use crate::views::pareto::Named;
    use serde_json::{json, Value};

    fn comparison() -> Comparison {
        let rows = vec![
            Row {
                metric: RunFigure::OutputThroughput.into(),
                values: vec![Some(10.0), Some(5.0)],
                best: Some(0),
                ratios: vec![None, Some(0.5)],
                judged: vec![None, None],
            },
            Row {
                metric: FigureKey::named("mean_ttft_ms"),
                values: vec![Some(100.0), Some(150.0)],
                best: Some(0),
                ratios: vec![None, Some(1.5)],
                judged: vec![
                    None,
                    Some(Judged {
                        ratio: 1.5,
                        ci95: Some([1.4, 1.6]),
                        verdict: Verdict::Worse,
                    }),
                ],
            },
        ];
        Comparison {
            groups: vec![Group {
                members: vec!["A = a [s]".into(), "B = b [s]".into()],
                warnings: vec![],
                steps: vec![StepRows {
                    title: "num_prompts = 1".into(),
                    rows,
                    adapters: vec![],
                }],
            }],
            unpaired: vec![],
            pareto: Summary {
                basis: Basis::PerGpu,
                points: 2,
                left_out: 0,
                front: vec![Named {
                    view: 1,
                    configuration: "b <x>".into(),
                    step: "num_prompts=1".into(),
                    per_user: 40.0,
                    per_gpu: 150.0,
                }],
            },
        }
    }

    #[test]
    fn every_format_names_the_steps_on_the_pareto_front() {
        let t = text(&comparison());
        assert!(
            t.contains("Pareto front of output tokens/s per user vs output tokens/s per GPU (1 of 2 steps on it):"),
            "{t}"
        );
        assert!(
            t.contains(
                "  B = b <x>, num_prompts=1: 40.0 tokens/s per user, 150.0 output tokens/s per GPU"
            ),
            "{t}"
        );
        let m = markdown(&comparison());
        assert!(m.contains("- B = b &lt;x&gt;, num_prompts=1"), "{m}");
        let v: Value = serde_json::from_str(&json(&comparison())).unwrap();
        let f = &v["pareto_front"];
        assert_eq!(f["basis"], "per_gpu");
        assert_eq!(f["front"][0]["input"], "B");
        assert_eq!(f["front"][0]["output_tokens_per_s_per_gpu"], 150.0);
        let mut none = comparison();
        none.pareto.points = 0;
        assert!(!text(&none).contains("Pareto"));
    }

    #[test]
    fn text_marks_the_better_value_and_writes_the_ratio() {
        let t = text(&comparison());
        assert!(t.contains("10.00 *"), "{t}");
        assert!(t.contains("0.50"), "{t}");
        assert!(t.contains("1.500 [1.400, 1.600] worse"), "{t}");
        let m = markdown(&comparison());
        assert!(
            m.contains("| output_throughput | **10.00** | 5.00 | 0.50 |"),
            "{m}"
        );
    }

    #[test]
    fn json_carries_units_directions_and_verdicts() {
        let v: Value = serde_json::from_str(&json(&comparison())).unwrap();
        let rows = &v["groups"][0]["steps"][0]["rows"];
        assert_eq!(rows[0]["metric"], "output_throughput");
        assert_eq!(rows[0]["unit"], "tokens/s");
        assert_eq!(rows[0]["better"], "higher");
        assert_eq!(rows[0]["best"], "A");
        assert_eq!(rows[0]["vs_a"][0], Value::Null);
        assert_eq!(rows[0]["vs_a"][1]["ratio"], 0.5);
        assert_eq!(rows[0]["vs_a"][1]["verdict"], Value::Null);
        assert_eq!(rows[1]["vs_a"][1]["verdict"], "worse");
        assert_eq!(rows[1]["vs_a"][1]["ci95"], json!([1.4, 1.6]));
        assert_eq!(v["groups"][0]["inputs"][1], "B = b [s]");
    }
}
