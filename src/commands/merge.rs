//! `servebench merge`: shard results into one result, as if one process had run them. Exit
//! [`super::signals::STOPPED`] when a shard merged was stopped before it was done (the merged
//! result is saved, incomplete): the run the merge stands for was stopped.

use std::process::ExitCode;

use crate::cli::MergeArgs;
use crate::render::report;
use crate::results::merge;

pub fn merge(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let records = args.output.with_extension("records.jsonl");
    crate::results::document::refuse_existing(args.overwrite, [&args.output, &records])?;
    let mut merged = merge::merge(&args.files, args.allow_missing)?;
    for w in &merged.warnings {
        note!("servebench: warning: {w}");
    }
    merged.save(&args.output)?;
    if !args.quiet {
        super::out::out(&report::text(&merged.result))?;
        note!(
            "servebench: {} shards merged into {}",
            merged
                .result
                .merged_from
                .as_ref()
                .map_or(0, |m| m.shards.len()),
            args.output.display()
        );
    }
    if !merged.stopped.is_empty() {
        note!(
            "servebench: the merged run was stopped before it was done: {}",
            merged.stopped.join("; ")
        );
        return Ok(ExitCode::from(super::signals::STOPPED));
    }
    Ok(ExitCode::SUCCESS)
}
