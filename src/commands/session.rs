//! What `run` and `search` do once they have a plan: run it through the one session driver
//! (`drive::session`) with the [`Screen`] as its observer, stop the built-in simulator, print
//! what follows the last run (a sweep's or the stages' step table, a search's answer), and
//! choose the exit code.

use std::path::PathBuf;
use std::process::ExitCode;

use super::screen::Screen;
use crate::cli::plan::Planned;
use crate::config::sweep::LoadParameter;
use crate::drive::error::RunError;
use crate::drive::otel::OtelTarget;
use crate::drive::plan::{Mode, RunPlan};
use crate::drive::session::{self, Done};
use crate::render::report;
use crate::results::document::BenchResult;
use crate::results::search::SearchDoc;

pub(super) async fn run(planned: Planned) -> anyhow::Result<ExitCode> {
    let Planned {
        plan,
        simulator,
        show,
        otel,
        llm_d,
    } = planned;
    let search = matches!(plan.mode, Mode::Search { .. });
    if !show.quiet && !search {
        note!("{}", start_line(&plan));
    }
    open_files(&plan);
    let cores = crate::drive::lanes::cores();
    if let Some(warning) = crate::cli::threads::warning(plan.client_threads, cores) {
        note!("{warning}");
    }
    let mut screen = Screen::new(&plan, show);
    let signals = super::signals::stop_on_signal();
    // A file's time is the kernel's coarse clock's: a second's slack keeps this run's own.
    let began = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
    let done = session::run(&plan, &mut screen, &signals).await;
    screen.end_progress();
    if let Some(sim) = simulator {
        sim.shutdown().await;
    }
    if matches!(plan.mode, Mode::Sweep { .. } | Mode::Stages { .. }) {
        screen.step_table(&plan.output.sweep_doc());
    }
    export_spans(&otel, &screen.saved, show.quiet).await;
    if plan.output.records_parquet {
        records_as_parquet(&plan, began, show.quiet);
    }
    let doc = plan.output.sweep_doc();
    let llm_d_failed = llm_d.is_some_and(|out| !save_llm_d(&plan, &doc, &screen.saved, &out));
    // Stopped (Ctrl-C, SIGTERM, `q`): whatever else happened, the session is not done.
    let stopped = signals.stop.is_cancelled();
    let done = match done {
        Err(RunError::Stopped) => {
            note!("servebench: {}", RunError::Stopped);
            return Ok(ExitCode::from(super::signals::STOPPED));
        }
        done => done?,
    };
    match done {
        Done::Runs => {}
        Done::Stages if !show.quiet => note!(
            "servebench: {} stages saved to {}",
            plan.config.load.shape.stages.len(),
            doc.display()
        ),
        Done::Sweep(d) if !show.quiet => note!(
            "servebench: sweep {} saved to {}",
            if d.complete {
                "complete,"
            } else {
                "incomplete,"
            },
            doc.display()
        ),
        Done::Stages | Done::Sweep(_) => {}
        Done::Search(doc) => return answer(&plan, &doc, show.quiet, stopped),
    }
    Ok(if stopped {
        note!(
            "servebench: stopped before it was done; what was measured is saved, marked incomplete"
        );
        ExitCode::from(super::signals::STOPPED)
    } else if screen.completed == 0 {
        note!("servebench: no request succeeded");
        ExitCode::from(1)
    } else if let Some(why) = screen.stopped_early.take() {
        note!("servebench: stopped early ({why}); what was measured is saved");
        ExitCode::from(1)
    } else if llm_d_failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--save-llm-d`: the session's llm-d report written to `out`; false (with a line saying
/// why) when it could not be: the results are saved already.
fn save_llm_d(
    plan: &RunPlan,
    doc: &std::path::Path,
    saved: &[PathBuf],
    out: &std::path::Path,
) -> bool {
    let sweep = matches!(plan.mode, Mode::Sweep { .. } | Mode::Stages { .. });
    match super::llm_d_out::save(sweep.then_some(doc), saved, out) {
        Ok(()) => {
            note!("servebench: llm-d report written to {}", out.display());
            true
        }
        Err(e) => {
            note!(
                "servebench: llm-d report not written to {}: {e:#}",
                out.display()
            );
            false
        }
    }
}

/// Exports each saved run's own spans (`--otel-file`, `--otel-endpoint`); a failure is a
/// warning line: the results are saved already.
async fn export_spans(otel: &OtelTarget, saved: &[PathBuf], quiet: bool) {
    if !otel.is_set() || saved.is_empty() {
        return;
    }
    // The plan refused an existing file unless --overwrite: this session's spans replace it.
    if let Some(path) = &otel.file {
        let _ = std::fs::remove_file(path);
    }
    for path in saved {
        match otel.export(path).await {
            Ok(n) if !quiet => note!(
                "servebench: spans of {n} requests of {} exported",
                path.display()
            ),
            Ok(_) => {}
            Err(e) => note!("servebench: warning: spans not exported: {e}"),
        }
    }
}

/// `--records-format parquet`: each records file this session wrote (since `began`), also as
/// Parquet; a failure is a warning line, as the JSON Lines records are saved already.
fn records_as_parquet(plan: &RunPlan, began: std::time::SystemTime, quiet: bool) {
    use crate::results::records_parquet::{jsonl_to_parquet, parquet_next_to};
    let written = |p: &PathBuf| {
        let modified = std::fs::metadata(p).and_then(|m| m.modified());
        modified.is_ok_and(|t| t >= began)
    };
    let records = (plan.targets().into_iter())
        .filter(|p| p.to_string_lossy().ends_with(".records.jsonl") && written(p));
    for jsonl in records {
        let out = parquet_next_to(&jsonl);
        match jsonl_to_parquet(&jsonl, &out) {
            Ok(n) if !quiet => note!("servebench: {n} records written to {}", out.display()),
            Ok(_) => {}
            Err(e) => note!("servebench: warning: records not written as Parquet: {e}"),
        }
    }
}

/// `servebench: 1000 requests to URL (openai), rate inf, max concurrency none`.
fn start_line(plan: &RunPlan) -> String {
    let cfg = &plan.config;
    format!(
        "servebench: {} to {} ({}), rate {}, max concurrency {}",
        match &plan.mode {
            Mode::Sweep { param, steps, .. } =>
                format!("sweep of {} over {} values", param.as_str(), steps.len()),
            _ => match cfg.load.shape.window_s() {
                Some(s) => format!("requests for {s} s"),
                None if cfg.workload.dataset.own_schedule().is_some() => {
                    "a trace replay".to_string()
                }
                None => format!("{} requests", cfg.load.num_prompts),
            },
        },
        cfg.url(),
        cfg.backend.as_str(),
        cfg.load.request_rate,
        cfg.load
            .max_concurrency
            .map_or("none".into(), |c| c.to_string())
    )
}

/// A search's probes as a step table, its answer, and its exit code: 1 when no load passed,
/// [`super::signals::STOPPED`] when the search was stopped (its answer then is the highest
/// completed passing probe, and it says where it stopped).
fn answer(plan: &RunPlan, doc: &SearchDoc, quiet: bool, stopped: bool) -> anyhow::Result<ExitCode> {
    let spec = &doc.spec;
    // The probes that ran to their end as a step table, by load (each probe's saved result).
    let dir = &plan.output.dir;
    let mut steps: Vec<(f64, PathBuf, BenchResult)> = (doc.probes.iter())
        .filter(|p| p.stopped.is_none())
        .filter_map(|p| {
            let path = dir.join(&p.result);
            Some((p.value, path.clone(), BenchResult::load(&path).ok()?))
        })
        .collect();
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    if !quiet && !steps.is_empty() {
        let rows: Vec<report::view::TableStep> = (steps.iter())
            .map(|(_, p, r)| report::view::table_step(p, r))
            .collect();
        let files: Vec<PathBuf> = steps.iter().map(|(_, p, _)| p.clone()).collect();
        super::out::out(&report::view::step_table(spec.by, &rows, &files))?;
    }
    // `--cost-per-hour`: what the answer's load costs.
    let cost = (steps.iter())
        .find(|(v, _, _)| Some(*v) == doc.answer)
        .and_then(|(_, _, r)| r.cost?.usd_per_1m_output_tokens)
        .map_or(String::new(), |usd| {
            format!("; ${usd:.4} per 1M output tokens there")
        });
    super::out::out(&answer_line(doc, &cost))?;
    note!(
        "servebench: search saved to {}",
        plan.output.search_doc().display()
    );
    Ok(if stopped || doc.stopped_at.is_some() {
        ExitCode::from(super::signals::STOPPED)
    } else if doc.answer.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The search's answer, one line (docs/metrics.md, "Search"); a stopped search's says where
/// it stopped, and that its answer is the highest *completed* passing probe.
fn answer_line(doc: &SearchDoc, cost: &str) -> String {
    let spec = &doc.spec;
    let unit = match spec.by {
        LoadParameter::RequestRate => "req/s",
        LoadParameter::NumPrefixes => "distinct prefixes",
        _ => "concurrent requests",
    };
    let prefixes = spec.by == LoadParameter::NumPrefixes;
    let stopped_at = doc.stopped_at.map(|at| {
        let why = (doc.probes.iter())
            .find(|p| p.value == at && p.stopped.is_some())
            .and_then(|p| p.stopped.as_deref())
            .map_or("before its probe there began".to_string(), |why| {
                format!("its probe there {why}, neither a pass nor a fail")
            });
        format!("search stopped at {at} {unit} ({why}), not done: ")
    });
    let completed = if stopped_at.is_some() {
        "completed "
    } else {
        ""
    };
    let none_failing = match stopped_at {
        Some(_) => "none before the stop",
        None => "none up to --max",
    };
    let line = match (doc.answer, doc.answer_good_fraction_ci95) {
        (Some(a), Some(_)) if prefixes => format!(
            "most distinct prefixes whose {}measured prefix hit rate stays at least half its designed one: {a} (first failing: {})",
            if completed.is_empty() { "" } else { "completed probe's " },
            doc.first_failing.map_or(none_failing.into(), |f| f.to_string())
        ),
        (Some(a), Some((lo, hi))) => format!(
            "highest {completed}load meeting the SLOs for {:.0}% of requests: {a} {unit} (good fraction 95% CI {:.1}%..{:.1}%; first failing: {}{cost})",
            100.0 * spec.target,
            100.0 * lo,
            100.0 * hi,
            doc.first_failing.map_or(none_failing.into(), |f| format!("{f} {unit}"))
        ),
        _ if prefixes => format!("no {completed}count from {} {unit} up keeps a measured prefix hit rate of half its designed one", spec.start),
        _ => format!("no {completed}load from {} {unit} up meets the SLOs for {:.0}% of requests", spec.start, 100.0 * spec.target),
    };
    format!("{}{line}\n", stopped_at.unwrap_or_default())
}

/// Raises the open-file limit before the first stream opens, and says so when even the raised
/// limit is below what the plan's peak concurrency needs (the run would fail its connections
/// as `connect` errors past it).
fn open_files(plan: &RunPlan) {
    let Some(files) = crate::measure::fds::raise() else {
        return;
    };
    let need = crate::measure::fds::needed(plan.peak_streams(), plan.config.simulated);
    if need > files.soft {
        note!(
            "servebench: warning: up to {} concurrent streams need about {need} open files, but this process may open {} (the system's hard limit; raise it with `ulimit -Hn` as root or in limits.conf)",
            plan.peak_streams(),
            files.soft
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::search::SearchSpec;
    use crate::results::search::Probe;

    fn probe(value: f64, passed: bool, stopped: Option<&str>) -> Probe {
        Probe {
            value,
            good: 10,
            total: 10,
            good_fraction: 1.0,
            passed,
            stopped: stopped.map(String::from),
            result: format!("p{value}.json").into(),
            designed_hit_rate: None,
            measured_hit_rate: None,
        }
    }

    /// A stopped search (by rate or by prefixes) says where it stopped and gives its highest
    /// completed passing probe, never "none up to --max".
    #[test]
    fn a_stopped_search_s_line_says_where_it_stopped() {
        for by in [LoadParameter::RequestRate, LoadParameter::NumPrefixes] {
            let doc = SearchDoc {
                schema_version: 1,
                kind: "search".into(),
                spec: SearchSpec {
                    by,
                    start: 10.0,
                    max: 80.0,
                    precision: 0.05,
                    target: 0.9,
                    max_probes: 30,
                    stop_saturated: false,
                },
                probes: vec![
                    probe(10.0, true, None),
                    probe(20.0, true, None),
                    probe(40.0, false, Some("stopped with 45 planned requests unsent")),
                ],
                answer: Some(20.0),
                first_failing: None,
                answer_good_fraction_ci95: Some((0.7, 1.0)),
                complete: false,
                stopped_at: Some(40.0),
                saturation: None,
                skipped: Vec::new(),
            };
            let line = answer_line(&doc, "");
            assert!(
                line.starts_with("search stopped at 40 ")
                    && line.contains("stopped with 45 planned requests unsent")
                    && line.contains("completed")
                    && line.contains(": 20")
                    && line.contains("none before the stop")
                    && !line.contains("none up to --max"),
                "{line}"
            );
        }
    }
}
