//! The HTML page's "Time slices" section (`--time-slice`; docs/metrics.md, "Time slices"): a
//! chart per figure over the run's time, one point per window at its middle, for each step
//! that has slices: requests (sent, completed, failed, in flight at the window's end), output
//! throughput, request throughput (and goodput under SLOs), and TTFT, ITL, E2EL and the
//! server's queue where known (mean, p50, p90, p99). A window with too few samples for a
//! percentile has no point on that line. Drawn with `plot`'s chart code, as every other chart
//! of the page; computes nothing.

use std::fmt::Write as _;

use crate::render::error::RenderError;
use crate::render::html_figure::figure;
use crate::render::plot::chart::{Chart, Dash, LegendEntry, Line};
use crate::results::stats::slices::{SliceStat, Slices, Window};
use crate::views::model::View;

/// A line's value in one window (`None`: no point there).
type Value = Box<dyn Fn(&Window) -> Option<f64>>;
/// One line's name, color, dash and value.
type Series = (&'static str, usize, Dash, Value);

fn line((name, color, dash, value): &Series, slices: &Slices) -> Line {
    let points = (slices.windows.iter())
        .filter_map(|w| Some(((w.start_s + w.end_s) / 2.0, value(w)?)))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    Line {
        name: (*name).into(),
        color: *color,
        dash: *dash,
        points,
        markers: true,
    }
}

fn chart(name: String, title: String, y_label: &str, slices: &Slices, series: &[Series]) -> Chart {
    Chart {
        name,
        title,
        x_label: "time from the run's first scheduled send (s)".into(),
        y_label: y_label.into(),
        x_log: false,
        y_log: false,
        lines: series.iter().map(|s| line(s, slices)).collect(),
        legend: (series.iter())
            .map(|(name, color, dash, _)| LegendEntry {
                name: (*name).into(),
                color: Some(*color),
                dash: *dash,
            })
            .collect(),
    }
}

/// A latency's four lines, read from the window by `of`.
fn latency(of: fn(&Window) -> Option<&SliceStat>) -> Vec<Series> {
    vec![
        ("mean", 0, Dash::Solid, Box::new(move |w| of(w)?.mean)),
        ("p50", 1, Dash::Dashed, Box::new(move |w| of(w)?.p50)),
        ("p90", 2, Dash::Dashed, Box::new(move |w| of(w)?.p90)),
        ("p99", 3, Dash::Dotted, Box::new(move |w| of(w)?.p99)),
    ]
}

/// Every chart of one step's slices; `step` (from 1) tells steps apart when there are several.
fn charts(slices: &Slices, step: Option<usize>) -> Vec<Chart> {
    let s = slices.seconds;
    let named = |fig: &str| match step {
        Some(i) => format!("slices-step{i}-{fig}"),
        None => format!("slices-{fig}"),
    };
    let titled = |what: &str| match step {
        Some(i) => format!("{what} per {s} s window (step {i})"),
        None => format!("{what} per {s} s window"),
    };
    let count = |v: fn(&Window) -> u64| -> Value { Box::new(move |w| Some(v(w) as f64)) };
    let requests: Vec<Series> = vec![
        ("sent", 0, Dash::Solid, count(|w| w.started)),
        ("completed", 1, Dash::Solid, count(|w| w.completed)),
        ("failed", 3, Dash::Dashed, count(|w| w.failed)),
        (
            "in flight at the end",
            2,
            Dash::Dotted,
            count(|w| w.in_flight),
        ),
    ];
    let mut rates: Vec<Series> = vec![(
        "completed",
        1,
        Dash::Solid,
        Box::new(|w| Some(w.request_throughput)),
    )];
    if slices.windows.iter().any(|w| w.request_goodput.is_some()) {
        rates.push(("goodput", 4, Dash::Dashed, Box::new(|w| w.request_goodput)));
    }
    let tokens: Vec<Series> = vec![(
        "output tokens/s",
        0,
        Dash::Solid,
        Box::new(|w| Some(w.output_throughput)),
    )];
    let mut out = vec![
        chart(
            named("requests"),
            titled("Requests"),
            "requests",
            slices,
            &requests,
        ),
        chart(
            named("output_throughput"),
            titled("Output throughput"),
            "output tokens/s",
            slices,
            &tokens,
        ),
        chart(
            named("request_throughput"),
            titled("Request throughput"),
            "requests/s",
            slices,
            &rates,
        ),
        chart(
            named("ttft"),
            titled("TTFT"),
            "TTFT (ms)",
            slices,
            &latency(|w| Some(&w.ttft_ms)),
        ),
        chart(
            named("itl"),
            titled("ITL"),
            "ITL (ms)",
            slices,
            &latency(|w| Some(&w.itl_ms)),
        ),
        chart(
            named("e2el"),
            titled("E2EL"),
            "E2EL (ms)",
            slices,
            &latency(|w| Some(&w.e2el_ms)),
        ),
    ];
    if slices.windows.iter().any(|w| w.server_queue_ms.is_some()) {
        out.push(chart(
            named("server_queue"),
            titled("Server queue"),
            "server queue (ms)",
            slices,
            &latency(|w| w.server_queue_ms.as_ref()),
        ));
    }
    out
}

/// The section, empty when no step of `view` has slices.
pub fn section(view: &View) -> Result<String, RenderError> {
    let sliced: Vec<&Slices> = (view.steps())
        .filter_map(|s| s.slices.as_ref())
        .filter(|s| !s.windows.is_empty())
        .collect();
    let mut h = String::new();
    if sliced.is_empty() {
        return Ok(h);
    }
    h.push_str("<h2 id=\"slices\">Time slices</h2>\n");
    let _ = writeln!(
        h,
        "<p>Each point is one window, at its middle. Latencies are of the requests that ended \
         in the window, tokens counted where they arrived; a window with fewer than {} samples \
         has no percentile point.</p>",
        sliced[0].min_samples
    );
    for (i, slices) in sliced.iter().enumerate() {
        let step = (sliced.len() > 1).then_some(i + 1);
        for c in charts(slices, step) {
            h.push_str(&figure(&c)?);
        }
    }
    Ok(h)
}
