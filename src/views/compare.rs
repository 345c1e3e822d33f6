//! Several views side by side ([`compare`]): every figure at every load step, the value of
//! each input, B/A, and the better value; and the `--fail-if-worse` gates on it
//! ([`failed_gates`]).
//!
//! The first input is the baseline. Each of its series is paired with the most comparable
//! series of every other input (same workload first, then most shared load values); steps are
//! matched by load value. Two single-step inputs are compared directly, whatever their load.
//! Workload differences (model, dataset, input or output length) do not stop a comparison:
//! the table is still built, with a warning line.
//!
//! A step of a multi-LoRA run also compares each adapter's figures ([`AdapterRows`]: every
//! adapter any input's step has, judged as the step's rows are); an adapter an input's step
//! lacks is marked absent there, its values missing, never guessed. The gates read the
//! step's own rows only.
//!
//! The statistics (B/A's 95% interval, the verdict, the better value) are
//! `results::compare`'s, each figure's direction its `config::figure::FigureKey`'s; this file
//! pairs and matches, and `render` writes the [`Comparison`] as text, Markdown or JSON. The
//! comparison also names the steps on the Pareto front of all the inputs (`views::pareto`:
//! output tokens/s per user against per GPU). To compare one more thing per row, add a field
//! to [`Row`] filled in [`rows`].

use std::collections::{BTreeMap, BTreeSet};

use crate::config::figure::FigureKey;
use crate::results::compare::{best, judge, ratio, Judged, Verdict};
use crate::views::error::GateError;
use crate::views::model::{fmt_load, Figures, Series, Step, View};
use crate::views::pareto::{summary, Summary};

/// One figure at one load step, across the inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub metric: FigureKey,
    pub values: Vec<Option<f64>>,
    /// Index of the better value, when the figure has a direction and there is no tie.
    pub best: Option<usize>,
    /// B/A for each input after the first (`None` for the first, and where either value is
    /// missing or A is zero).
    pub ratios: Vec<Option<f64>>,
    /// For each input after the first: how it compares with the first (`None` for the first,
    /// and where either value is missing or not positive).
    pub judged: Vec<Option<Judged>>,
}

/// One load step of a group.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRows {
    /// "num_prompts = 512".
    pub title: String,
    pub rows: Vec<Row>,
    /// Each LoRA adapter's rows, by name; empty unless an input's step has adapters.
    pub adapters: Vec<AdapterRows>,
}

/// One LoRA adapter's figures at one load step, across the inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterRows {
    /// The adapter's name, from the documents: outside text.
    pub name: String,
    /// For each input: whether its step has this adapter (where not, its values are absent).
    pub present: Vec<bool>,
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
    /// The Pareto front of every step of every input (`views::pareto`).
    pub pareto: Summary,
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

/// Compares `views` (the first is the baseline). `metrics` limits the rows to those figures,
/// in that order.
pub fn compare(views: &[View], metrics: Option<&[FigureKey]>) -> Comparison {
    let mut groups = Vec::new();
    let mut used: Vec<Vec<bool>> = views.iter().map(|v| vec![false; v.series.len()]).collect();
    let Some(base) = views.first() else {
        return Comparison {
            groups,
            unpaired: Vec::new(),
            pareto: summary(views),
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
    Comparison {
        groups,
        unpaired,
        pareto: summary(views),
    }
}

fn single_steps(
    a: &Series,
    paired: &[Option<&Series>],
    metrics: Option<&[FigureKey]>,
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
        rows: rows(&sets_of(&steps), metrics),
        adapters: adapter_rows(&steps, metrics),
    }]
}

fn matched_steps(
    a: &Series,
    paired: &[Option<&Series>],
    metrics: Option<&[FigureKey]>,
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
                rows: rows(&sets_of(&steps), metrics),
                adapters: adapter_rows(&steps, metrics),
            }
        })
        .collect()
}

/// The figures of one input's step, or of one adapter in it, and their intervals.
#[derive(Clone, Copy)]
struct Set<'a> {
    metrics: &'a BTreeMap<FigureKey, f64>,
    intervals: &'a BTreeMap<FigureKey, [f64; 2]>,
}

fn sets_of<'a>(steps: &[Option<&'a Step>]) -> Vec<Option<Set<'a>>> {
    (steps.iter())
        .map(|s| {
            s.map(|s| Set {
                metrics: &s.metrics,
                intervals: &s.intervals,
            })
        })
        .collect()
}

/// The rows of each adapter any of `steps` has, by name (those of `metrics` when given); an
/// adapter with no row left is left out.
fn adapter_rows(steps: &[Option<&Step>], metrics: Option<&[FigureKey]>) -> Vec<AdapterRows> {
    let names: BTreeSet<&String> = steps
        .iter()
        .flatten()
        .flat_map(|s| s.adapters.keys())
        .collect();
    names
        .into_iter()
        .filter_map(|name| {
            let figures: Vec<Option<&Figures>> = (steps.iter())
                .map(|s| s.and_then(|s| s.adapters.get(name)))
                .collect();
            let sets: Vec<Option<Set>> = (figures.iter())
                .map(|f| {
                    f.map(|f| Set {
                        metrics: &f.metrics,
                        intervals: &f.intervals,
                    })
                })
                .collect();
            let rows = rows(&sets, metrics);
            (!rows.is_empty()).then(|| AdapterRows {
                name: name.clone(),
                present: figures.iter().map(Option::is_some).collect(),
                rows,
            })
        })
        .collect()
}

/// A row per figure any of `sets` has (those of `metrics` when given), in reading order.
fn rows(sets: &[Option<Set>], metrics: Option<&[FigureKey]>) -> Vec<Row> {
    let keys: Vec<FigureKey> = match metrics {
        Some(m) => m.to_vec(),
        None => {
            let all = sets.iter().flatten().flat_map(|s| s.metrics.keys());
            all.cloned().collect::<BTreeSet<_>>().into_iter().collect()
        }
    };
    keys.into_iter()
        .map(|k| {
            let values: Vec<Option<f64>> = (sets.iter())
                .map(|s| s.and_then(|s| s.metrics.get(&k).copied()))
                .collect();
            let interval = |s: &Option<Set>| s.and_then(|s| s.intervals.get(&k).copied());
            let judged = against_a(&values, |i, a, b| {
                judge(k.better(), a, b, interval(&sets[0]), interval(&sets[i]))
            });
            let ratios = against_a(&values, |_, a, b| ratio(a, b));
            Row {
                best: best(k.better(), &values),
                metric: k,
                values,
                ratios,
                judged,
            }
        })
        .filter(|r| r.values.iter().any(Option::is_some))
        .collect()
}

/// `f(i, A, value i)` for each input after the first that has a value, where A has one.
fn against_a<T>(
    values: &[Option<f64>],
    f: impl Fn(usize, f64, f64) -> Option<T>,
) -> Vec<Option<T>> {
    (0..values.len())
        .map(|i| match (i, values[0], values[i]) {
            (1.., Some(a), Some(b)) => f(i, a, b),
            _ => None,
        })
        .collect()
}

/// One gate that failed: an input significantly worse than A on a figure by more than the
/// gate's percent at a step.
#[derive(Clone, Debug, PartialEq)]
pub struct GateFailure {
    /// The input (1 for B, ...).
    pub input: usize,
    pub metric: FigureKey,
    /// The step's title.
    pub step: String,
    pub judged: Judged,
    pub percent: f64,
}

impl std::fmt::Display for GateFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let input = letter(self.input);
        let interval = self
            .judged
            .ci95
            .map_or("—".into(), |[lo, hi]| format!("{lo:.3}..{hi:.3}"));
        write!(
            f,
            "{input} is worse than A on {} at {}: {input}/A {:.3} (95% interval {interval}), more than {}% worse",
            self.metric, self.step, self.judged.ratio, self.percent
        )
    }
}

/// The gates (figure, percent) that fail; an error when a gate cannot be judged (its figure
/// has no direction or is not compared, or an input has no interval for it).
pub fn failed_gates(
    c: &Comparison,
    gates: &[(FigureKey, f64)],
) -> Result<Vec<GateFailure>, GateError> {
    let mut failed = Vec::new();
    for (metric, percent) in gates {
        let better = metric.better().ok_or_else(|| GateError::NoDirection {
            metric: metric.clone(),
        })?;
        let mut seen = false;
        for g in &c.groups {
            for step in &g.steps {
                for row in step.rows.iter().filter(|r| r.metric == *metric) {
                    for (i, judged) in row.judged.iter().enumerate().skip(1) {
                        let Some(j) = judged else { continue };
                        seen = true;
                        if j.verdict == Verdict::NoInterval {
                            return Err(GateError::NoInterval {
                                metric: metric.clone(),
                                input: letter(i),
                                step: step.title.clone(),
                            });
                        }
                        if j.verdict == Verdict::Worse && j.worse_by(better) * 100.0 > *percent {
                            failed.push(GateFailure {
                                input: i,
                                metric: metric.clone(),
                                step: step.title.clone(),
                                judged: *j,
                                percent: *percent,
                            });
                        }
                    }
                }
            }
        }
        if !seen {
            return Err(GateError::NotCompared {
                metric: metric.clone(),
            });
        }
    }
    Ok(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::figure::RunFigure;
    use crate::config::metric::{MetricKey, Stat};
    use crate::config::sweep::LoadParameter;
    use crate::config::Metric;
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
                            (RunFigure::OutputThroughput.into(), tput),
                            (ttft_key(), ttft),
                        ]),
                        ..Step::default()
                    })
                    .collect(),
            }],
            notes: vec![],
            llmperf_requests: vec![],
        }
    }

    fn ttft_key() -> FigureKey {
        MetricKey::new(Stat::Mean, Metric::Ttft).into()
    }

    #[test]
    fn marks_the_better_side_and_the_ratio() {
        let a = view("a", "m", &[(1, 10.0, 100.0), (2, 20.0, 150.0)]);
        let b = view("b", "m", &[(1, 5.0, 50.0), (2, 40.0, 150.0)]);
        let c = compare(&[a, b], None);
        assert!(c.groups[0].warnings.is_empty());
        let s1 = &c.groups[0].steps[0];
        assert_eq!(s1.title, "num_prompts = 1");
        assert_eq!(s1.rows[0].metric, RunFigure::OutputThroughput.into());
        assert_eq!(s1.rows[0].best, Some(0)); // higher throughput
        assert_eq!(s1.rows[1].best, Some(1)); // lower TTFT
        assert_eq!(s1.rows[0].ratios, [None, Some(0.5)]);
        assert_eq!(c.groups[0].steps[1].rows[1].best, None); // tie
    }

    #[test]
    fn different_models_warn_but_still_compare() {
        let a = view("a", "m1", &[(1, 10.0, 100.0)]);
        let b = view("b", "m2", &[(1, 5.0, 50.0)]);
        let c = compare(&[a, b], None);
        assert!(c.groups[0].warnings[0].contains("not comparable"));
        assert_eq!(c.groups[0].steps.len(), 1);
    }

    #[test]
    fn gates_fail_pass_or_cannot_be_judged() {
        let mut a = view("a", "m", &[(1, 10.0, 100.0)]);
        let mut b = view("b", "m", &[(1, 10.0, 150.0)]);
        for (v, [lo, hi]) in [(&mut a, [99.0, 101.0]), (&mut b, [148.0, 152.0])] {
            v.series[0].steps[0].intervals.insert(ttft_key(), [lo, hi]);
        }
        let c = compare(&[a, b], None);
        let failed = failed_gates(&c, &[(ttft_key(), 40.0)]).unwrap();
        assert_eq!(failed.len(), 1);
        let line = failed[0].to_string();
        assert!(
            line.starts_with("B is worse than A on mean_ttft_ms at num_prompts = 1: B/A 1.500"),
            "{line}"
        );
        assert!(failed_gates(&c, &[(ttft_key(), 60.0)]).unwrap().is_empty());
        let throughput = RunFigure::OutputThroughput.into();
        assert!(matches!(
            failed_gates(&c, &[(throughput, 1.0)]),
            Err(GateError::NoInterval { .. })
        ));
        let tokens = RunFigure::TotalInputTokens.into();
        assert!(matches!(
            failed_gates(&c, &[(tokens, 1.0)]),
            Err(GateError::NoDirection { .. })
        ));
        let p99 = MetricKey::new(Stat::Percentile(99.0), Metric::Ttft).into();
        assert!(matches!(
            failed_gates(&c, &[(p99, 1.0)]),
            Err(GateError::NotCompared { .. })
        ));
    }
}
