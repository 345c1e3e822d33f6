//! The latency sections beyond vLLM's: schedule lag and TTFT from the scheduled send, the
//! reasoning and answer phases' first tokens, connection setup, TTFT by turn, TTFT's
//! breakdown and the 95% confidence intervals.

use super::lines::{distribution, line, rule, section};
use crate::config::metric::{percentile_word, Stat};
use crate::config::Metric;
use crate::results::document::BenchResult;
use crate::results::stats::Distribution;

/// Schedule lag, TTFT from the scheduled send (not for `pooled` runs), and the time to the
/// first reasoning and answer tokens.
pub(super) fn scheduling(out: &mut String, result: &BenchResult, pooled: bool) {
    let s = &result.summary;
    let ps = &result.config.metric_percentiles;
    distribution(out, "schedule lag", "ms", s.schedule_lag_ms.as_ref(), ps);
    if !pooled {
        let from_scheduled = s.ttft_from_scheduled_ms.as_ref();
        distribution(out, "TTFT from scheduled", "ms", from_scheduled, ps);
    }
    if s.time_to_first_reasoning_ms.is_some() {
        distribution(
            out,
            "time to 1st reasoning",
            "ms",
            s.time_to_first_reasoning_ms.as_ref(),
            ps,
        );
        distribution(
            out,
            "time to 1st answer",
            "ms",
            s.time_to_first_answer_ms.as_ref(),
            ps,
        );
    }
}

/// Multi-turn runs: TTFT by turn index, mean / p99 and the requests of each turn.
pub(super) fn ttft_by_turn(out: &mut String, result: &BenchResult) {
    let turns = &result.summary.ttft_by_turn;
    if turns.is_empty() {
        return;
    }
    out.push_str(&rule("TTFT by turn", '-'));
    for t in turns {
        let d = &t.ttft_ms;
        let p99 = d.at(99.0).map_or_else(|| "-".into(), |v| format!("{v:.2}"));
        let what = format!("turn {} mean / p99 (ms):", t.turn + 1);
        line(
            out,
            &what,
            format!("{:.2} / {p99} ({} requests)", d.mean, d.count),
        );
    }
}

/// How requests reached the server: new and reused connections, a new connection's setup
/// time, and, where any request opened one, TTFT with that setup included (the cold-start
/// figure; TTFT itself counts from the request's first byte written).
pub(super) fn connection_setup(out: &mut String, result: &BenchResult) {
    let s = &result.summary;
    let ps = &result.config.metric_percentiles;
    if s.new_connections + s.reused_connections == 0 {
        return;
    }
    out.push_str(&rule("Connection setup", '-'));
    line(out, "New connections:", s.new_connections);
    line(out, "Reused connections:", s.reused_connections);
    if s.new_connections == 0 {
        return;
    }
    distribution(out, "connect", "ms", s.connection_setup_ms.as_ref(), ps);
    if s.total_input_sequences.is_some() {
        return;
    }
    distribution(
        out,
        "TTFT incl. connection setup",
        "ms",
        s.ttft_with_setup_ms.as_ref(),
        ps,
    );
}

/// Where the time from the scheduled send to the first token went: the client's queue and
/// connection setup, then TTFT's own parts; each part's mean and p99, "unknown" where no
/// request reported it.
pub(super) fn ttft_breakdown(out: &mut String, result: &BenchResult) {
    let b = &result.summary.ttft_breakdown;
    if result.summary.completed == 0 {
        return;
    }
    out.push_str(&rule("TTFT breakdown (from scheduled)", '-'));
    let p99 = |d: &Distribution| d.at(99.0).map_or_else(|| "-".into(), |v| format!("{v:.2}"));
    for (name, d) in b.parts() {
        let value = d.map_or_else(
            || "unknown".to_string(),
            |d| format!("{:.2} / {}", d.mean, p99(d)),
        );
        line(out, &format!("{name} mean / p99 (ms):"), value);
    }
}

/// The 95% confidence interval of each reported mean, median and percentile that has one
/// (docs/metrics.md, "Confidence intervals").
pub(super) fn intervals(out: &mut String, result: &BenchResult) {
    let c = &result.config;
    let mut lines = Vec::new();
    for m in Metric::ALL {
        let Some(d) = c
            .percentile_metrics
            .contains(&m)
            .then(|| result.summary.metric(m))
            .flatten()
        else {
            continue;
        };
        let stats = [Stat::Mean, Stat::Median];
        for stat in stats
            .into_iter()
            .chain(c.metric_percentiles.iter().map(|&p| Stat::Percentile(p)))
        {
            if let Some([lo, hi]) = d.ci95(stat) {
                let name = match stat {
                    Stat::Percentile(p) => format!("P{}", percentile_word(p)),
                    Stat::Median => "Median".into(),
                    _ => "Mean".into(),
                };
                lines.push((
                    format!("{name} {} (ms):", section(m).1),
                    format!("{lo:.2} .. {hi:.2}"),
                ));
            }
        }
    }
    if lines.is_empty() {
        return;
    }
    out.push_str(&rule("95% confidence intervals", '-'));
    for (label, value) in lines {
        line(out, &label, value);
    }
}
