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
