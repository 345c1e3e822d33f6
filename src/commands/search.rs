//! `servebench search`: the highest load that meets the SLOs; prints the answer.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::SearchArgs;
use crate::config::search::axis_word;
use crate::config::sweep::LoadParameter;
use crate::drive::run;
use crate::drive::search::{run_search, Probes};
use crate::render::report;
use crate::results::document::BenchResult;
use crate::workload::PromptTokenizer;

pub async fn search(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let spec = args.spec().map_err(anyhow::Error::msg)?;
    let (server, cfg, scrape) = super::run::server_and_config(&args.run).await?;
    // Resolved once for every probe of the search.
    let tokenizer = PromptTokenizer::resolve(cfg.workload.tokenizer.as_deref())?;
    let stem = super::result_stem(args.run.result_filename.as_deref(), || {
        format!(
            "search-{}",
            run::default_stem(
                &cfg,
                &crate::measure::clock::Clock::start().started_at_compact()
            )
        )
    });
    let secrets = args.run.secrets();
    let signals = super::stop_on_signal();
    let probes = Probes {
        base: &cfg,
        tokenizer: &tokenizer,
        secrets: &secrets,
        dir: args.run.result_dir.clone(),
        stem,
        scrape,
        preflight: !args.run.no_preflight,
        overwrite: args.run.overwrite,
        abort: signals.abort.clone(),
    };
    let quiet = args.run.quiet;
    let outcome = run_search(&spec, &probes, signals.stop.clone(), |doc| {
        if let (false, Some(p)) = (quiet, doc.probes.last()) {
            note!(
                "servebench: probe {} at {} {}: {}/{} good ({:.1}%) -> {}",
                doc.probes.len(),
                axis_word(args.by).unwrap_or_default(),
                p.value,
                p.good,
                p.total,
                100.0 * p.good_fraction,
                if p.passed { "pass" } else { "fail" }
            );
        }
    })
    .await;
    if let Some(sim) = server {
        sim.shutdown().await;
    }
    let doc = outcome?;
    let unit = match spec.by {
        LoadParameter::RequestRate => "req/s",
        _ => "concurrent requests",
    };
    // The probes as a step table, by load (each probe's saved result).
    let dir = probes
        .doc_path()
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
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
        super::out(&report::view::step_table(spec.by, &rows, &files))?;
    }
    // `--cost-per-hour`: what the answer's load costs.
    let cost = (steps.iter())
        .find(|(v, _, _)| Some(*v) == doc.answer)
        .and_then(|(_, _, r)| r.cost?.usd_per_1m_output_tokens)
        .map_or(String::new(), |usd| {
            format!("; ${usd:.4} per 1M output tokens there")
        });
    super::out(&match (doc.answer, doc.answer_good_fraction_ci95) {
        (Some(a), Some((lo, hi))) => format!(
            "highest load meeting the SLOs for {:.0}% of requests: {a} {unit} (good fraction 95% CI {:.1}%..{:.1}%; first failing: {}{cost})\n",
            100.0 * spec.target,
            100.0 * lo,
            100.0 * hi,
            doc.first_failing.map_or("none up to --max".into(), |f| format!("{f} {unit}"))
        ),
        _ => format!("no load from {} {unit} up meets the SLOs for {:.0}% of requests\n", spec.start, 100.0 * spec.target),
    })?;
    note!(
        "servebench: search saved to {}",
        probes.doc_path().display()
    );
    Ok(if doc.answer.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
