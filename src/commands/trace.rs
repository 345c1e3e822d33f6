//! `servebench trace anonymize IN OUT` and `servebench trace analyze FILE`: traces people can
//! share. Anonymize writes the trace (`workload::anonymize`) and says what it wrote on stderr;
//! analyze reads one (`results::trace_stats`) and prints its figures in the format asked for
//! (`render::print`). A bad file is refused in one line naming it and the line (exit 2).

use std::process::ExitCode;

use anyhow::Context;

use crate::cli::trace_share::{AnalyzeArgs, AnonymizeArgs, TraceCommand, TraceShareArgs};
use crate::render::print::{self, TraceDoc};
use crate::results::trace_stats::{self, Spec};
use crate::tokenizer::Tokenizer;
use crate::workload::anonymize::{self, Tokens};

pub fn trace(args: TraceShareArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        TraceCommand::Anonymize(a) => anonymize(a),
        TraceCommand::Analyze(a) => analyze(a),
    }
}

/// `--tokenizer`: words when not given (or `words`); `server` is refused, as these commands
/// talk to no server.
fn tokenizer(spec: Option<&str>) -> anyhow::Result<Option<Tokenizer>> {
    match spec {
        None | Some("words") => Ok(None),
        Some("server") => Err(anonymize::AnonymizeError::ServerTokenizer.into()),
        Some(name) => Ok(Some(Tokenizer::load(name).context("--tokenizer")?)),
    }
}

fn anonymize(args: AnonymizeArgs) -> anyhow::Result<ExitCode> {
    let tokens = match tokenizer(args.tokenizer.as_deref())? {
        None => Tokens::Words,
        Some(t) => Tokens::Local(t),
    };
    let s = anonymize::anonymize(
        &args.input,
        &args.output,
        &tokens,
        args.trace_block_size,
        args.overwrite,
    )?;
    note!(
        "servebench: {} written: {} requests from {} lines, {} sessions, {} tokens in {} blocks ({} distinct) of {} tokens",
        args.output.display(),
        s.requests,
        s.lines,
        s.sessions,
        s.tokens,
        s.blocks,
        s.distinct,
        args.trace_block_size
    );
    Ok(ExitCode::SUCCESS)
}

fn analyze(args: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    // The format and the spec first: refused before the file is read.
    let printer = print::printer::<TraceDoc>(args.format)?;
    let spec = Spec {
        block: args.trace_block_size,
        window_s: args.window_s,
        cache_blocks: args.cache_blocks,
    }
    .check()?;
    let tok = tokenizer(args.tokenizer.as_deref())?;
    let count = |text: &str| match &tok {
        Some(t) => t.count(text) as u64,
        None => text.split_whitespace().count() as u64,
    };
    let lines = trace_stats::read(&args.file, spec.block, &count)?;
    let name = args.file.display().to_string();
    let analysis = trace_stats::analyze(&name, &lines, &spec);
    super::out::out(&printer.print(&TraceDoc(analysis))?)?;
    Ok(ExitCode::SUCCESS)
}
