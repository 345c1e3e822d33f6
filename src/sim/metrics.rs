//! The simulated server's own metrics, served at `GET /metrics` in Prometheus' text format.
//!
//! One [`ServerMetrics`] per server, behind a mutex: the engine task updates it once per step;
//! in exact mode the stream handlers update it once at the start and once at the end of each
//! request (never per chunk). [`render`] writes it under vLLM's names or llama.cpp's
//! ([`MetricsFlavor`]); times are simulated seconds (real seconds × `time_scale`).
//!
//! To add a metric: add the field, update it where the engine or `stream/exact.rs` knows the
//! value, and write it in both flavours (or document why one has no equivalent).

use std::fmt::Write as _;

use super::error::SimConfigError;
use super::spec::SpecCounters;

/// Which server's metric names `/metrics` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MetricsFlavor {
    /// `vllm:*` names (also used by the TGI-like preset: clients that scrape vLLM work as-is).
    #[default]
    Vllm,
    /// `llamacpp:*` names, as llama.cpp's server with `--metrics`.
    Llamacpp,
}

impl MetricsFlavor {
    pub fn as_str(self) -> &'static str {
        match self {
            MetricsFlavor::Vllm => "vllm",
            MetricsFlavor::Llamacpp => "llamacpp",
        }
    }
}

impl std::str::FromStr for MetricsFlavor {
    type Err = SimConfigError;
    fn from_str(s: &str) -> Result<Self, SimConfigError> {
        match s {
            "vllm" => Ok(MetricsFlavor::Vllm),
            "llamacpp" | "llama.cpp" => Ok(MetricsFlavor::Llamacpp),
            other => Err(SimConfigError::Unknown {
                what: "metrics flavor",
                name: other.to_string(),
                expected: "vllm or llamacpp".into(),
            }),
        }
    }
}

/// Upper bounds of the TTFT histogram, seconds.
const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];

/// Upper bounds of the time-per-output-token histogram, seconds.
const TPOT_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];

/// A cumulative Prometheus histogram.
#[derive(Clone, Debug)]
pub(crate) struct Histogram {
    bounds: &'static [f64],
    /// Observations per bucket (not cumulative); the last is `+Inf`.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    pub(crate) fn observe(&mut self, v: f64) {
        self.observe_n(v, 1);
    }

    /// Records `n` observations of value `v`.
    pub(crate) fn observe_n(&mut self, v: f64, n: u64) {
        if n == 0 || !v.is_finite() {
            return;
        }
        let i = self.bounds.partition_point(|b| *b < v);
        self.counts[i] += n;
        self.sum += v * n as f64;
        self.count += n;
    }

    #[cfg(test)]
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    fn render(&self, out: &mut String, name: &str, labels: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (i, c) in self.counts.iter().enumerate() {
            cumulative += c;
            let le = match self.bounds.get(i) {
                Some(b) => format!("{b}"),
                None => "+Inf".to_string(),
            };
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

/// What the server did and holds now.
#[derive(Clone, Debug)]
pub(crate) struct ServerMetrics {
    /// Requests in the batch (exact mode: streams in progress).
    pub(crate) running: u64,
    /// Requests queued, not running (always 0 in exact mode).
    pub(crate) waiting: u64,
    pub(crate) kv_used: u64,
    pub(crate) kv_capacity: u64,
    /// Prompt tokens of requests whose prefill completed.
    pub(crate) prompt_tokens: u64,
    pub(crate) generation_tokens: u64,
    pub(crate) preemptions: u64,
    pub(crate) request_success: u64,
    pub(crate) queue_timeouts: u64,
    pub(crate) ttft: Histogram,
    pub(crate) tpot: Histogram,
    /// Speculative decoding's counters (exact mode with `spec`; served under vLLM's names
    /// once a step was counted).
    pub(crate) spec: SpecCounters,
}

impl Default for ServerMetrics {
    fn default() -> Self {
        Self {
            running: 0,
            waiting: 0,
            kv_used: 0,
            kv_capacity: 0,
            prompt_tokens: 0,
            generation_tokens: 0,
            preemptions: 0,
            request_success: 0,
            queue_timeouts: 0,
            ttft: Histogram::new(TTFT_BUCKETS),
            tpot: Histogram::new(TPOT_BUCKETS),
            spec: SpecCounters::default(),
        }
    }
}

impl ServerMetrics {
    /// Fraction of the KV cache in use, 0..=1 (0 without an engine).
    pub(crate) fn kv_usage(&self) -> f64 {
        if self.kv_capacity == 0 {
            0.0
        } else {
            self.kv_used as f64 / self.kv_capacity as f64
        }
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn scalar(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    labels: &str,
    v: impl std::fmt::Display,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    if labels.is_empty() {
        let _ = writeln!(out, "{name} {v}");
    } else {
        let _ = writeln!(out, "{name}{{{labels}}} {v}");
    }
}

/// The metrics in Prometheus' text exposition format, in `flavor`'s names.
pub(crate) fn render(flavor: MetricsFlavor, m: &ServerMetrics, model: &str) -> String {
    let mut out = String::with_capacity(4096);
    match flavor {
        MetricsFlavor::Vllm => render_vllm(&mut out, m, model),
        MetricsFlavor::Llamacpp => render_llamacpp(&mut out, m),
    }
    out
}

/// vLLM's gauges, counters and histograms, labelled with the served model's name.
fn render_vllm(out: &mut String, m: &ServerMetrics, model: &str) {
    let l = format!("model_name=\"{}\"", escape_label(model));
    let l = l.as_str();
    scalar(
        out,
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        l,
        m.running,
    );
    scalar(
        out,
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        l,
        m.waiting,
    );
    scalar(
        out,
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage. 1 means 100 percent usage.",
        l,
        m.kv_usage(),
    );
    scalar(
        out,
        "vllm:gpu_cache_usage_perc",
        "gauge",
        "GPU KV-cache usage. 1 means 100 percent usage (older name).",
        l,
        m.kv_usage(),
    );
    scalar(
        out,
        "vllm:num_preemptions_total",
        "counter",
        "Cumulative number of preemptions.",
        l,
        m.preemptions,
    );
    scalar(
        out,
        "vllm:prompt_tokens_total",
        "counter",
        "Number of prefill tokens processed.",
        l,
        m.prompt_tokens,
    );
    scalar(
        out,
        "vllm:generation_tokens_total",
        "counter",
        "Number of generation tokens processed.",
        l,
        m.generation_tokens,
    );
    scalar(
        out,
        "vllm:request_success_total",
        "counter",
        "Count of successfully processed requests.",
        l,
        m.request_success,
    );
    m.ttft.render(
        out,
        "vllm:time_to_first_token_seconds",
        l,
        "Histogram of time to first token in seconds.",
    );
    m.tpot.render(
        out,
        "vllm:time_per_output_token_seconds",
        l,
        "Histogram of time per output token in seconds.",
    );
    if !m.spec.per_position.is_empty() {
        m.spec.render_vllm(out, l);
    }
}

/// llama.cpp's gauges and counters (unlabelled, as llama.cpp's server writes them).
fn render_llamacpp(out: &mut String, m: &ServerMetrics) {
    scalar(
        out,
        "llamacpp:prompt_tokens_total",
        "counter",
        "Number of prompt tokens processed.",
        "",
        m.prompt_tokens,
    );
    scalar(
        out,
        "llamacpp:tokens_predicted_total",
        "counter",
        "Number of generation tokens processed.",
        "",
        m.generation_tokens,
    );
    scalar(
        out,
        "llamacpp:kv_cache_usage_ratio",
        "gauge",
        "KV-cache usage. 1 means 100 percent usage.",
        "",
        m.kv_usage(),
    );
    scalar(
        out,
        "llamacpp:kv_cache_tokens",
        "gauge",
        "KV-cache tokens.",
        "",
        m.kv_used,
    );
    scalar(
        out,
        "llamacpp:requests_processing",
        "gauge",
        "Number of requests processing.",
        "",
        m.running,
    );
    scalar(
        out,
        "llamacpp:requests_deferred",
        "gauge",
        "Number of requests deferred.",
        "",
        m.waiting,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative_with_sum_and_count() {
        let mut h = Histogram::new(&[0.1, 1.0]);
        h.observe(0.05);
        h.observe_n(0.5, 2);
        h.observe(5.0);
        let mut out = String::new();
        h.render(&mut out, "x", "a=\"b\"", "help");
        assert!(out.contains("x_bucket{a=\"b\",le=\"0.1\"} 1\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"1\"} 3\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"+Inf\"} 4\n"), "{out}");
        assert!(out.contains("x_sum{a=\"b\"} 6.05\n"), "{out}");
        assert!(out.contains("x_count{a=\"b\"} 4\n"), "{out}");
    }

    #[test]
    fn flavors_use_their_names() {
        let m = ServerMetrics::default();
        let v = render(MetricsFlavor::Vllm, &m, "m\"x");
        assert!(v.contains("vllm:num_requests_running{model_name=\"m\\\"x\"} 0"));
        assert!(v.contains("vllm:time_to_first_token_seconds_count"));
        let l = render(MetricsFlavor::Llamacpp, &m, "m");
        assert!(l.contains("llamacpp:requests_deferred 0"));
        assert!(!l.contains("vllm:"));
    }
}
