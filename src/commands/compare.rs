//! `servebench compare`: documents side by side, as aligned text or Markdown, with B/A's 95%
//! interval and verdict, or as CSV (a row per document and step), and the `--fail-if-worse`
//! gates.

use std::process::ExitCode;

use crate::cli::{CompareArgs, Gate, TableFormat};
use crate::render::compare::{self, Comparison, Verdict};
use crate::render::csv;
use crate::views::keys::higher_is_better;
use crate::views::open;

pub fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let views = args
        .files
        .iter()
        .map(|f| open::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let metrics = (!args.metrics.is_empty()).then_some(args.metrics.as_slice());
    let format = match (args.markdown, args.format) {
        (true, TableFormat::Csv) => {
            anyhow::bail!("--markdown asks for Markdown and --format for csv: give one of them")
        }
        (true, _) => TableFormat::Markdown,
        (false, format) => format,
    };
    let c = compare::compare(&views, metrics);
    super::out(&match format {
        TableFormat::Text => compare::text(&c),
        TableFormat::Markdown => compare::markdown(&c),
        TableFormat::Csv => csv::views(&views, metrics),
    })?;
    let failed = gates(&c, &args.fail_if_worse)?;
    for line in &failed {
        note!("servebench: {line}");
    }
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The gates that fail, one line each; an error when a gate cannot be judged (its metric is
/// not compared, or an input has no interval for it).
fn gates(c: &Comparison, gates: &[Gate]) -> anyhow::Result<Vec<String>> {
    let mut failed = Vec::new();
    for gate in gates {
        let higher = higher_is_better(&gate.metric).ok_or_else(|| {
            anyhow::anyhow!(
                "--fail-if-worse {}: this metric has no better direction",
                gate.metric
            )
        })?;
        let mut seen = false;
        for g in &c.groups {
            for step in &g.steps {
                for row in step.rows.iter().filter(|r| r.metric == gate.metric) {
                    for (i, judged) in row.judged.iter().enumerate().skip(1) {
                        let Some(j) = judged else { continue };
                        seen = true;
                        if j.verdict == Verdict::NoInterval {
                            anyhow::bail!(
                                "--fail-if-worse {}: {} or A has no 95% interval for it at {} (an import without per-request samples, or too few samples for that percentile), so it cannot be judged",
                                gate.metric,
                                compare::letter(i),
                                step.title
                            );
                        }
                        let worse_by = if higher { 1.0 - j.ratio } else { j.ratio - 1.0 };
                        if j.verdict == Verdict::Worse && worse_by * 100.0 > gate.percent {
                            failed.push(format!(
                                "{} is worse than A on {} at {}: {}/A {:.3} (95% interval {}), more than {}% worse",
                                compare::letter(i),
                                gate.metric,
                                step.title,
                                compare::letter(i),
                                j.ratio,
                                j.ci95.map_or("—".into(), |[lo, hi]| format!("{lo:.3}..{hi:.3}")),
                                gate.percent
                            ));
                        }
                    }
                }
            }
        }
        if !seen {
            anyhow::bail!(
                "--fail-if-worse {}: no input pair has this metric",
                gate.metric
            );
        }
    }
    Ok(failed)
}
