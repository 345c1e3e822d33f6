//! The first screen of a run and of a sweep: labels with units, intervals, the verdict, SLO
//! attainment, the saturation point.

use super::*;
use crate::config::sweep::LoadParameter;
use crate::config::RequestRate;
use crate::views::model::Origin;

fn key(s: &str) -> FigureKey {
    FigureKey::named(s)
}

fn step(rate: f64, tput: f64, verdict: &str) -> Step {
    let mut s = Step::default();
    s.load.request_rate = Some(RequestRate::PerSecond(rate));
    for (k, v) in [
        ("output_throughput", tput),
        ("request_throughput", tput / 10.0),
        ("mean_ttft_ms", 45.678),
        ("p99_ttft_ms", 99.0),
        ("completed", 100.0),
        ("failed", 0.0),
        ("request_goodput", 9.0),
    ] {
        s.metrics.insert(key(k), v);
    }
    s.intervals.insert(key("mean_ttft_ms"), [40.1, 50.2]);
    s.judged = Some(Judged {
        verdict: Some(verdict.into()),
        reasons: if verdict == "valid" {
            vec![]
        } else {
            vec!["event-loop lag <b>9 ms</b>".into()]
        },
        slos: vec!["ttft ≤ 200 ms".into()],
        good: Some(90),
        measured: 100,
    });
    s
}

fn view(steps: Vec<Step>, parameter: LoadParameter) -> View {
    View {
        label: "sim m".into(),
        origin: Origin::Result,
        format: "servebench".into(),
        path: "r.json".into(),
        series: vec![Series {
            name: "r".into(),
            parameter,
            steps,
        }],
        notes: vec![],
        llmperf_requests: vec![],
    }
}

#[test]
fn a_runs_first_screen_has_labelled_figures_units_intervals_verdict_and_slo() {
    let h = first_screen(&view(
        vec![step(4.0, 1234.5, "CLIENT-BOUND")],
        LoadParameter::NumPrompts,
    ));
    // Labels for people, each value with its unit; the interval where the figure has one.
    assert!(h.contains("<div class=\"label\">Output throughput</div><div class=\"value\">1234.50 <span class=\"unit\">tokens/s</span>"), "{h}");
    assert!(h.contains("<div class=\"label\">Mean TTFT</div><div class=\"value\">45.68 <span class=\"unit\">ms</span> <span class=\"ci\" title=\"95% confidence interval\">95% CI 40.10–50.20</span>"), "{h}");
    assert!(h.contains("<div class=\"label\">P99 TTFT</div>"), "{h}");
    assert!(h.contains("<span class=\"unit\">requests/s</span>"), "{h}");
    // No raw key is shown as text (keys are only data attributes).
    for raw in ["mean_ttft_ms", "output_throughput"] {
        assert!(!h.contains(&format!(">{raw}<")), "{raw}");
    }
    // The verdict and its reasons, escaped.
    assert!(h.contains("<p class=\"verdict bad\">Measurement: <strong>CLIENT-BOUND</strong></p>"));
    assert!(
        h.contains("<li>event-loop lag &lt;b&gt;9 ms&lt;/b&gt;</li>"),
        "{h}"
    );
    assert!(!h.contains("<b>9"));
    // SLO attainment and goodput.
    assert!(h.contains("SLO attainment: <strong>90.0%</strong> (90 of 100 measured requests met ttft ≤ 200 ms); request goodput 9.00 requests/s"), "{h}");
}

#[test]
fn a_run_without_slos_or_verdict_says_so() {
    let mut s = step(1.0, 10.0, "valid");
    s.judged = Some(Judged {
        verdict: None,
        measured: 3,
        ..Judged::default()
    });
    let h = first_screen(&view(vec![s], LoadParameter::NumPrompts));
    assert!(h.contains("Measurement: not judged"), "{h}");
    assert!(h.contains("SLO attainment: no SLOs given"), "{h}");
}

#[test]
fn a_sweeps_first_screen_has_its_saturation_point_and_a_labelled_table() {
    let steps = vec![
        step(1.0, 100.0, "valid"),
        step(2.0, 290.0, "valid"),
        step(4.0, 300.0, "SERVER-LATE"),
    ];
    let h = first_screen(&view(steps, LoadParameter::RequestRate));
    assert!(
        h.contains("<p class=\"saturation\"><strong>Saturation point: request_rate 2 — output throughput 290.00 tokens/s"),
        "{h}"
    );
    for head in [
        "<th>request_rate</th>",
        "<th>Output throughput (tokens/s)</th>",
        "<th>Mean TTFT (ms)</th>",
        "<th>P99 TTFT (ms)</th>",
        "<th>SLO attainment (%)</th>",
        "<th>Measurement</th>",
    ] {
        assert!(h.contains(head), "{head}: {h}");
    }
    assert!(
        h.contains("45.68<br><span class=\"ci\">40.10–50.20</span>"),
        "{h}"
    );
    assert!(h.contains("<td class=\"bad\">SERVER-LATE</td>"), "{h}");
    assert!(
        h.contains("Measurement not valid at request_rate 4: SERVER-LATE"),
        "{h}"
    );
}
