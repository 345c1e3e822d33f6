//! The hooks block (`--hook`, `--reset-prefix-cache`, `--profile`): each call of the run, in
//! the order made, with when it was made on the run's clock (s), its status (or why none
//! came), how long it took and the start of its answer, every character of which the server
//! chose made safe for a terminal (`lines::line`).

use super::lines::{line, rule};
use crate::results::document::BenchResult;

/// The most characters of an answer shown on its line (the result keeps more).
const SHOWN: usize = 60;

/// The block, where the run made any hook call.
pub(super) fn lines(out: &mut String, result: &BenchResult) {
    if result.hooks.is_empty() {
        return;
    }
    out.push_str(&rule("Hooks", '-'));
    for c in &result.hooks {
        let label = format!("Hook {}:", c.event.as_str());
        let status = match (c.status, &c.error) {
            (_, Some(e)) => format!("failed: {e}"),
            (Some(s), None) if c.failed() => format!("HTTP {s} (failed)"),
            (Some(s), None) => format!("HTTP {s}"),
            (None, None) => "no answer".into(),
        };
        let answer: String = c.answer.chars().take(SHOWN).collect();
        // The path and the answer are the document's: `line` escapes the whole value.
        let value = format!(
            "{} {} {status} at {:.3} s, took {:.1} ms; {answer}",
            c.method.as_str(),
            c.path,
            c.at_s,
            c.took_ms
        );
        line(out, &label, value);
    }
}
