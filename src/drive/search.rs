//! `servebench search`: the highest load at which a target fraction of requests meets every
//! SLO.
//!
//! The search doubles the load (request rate, or concurrency) from a start value until a probe
//! fails, then bisects between the last passing and the first failing value until the bracket
//! is within the stated relative precision (or one step of concurrency). Each probe is a full
//! run, saved as it finishes, and the search document is rewritten after every probe.
//!
//! With `--stop-saturated on`, doubling stops at the first passing probe the saturation
//! stop (`results::saturated`) finds saturated against the probe before it: that probe is
//! the answer, the document names it with its evidence, and the load doubling would have
//! probed next is saved as `skipped` (not failed).
//!
//! A probe passes when good / sent ≥ target, where good requests meet every `--goodput` SLO
//! and failed requests are never good. The answer comes with a 95% Wilson interval for the
//! good fraction at the answer, and the bracket [answer, first failing value].
//!
//! A probe stopped before it was done (Ctrl-C, SIGTERM, `q`, a records file that could not be
//! written: `BenchResult::interrupted`) is neither a pass nor a fail: it is kept in the
//! document, marked `stopped`, and the search ends there, incomplete, with `stopped_at` its
//! load; the answer stays the highest completed passing probe. A stop between probes ends the
//! search the same way, at the load it would have probed next.
//!
//! `--by prefixes` varies the prefix dataset's distinct prefixes at the plan's
//! fixed load, as counts (as concurrency: bisection to one step): a probe passes when its
//! measured prefix-cache hit rate is at least `PREFIX_HIT_SHARE` (half) of its designed one
//! and its good fraction meets the target (every completed request is good without
//! `--goodput`). The answer is the largest count the server's cache holds: the cliff is one
//! past it.

use std::future::Future;
use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use crate::config::search::{SearchSpec, PREFIX_HIT_SHARE};
use crate::config::sweep::LoadParameter;
use crate::drive::error::RunError;
use crate::drive::hooks::SessionHooks;
use crate::drive::observer::StepObserver;
use crate::drive::plan::RunPlan;
use crate::drive::run::{execute_with, RunOptions};
use crate::results::saturated::{detect, StepFigures};
use crate::results::search::{Probe, SearchDoc};
use crate::results::wilson::wilson95;

/// What one probe measured.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeRun {
    pub good: u64,
    pub total: u64,
    /// Its result file, relative to the search document.
    pub result: PathBuf,
    /// Its designed and measured prefix-cache hit rates (`--by prefixes`; else `None`s).
    pub hit_rates: (Option<f64>, Option<f64>),
    /// Why it was stopped before it was done (`BenchResult::interrupted`): neither a pass
    /// nor a fail.
    pub stopped: Option<String>,
    /// Its throughput, TTFT, in flight and errors, for the saturation stop (`None`: not
    /// judged).
    pub figures: Option<StepFigures>,
}

/// Whether a probe over prefixes kept its cache: measured ≥ [`PREFIX_HIT_SHARE`] × designed
/// (a probe without both rates did not).
fn holds(by: LoadParameter, (designed, measured): (Option<f64>, Option<f64>)) -> bool {
    match (by, designed, measured) {
        (LoadParameter::NumPrefixes, Some(d), Some(m)) => m >= PREFIX_HIT_SHARE * d,
        (LoadParameter::NumPrefixes, _, _) => false,
        _ => true,
    }
}

/// Runs the search. `probe(value, index)` runs one probe and returns what it measured, or
/// `None` when the search was stopped (Ctrl-C, SIGTERM) and it ran none: the search ends
/// there, incomplete; `saved(doc)` is called after every probe so the caller can persist and
/// print.
pub async fn search<F, Fut>(
    spec: &SearchSpec,
    mut probe: F,
    mut saved: impl FnMut(&SearchDoc) -> Result<(), RunError>,
) -> Result<SearchDoc, RunError>
where
    F: FnMut(f64, u32) -> Fut,
    Fut: Future<Output = Result<Option<ProbeRun>, RunError>>,
{
    let mut doc = SearchDoc {
        schema_version: crate::results::document::SCHEMA_VERSION,
        kind: "search".into(),
        spec: spec.clone(),
        probes: Vec::new(),
        answer: None,
        first_failing: None,
        answer_good_fraction_ci95: None,
        complete: false,
        stopped_at: None,
        saturation: None,
        skipped: Vec::new(),
    };
    // The doubling probes' figures, for the saturation stop.
    let mut doubling: Vec<StepFigures> = Vec::new();
    let counts = matches!(
        spec.by,
        LoadParameter::MaxConcurrency | LoadParameter::NumPrefixes
    );
    let round = |v: f64| match counts {
        true => v.round().max(1.0),
        false => v,
    };
    let mut next = Some(round(spec.start));
    while let Some(value) = next {
        if doc.probes.len() as u32 >= spec.max_probes {
            break;
        }
        let Some(run) = probe(value, doc.probes.len() as u32).await? else {
            // Stopped before this probe began: the search ends here, at this load.
            (doc.complete, doc.stopped_at) = (false, Some(value));
            saved(&doc)?;
            break;
        };
        let (good, total) = (run.good, run.total);
        let good_fraction = if total > 0 {
            good as f64 / total as f64
        } else {
            0.0
        };
        let stopped = run.stopped.is_some();
        let figures = run.figures;
        let passed =
            !stopped && total > 0 && good_fraction >= spec.target && holds(spec.by, run.hit_rates);
        doc.probes.push(Probe {
            value,
            good,
            total,
            good_fraction,
            passed,
            stopped: run.stopped,
            result: run.result,
            designed_hit_rate: run.hit_rates.0,
            measured_hit_rate: run.hit_rates.1,
        });
        if stopped {
            // Neither a pass nor a fail: the answer and the bracket stand as they were.
            (doc.complete, doc.stopped_at) = (false, Some(value));
            saved(&doc)?;
            break;
        }
        if passed {
            if doc.answer.is_none_or(|a| value > a) {
                doc.answer = Some(value);
                doc.answer_good_fraction_ci95 = wilson95(good, total);
            }
        } else if doc.first_failing.is_none_or(|f| value < f) {
            doc.first_failing = Some(value);
        }
        let saturated = match (spec.stop_saturated, figures, doc.first_failing) {
            // Only while doubling: past the first fail, bisection probes go down too.
            (true, Some(f), None) if passed => {
                doubling.push(f);
                detect(&doubling)
            }
            _ => None,
        };
        next = match (doc.answer, doc.first_failing) {
            (Some(pass), None) if saturated.is_some() => {
                let up = round((pass * 2.0).min(spec.max));
                doc.skipped = (up > pass).then_some(up).into_iter().collect();
                doc.saturation = saturated;
                None
            }
            // Still doubling.
            (Some(pass), None) if pass < spec.max => Some(round((pass * 2.0).min(spec.max))),
            (Some(_), None) => None,
            // Nothing passes, even at the start.
            (None, Some(_)) => None,
            (Some(pass), Some(fail)) => {
                let narrow = match counts {
                    true => fail - pass <= 1.0,
                    false => (fail - pass) / fail <= spec.precision,
                };
                (!narrow).then(|| round((pass + fail) / 2.0))
            }
            (None, None) => None,
        };
        doc.complete = next.is_none();
        saved(&doc)?;
    }
    Ok(doc)
}

/// Runs `plan`'s search with a full benchmark run per probe (probe `i` saves its result as
/// `<stem>-probe<i>.json`, each config derived from the plan's and validated), saving the
/// document (`<stem>.search.json`) after every probe and then telling `observer`. The plan
/// has checked every file the search may write. `abort` is the second Ctrl-C.
pub async fn run_search(
    plan: &RunPlan,
    spec: &SearchSpec,
    stop: CancellationToken,
    abort: &CancellationToken,
    observer: &mut dyn StepObserver,
) -> Result<SearchDoc, RunError> {
    let out = &plan.output;
    let doc_path = out.search_doc();
    // The probe runs and the saved documents both tell the one observer.
    let observer = std::cell::RefCell::new(observer);
    let hooks = SessionHooks::new(plan);
    let doc = search(
        spec,
        |value, i| {
            let file = out.probe(i);
            let mut opts = RunOptions::from_plan(plan, &file, i == 0, abort);
            let (stop, observer, hooks) = (stop.clone(), &observer, &hooks);
            async move {
                // After a stop no probe starts (it would stop before its load at once).
                if stop.is_cancelled() {
                    return Ok(None);
                }
                let at = spec.by.value(value);
                let step = plan.config.step(spec.by, at)?;
                opts.hooks_before = hooks.before().await?;
                observer.borrow_mut().started(at, &step, &opts);
                let mut r = match execute_with(&step, &plan.text, &plan.secrets, &opts, stop).await
                {
                    // Stopped before this probe's load began: the probes before it stand.
                    Err(RunError::Stopped) if i > 0 => return Ok(None),
                    r => r?,
                };
                let hooked = hooks.after(&mut r, &opts.result_path).await;
                observer.borrow_mut().finished(at, &r);
                hooked?;
                let s = &r.summary;
                // Over prefixes without SLOs, every completed request is good.
                let good = match spec.by {
                    LoadParameter::NumPrefixes => s.good_requests.unwrap_or(s.completed),
                    _ => s.good_requests.unwrap_or(0),
                };
                let rates = s.prefix_cache.as_ref();
                Ok(Some(ProbeRun {
                    figures: Some(StepFigures::of(value, &r.summary)),
                    stopped: r.interrupted(),
                    good,
                    total: s.completed + s.failed,
                    result: file.into(),
                    hit_rates: match spec.by {
                        LoadParameter::NumPrefixes => (
                            rates.and_then(|c| c.designed_hit_rate),
                            rates.and_then(|c| c.measured_hit_rate),
                        ),
                        _ => (None, None),
                    },
                }))
            }
        },
        |doc| {
            doc.save(&doc_path)?;
            observer.borrow_mut().probed(doc);
            Ok(())
        },
    )
    .await;
    // `after-run` whatever ended the search (an error, a probe's failed hook, a stop).
    hooks.ended(doc).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(by: LoadParameter) -> SearchSpec {
        SearchSpec {
            by,
            start: 1.0,
            max: 1024.0,
            precision: 0.05,
            target: 0.9,
            max_probes: 30,
            stop_saturated: false,
        }
    }

    /// A server whose good fraction drops below 90% above a capacity.
    async fn run(spec: &SearchSpec, capacity: f64) -> SearchDoc {
        search(
            spec,
            |v, _| async move {
                let good = if v <= capacity { 100 } else { 50 };
                Ok(Some(ProbeRun {
                    good,
                    total: 100,
                    result: PathBuf::from(format!("p{v}.json")),
                    hit_rates: (None, None),
                    stopped: None,
                    figures: None,
                }))
            },
            |_| Ok(()),
        )
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn finds_the_rate_within_precision() {
        let doc = run(&spec(LoadParameter::RequestRate), 37.0).await;
        let (answer, fail) = (doc.answer.unwrap(), doc.first_failing.unwrap());
        assert!(
            answer <= 37.0 && (fail - answer) / fail <= 0.05,
            "{answer} {fail}"
        );
        assert!(fail > 37.0);
        assert!(doc.complete);
        // Doubling went 1, 2, ..., 64, then bisection.
        assert_eq!(
            doc.probes
                .iter()
                .take(7)
                .map(|p| p.value)
                .collect::<Vec<_>>(),
            vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
        );
    }

    #[tokio::test]
    async fn finds_the_exact_concurrency() {
        let doc = run(&spec(LoadParameter::MaxConcurrency), 37.0).await;
        assert_eq!((doc.answer, doc.first_failing), (Some(37.0), Some(38.0)));
    }

    /// A cache of 8 prefixes: at most 8 of a step's prompts hit past it, against a designed
    /// 64 − P.
    #[tokio::test]
    async fn a_search_over_prefixes_finds_the_cache_s_last_count() {
        let mut spec = spec(LoadParameter::NumPrefixes);
        spec.max = 64.0;
        let doc = search(
            &spec,
            |v, _| async move {
                let designed = (64.0 - v) / 64.0;
                let measured = if v <= 8.0 { designed } else { 8.0 / 64.0 };
                Ok(Some(ProbeRun {
                    good: 64,
                    total: 64,
                    result: PathBuf::from(format!("p{v}.json")),
                    hit_rates: (Some(designed), Some(measured)),
                    stopped: None,
                    figures: None,
                }))
            },
            |_| Ok(()),
        )
        .await
        .unwrap();
        assert_eq!((doc.answer, doc.first_failing), (Some(8.0), Some(9.0)));
        let values: Vec<f64> = doc.probes.iter().map(|p| p.value).collect();
        assert_eq!(values, [1.0, 2.0, 4.0, 8.0, 16.0, 12.0, 10.0, 9.0]);
        assert_eq!(doc.probes[3].measured_hit_rate, Some(56.0 / 64.0));
        // A probe whose server reports no cached tokens does not pass.
        assert!(!holds(LoadParameter::NumPrefixes, (Some(0.5), None)));
        assert!(holds(LoadParameter::RequestRate, (None, None)));
    }

    /// Throughput stuck at 4 past a concurrency of 4 while TTFT grows: with the stop on,
    /// doubling ends at 8 (the first flat probe) and 16 is skipped; with it off, every
    /// doubling runs, as before.
    #[tokio::test]
    async fn saturation_stops_the_doubling_and_skips_the_next_load() {
        let mut spec = spec(LoadParameter::MaxConcurrency);
        spec.max = 64.0;
        let probe = |v: f64, _| async move {
            Ok(Some(ProbeRun {
                good: 100,
                total: 100,
                result: PathBuf::from(format!("p{v}.json")),
                hit_rates: (None, None),
                stopped: None,
                figures: Some(StepFigures {
                    load: v,
                    throughput: v.min(4.0),
                    ttft_p50_ms: Some(if v > 4.0 { 100.0 * v } else { 10.0 }),
                    in_flight: Some(v),
                    error_fraction: 0.0,
                }),
            }))
        };
        let off = search(&spec, probe, |_| Ok(())).await.unwrap();
        assert_eq!(off.probes.len(), 7);
        assert_eq!((off.saturation.as_ref(), off.skipped.len()), (None, 0));
        spec.stop_saturated = true;
        let doc = search(&spec, probe, |_| Ok(())).await.unwrap();
        let values: Vec<f64> = doc.probes.iter().map(|p| p.value).collect();
        assert_eq!(values, [1.0, 2.0, 4.0, 8.0]);
        assert_eq!(
            (doc.answer, doc.skipped.as_slice()),
            (Some(8.0), &[16.0][..])
        );
        assert_eq!(doc.saturation.as_ref().map(|s| s.load), Some(8.0));
        assert!(doc.complete);
    }

    #[tokio::test]
    async fn reports_when_nothing_passes_or_everything_does() {
        let doc = run(&spec(LoadParameter::RequestRate), 0.5).await;
        assert_eq!(
            (doc.answer, doc.first_failing, doc.probes.len()),
            (None, Some(1.0), 1)
        );
        let doc = run(&spec(LoadParameter::RequestRate), 1e9).await;
        assert_eq!((doc.answer, doc.first_failing), (Some(1024.0), None));
    }

    /// A probe stopped part-way (105 of 150 requests) is neither a pass nor a fail: the
    /// answer is the highest completed passing probe, nothing fails, the search is saved
    /// incomplete with where it stopped; a stop before a probe began says the same.
    #[tokio::test]
    async fn a_stopped_probe_is_neither_a_pass_nor_a_fail() {
        let spec = spec(LoadParameter::RequestRate);
        let mut last_saved = None;
        let doc = search(
            &spec,
            |v, i| async move {
                Ok(Some(ProbeRun {
                    good: if i == 2 { 105 } else { 150 },
                    total: if i == 2 { 105 } else { 150 },
                    result: PathBuf::from(format!("p{v}.json")),
                    hit_rates: (None, None),
                    stopped: (i == 2).then(|| "stopped with 45 planned requests unsent".into()),
                    figures: None,
                }))
            },
            |d| {
                last_saved = Some(d.clone());
                Ok(())
            },
        )
        .await
        .unwrap();
        assert_eq!(last_saved.as_ref(), Some(&doc), "the last state is saved");
        assert_eq!((doc.answer, doc.first_failing), (Some(2.0), None));
        assert_eq!((doc.complete, doc.stopped_at), (false, Some(4.0)));
        assert_eq!(doc.probes.len(), 3);
        assert!(!doc.probes[2].passed && doc.probes[2].stopped.is_some());
        assert_eq!(doc.answer_good_fraction_ci95, wilson95(150, 150));

        let doc = search(
            &spec,
            |v, i| async move {
                Ok((i < 2).then(|| ProbeRun {
                    good: 10,
                    total: 10,
                    result: PathBuf::from(format!("p{v}.json")),
                    hit_rates: (None, None),
                    stopped: None,
                    figures: None,
                }))
            },
            |_| Ok(()),
        )
        .await
        .unwrap();
        assert_eq!(
            (doc.answer, doc.stopped_at, doc.complete),
            (Some(2.0), Some(4.0), false)
        );
    }
}
