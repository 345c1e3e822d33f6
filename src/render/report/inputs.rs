//! The report of a run whose API answers each input of a request (embeddings): vLLM's
//! block in the layout `vllm bench serve --backend openai-embeddings` prints (no output
//! figures; the request latency as E2EL) with one line of servebench's beside vLLM's (input
//! throughput, which `import` reads back), and servebench's lines for the inputs. Every number
//! comes from the result's summary.

use super::lines::{distribution, line, num, rule, section};
use crate::config::Metric;
use crate::results::document::BenchResult;

/// vLLM's "Serving Benchmark Result" block of an embeddings run.
pub(super) fn vllm_block(result: &BenchResult) -> String {
    let s = &result.summary;
    let mut out = String::new();
    out.push_str(&rule(" Serving Benchmark Result ", '='));
    line(&mut out, "Successful requests:", s.completed);
    num(&mut out, "Benchmark duration (s):", s.duration_s);
    line(&mut out, "Total input tokens:", s.total_input_tokens);
    num(
        &mut out,
        "Request throughput (req/s):",
        s.request_throughput,
    );
    if let Some(per_s) = s.input_sequence_throughput {
        num(&mut out, "Input throughput (inputs/s):", per_s);
    }
    if let Some(g) = s.request_goodput {
        num(&mut out, "Request goodput (req/s):", g);
    }
    num(
        &mut out,
        "Total Token throughput (tok/s):",
        s.total_token_throughput,
    );
    let (header, name) = section(Metric::E2el);
    out.push_str(&rule(header, '-'));
    let ps = &result.config.metric_percentiles;
    distribution(&mut out, name, "ms", s.e2el_ms.as_ref(), ps);
    out.push_str(&rule("", '='));
    out
}

/// servebench's lines of an embeddings run: the inputs answered and per request.
pub(super) fn lines(out: &mut String, result: &BenchResult) {
    let s = &result.summary;
    let Some(inputs) = s.total_input_sequences else {
        return;
    };
    line(out, "Inputs answered:", inputs);
    if s.completed > 0 {
        let per = inputs as f64 / s.completed as f64;
        line(out, "Inputs per request (mean):", format!("{per:.2}"));
    }
}
