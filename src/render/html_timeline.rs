//! The HTML report's request timeline (docs/analysis.md, "Request timeline"): one row per
//! request of a run (`views::timeline`), its phases in colour on a time axis in seconds, slow
//! inter-token gaps in black, the steady window shaded; a legend, and zoom by CSS alone (radio
//! buttons widen the drawing inside a scroll box), so the page holds no script and fetches
//! nothing.
//!
//! Draws what the timeline holds; computes nothing. The records file's path and every message
//! go through `escape::html`.

use std::fmt::Write as _;

use crate::render::escape::html as esc;
use crate::views::model::{Step, View};
use crate::views::timeline::{timeline, RequestTimeline, Row, Span};

/// The phases as the legend names them, with their CSS class.
const PHASES: [(&str, &str); 7] = [
    ("q", "client queue (scheduled → began)"),
    ("c", "connection setup"),
    ("w", "waiting for the first token (client and network)"),
    ("sq", "server queue (the server's account)"),
    ("pf", "prefill (the server's account)"),
    ("d", "decode (first → last token)"),
    ("f", "failed (sent → end)"),
];

/// The timeline's styles (phase colours, zoom levels); part of the page's one style sheet.
pub const STYLE: &str = ".tl .q{fill:#c7c7c7}.tl .c{fill:#f0a030}.tl .w{fill:#9ecae1}.tl .sq{fill:#9467bd}
.tl .pf{fill:#e377c2}.tl .d{fill:#1f77b4}.tl .f{fill:#d62728}.tl .s{fill:#111}.tl .steady{fill:#2ca02c;opacity:.08}
.tl .ax{stroke:#555;stroke-width:1}.tl .grid{stroke:#ddd;stroke-width:.5}.tl text{font-size:11px;fill:#333}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:13px;margin:6px 0}.legend span.sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
.sw.q{background:#c7c7c7}.sw.c{background:#f0a030}.sw.w{background:#9ecae1}.sw.sq{background:#9467bd}.sw.pf{background:#e377c2}
.sw.d{background:#1f77b4}.sw.f{background:#d62728}.sw.s{background:#111}
.tlbox{overflow:auto;max-height:80vh;border:1px solid #eee}.tlbox svg{width:100%;max-width:none;border:0;display:block}
.zoom{font-size:13px}.zoom input{margin-left:10px}
.z2:checked~.tlbox svg{width:200%}.z4:checked~.tlbox svg{width:400%}.z8:checked~.tlbox svg{width:800%}.z16:checked~.tlbox svg{width:1600%}";

/// The timeline section of `view`: the last step with a records file; a line saying the
/// records file is needed for a servebench result without one; nothing for an import.
pub fn section(view: &View, slow_itl_ms: f64) -> String {
    let step = view.steps().filter(|st| st.records_file.is_some()).last();
    let Some(step) = step else {
        return match view.steps().filter(|st| st.judged.is_some()).last() {
            Some(st) => missing(st),
            None => String::new(),
        };
    };
    let Some(file) = &step.records_file else {
        return String::new();
    };
    let mut h = String::from("<h2 id=\"timeline\">Request timeline</h2>\n");
    match timeline(file, step.steady_window_ns, slow_itl_ms) {
        Ok(t) if t.rows.is_empty() => {
            let _ = writeln!(
                h,
                "<p class=\"note\">The records file <code>{}</code> holds no measured request to draw.</p>",
                esc(&file.display().to_string())
            );
        }
        Ok(t) => draw(&mut h, &t, &file.display().to_string()),
        Err(e) => {
            let _ = writeln!(
                h,
                "<p class=\"note\">No timeline: {}</p>",
                esc(&e.to_string())
            );
        }
    }
    h
}

fn missing(step: &Step) -> String {
    let source = step.source.as_ref().map(|p| p.display().to_string());
    let beside = source
        .as_deref()
        .map(|s| format!(" (looked for beside <code>{}</code>)", esc(s)))
        .unwrap_or_default();
    format!(
        "<h2 id=\"timeline\">Request timeline</h2>\n<p class=\"note\">The request timeline needs \
         the run's records file (<code>.records.jsonl</code>), which was not found{beside}.</p>\n"
    )
}

/// Width of the drawing, in its own units, and its margins.
const W: f64 = 1000.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 8.0;
const BOTTOM: f64 = 34.0;

fn draw(h: &mut String, t: &RequestTimeline, file: &str) {
    let n = t.rows.len();
    let row_h = (600.0 / n as f64).clamp(0.3, 10.0);
    let plot_h = row_h * n as f64;
    let height = TOP + plot_h + BOTTOM;
    let span = t.span_s.max(1e-6);
    let sx = (W - LEFT - RIGHT) / span;
    let x = |s: f64| LEFT + s.clamp(0.0, span) * sx;
    let _ = writeln!(
        h,
        "<p>One row per request, {}; from <code>{}</code>. Gaps between output chunks longer than \
         {} ms are black ({} in the rows drawn). Rows with the server's queue or prefill: {}.{}</p>",
        esc(&t.sampling()),
        esc(file),
        t.slow_itl_ms,
        t.rows.iter().map(|r| r.slow_count).sum::<u64>(),
        t.server_rows,
        dropped(t)
    );
    h.push_str("<div class=\"legend\">");
    for (class, name) in PHASES
        .iter()
        .copied()
        .chain([("s", "slow inter-token gap")])
    {
        let _ = write!(h, "<span><span class=\"sw {class}\"></span>{name}</span>");
    }
    if t.steady.is_some() {
        h.push_str(
            "<span><span class=\"sw\" style=\"background:#d5ecd5\"></span>steady window</span>",
        );
    }
    h.push_str("</div>\n");
    let _ = write!(
        h,
        "<figure class=\"tl\" data-rows=\"{n}\" data-requests=\"{}\"><div class=\"zoom\">Zoom:",
        t.total
    );
    for (i, z) in [1, 2, 4, 8, 16].iter().enumerate() {
        let checked = if i == 0 { " checked" } else { "" };
        let _ = write!(
            h,
            "<input type=\"radio\" name=\"tlzoom\" id=\"tlz{z}\" class=\"z{z}\"{checked}>\
             <label for=\"tlz{z}\">{z}×</label>"
        );
    }
    h.push_str(" (then scroll)</div>\n<div class=\"tlbox\">");
    let _ = writeln!(
        h,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {height:.1}\" role=\"img\" \
         aria-label=\"Request timeline\">"
    );
    if let Some((a, z)) = t.steady {
        let _ = writeln!(
            h,
            "<rect class=\"steady\" x=\"{:.2}\" y=\"{TOP}\" width=\"{:.2}\" height=\"{plot_h:.2}\"/>",
            x(a),
            (x(z) - x(a)).max(0.0)
        );
    }
    axes(h, span, sx, plot_h, n);
    for (i, r) in t.rows.iter().enumerate() {
        row(h, r, TOP + i as f64 * row_h, row_h, &x);
    }
    h.push_str("</svg></div></figure>\n");
}

/// What the sampling left out besides the evenly chosen rows.
fn dropped(t: &RequestTimeline) -> String {
    let mut out = String::new();
    if t.disordered > 0 {
        let _ = write!(
            out,
            " {} records with times out of order were left out.",
            t.disordered
        );
    }
    if t.unreadable_lines > 0 {
        let _ = write!(
            out,
            " {} lines of the file were not records.",
            t.unreadable_lines
        );
    }
    out
}

/// The time axis (seconds, ticks at 1, 2 or 5 × 10^k) and the request axis.
fn axes(h: &mut String, span: f64, sx: f64, plot_h: f64, n: usize) {
    let base = TOP + plot_h;
    let raw = span / 8.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let _ = writeln!(
        h,
        "<line class=\"ax\" x1=\"{LEFT}\" y1=\"{base:.2}\" x2=\"{:.2}\" y2=\"{base:.2}\"/>\
         <line class=\"ax\" x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{base:.2}\"/>",
        W - RIGHT
    );
    let mut k = 0.0;
    while k <= span + step * 1e-9 {
        let px = LEFT + k * sx;
        let digits = if step >= 1.0 {
            0
        } else {
            (-step.log10()).ceil() as usize
        };
        let _ = writeln!(
            h,
            "<line class=\"grid\" x1=\"{px:.2}\" y1=\"{TOP}\" x2=\"{px:.2}\" y2=\"{base:.2}\"/>\
             <text x=\"{px:.2}\" y=\"{:.2}\" text-anchor=\"middle\">{k:.digits$}</text>",
            base + 13.0
        );
        k += step;
    }
    let _ = writeln!(
        h,
        "<text class=\"xlabel\" x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"middle\">time since the first scheduled send (s)</text>\
         <text class=\"ylabel\" x=\"12\" y=\"{:.2}\" text-anchor=\"middle\" transform=\"rotate(-90 12 {:.2})\">requests, in schedule order</text>\
         <text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"end\">1</text><text x=\"{:.2}\" y=\"{base:.2}\" text-anchor=\"end\">{n}</text>",
        (LEFT + W - RIGHT) / 2.0,
        base + 28.0,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0,
        LEFT - 4.0,
        TOP + 9.0,
        LEFT - 4.0,
    );
}

/// One request's row: its phases, then its slow gaps over them.
fn row(h: &mut String, r: &Row, y: f64, row_h: f64, x: &dyn Fn(f64) -> f64) {
    let fmt = |v: Option<f64>| v.map_or("—".into(), |v| format!("{v:.3} s"));
    let outcome = r
        .failure
        .map_or("ok".to_string(), |f| format!("failed: {f}"));
    let _ = write!(
        h,
        "<g class=\"rq\"><title>request {}: scheduled {:.3} s, sent {:.3} s, first token {}, last \
         token {}, end {:.3} s; {}; {} slow gaps</title>",
        r.id,
        r.scheduled,
        r.sent,
        fmt(r.first_token),
        fmt(r.last_token),
        r.end,
        esc(&outcome),
        r.slow_count
    );
    let hh = (row_h * 0.85).max(0.3);
    let mut rect = |class: &str, (a, z): Span| {
        let w = (x(z) - x(a)).max(0.0);
        if w > 0.0 || class == "d" {
            let _ = write!(
                h,
                "<rect class=\"{class}\" x=\"{:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{hh:.2}\"/>",
                x(a),
                w.max(0.3)
            );
        }
    };
    rect("q", (r.scheduled, r.began));
    if let Some(c) = r.connect {
        rect("c", c);
    }
    let wait_end = r.first_token.unwrap_or(r.end);
    if r.failure.is_some() {
        rect("f", (r.sent, r.end));
    } else {
        rect("w", (r.sent, wait_end));
    }
    if let Some(q) = r.server_queue {
        rect("sq", q);
    }
    if let Some(p) = r.prefill {
        rect("pf", p);
    }
    if let (Some(a), Some(z)) = (r.first_token, r.last_token) {
        rect("d", (a, z));
    }
    for s in &r.slow {
        rect("s", *s);
    }
    h.push_str("</g>\n");
}
