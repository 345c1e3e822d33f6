//! A join (`results::join::Join`: each request with the server's account of it) as text, CSV
//! (a row per joined request), JSON and one HTML page. It formats and computes nothing; every
//! string that came from the trace or the records (ids, reasons) is escaped for its output
//! (`escape`).

use std::fmt::Write;

use crate::render::escape;
use crate::results::join::Join;

/// A CSV cell of milliseconds, empty for none.
fn cell(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| format!("{v:.3}"))
}

/// The counts, one `(label, value)` per line.
fn counts(j: &Join) -> Vec<(&'static str, String)> {
    let offset = match &j.clock_offset {
        Some(o) => format!(
            "{:+.3} ms ± {:.3} ms ({}, {} probes)",
            o.offset_ms, o.uncertainty_ms, o.source, o.probes
        ),
        None => {
            "not probed by the run (no way there and back: run with --start-at to probe it)".into()
        }
    };
    vec![
        (
            "Requests (measured, succeeded, with an id)",
            j.requests.to_string(),
        ),
        ("Spans with gen_ai.request.id", j.spans.to_string()),
        ("Other spans", j.other_spans.to_string()),
        ("Joined", j.matched.to_string()),
        ("Requests without a span", j.unmatched_requests.to_string()),
        ("Spans without a request", j.unmatched_spans.to_string()),
        (
            "Ids duplicated (none joined)",
            match &j.first_duplicate {
                Some(first) => format!("{} (the first '{first}')", j.duplicate_ids),
                None => "0".into(),
            },
        ),
        ("Implausible spans (not used)", j.implausible.to_string()),
        ("Split by the span", j.from_spans.to_string()),
        (
            "Split by the answer's own account (no span)",
            j.from_answers.to_string(),
        ),
        (
            "Answers' accounts not believed",
            j.implausible_answers.to_string(),
        ),
        ("Server clock - servebench's", offset),
        ("Server time scale", format!("{}", j.time_scale)),
    ]
}

/// The aligned text report.
pub fn text(j: &Join) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "============ Join: {} with {} ============",
        j.result.display(),
        j.trace.display()
    );
    for (label, value) in counts(j) {
        let _ = writeln!(out, "{label:<46}{value}");
    }
    let _ = writeln!(
        out,
        "--------------------- TTFT split (ms) ---------------------"
    );
    let _ = writeln!(
        out,
        "{:<14}{:>8}{:>12}{:>12}{:>12}",
        "part", "count", "mean", "median", "p99"
    );
    for p in &j.parts {
        let _ = writeln!(
            out,
            "{:<14}{:>8}{:>12.3}{:>12.3}{:>12.3}",
            p.name, p.count, p.mean_ms, p.median_ms, p.p99_ms
        );
    }
    for i in &j.implausible_first {
        let why = escape::terminal_line(&i.why);
        let _ = writeln!(
            out,
            "implausible: {}: {why}",
            escape::terminal_line(&i.request_id)
        );
    }
    out
}

/// A row per joined request.
pub fn csv(j: &Join) -> String {
    let mut out = String::from("id,request_id,span_id,ttft_ms,network_ms,server_ttft_ms,queue_ms,prefill_ms,kv_transfer_ms,server_other_ms,uplink_ms,downlink_ms,source\n");
    for r in &j.joined {
        let quoted = |s: &str| format!("\"{}\"", escape::csv_cell(s).replace('"', "\"\""));
        let _ = writeln!(
            out,
            "{},{},{},{:.3},{:.3},{:.3},{},{},{},{},{},{},{}",
            r.id,
            quoted(&r.request_id),
            quoted(&r.span_id),
            r.ttft_ms,
            r.network_ms,
            r.server_ttft_ms,
            cell(r.queue_ms),
            cell(r.prefill_ms),
            cell(r.kv_transfer_ms),
            cell(r.server_other_ms),
            cell(r.uplink_ms),
            cell(r.downlink_ms),
            r.source.as_str(),
        );
    }
    out
}

/// The whole join, every request included.
pub fn json(j: &Join) -> String {
    serde_json::to_string_pretty(j).unwrap_or_default() + "\n"
}

/// One self-contained HTML page: the counts, the split and the implausible spans.
pub fn html(j: &Join) -> String {
    let e = |s: &str| escape::html(s);
    let mut out = String::from("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>servebench join</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:right}td:first-child,th:first-child{text-align:left}</style></head><body>\n");
    let _ = writeln!(
        out,
        "<h1>Join: {} with {}</h1>\n<table>",
        e(&j.result.display().to_string()),
        e(&j.trace.display().to_string())
    );
    for (label, value) in counts(j) {
        let _ = writeln!(out, "<tr><td>{}</td><td>{}</td></tr>", e(label), e(&value));
    }
    out.push_str("</table>\n<h2>TTFT split (ms)</h2>\n<table><tr><th>part</th><th>count</th><th>mean</th><th>median</th><th>p99</th></tr>\n");
    for p in &j.parts {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td></tr>",
            e(&p.name),
            p.count,
            p.mean_ms,
            p.median_ms,
            p.p99_ms
        );
    }
    out.push_str("</table>\n");
    if !j.implausible_first.is_empty() {
        out.push_str("<h2>Implausible spans</h2>\n<ul>\n");
        for i in &j.implausible_first {
            let _ = writeln!(out, "<li>{}: {}</li>", e(&i.request_id), e(&i.why));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</body></html>\n");
    out
}
