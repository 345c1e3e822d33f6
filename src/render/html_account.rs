//! The HTML page's "Server's account" section (docs/metrics.md, "The server's account"): for
//! each step whose answers carried the server's own account of their timing, how many did
//! (coverage, by form, and those flagged implausible), a table of the client's and network's
//! part of TTFT, the server's queue, prefill, decode and ITL (requests, mean, p50, p90, p99,
//! ms), and the disagreements counted by kind. Lays out the result's block
//! (`results::stats::ServerAccount`, as the text report's block prints it); computes nothing.

use std::fmt::Write as _;

use crate::render::escape::html as esc;
use crate::render::format::fmt_load;
use crate::results::stats::{Distribution, ServerAccount};
use crate::views::model::View;

/// The section, empty when no step of `view` has an account.
pub fn section(view: &View) -> String {
    let mut steps = Vec::new();
    for s in &view.series {
        for st in &s.steps {
            let Some(a) = &st.server_account else {
                continue;
            };
            let load = st.load_value(s.parameter).map_or("?".into(), fmt_load);
            steps.push((format!("{} {load}", s.parameter.as_str()), a));
        }
    }
    let mut h = String::new();
    if steps.is_empty() {
        return h;
    }
    h.push_str("<h2 id=\"server_account\">Server's account</h2>\n");
    h.push_str(
        "<p>What the server said of each request's timing in its answer, beside what the \
         client measured: the client+network part of TTFT is the client's TTFT less the \
         server's. All in ms, over the requests whose account had the part.</p>\n",
    );
    let several = steps.len() > 1;
    for (title, a) in steps {
        if several {
            let _ = writeln!(h, "<h3>{}</h3>", esc(&title));
        }
        block(&mut h, a);
    }
    h
}

/// One step's coverage, distributions and disagreements.
fn block(h: &mut String, a: &ServerAccount) {
    let forms: Vec<String> = (a.by_form.seen().iter())
        .map(|(f, n)| format!("{f} {n}"))
        .collect();
    let share = match a.successful_requests {
        0 => String::new(),
        n => format!(
            " ({:.1}%)",
            100.0 * a.requests_with_account as f64 / n as f64
        ),
    };
    let _ = write!(
        h,
        "<p class=\"coverage\">Coverage: <b>{} of {}</b> successful requests carried an account{share}",
        a.requests_with_account, a.successful_requests
    );
    if !forms.is_empty() {
        let _ = write!(h, "; by form: {}", esc(&forms.join(", ")));
    }
    h.push_str(".</p>\n");
    if a.implausible > 0 {
        let _ = writeln!(
            h,
            "<p class=\"note\">{} account(s) flagged implausible, not read.</p>",
            a.implausible
        );
    }
    h.push_str(
        "<div class=\"wide\"><table class=\"account\"><tr><th>part (ms)</th><th>requests</th>\
         <th>mean</th><th>p50</th><th>p90</th><th>p99</th></tr>\n",
    );
    for (name, d) in [
        ("Client+network part of TTFT", &a.client_part_ms),
        ("Server queue", &a.queue_ms),
        ("Server prefill", &a.prefill_ms),
        ("Server decode", &a.decode_ms),
        ("Server ITL", &a.itl_ms),
    ] {
        let _ = writeln!(h, "<tr><td>{name}</td>{}</tr>", cells(d.as_ref()));
    }
    h.push_str("</table></div>\n<table class=\"disagreements\"><tr><th>disagreement</th><th>requests</th></tr>\n");
    for (kind, n) in a.disagreements.all() {
        let class = if n > 0 { " class=\"bad\"" } else { "" };
        let _ = writeln!(h, "<tr><td>{kind}</td><td{class}>{n}</td></tr>");
    }
    h.push_str("</table>\n");
}

/// A distribution's cells: requests, mean, p50, p90, p99 (`—` where unknown).
fn cells(d: Option<&Distribution>) -> String {
    let Some(d) = d else {
        return "<td>0</td><td>—</td><td>—</td><td>—</td><td>—</td>".into();
    };
    let at = |p: f64| d.at(p).map_or_else(|| "—".into(), |v| format!("{v:.2}"));
    format!(
        "<td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td>",
        d.count,
        d.mean,
        at(50.0),
        at(90.0),
        at(99.0)
    )
}
