//! A trace's analysis (`results::trace_stats::TraceAnalysis`) as aligned text and as JSON.
//! It formats and computes nothing; the file's name, the one string from outside, is escaped
//! for the terminal (`escape::terminal_line`), and JSON escapes it by itself.

use std::fmt::Write;

use crate::render::escape;
use crate::results::trace_stats::{Lengths, TraceAnalysis};

fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let value = value.to_string();
    let _ = writeln!(out, "{label:<40} {}", escape::terminal_line(&value));
}

fn lengths(out: &mut String, label: &str, l: &Lengths) {
    let value = format!(
        "{} / {:.2} / {:.0} / {:.0} / {:.0} / {:.0}",
        l.count, l.mean, l.p50, l.p90, l.p99, l.max
    );
    line(out, label, value);
}

fn percent(v: f64) -> String {
    format!("{:.2}%", v * 100.0)
}

/// The aligned text report.
pub fn text(a: &TraceAnalysis) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:=^50}", " Trace analysis ");
    line(&mut out, "File:", &a.file);
    line(&mut out, "Requests:", a.requests);
    line(&mut out, "Duration (s):", format!("{:.3}", a.duration_s));
    let _ = writeln!(out, "{:-^50}", "Lengths (tokens)");
    line(&mut out, "", "count / mean / p50 / p90 / p99 / max");
    lengths(&mut out, "Input:", &a.input);
    match &a.output {
        Some(o) => lengths(&mut out, "Output:", o),
        None => line(
            &mut out,
            "Output:",
            "none given (the replay's --output-len)",
        ),
    }
    let r = &a.rate;
    let _ = writeln!(
        out,
        "{:-^50}",
        format!("Arrival rate ({} s windows)", r.window_s)
    );
    line(&mut out, "Windows:", r.windows);
    line(&mut out, "Mean (req/s):", format!("{:.3}", r.mean_per_s));
    line(
        &mut out,
        "Peak (req/s):",
        format!("{:.3} (the window from {:.3} s)", r.peak_per_s, r.peak_at_s),
    );
    if let Some(s) = &a.sessions {
        let _ = writeln!(out, "{:-^50}", "Sessions");
        line(&mut out, "Sessions:", s.count);
        lengths(&mut out, "Turns per session:", &s.turns);
    }
    let Some(u) = &a.reuse else {
        line(&mut out, "Prefix reuse:", "no request carries hash_ids");
        return out;
    };
    let _ = writeln!(
        out,
        "{:-^50}",
        format!("Prefix reuse ({}-token blocks)", u.block_size)
    );
    line(&mut out, "Requests with hash_ids:", u.requests);
    line(
        &mut out,
        "Blocks / distinct:",
        format!("{} / {}", u.blocks, u.distinct),
    );
    line(
        &mut out,
        "Blocks seen before:",
        percent(u.reused_block_share),
    );
    line(
        &mut out,
        "Tokens seen before (unbounded cache):",
        percent(u.reused_token_share),
    );
    let _ = writeln!(out, "{:-^50}", "LRU prefix cache hit rate");
    for c in &a.cache {
        line(
            &mut out,
            &format!("{} blocks:", c.cache_blocks),
            format!("{} ({} tokens)", percent(c.hit_rate), c.hit_tokens),
        );
    }
    out
}

/// The analysis as one JSON document.
pub fn json(a: &TraceAnalysis) -> String {
    let mut s = serde_json::to_string_pretty(a).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::trace_stats::{analyze, Spec, TraceLine};

    /// A file's name from outside reaches the terminal escaped; the text and JSON carry the
    /// same figures.
    #[test]
    fn the_file_name_is_escaped_and_the_figures_printed() {
        let line = |at_ms, ids: Vec<u64>| TraceLine {
            at_ms,
            input: ids.len() as u64 * 2,
            output: Some(5),
            session: None,
            blocks: ids.into_iter().map(|i| (i, 2)).collect(),
        };
        let lines = [line(0.0, vec![1, 2]), line(500.0, vec![1, 3])];
        let spec = Spec {
            block: 2,
            window_s: 1.0,
            cache_blocks: vec![10],
        };
        let a = analyze("evil\u{1b}[31m.jsonl", &lines, &spec);
        let t = text(&a);
        assert!(
            !t.contains('\u{1b}') && t.contains("evil\\x1b[31m.jsonl"),
            "{t}"
        );
        let row = |label: &str, value: &str| format!("{label:<40} {value}");
        assert!(t.contains(&row("Blocks seen before:", "25.00%")), "{t}");
        assert!(t.contains(&row("10 blocks:", "25.00% (2 tokens)")), "{t}");
        assert!(t.contains(&row("Peak (req/s):", "2.000")), "{t}");
        let j: serde_json::Value = serde_json::from_str(&json(&a)).unwrap();
        assert_eq!(j["cache"][0]["hit_tokens"], 2);
        assert_eq!(j["rate"]["per_window"], serde_json::json!([2]));
    }
}
