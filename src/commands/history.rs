//! `servebench history DIR...`: many saved results of one configuration over time
//! (`views::history`), printed in the format asked for (`render::print`), and the
//! `--fail-if-worse` gates on the newest run (exit 1 when one fails; 2 when one cannot be
//! judged or the input is bad).

use std::process::ExitCode;

use crate::cli::history::HistoryArgs;
use crate::config::figure::FigureKey;
use crate::render::print::{self, HistoryDoc};
use crate::views::history::{failed_gates, history as read_history, Ask};

pub fn history(args: HistoryArgs) -> anyhow::Result<ExitCode> {
    let printer = print::printer::<HistoryDoc>(args.format)?;
    let gates: Vec<(FigureKey, f64)> = (args.fail_if_worse.iter())
        .map(|g| (FigureKey::named(&g.metric), g.percent))
        .collect();
    let also: Vec<FigureKey> = gates.iter().map(|(k, _)| k.clone()).collect();
    let ask = Ask {
        keys: &args.key,
        window: usize::from(args.window),
        metrics: (!args.metrics.is_empty()).then_some(args.metrics.as_slice()),
        also: &also,
    };
    let doc = HistoryDoc(read_history(&args.dirs, &ask)?);
    super::out::out(&printer.print(&doc)?)?;
    let failed = failed_gates(&doc.0, &gates)?;
    for line in &failed {
        note!("servebench: {line}");
    }
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
