//! `servebench search`: the highest load at which a target fraction of requests meets every
//! SLO.
//!
//! The search doubles the load (request rate, or concurrency) from a start value until a probe
//! fails, then bisects between the last passing and the first failing value until the bracket
//! is within the stated relative precision (or one step of concurrency). Each probe is a full
//! run, saved as it finishes, and the search document is rewritten after every probe.
//!
//! A probe passes when good / sent ≥ target, where good requests meet every `--goodput` SLO
//! and failed requests are never good. The answer comes with a 95% Wilson interval for the
//! good fraction at the answer, and the bracket [answer, first failing value].

use std::future::Future;
use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use crate::config::search::SearchSpec;
use crate::config::sweep::{step_config, LoadParameter};
use crate::config::{RunConfig, ScrapeSpec};
use crate::drive::error::RunError;
use crate::drive::run::{execute_with, RunOptions};
use crate::measure::client::Secrets;
use crate::results::document::refuse_existing;
use crate::results::search::{wilson95, Probe, SearchDoc};
use crate::workload::PromptTokenizer;

/// Runs the search. `probe(value, index)` runs one probe and returns (good, total, result
/// file), or `None` when the search was stopped (Ctrl-C, SIGTERM) and it ran none: the search
/// ends there, incomplete; `saved(doc)` is called after every probe so the caller can persist
/// and print.
pub async fn search<F, Fut>(
    spec: &SearchSpec,
    mut probe: F,
    mut saved: impl FnMut(&SearchDoc) -> Result<(), RunError>,
) -> Result<SearchDoc, RunError>
where
    F: FnMut(f64, u32) -> Fut,
    Fut: Future<Output = Result<Option<(u64, u64, PathBuf)>, RunError>>,
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
    };
    let round = |v: f64| match spec.by {
        LoadParameter::MaxConcurrency => v.round().max(1.0),
        _ => v,
    };
    let mut next = Some(round(spec.start));
    while let Some(value) = next {
        if doc.probes.len() as u32 >= spec.max_probes {
            break;
        }
        let Some((good, total, result)) = probe(value, doc.probes.len() as u32).await? else {
            doc.complete = false;
            break;
        };
        let good_fraction = if total > 0 {
            good as f64 / total as f64
        } else {
            0.0
        };
        let passed = total > 0 && good_fraction >= spec.target;
        doc.probes.push(Probe {
            value,
            good,
            total,
            good_fraction,
            passed,
            result,
        });
        if passed {
            if doc.answer.is_none_or(|a| value > a) {
                doc.answer = Some(value);
                doc.answer_good_fraction_ci95 = wilson95(good, total);
            }
        } else if doc.first_failing.is_none_or(|f| value < f) {
            doc.first_failing = Some(value);
        }
        next = match (doc.answer, doc.first_failing) {
            // Still doubling.
            (Some(pass), None) if pass < spec.max => Some(round((pass * 2.0).min(spec.max))),
            (Some(_), None) => None,
            // Nothing passes, even at the start.
            (None, Some(_)) => None,
            (Some(pass), Some(fail)) => {
                let narrow = match spec.by {
                    LoadParameter::MaxConcurrency => fail - pass <= 1.0,
                    _ => (fail - pass) / fail <= spec.precision,
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

/// What every probe of a search runs with, and where the search writes: probe `i` saves its
/// result as `<stem>-probe<i>.json` and the document is `<stem>.search.json`, both in `dir`.
pub struct Probes<'a> {
    pub base: &'a RunConfig,
    pub tokenizer: &'a PromptTokenizer,
    pub secrets: &'a Secrets,
    pub dir: PathBuf,
    pub stem: String,
    pub scrape: Option<ScrapeSpec>,
    /// Send the pre-flight request before the first probe.
    pub preflight: bool,
    /// Replace existing files (`--overwrite`); otherwise the search refuses to start when its
    /// document or a probe's files exist.
    pub overwrite: bool,
    /// Cancelled on a second Ctrl-C (see `RunOptions::abort`).
    pub abort: CancellationToken,
}

impl Probes<'_> {
    pub fn doc_path(&self) -> PathBuf {
        self.dir.join(format!("{}.search.json", self.stem))
    }

    /// The result file of probe `i`.
    fn probe_file(&self, i: u32) -> String {
        format!("{}-probe{i}.json", self.stem)
    }
}

/// Runs the search with a full benchmark run per probe, saving the document after every probe
/// and then calling `probed(doc)` (to print progress).
pub async fn run_search(
    spec: &SearchSpec,
    probes: &Probes<'_>,
    stop: CancellationToken,
    mut probed: impl FnMut(&SearchDoc),
) -> Result<SearchDoc, RunError> {
    let doc_path = probes.doc_path();
    let probe_files: Vec<PathBuf> = (0..spec.max_probes)
        .flat_map(|i| {
            let result = probes.dir.join(probes.probe_file(i));
            [result.with_extension("records.jsonl"), result]
        })
        .collect();
    refuse_existing(
        probes.overwrite,
        std::iter::once(&doc_path).chain(&probe_files),
    )?;
    search(
        spec,
        |value, i| {
            let step = step_config(probes.base, spec.by, spec.by.value(value));
            let file = probes.probe_file(i);
            let opts = RunOptions {
                scrape: probes.scrape.clone(),
                overwrite: probes.overwrite,
                abort: probes.abort.clone(),
                ..RunOptions::new(probes.dir.join(&file), probes.preflight && i == 0)
            };
            let stop = stop.clone();
            async move {
                // After a stop no probe starts (it would stop before its load at once).
                if stop.is_cancelled() {
                    return Ok(None);
                }
                let r =
                    match execute_with(step, probes.tokenizer, probes.secrets, &opts, stop).await {
                        // Stopped before this probe's load began: the probes before it stand.
                        Err(RunError::Stopped) if i > 0 => return Ok(None),
                        r => r?,
                    };
                let good = r.summary.good_requests.unwrap_or(0);
                Ok(Some((
                    good,
                    r.summary.completed + r.summary.failed,
                    file.into(),
                )))
            }
        },
        |doc| {
            probed(doc);
            Ok(doc.save(&doc_path)?)
        },
    )
    .await
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
        }
    }

    /// A server whose good fraction drops below 90% above a capacity.
    async fn run(spec: &SearchSpec, capacity: f64) -> SearchDoc {
        search(
            spec,
            |v, _| async move {
                let good = if v <= capacity { 100 } else { 50 };
                Ok(Some((good, 100, PathBuf::from(format!("p{v}.json")))))
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
}
