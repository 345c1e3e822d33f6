//! `servebench report`: any saved or imported document, or a records file, printed in the
//! format asked for (`render::print`), to stdout or, with `--html`, to a file. With
//! `--goodput`, a result's or sweep's goodput is re-judged from its records first; with
//! `--time-slice S`, a result is re-sliced from its records (`results::slices`): its report,
//! page and Markdown show those slices, and its CSV is a row per window.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::ReportArgs;
use crate::config::Slo;
use crate::render::print::{self, Format, RecordsDoc, ResultDoc, SlicesDoc, ViewDoc};
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
    let slow_itl_ms = args.timeline_itl_ms;
    if args.autoscale {
        let text = autoscale_csv(&file, format)?;
        super::out::out(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let text = match (open::kind(&file), args.time_slice) {
        (Kind::Records, _) if !slos.is_empty() => anyhow::bail!(
            "{}: --goodput re-judges a result or a sweep (which name their records), not a records file",
            crate::render::escape::terminal_line(&file.display().to_string())
        ),
        (Kind::Records, None) => print::print(format, || Ok(RecordsDoc { path: file }))?,
        (Kind::Result, None) => print::print(format, || {
            let mut doc = ResultDoc::load(file)?;
            if !slos.is_empty() {
                rejudge(&doc.path, &mut doc.result, &slos)?;
            }
            Ok(ResultDoc { slow_itl_ms, ..doc })
        })?,
        (Kind::View, None) => print::print(format, || {
            Ok(ViewDoc(open::load_judged(&file, &slos)?, slow_itl_ms))
        })?,
        (Kind::Result, Some(seconds)) => resliced(file, seconds, format, &slos)?,
        (_, Some(_)) => anyhow::bail!(
            "--time-slice re-slices a servebench result, and {} is not one (a sweep's steps are results: give one of them)",
            crate::render::escape::terminal_line(&file.display().to_string())
        ),
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

/// `--autoscale`: the result's autoscaler windows as CSV; refused for a document without them.
fn autoscale_csv(file: &std::path::Path, format: Format) -> anyhow::Result<String> {
    print::printer::<print::AutoscaleDoc>(format)?;
    let doc = ResultDoc::load(file.to_path_buf())?;
    let Some(a) = doc.result.autoscale else {
        anyhow::bail!(
            "{}: not an autoscaler benchmark (run --load-shape, --replicas-metric or --replicas-file)",
            crate::render::escape::terminal_line(&file.display().to_string())
        );
    };
    Ok(print::print(format, || Ok(print::AutoscaleDoc(a)))?)
}

/// The result at `file` with its slices re-cut to `seconds`, printed: as CSV, a row per
/// window; in any other format, the result as it prints with those slices (re-judged under
/// `slos` first when given).
fn resliced(file: PathBuf, seconds: f64, format: Format, slos: &[Slo]) -> anyhow::Result<String> {
    // The format is checked before the records are read.
    if format == Format::Csv {
        print::printer::<SlicesDoc>(format)?;
    } else {
        print::printer::<ResultDoc>(format)?;
    }
    let mut doc = ResultDoc::load(file)?;
    if !slos.is_empty() {
        rejudge(&doc.path, &mut doc.result, slos)?;
    }
    let slices = crate::results::slices::reslice(&doc.path, &doc.result, seconds)?;
    if format == Format::Csv {
        return Ok(print::print(format, || Ok(SlicesDoc(slices)))?);
    }
    doc.result.slices = Some(slices);
    doc.result.config.time_slice_s = Some(seconds);
    Ok(print::print(format, || Ok(doc))?)
}
