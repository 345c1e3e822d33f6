//! `servebench report`: any saved or imported document, or a records file, printed in the
//! format asked for (`render::print`), to stdout or, with `--html`, to a file.

use std::process::ExitCode;

use crate::cli::ReportArgs;
use crate::render::print::{self, Format, RecordsDoc, ResultDoc, ViewDoc};
use crate::views::open::{self, Kind};

pub fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let format = match (&args.html, args.format) {
        (Some(_), Format::Text | Format::Html) => Format::Html,
        (Some(_), f) => {
            anyhow::bail!("--html writes HTML and --format asks for {f}: give one of them")
        }
        (None, f) => f,
    };
    let file = args.file;
    let text = match open::kind(&file) {
        Kind::Records => print::print(format, || Ok(RecordsDoc { path: file }))?,
        Kind::Result => print::print(format, || {
            let doc = ResultDoc::load(file)?;
            Ok(ResultDoc {
                slow_itl_ms: args.timeline_itl_ms,
                ..doc
            })
        })?,
        Kind::View => print::print(format, || {
            Ok(ViewDoc(open::load(&file)?, args.timeline_itl_ms))
        })?,
    };
    match &args.html {
        Some(out) => {
            print::write_file(out, &text)?;
            note!("servebench: HTML report written to {}", out.display());
        }
        None => super::out::out(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}
