//! The server's own account of a request in the two forms that are not a JSON object of
//! milliseconds: TGI's timing headers and SGLang's `meta_info`. What is kept of each (bounded
//! before it is stored) and whether it is plausible against what the client saw. vLLM's
//! `metrics` and llama.cpp's `timings` are judged in `usage.rs`; all four are read into one
//! account by `results::stats::ServerTimings::of`. Pure: no I/O, no clock.

use serde_json::{Map, Value};

use super::seen::Seen;

/// TGI's timing headers, as its router writes them on a non-streamed answer
/// (text-generation-inference v3.3.7, `router/src/server.rs`): integer milliseconds, but
/// `x-compute-time` in seconds (a decimal), and the two token counts.
pub const TGI_HEADERS: [&str; 8] = [
    "x-compute-time",
    "x-total-time",
    "x-validation-time",
    "x-queue-time",
    "x-inference-time",
    "x-time-per-token",
    "x-prompt-tokens",
    "x-generated-tokens",
];

/// The most bytes of one header's value kept (a number is far shorter).
pub const MAX_HEADER_VALUE: usize = 64;

/// The `meta_info` keys kept (SGLang main at c60799d, `tokenizer_manager.py`): counts,
/// durations in seconds, and Unix timestamps in seconds. Everything else it carries
/// (log-probabilities, hidden states) is dropped unread: it can be large.
pub const SGLANG_COUNTS: [&str; 3] = ["prompt_tokens", "completion_tokens", "cached_tokens"];
/// Durations, seconds.
pub const SGLANG_DURATIONS: [&str; 3] = ["e2e_latency", "queue_time", "inference_time"];
/// Unix timestamps, seconds: arrival, first token, last token.
pub const SGLANG_STAMPS: [&str; 3] = [
    "request_received_ts",
    "prefill_finished_ts",
    "decode_finished_ts",
];

/// Whether `name` is one of TGI's timing headers.
pub fn is_tgi_header(name: &str) -> bool {
    TGI_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// The TGI headers of a response as an object (name in lower case → value as sent, cut to
/// [`MAX_HEADER_VALUE`] bytes); `None` when it carried none.
pub fn tgi_headers<'a>(headers: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Option<Value> {
    let mut map = Map::new();
    for (name, value) in headers {
        if !is_tgi_header(name) || map.len() >= TGI_HEADERS.len() {
            continue;
        }
        let cut = &value[..value.len().min(MAX_HEADER_VALUE)];
        let text = String::from_utf8_lossy(cut).into_owned();
        map.insert(name.to_ascii_lowercase(), Value::String(text));
    }
    (!map.is_empty()).then_some(Value::Object(map))
}

/// The kept keys of an SGLang `meta_info` object; `None` when it is no object or keeps none.
pub fn sglang_meta_info(v: &Value) -> Option<Value> {
    let map = v.as_object()?;
    let kept: Map<String, Value> = (SGLANG_COUNTS.iter())
        .chain(&SGLANG_DURATIONS)
        .chain(&SGLANG_STAMPS)
        .filter_map(|k| Some((k.to_string(), map.get(*k)?.clone())))
        .collect();
    (!kept.is_empty()).then_some(Value::Object(kept))
}

/// A header's value as a number: ASCII digits with at most one decimal point, nothing else
/// (`"12"`, `"0.25"`); `None` for anything else (`"-1"`, `"NaN"`, `"1e18"`, `"soon"`).
pub fn header_number(v: &Value) -> Option<f64> {
    let s = v.as_str()?.trim();
    let plain = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && s.bytes().filter(|&b| b == b'.').count() <= 1;
    plain.then(|| s.parse::<f64>().ok()).flatten()
}

/// Whether TGI's headers are plausible: every value a plain number, each duration within the
/// client's span (with `usage.rs`'s slack), each count within its bound.
pub fn headers_plausible(v: &Value, seen: &Seen, prompt_bound: u64) -> bool {
    let Some(map) = v.as_object() else {
        return false;
    };
    let span_ms = seen.span_bound_ms();
    map.iter().all(|(name, value)| {
        let Some(x) = header_number(value) else {
            return false;
        };
        match name.as_str() {
            "x-compute-time" => x * 1e3 <= span_ms,
            "x-prompt-tokens" => x.fract() == 0.0 && x <= prompt_bound as f64,
            "x-generated-tokens" => x.fract() == 0.0 && x <= seen.output_bound() as f64,
            _ => x <= span_ms,
        }
    })
}

/// Whether SGLang's kept `meta_info` is plausible: durations finite, ≥ 0 and within the
/// client's span; timestamps finite and ≥ 0, in order (arrival ≤ first token ≤ last token)
/// and no further apart than the span; counts within their bounds.
pub fn meta_info_plausible(v: &Value, seen: &Seen, prompt_bound: u64) -> bool {
    let Some(map) = v.as_object() else {
        return false;
    };
    let span_s = seen.span_bound_ms() / 1e3;
    let num = |k: &str| {
        map.get(k)
            .map(|v| v.as_f64().filter(|x| x.is_finite() && *x >= 0.0))
    };
    let durations = SGLANG_DURATIONS
        .iter()
        .all(|k| num(k).is_none_or(|x| x.is_some_and(|s| s <= span_s)));
    let stamps: Vec<Option<f64>> = SGLANG_STAMPS.iter().filter_map(|k| num(k)).collect();
    let in_order = stamps.iter().all(Option::is_some)
        && stamps.windows(2).all(|w| w[0] <= w[1])
        && match (stamps.first(), stamps.last()) {
            (Some(Some(a)), Some(Some(b))) => b - a <= span_s,
            _ => true,
        };
    let counts = SGLANG_COUNTS.iter().all(|k| {
        let bound = if *k == "completion_tokens" {
            seen.output_bound()
        } else {
            prompt_bound
        };
        map.get(*k)
            .is_none_or(|v| v.as_u64().is_some_and(|n| n <= bound))
    });
    durations && in_order && counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn seen() -> Seen {
        Seen {
            events: 5,
            text_bytes: 20,
            output_chunks: 4,
            max_tokens: Some(64),
            prompt_bytes: Some(100),
            cached_within_prompt: true,
            span: Duration::from_millis(500),
        }
    }

    #[test]
    fn tgi_headers_are_kept_bounded_and_others_dropped() {
        let long = vec![b'7'; 500];
        let got = tgi_headers([
            ("X-Queue-Time", &b"12"[..]),
            ("x-inference-time", &long[..]),
            ("content-type", &b"text/event-stream"[..]),
        ])
        .unwrap();
        assert_eq!(got["x-queue-time"], "12");
        assert_eq!(got["x-inference-time"].as_str().unwrap().len(), 64);
        assert!(got.get("content-type").is_none());
        assert_eq!(tgi_headers([("server", &b"x"[..])]), None);
    }

    /// A header is believed only as a plain non-negative number within the span.
    #[test]
    fn tgi_headers_that_are_no_number_or_too_long_are_implausible() {
        let ok = |v: Value| headers_plausible(&v, &seen(), 200);
        assert!(ok(json!({"x-queue-time": "3", "x-inference-time": "450",
            "x-compute-time": "0.49", "x-time-per-token": "10", "x-prompt-tokens": "30",
            "x-generated-tokens": "20"})));
        for bad in [
            json!({"x-queue-time": "-1"}),
            json!({"x-queue-time": "NaN"}),
            json!({"x-queue-time": "1e18"}),
            json!({"x-queue-time": "1000000000000000000"}),
            json!({"x-queue-time": "soon"}),
            json!({"x-queue-time": ""}),
            json!({"x-compute-time": "0.6"}),
            json!({"x-prompt-tokens": "1.5"}),
            json!({"x-generated-tokens": "65"}),
            json!("x-queue-time"),
        ] {
            assert!(!ok(bad.clone()), "{bad}");
        }
    }

    #[test]
    fn sglang_meta_info_keeps_timing_keys_only() {
        let v = json!({"prompt_tokens": 3, "cached_tokens": 1, "e2e_latency": 0.1,
            "output_token_logprobs": [[0.1, 2, "a"]], "id": "x"});
        assert_eq!(
            sglang_meta_info(&v).unwrap(),
            json!({"prompt_tokens": 3, "cached_tokens": 1, "e2e_latency": 0.1})
        );
        assert_eq!(sglang_meta_info(&json!({"id": "x"})), None);
        assert_eq!(sglang_meta_info(&json!([1])), None);
    }

    #[test]
    fn sglang_meta_info_out_of_order_or_too_long_is_implausible() {
        let ok = |v: Value| meta_info_plausible(&v, &seen(), 200);
        assert!(ok(json!({"prompt_tokens": 30, "cached_tokens": 0,
            "completion_tokens": 20, "e2e_latency": 0.45, "queue_time": 0.01,
            "request_received_ts": 1.7e9, "prefill_finished_ts": 1.7e9 + 0.05,
            "decode_finished_ts": 1.7e9 + 0.45})));
        for bad in [
            json!({"e2e_latency": -0.1}),
            json!({"e2e_latency": 0.6}),
            json!({"queue_time": 1e18}),
            json!({"queue_time": "0.1"}),
            json!({"request_received_ts": 10.0, "prefill_finished_ts": 9.0}),
            json!({"request_received_ts": 10.0, "decode_finished_ts": 11.0}),
            json!({"request_received_ts": -1.0}),
            json!({"prompt_tokens": 1e18}),
            json!({"completion_tokens": 65}),
        ] {
            assert!(!ok(bad.clone()), "{bad}");
        }
    }
}
