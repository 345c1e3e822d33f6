//! `servebench plan`: capacity per dollar over saved sweeps and searches, one per server
//! configuration, each run with `--cost-per-hour` (docs/metrics.md, "Capacity per dollar").
//!
//! [`load`] reads a sweep or search document and the step (probe) results it links;
//! [`compute`] checks that the configurations answer the same question (the plan's `--goodput`
//! SLOs, one model, one workload, one load parameter, a price each) and computes, for each,
//! the highest load sustained within the SLOs with its bracket and the 95% interval of its
//! good fraction, the $ per 1M input and output tokens at that load, and, for a demand, the
//! replicas it needs and what they cost; the cheapest configuration is the one whose replicas
//! cost least; and which steps lie on the Pareto front of output tokens/s per user against
//! per GPU (`capacity_front`). Pure but for [`load`]; printed by `render::capacity`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::sweep::{LoadParameter, SweepValue};
use crate::config::{RequestRate, Slo};
use crate::results::capacity_front::{self, PlanFront, StepFigures};
use crate::results::document::BenchResult;
use crate::results::error::ResultsError;
use crate::results::search::SearchDoc;
use crate::results::sweep::SweepDoc;
use crate::results::wilson::wilson95;

/// What the plan is asked (`servebench plan`'s flags).
#[derive(Clone, Debug, PartialEq)]
pub struct CapacitySpec {
    /// `--goodput`: the SLOs every input was measured under.
    pub slos: Vec<Slo>,
    /// `--target`: the fraction of requests that must meet every SLO at a sustained load.
    pub target: f64,
    /// `--input-share`: the part of the hour's cost charged to input (prefill) tokens; `None`:
    /// each load's own TTFT share (mean TTFT ÷ mean E2EL).
    pub input_share: Option<f64>,
    /// `--demand-request-rate` or `--demand-output-throughput`.
    pub demand: Option<Demand>,
}

/// The load the deployment must carry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Demand {
    /// Requests per second.
    RequestRate(f64),
    /// Output tokens per second.
    OutputThroughput(f64),
}

/// A sweep or search read from disk: its load parameter and each step's value and result.
#[derive(Clone, Debug)]
pub struct Source {
    pub path: PathBuf,
    /// `"sweep"` or `"search"`.
    pub kind: &'static str,
    pub parameter: LoadParameter,
    /// (load value, the step's result file, its result), in the document's order: the steps
    /// that ran to their end (or were stopped early by `--max-errors`/`--max-error-rate`, a
    /// failure the plan counts).
    pub steps: Vec<(f64, PathBuf, BenchResult)>,
    /// The steps left out because they were stopped before they were done (a signal, a
    /// records file that could not be written: `BenchResult::interrupted`), neither a pass
    /// nor a fail, each one line naming its file and why; and a search that was stopped
    /// (`stopped_at`). The plan names them (`servebench plan` on stderr) and prices the rest.
    pub excluded: Vec<String>,
}

/// One step of a configuration, as the plan judges and prices it.
#[derive(Clone, Debug, PartialEq)]
pub struct CapacityStep {
    /// The load parameter's value (`inf` for an unbounded rate).
    pub load: f64,
    pub good: u64,
    pub total: u64,
    pub good_fraction: f64,
    /// good ÷ total ≥ the target.
    pub passed: bool,
    /// Measured, per second (the server's time).
    pub request_throughput: f64,
    pub input_throughput: f64,
    pub output_throughput: f64,
    /// The part of the hour's cost charged to input tokens.
    pub input_share: Option<f64>,
    pub usd_per_1m_input: Option<f64>,
    pub usd_per_1m_output: Option<f64>,
}

/// The highest load a configuration sustains within the SLOs.
#[derive(Clone, Debug, PartialEq)]
pub struct Sustained {
    /// Index into the configuration's (sorted) steps.
    pub step: usize,
    pub load: f64,
    /// The lowest failing load (the bracket's upper end), when one failed.
    pub first_failing: Option<f64>,
    /// 95% Wilson interval of the good fraction at the sustained load.
    pub good_fraction_ci95: Option<(f64, f64)>,
}

/// Replicas of a configuration that carry the demand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Replicas {
    pub count: u64,
    pub usd_per_hour: f64,
}

/// One server configuration: one input file.
#[derive(Clone, Debug, PartialEq)]
pub struct Configuration {
    /// `--label`, else the file's name.
    pub name: String,
    pub source: PathBuf,
    pub kind: &'static str,
    pub usd_per_hour: f64,
    /// By load, ascending.
    pub steps: Vec<CapacityStep>,
    pub sustained: Option<Sustained>,
    pub replicas: Option<Replicas>,
    /// Steps whose goodput was re-judged from their records under the plan's SLOs (they
    /// were measured under others: `results::rejudge`).
    pub rejudged: usize,
}

/// The plan: every configuration and the cheapest for the demand.
#[derive(Clone, Debug, PartialEq)]
pub struct CapacityPlan {
    pub spec: CapacitySpec,
    pub parameter: LoadParameter,
    pub model: String,
    pub configurations: Vec<Configuration>,
    /// Index of the configuration whose replicas cost least (with a demand).
    pub cheapest: Option<usize>,
    /// The Pareto front of every step (output tokens/s per user against per GPU), in the
    /// configurations' and their steps' order.
    pub front: PlanFront,
}

fn invalid(path: &Path, why: impl Into<String>) -> ResultsError {
    ResultsError::Invalid {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// A sweep value as a number (`inf` for an unbounded rate).
fn load_value(v: SweepValue) -> f64 {
    match v {
        SweepValue::Count(n) => n as f64,
        SweepValue::Rate(RequestRate::PerSecond(r)) => r,
        SweepValue::Rate(RequestRate::Infinite) => f64::INFINITY,
        SweepValue::Seconds(s) => s,
    }
}

/// Reads a sweep (`<stem>.sweep.json`) or search (`<stem>.search.json`) document and every
/// result it links.
pub fn load(path: &Path) -> Result<Source, ResultsError> {
    let value = crate::results::document::read_json(path)?;
    let bad = |why: String| ResultsError::BadResult {
        path: path.to_path_buf(),
        why,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    match value.get("kind").and_then(Value::as_str) {
        Some("search") => {
            let doc: SearchDoc = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
            let mut excluded = Vec::new();
            if let Some(at) = doc.stopped_at {
                excluded.push(format!(
                    "{}: the search was stopped at {at}, not done: only its completed probes are priced",
                    path.display()
                ));
            }
            let steps = (doc.probes.iter())
                .filter(|p| match &p.stopped {
                    Some(why) => {
                        excluded.push(left_out(&dir.join(&p.result), why));
                        false
                    }
                    None => true,
                })
                .map(|p| {
                    let file = dir.join(&p.result);
                    BenchResult::load(&file).map(|r| (p.value, file, r))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Source {
                path: path.to_path_buf(),
                kind: "search",
                parameter: doc.spec.by,
                steps: completed(steps, &mut excluded),
                excluded,
            })
        }
        Some("sweep") | Some("") | None if value.get("steps").is_some() => {
            // The document already read: each file is read once.
            let (doc, results) = SweepDoc::from_json(path, value)?;
            let steps = (doc.steps.iter().zip(results))
                .map(|(s, r)| (load_value(s.value), dir.join(&s.result), r))
                .collect();
            let mut excluded = Vec::new();
            Ok(Source {
                path: path.to_path_buf(),
                kind: "sweep",
                parameter: doc.parameter,
                steps: completed(steps, &mut excluded),
                excluded,
            })
        }
        _ => Err(invalid(
            path,
            "is neither a sweep (.sweep.json) nor a search (.search.json) document: a plan reads one per server configuration",
        )),
    }
}

/// One line naming a step left out of the plan and why.
fn left_out(file: &Path, why: &str) -> String {
    format!(
        "{}: left out, neither a pass nor a fail: its run {why}",
        file.display()
    )
}

/// The steps that were not stopped before they were done; each that was is named in
/// `excluded`.
fn completed(
    steps: Vec<(f64, PathBuf, BenchResult)>,
    excluded: &mut Vec<String>,
) -> Vec<(f64, PathBuf, BenchResult)> {
    (steps.into_iter())
        .filter(|(_, file, r)| match r.interrupted() {
            Some(why) => {
                excluded.push(left_out(file, &why));
                false
            }
            None => true,
        })
        .collect()
}

/// `ttft:500 tpot:50`, in the order given.
pub fn slos_text(slos: &[Slo]) -> String {
    if slos.is_empty() {
        return "none".into();
    }
    let parts: Vec<String> = (slos.iter())
        .map(|s| format!("{}:{}", s.metric.key(), s.max_ms))
        .collect();
    parts.join(" ")
}

/// The same SLOs, in any order.
fn same_slos(a: &[Slo], b: &[Slo]) -> bool {
    a.len() == b.len() && a.iter().all(|s| b.contains(s)) && b.iter().all(|s| a.contains(s))
}

/// Prices one step: `usd_per_hour` split between input and output tokens (docs/metrics.md,
/// "Capacity per dollar").
fn price(load: f64, r: &BenchResult, spec: &CapacitySpec, usd_per_hour: f64) -> CapacityStep {
    let s = &r.summary;
    let good = s.good_requests.unwrap_or(0);
    let total = s.completed + s.failed;
    let good_fraction = if total > 0 {
        good as f64 / total as f64
    } else {
        0.0
    };
    let input_throughput = (s.total_token_throughput - s.output_throughput).max(0.0);
    let ttft_share = match (&s.ttft_ms, &s.e2el_ms) {
        (Some(t), Some(e)) if e.mean > 0.0 && t.mean >= 0.0 => Some((t.mean / e.mean).min(1.0)),
        _ => None,
    };
    let input_share = spec.input_share.or(ttft_share);
    // $ per 1M tokens: the hour's share ÷ the tokens of an hour at this throughput × 10⁶.
    let per_1m = |share: f64, tokens_per_s: f64| {
        (tokens_per_s > 0.0).then(|| usd_per_hour * share / (tokens_per_s * 3600.0) * 1e6)
    };
    CapacityStep {
        load,
        good,
        total,
        good_fraction,
        passed: total > 0 && good_fraction >= spec.target,
        request_throughput: s.request_throughput,
        input_throughput,
        output_throughput: s.output_throughput,
        input_share,
        usd_per_1m_input: input_share.and_then(|f| per_1m(f, input_throughput)),
        usd_per_1m_output: input_share.and_then(|f| per_1m(1.0 - f, s.output_throughput)),
    }
}

/// The highest passing load below the lowest failing one (steps sorted by load).
fn sustained(steps: &[CapacityStep]) -> Option<Sustained> {
    let first_failing = steps.iter().find(|s| !s.passed).map(|s| s.load);
    let step = (steps.iter().enumerate())
        .filter(|(_, s)| s.passed && first_failing.is_none_or(|f| s.load < f))
        .map(|(i, _)| i)
        .next_back()?;
    let at = &steps[step];
    Some(Sustained {
        step,
        load: at.load,
        first_failing,
        good_fraction_ci95: wilson95(at.good, at.total),
    })
}

/// Replicas that carry `demand` at the sustained step's measured throughput.
fn replicas(demand: Demand, at: &CapacityStep, usd_per_hour: f64) -> Option<Replicas> {
    let (want, per_replica) = match demand {
        Demand::RequestRate(r) => (r, at.request_throughput),
        Demand::OutputThroughput(t) => (t, at.output_throughput),
    };
    if !(per_replica > 0.0 && per_replica.is_finite()) {
        return None;
    }
    // `as` saturates: a demand no count of replicas reaches reads as u64::MAX.
    let count = ((want / per_replica).ceil() as u64).max(1);
    Some(Replicas {
        count,
        usd_per_hour: count as f64 * usd_per_hour,
    })
}

/// Checks that the sources answer one question and computes the plan; the error names the
/// file that breaks a rule and what it broke.
pub fn compute(spec: CapacitySpec, sources: &[Source]) -> Result<CapacityPlan, ResultsError> {
    let Some(first) = sources.first() else {
        return Err(ResultsError::Merge(
            "a plan needs at least one sweep or search".into(),
        ));
    };
    let Some((_, ref_file, reference)) = first.steps.first() else {
        return Err(invalid(
            &first.path,
            "an empty sweep: no step finished, so it says nothing about any load",
        ));
    };
    let mut configurations = Vec::new();
    let mut all_figures = Vec::new();
    for src in sources {
        if src.parameter != first.parameter {
            return Err(invalid(
                &src.path,
                format!(
                    "varies {}, but {} varies {}: a plan compares configurations along one load parameter",
                    src.parameter.as_str(),
                    first.path.display(),
                    first.parameter.as_str()
                ),
            ));
        }
        if src.steps.is_empty() {
            return Err(invalid(
                &src.path,
                format!(
                    "an empty {}: no step finished, so it says nothing about any load",
                    src.kind
                ),
            ));
        }
        let mut usd_per_hour = None;
        let mut steps = Vec::new();
        let mut figures = Vec::new();
        for (load, file, r) in &src.steps {
            let cost = check_step(file, r, &spec, ref_file, reference)?;
            if usd_per_hour.is_some_and(|u| u != cost) {
                return Err(invalid(
                    file,
                    "its --cost-per-hour differs from its configuration's other steps: one configuration has one price",
                ));
            }
            usd_per_hour = Some(cost);
            steps.push(price(*load, r, &spec, cost));
            figures.push((*load, step_figures(r)));
        }
        let usd_per_hour = usd_per_hour.unwrap_or(0.0);
        steps.sort_by(|a, b| a.load.total_cmp(&b.load));
        // The same stable sort: each step's figures stay beside its price.
        figures.sort_by(|a, b| a.0.total_cmp(&b.0));
        all_figures.push(figures.into_iter().map(|(_, f)| f).collect());
        let sustained = sustained(&steps);
        let replicas = (spec.demand)
            .zip(sustained.as_ref())
            .and_then(|(d, s)| replicas(d, &steps[s.step], usd_per_hour));
        let fallback = src.path.file_name().unwrap_or(src.path.as_os_str());
        configurations.push(Configuration {
            name: reference_name(src, &fallback.to_string_lossy()),
            source: src.path.clone(),
            kind: src.kind,
            usd_per_hour,
            rejudged: (src.steps.iter())
                .filter(|(_, _, r)| r.rejudged.is_some())
                .count(),
            steps,
            sustained,
            replicas,
        });
    }
    let cheapest = (configurations.iter().enumerate())
        .filter_map(|(i, c)| c.replicas.map(|r| (i, r)))
        .min_by(|(_, a), (_, b)| {
            (a.usd_per_hour.total_cmp(&b.usd_per_hour)).then(a.count.cmp(&b.count))
        })
        .map(|(i, _)| i);
    Ok(CapacityPlan {
        spec,
        parameter: first.parameter,
        model: reference.config.model.clone(),
        configurations,
        cheapest,
        front: capacity_front::front(&all_figures),
    })
}

/// What the Pareto front needs of a step.
fn step_figures(r: &BenchResult) -> StepFigures {
    StepFigures {
        mean_tpot_ms: r.summary.tpot_ms.as_ref().map(|t| t.mean),
        output_throughput: r.summary.output_throughput,
        gpus: r.config.tags.gpus,
    }
}

/// Checks one step against the plan's question and the first configuration's first step
/// (`reference`, from `ref_file`): the same SLOs, model and workload, and a price; its price
/// per hour.
fn check_step(
    file: &Path,
    r: &BenchResult,
    spec: &CapacitySpec,
    ref_file: &Path,
    reference: &BenchResult,
) -> Result<f64, ResultsError> {
    let c = &r.config;
    if !same_slos(&c.goodput, &spec.slos) {
        return Err(invalid(
            file,
            format!(
                "measured with --goodput {}, but the plan asks {}: a load that met other SLOs says nothing about these",
                slos_text(&c.goodput),
                slos_text(&spec.slos)
            ),
        ));
    }
    if c.model != reference.config.model {
        return Err(invalid(
            file,
            format!(
                "model '{}', but {} has '{}': a plan compares configurations serving one model",
                c.model,
                ref_file.display(),
                reference.config.model
            ),
        ));
    }
    if c.workload != reference.config.workload {
        return Err(invalid(
            file,
            format!(
                "its workload ({} dataset) differs from {}'s ({} dataset; or their lengths, files or tokenizers differ): a plan compares configurations on one dataset",
                c.workload.dataset.name(),
                ref_file.display(),
                reference.config.workload.dataset.name()
            ),
        ));
    }
    let cost = c.tags.cost_per_hour.ok_or_else(|| {
        invalid(
            file,
            "no --cost-per-hour: a plan prices each configuration (run it with --cost-per-hour USD)",
        )
    })?;
    if !(cost.is_finite() && cost > 0.0) {
        return Err(invalid(
            file,
            format!("cost_per_hour {cost} is not a price in USD (> 0)"),
        ));
    }
    Ok(cost)
}

/// A configuration's name: its first step's `--label` (with its metadata), else `fallback`.
fn reference_name(src: &Source, fallback: &str) -> String {
    (src.steps.first())
        .map(|(_, _, r)| r.config.tags.name(fallback))
        .unwrap_or_else(|| fallback.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SloMetric;

    fn step(load: f64, good: u64, total: u64) -> CapacityStep {
        CapacityStep {
            load,
            good,
            total,
            good_fraction: good as f64 / total as f64,
            passed: good as f64 / total as f64 >= 0.9,
            request_throughput: load,
            input_throughput: 100.0 * load,
            output_throughput: 10.0 * load,
            input_share: Some(0.5),
            usd_per_1m_input: None,
            usd_per_1m_output: None,
        }
    }

    #[test]
    fn the_sustained_load_is_the_highest_pass_below_the_first_failure() {
        let steps = [step(1.0, 10, 10), step(2.0, 9, 10), step(4.0, 5, 10)];
        let s = sustained(&steps).unwrap();
        assert_eq!((s.load, s.first_failing), (2.0, Some(4.0)));
        // A pass above a failure does not count.
        let steps = [step(1.0, 10, 10), step(2.0, 1, 10), step(4.0, 10, 10)];
        assert_eq!(sustained(&steps).unwrap().load, 1.0);
        assert_eq!(sustained(&[step(1.0, 1, 10)]), None);
        let all = sustained(&[step(1.0, 10, 10), step(8.0, 10, 10)]).unwrap();
        assert_eq!((all.load, all.first_failing), (8.0, None));
    }

    #[test]
    fn replicas_round_up_and_cost_their_count() {
        let at = step(3.0, 10, 10);
        let r = replicas(Demand::RequestRate(10.0), &at, 2.5).unwrap();
        assert_eq!((r.count, r.usd_per_hour), (4, 10.0));
        let r = replicas(Demand::OutputThroughput(30.0), &at, 2.5).unwrap();
        assert_eq!((r.count, r.usd_per_hour), (1, 2.5));
        assert_eq!(
            replicas(Demand::RequestRate(1.0), &step(0.0, 1, 1), 1.0),
            None
        );
    }

    #[test]
    fn slos_compare_as_sets() {
        let ttft = Slo {
            metric: SloMetric::Ttft,
            max_ms: 500.0,
        };
        let tpot = Slo {
            metric: SloMetric::Tpot,
            max_ms: 50.0,
        };
        assert!(same_slos(&[ttft, tpot], &[tpot, ttft]));
        assert!(!same_slos(&[ttft], &[ttft, tpot]));
        assert!(!same_slos(
            &[ttft],
            &[Slo {
                metric: SloMetric::Ttft,
                max_ms: 400.0
            }]
        ));
        assert_eq!(slos_text(&[ttft, tpot]), "ttft:500 tpot:50");
    }
}
