//! `servebench report`: any saved or imported document, or a records file, printed in the
//! format asked for (`render::print`), to stdout or, with `--html`, to a file; with
//! `--goodput`, a result's or sweep's goodput re-judged from its records first.

use std::process::ExitCode;

use crate::cli::ReportArgs;
use crate::render::print::{self, Format, RecordsDoc, ResultDoc, ViewDoc};
use crate::results::rejudge::rejudge;
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
    let slos = args.goodput;
    let text = match open::kind(&file) {
        Kind::Records if !slos.is_empty() => anyhow::bail!(
            "{}: --goodput re-judges a result or a sweep (which name their records), not a records file",
            file.display()
        ),
        Kind::Records => print::print(format, || Ok(RecordsDoc { path: file }))?,
        Kind::Result => print::print(format, || {
            let mut doc = ResultDoc::load(file)?;
            if !slos.is_empty() {
                rejudge(&doc.path, &mut doc.result, &slos)?;
            }
            Ok(doc)
        })?,
        Kind::View => print::print(format, || Ok(ViewDoc(open::load_judged(&file, &slos)?)))?,
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
