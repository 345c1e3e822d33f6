//! `servebench join RESULT TRACE`: a run's requests joined with the server's own account of
//! each (`results::join`), printed in the format asked for (`render::print`), to stdout or a
//! file. A trace that matches nothing, or cannot be read, is an error naming the file.

use std::process::ExitCode;

use crate::cli::trace::JoinArgs;
use crate::render::print::{self, JoinDoc};
use crate::results::document::BenchResult;
use crate::results::join;

pub fn join(args: JoinArgs) -> anyhow::Result<ExitCode> {
    // The format first: a pair that does not exist is refused before anything is read.
    let printer = print::printer::<JoinDoc>(args.format)?;
    let joined = join::join_files(&args.result, &args.trace)?;
    if joined.duplicate_ids > 0 {
        note!(
            "servebench: warning: {} id(s) on more than one span or request (the first '{}'): none of them joined",
            joined.duplicate_ids,
            joined.first_duplicate.as_deref().unwrap_or("")
        );
    }
    if joined.implausible > 0 {
        note!(
            "servebench: warning: {} span(s) implausible, left out of every figure (listed in the report)",
            joined.implausible
        );
    }
    if args.save {
        // Read again as it is now, and written whole in place: nothing else of it changes.
        let mut result = BenchResult::load(&args.result)?;
        result.join = Some(joined.figures());
        result.save(&args.result)?;
        note!(
            "servebench: the join's figures saved in {}",
            args.result.display()
        );
    }
    let text = printer.print(&JoinDoc(joined))?;
    match &args.output {
        Some(out) => {
            print::write_file(out, &text)?;
            note!("servebench: join written to {}", out.display());
        }
        None => super::out::out(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}
