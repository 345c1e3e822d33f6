//! What `run` and `search` do once they have a plan: run it through the one session driver
//! (`drive::session`) with the [`Screen`] as its observer, stop the built-in simulator, print
//! what follows the last run (a sweep's or the stages' step table, a search's answer), and
//! choose the exit code.

use std::path::PathBuf;
use std::process::ExitCode;

use super::screen::Screen;
use crate::cli::plan::Planned;
use crate::config::sweep::LoadParameter;
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
    let done = session::run(&plan, &mut screen, &signals).await;
    screen.end_progress();
    if let Some(sim) = simulator {
        sim.shutdown().await;
    }
    if matches!(plan.mode, Mode::Sweep { .. } | Mode::Stages { .. }) {
        screen.step_table(&plan.output.sweep_doc());
    }
    export_spans(&otel, &screen.saved, show.quiet).await;
    let doc = plan.output.sweep_doc();
    match done? {
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
        Done::Search(doc) => return answer(&plan, &doc, show.quiet),
    }
    Ok(if screen.completed == 0 {
        note!("servebench: no request succeeded");
        ExitCode::from(1)
    } else if let Some(why) = screen.stopped_early.take() {
        note!("servebench: stopped early ({why}); what was measured is saved");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
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

/// A search's probes as a step table, its answer, and its exit code: 1 when no load passed.
fn answer(plan: &RunPlan, doc: &SearchDoc, quiet: bool) -> anyhow::Result<ExitCode> {
    let spec = &doc.spec;
    let unit = match spec.by {
        LoadParameter::RequestRate => "req/s",
        LoadParameter::NumPrefixes => "distinct prefixes",
        _ => "concurrent requests",
    };
    // The probes as a step table, by load (each probe's saved result).
    let dir = &plan.output.dir;
    let mut steps: Vec<(f64, PathBuf, BenchResult)> = (doc.probes.iter())
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
    let prefixes = spec.by == LoadParameter::NumPrefixes;
    super::out::out(&match (doc.answer, doc.answer_good_fraction_ci95) {
        (Some(a), Some(_)) if prefixes => format!(
            "most distinct prefixes whose measured prefix hit rate stays at least half its designed one: {a} (first failing: {})\n",
            doc.first_failing.map_or("none up to --max".into(), |f| f.to_string())
        ),
        (Some(a), Some((lo, hi))) => format!(
            "highest load meeting the SLOs for {:.0}% of requests: {a} {unit} (good fraction 95% CI {:.1}%..{:.1}%; first failing: {}{cost})\n",
            100.0 * spec.target,
            100.0 * lo,
            100.0 * hi,
            doc.first_failing.map_or("none up to --max".into(), |f| format!("{f} {unit}"))
        ),
        _ if prefixes => format!("no count from {} {unit} up keeps a measured prefix hit rate of half its designed one\n", spec.start),
        _ => format!("no load from {} {unit} up meets the SLOs for {:.0}% of requests\n", spec.start, 100.0 * spec.target),
    })?;
    note!(
        "servebench: search saved to {}",
        plan.output.search_doc().display()
    );
    Ok(if doc.answer.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
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
