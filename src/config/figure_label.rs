//! A figure's name for people: [`FigureKey::label`] ("P99 TTFT", "Output throughput") and
//! [`FigureKey::label_with_unit`] ("P99 TTFT (ms)"), read from the same typed key that gives
//! the figure its unit (`figure.rs`), so tables and first screens never show a raw key such
//! as `mean_ttft_part_client_queue_ms`. Pure values.
//!
//! A run figure without an entry in [`RUN_LABELS`] is named from its key, spaces for
//! underscores, its unit suffix dropped; to name one better, add its row there.

use super::figure::{CostFigure, FigureKey, RunFigure, TtftPart};
use super::metric::{percentile_word, Metric, Stat};

/// The run figures' labels (the unit is added by [`FigureKey::label_with_unit`]).
const RUN_LABELS: &[(RunFigure, &str)] = &[
    (RunFigure::Completed, "Completed requests"),
    (RunFigure::Failed, "Failed requests"),
    (RunFigure::Duration, "Duration"),
    (RunFigure::RequestThroughput, "Request throughput"),
    (RunFigure::RequestGoodput, "Request goodput"),
    (RunFigure::OutputThroughput, "Output throughput"),
    (RunFigure::TotalTokenThroughput, "Total token throughput"),
    (RunFigure::TotalInputTokens, "Input tokens"),
    (RunFigure::TotalOutputTokens, "Output tokens"),
    (RunFigure::MaxOutputTokensPerS, "Peak output rate (any 1 s)"),
    (RunFigure::MaxConcurrentRequests, "Most requests in flight"),
    (RunFigure::TotalInputSequences, "Input sequences"),
    (
        RunFigure::InputSequenceThroughput,
        "Input sequence throughput",
    ),
    (RunFigure::TotalReasoningTokens, "Reasoning tokens"),
    (RunFigure::TotalAnswerTokens, "Answer tokens"),
    (RunFigure::ReasoningShare, "Share of output spent reasoning"),
    (RunFigure::ReasoningThroughput, "Reasoning throughput"),
    (RunFigure::AnswerThroughput, "Answer throughput"),
    (
        RunFigure::SpecDecodeAcceptanceRate,
        "Speculative acceptance rate",
    ),
    (
        RunFigure::SpecDecodeAcceptanceLength,
        "Speculative acceptance length",
    ),
    (
        RunFigure::DesignedPrefixHitRate,
        "Prefix-cache hit rate, designed",
    ),
    (
        RunFigure::MeasuredPrefixHitRate,
        "Prefix-cache hit rate, measured",
    ),
    (RunFigure::CorrectRate, "Answers valid against the schema"),
    (RunFigure::JsonRate, "Answers that parsed as JSON"),
    (
        RunFigure::MeanToolCallTtft,
        "Mean time to first tool-call token",
    ),
    (RunFigure::MeanToolCallTokens, "Mean tokens per tool call"),
    (RunFigure::TotalImages, "Images sent"),
    (
        RunFigure::MeanMediaTokensPerRequest,
        "Mean media tokens per request",
    ),
    (RunFigure::MediaTokensPerImage, "Media tokens per image"),
    (RunFigure::TotalVideos, "Videos sent"),
    (RunFigure::MediaTokensPerVideo, "Media tokens per video"),
    (RunFigure::MeanRequestBytes, "Mean request body"),
    (RunFigure::MeanUploadMs, "Mean upload time"),
    (RunFigure::P99UploadMs, "P99 upload time"),
    (RunFigure::TotalInputAudioS, "Audio sent"),
    (RunFigure::Rtfx, "Real-time factor (run)"),
    (
        RunFigure::MeanRequestRtfx,
        "Mean real-time factor per request",
    ),
    (
        RunFigure::MedianRequestRtfx,
        "Median real-time factor per request",
    ),
];

impl FigureKey {
    /// The figure's name for people, without its unit.
    pub fn label(&self) -> String {
        match self {
            FigureKey::Run(r) => RUN_LABELS
                .iter()
                .find(|(k, _)| k == r)
                .map_or_else(|| from_key(r.name()), |(_, l)| (*l).to_string()),
            FigureKey::Latency(k) => {
                let metric = metric_label(k.metric);
                match k.stat {
                    Stat::Mean => format!("Mean {metric}"),
                    Stat::Median => format!("Median {metric}"),
                    Stat::Percentile(p) => format!("P{} {metric}", percentile_word(p)),
                    Stat::Std => format!("Std. deviation of {metric}"),
                }
            }
            FigureKey::Cost(c) => match c {
                CostFigure::UsdPer1mOutputTokens => "Cost per 1M output tokens".into(),
                CostFigure::UsdPer1mTotalTokens => "Cost per 1M tokens (input + output)".into(),
                CostFigure::JoulesPerOutputToken => "GPU energy per output token".into(),
            },
            FigureKey::TtftPart(p) => format!("Mean TTFT part: {}", part_label(*p)),
            FigureKey::Llmperf(l) => {
                format!("llmperf's {}", from_key(&l.name()["llmperf_".len()..]))
            }
            FigureKey::Job(j) => from_key(j.name()),
            FigureKey::Account(a) => a.label().into(),
            FigureKey::Other(s) => s.clone(),
        }
    }

    /// The label and its unit in parentheses ("P99 TTFT (ms)"); a figure without a unit, or
    /// a fraction, has none.
    pub fn label_with_unit(&self) -> String {
        match self.unit().map(|u| u.as_str()) {
            Some(u) if u != "fraction" => format!("{} ({u})", self.label()),
            _ => self.label(),
        }
    }
}

fn metric_label(m: Metric) -> &'static str {
    match m {
        Metric::Ttft => "TTFT",
        Metric::Tpot => "TPOT",
        Metric::Itl => "ITL",
        Metric::E2el => "end-to-end latency",
        Metric::Ttst => "time to second token",
        Metric::OutputTpsPerUser => "output tokens/s per user",
    }
}

fn part_label(p: TtftPart) -> &'static str {
    match p {
        TtftPart::ClientQueue => "client queue",
        TtftPart::ConnectionSetup => "connection setup",
        TtftPart::ServerQueue => "server queue",
        TtftPart::Prefill => "prefill",
        TtftPart::FirstTokenTransfer => "first-token transfer",
        TtftPart::Rest => "rest (no server part)",
    }
}

/// A key as words: `mean_job_input_tokens` → "Mean job input tokens" (a `_ms`/`_s` suffix,
/// which the unit says, dropped).
fn from_key(key: &str) -> String {
    let key = (key.strip_suffix("_ms"))
        .or_else(|| key.strip_suffix("_s"))
        .unwrap_or(key);
    let words: Vec<String> = (key.split('_'))
        .map(|w| match w {
            "jct" | "ttft" | "tpot" | "itl" | "e2el" | "rtfx" => w.to_uppercase(),
            _ => w.to_string(),
        })
        .collect();
    let words = words.join(" ");
    let mut c = words.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_figures_for_people_with_units() {
        let l = |k: &str| FigureKey::named(k).label_with_unit();
        assert_eq!(l("p99_ttft_ms"), "P99 TTFT (ms)");
        assert_eq!(l("p99.9_itl_ms"), "P99.9 ITL (ms)");
        assert_eq!(l("mean_e2el_ms"), "Mean end-to-end latency (ms)");
        assert_eq!(l("output_throughput"), "Output throughput (tokens/s)");
        assert_eq!(l("request_goodput"), "Request goodput (requests/s)");
        assert_eq!(
            l("mean_ttft_part_client_queue_ms"),
            "Mean TTFT part: client queue (ms)"
        );
        assert_eq!(
            l("usd_per_1m_total_tokens"),
            "Cost per 1M tokens (input + output) (USD/1M tokens)"
        );
        assert_eq!(l("mean_jct_ms"), "Mean JCT (ms)");
        assert_eq!(
            l("measured_prefix_hit_rate"),
            "Prefix-cache hit rate, measured"
        );
        assert_eq!(l("some_new_key"), "some_new_key");
    }

    #[test]
    fn every_run_figure_has_a_label_that_is_not_its_key() {
        for r in RunFigure::ALL {
            let label = FigureKey::Run(r).label();
            assert!(!label.contains('_'), "{label}");
            assert!(RUN_LABELS.iter().any(|(k, _)| *k == r), "{r:?}");
        }
    }
}
