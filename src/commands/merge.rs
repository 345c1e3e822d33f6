//! `servebench merge`: shard results into one result, as if one process had run them.

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
    Ok(ExitCode::SUCCESS)
}
