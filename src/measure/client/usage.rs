//! What a server reports about a request, checked against what the client saw before it is
//! believed: its token counts (`usage` and each API's equivalents), llama.cpp's
//! `timings` and vLLM's per-request `metrics`. A number that contradicts the stream is flagged
//! on the record ([`Implausible`]) and not used: the output count falls back to the tokenizer
//! (else the chunks), the prompt count to the built length, and the timings are left out of
//! every figure. The rules and the reasons for their bounds: `docs/metrics.md`, "Numbers a
//! server reports". Pure: no I/O, no clock.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

pub use super::seen::{
    Seen, PROMPT_TEMPLATE_TOKENS, TIMING_SLACK_ABS, TIMING_SLACK_REL, TOKENS_PER_EVENT,
};
use super::server_forms;
pub use super::server_forms::header_number;
use crate::measure::record::Implausible;

/// A count as the server wrote it: an unsigned JSON integer, or anything else (a negative
/// number, a fraction, a number past 2^64, a string, an object), which is no count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reported {
    Count(u64),
    NotACount,
}

impl Reported {
    /// The count, when it is one.
    pub fn count(self) -> Option<u64> {
        match self {
            Reported::Count(n) => Some(n),
            Reported::NotACount => None,
        }
    }

    /// A JSON value as a count (`null` is no report at all).
    pub fn of(v: &Value) -> Option<Reported> {
        match v {
            Value::Null => None,
            v => Some(v.as_u64().map_or(Reported::NotACount, Reported::Count)),
        }
    }
}

impl<'de> Deserialize<'de> for Reported {
    /// Any JSON value: the wire format never fails on a count's type (a `null` field is
    /// `None` through `Option`).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(Reported::of(&v).unwrap_or(Reported::NotACount))
    }
}

/// What the server claimed about one request.
#[derive(Clone, Copy, Debug, Default)]
pub struct Claims<'a> {
    pub output: Option<Reported>,
    pub prompt: Option<Reported>,
    /// The cached prompt tokens (`usage`'s, else llama.cpp's `timings.cache_n`).
    pub cached: Option<Reported>,
    /// llama.cpp's `timings`.
    pub timings: Option<&'a Value>,
    /// vLLM's per-request `metrics`.
    pub metrics: Option<&'a Value>,
    /// TGI's timing headers (`server_forms.rs`).
    pub headers: Option<&'a Value>,
    /// SGLang's `meta_info`, its kept keys (`server_forms.rs`).
    pub meta_info: Option<&'a Value>,
}

/// The claims judged: the counts that may be believed, and what was not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Judged {
    pub output: Option<u64>,
    pub prompt: Option<u64>,
    pub cached: Option<u64>,
    /// What was implausible, in [`Implausible`]'s order, each once.
    pub flags: Vec<Implausible>,
}

/// Applies the rules of `docs/metrics.md` ("Numbers a server reports") to `claims`.
pub fn judge(claims: &Claims, seen: &Seen) -> Judged {
    let mut flags = Vec::new();
    let mut believe = |claim: Option<Reported>, ok: &dyn Fn(u64) -> bool, what| match claim {
        None => None,
        Some(Reported::Count(n)) if ok(n) => Some(n),
        Some(_) => {
            flags.push(what);
            None
        }
    };
    // Output: within what the stream could carry and `max_tokens`; at least one token when
    // any text came.
    let output = believe(
        claims.output,
        &|n| n <= seen.output_bound() && (n > 0 || seen.output_chunks == 0),
        Implausible::OutputTokens,
    );
    let prompt_bound = seen.prompt_bound().unwrap_or(u64::MAX);
    let prompt = believe(
        claims.prompt,
        &|n| n <= prompt_bound,
        Implausible::PromptTokens,
    );
    // Cached: within the prompt the server counted (when its cached count is part of it),
    // and within the prompt's bound.
    let within = match (seen.cached_within_prompt, prompt) {
        (true, Some(p)) => p.min(prompt_bound),
        _ => prompt_bound,
    };
    let cached = believe(claims.cached, &|n| n <= within, Implausible::CachedTokens);
    if claims
        .timings
        .is_some_and(|t| !timings_plausible(t, seen, prompt_bound))
    {
        flags.push(Implausible::ServerTimings);
    }
    if claims
        .metrics
        .is_some_and(|m| !timings_plausible(m, seen, prompt_bound))
    {
        flags.push(Implausible::ServerRequestMetrics);
    }
    if (claims.headers).is_some_and(|h| !server_forms::headers_plausible(h, seen, prompt_bound)) {
        flags.push(Implausible::ServerTimingHeaders);
    }
    if (claims.meta_info).is_some_and(|m| !server_forms::meta_info_plausible(m, seen, prompt_bound))
    {
        flags.push(Implausible::ServerMetaInfo);
    }
    flags.sort();
    flags.dedup();
    Judged {
        output,
        prompt,
        cached,
        flags,
    }
}

/// Whether a `timings` or `metrics` object is plausible: an object whose every duration
/// (`…_ms`) is a finite, non-negative number no longer than the client's span (with the slack),
/// and whose every count (`…_n`) is a count within its bound (`predicted_n`: the output's;
/// others, prompt counts: the prompt's). Other keys are not read, so not judged.
fn timings_plausible(v: &Value, seen: &Seen, prompt_bound: u64) -> bool {
    let Some(map) = v.as_object() else {
        return false;
    };
    let span = seen.span_bound_ms();
    map.iter().all(|(key, value)| {
        if key.ends_with("_ms") {
            value
                .as_f64()
                .is_some_and(|ms| ms.is_finite() && ms >= 0.0 && ms <= span)
        } else if key.ends_with("_n") {
            let bound = if key == "predicted_n" {
                seen.output_bound()
            } else {
                prompt_bound
            };
            value.as_u64().is_some_and(|n| n <= bound)
        } else {
            true
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::api::Streamed;
    use super::super::apis::completions::OpenAiStream;
    use super::super::stream::{Bounds, Stream};
    use super::*;
    use crate::measure::record::{Outcome, TokenSource};
    use proptest::prelude::*;
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

    fn count(n: u64) -> Option<Reported> {
        Some(Reported::Count(n))
    }

    #[test]
    fn a_count_is_an_unsigned_integer_and_anything_else_is_none() {
        #[derive(Deserialize)]
        struct U {
            n: Option<Reported>,
        }
        let n = |json: &str| serde_json::from_str::<U>(json).unwrap().n;
        assert_eq!(n(r#"{"n": 5}"#), count(5));
        assert_eq!(n(r#"{"n": 18446744073709551615}"#), count(u64::MAX));
        assert_eq!(n(r#"{"n": null}"#), None);
        assert_eq!(n(r#"{}"#), None);
        for bad in [
            "-1",
            "3.0",
            "2.5",
            "1e30",
            "18446744073709551616",
            "\"5\"",
            "[]",
            "{}",
            "true",
        ] {
            assert_eq!(
                n(&format!(r#"{{"n": {bad}}}"#)),
                Some(Reported::NotACount),
                "{bad}"
            );
        }
    }

    /// The rules of docs/metrics.md on hand-picked numbers.
    #[test]
    fn counts_that_contradict_the_stream_are_flagged_not_believed() {
        let judge_output = |n| {
            judge(
                &Claims {
                    output: count(n),
                    ..Claims::default()
                },
                &seen(),
            )
        };
        assert_eq!(judge_output(64).output, Some(64));
        // 10^18, more than max_tokens; then more than the stream carried without a limit.
        let j = judge_output(1_000_000_000_000_000_000);
        assert_eq!((j.output, j.flags), (None, vec![Implausible::OutputTokens]));
        assert_eq!(judge_output(65).flags, [Implausible::OutputTokens]);
        let unlimited = Seen {
            max_tokens: None,
            ..seen()
        };
        let out = |n| {
            judge(
                &Claims {
                    output: count(n),
                    ..Claims::default()
                },
                &unlimited,
            )
        };
        assert_eq!(out(20 + 5 * TOKENS_PER_EVENT).output, Some(100));
        assert_eq!(
            out(20 + 5 * TOKENS_PER_EVENT + 1).flags,
            [Implausible::OutputTokens]
        );
        // No token for a stream that carried text; zero for one that carried none.
        assert_eq!(judge_output(0).flags, [Implausible::OutputTokens]);
        let silent = Seen {
            output_chunks: 0,
            text_bytes: 0,
            ..seen()
        };
        let zero = judge(
            &Claims {
                output: count(0),
                ..Claims::default()
            },
            &silent,
        );
        assert_eq!(zero.output, Some(0));
        // Prompt: the body's bytes and the template's tokens; cached: within the prompt.
        let claims = Claims {
            prompt: count(100 + PROMPT_TEMPLATE_TOKENS),
            cached: count(50),
            ..Claims::default()
        };
        let j = judge(&claims, &seen());
        assert_eq!(
            (j.prompt, j.cached, j.flags.len()),
            (Some(4196), Some(50), 0)
        );
        let claims = Claims {
            prompt: count(30),
            cached: count(31),
            ..Claims::default()
        };
        let j = judge(&claims, &seen());
        assert_eq!((j.prompt, j.cached), (Some(30), None));
        assert_eq!(j.flags, [Implausible::CachedTokens]);
        // Anthropic's cached tokens are not part of its prompt count.
        let apart = Seen {
            cached_within_prompt: false,
            ..seen()
        };
        assert_eq!(judge(&claims, &apart).cached, Some(31));
        let huge = Claims {
            prompt: count(1 << 60),
            cached: Some(Reported::NotACount),
            ..Claims::default()
        };
        let j = judge(&huge, &seen());
        assert_eq!(
            j.flags,
            [Implausible::PromptTokens, Implausible::CachedTokens]
        );
        // An image: no byte bound on the prompt.
        let image = Seen {
            prompt_bytes: None,
            ..seen()
        };
        assert_eq!(judge(&huge, &image).prompt, Some(1 << 60));
    }

    /// Timings are durations within the client's span and counts within
    /// their bounds; keys that are not read are not judged.
    #[test]
    fn timings_longer_than_the_exchange_or_negative_are_flagged() {
        let flags = |t: Value| {
            judge(
                &Claims {
                    timings: Some(&t),
                    metrics: Some(&t),
                    ..Claims::default()
                },
                &seen(),
            )
            .flags
        };
        let both = [
            Implausible::ServerTimings,
            Implausible::ServerRequestMetrics,
        ];
        let good = json!({"prompt_ms": 12.5, "predicted_ms": 400, "predicted_per_token_ms": 20.1,
            "prompt_n": 30, "predicted_n": 20, "cache_n": 0, "predicted_per_second": 1e9});
        assert_eq!(flags(good), []);
        // The span is 500 ms: 1% and 1 ms more is still plausible, past it is not.
        assert_eq!(flags(json!({"queue_time_ms": 505.9})), []);
        for bad in [
            json!({"prompt_ms": 506.1}),
            json!({"prompt_ms": -1}),
            json!({"time_to_first_token_ms": "soon"}),
            json!({"predicted_ms": 1e300}),
            json!({"predicted_n": 65}),
            json!({"prompt_n": -3}),
            json!({"cache_n": 1.5}),
            json!("timings"),
            json!([1, 2]),
        ] {
            assert_eq!(flags(bad.clone()), both, "{bad}");
        }
    }

    /// Any JSON a server may put where a count goes.
    fn reported() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            Just(None),
            Just(Some(Value::Null)),
            any::<u64>().prop_map(|n| Some(json!(n))),
            (0u64..200).prop_map(|n| Some(json!(n))),
            any::<i64>().prop_map(|n| Some(json!(n))),
            any::<f64>().prop_map(|x| Some(json!(x))),
            "[0-9]{1,3}".prop_map(|s| Some(json!(s))),
        ]
    }

    fn seen_any() -> impl Strategy<Value = Seen> {
        (
            any::<u64>(),
            prop_oneof![any::<u64>(), 0u64..100],
            0u64..50,
            proptest::option::of(prop_oneof![any::<u64>(), 0u64..200]),
            proptest::option::of(prop_oneof![any::<u64>(), 0u64..200]),
            any::<bool>(),
            0u64..u64::MAX,
        )
            .prop_map(
                |(events, text_bytes, output_chunks, max_tokens, prompt_bytes, within, ns)| Seen {
                    events,
                    text_bytes,
                    output_chunks,
                    max_tokens,
                    prompt_bytes,
                    cached_within_prompt: within,
                    span: Duration::from_nanos(ns),
                },
            )
    }

    /// The documented rule, restated in 128 bits (so a wrapped bound would disagree).
    fn output_ok(n: u64, s: &Seen) -> bool {
        let carried =
            u128::from(s.text_bytes) + u128::from(s.events) * u128::from(TOKENS_PER_EVENT);
        let within = u128::from(n) <= carried && s.max_tokens.is_none_or(|m| n <= m);
        within && (n > 0 || s.output_chunks == 0)
    }

    fn prompt_ok(n: u64, s: &Seen) -> bool {
        s.prompt_bytes
            .is_none_or(|b| u128::from(n) <= u128::from(b) + u128::from(PROMPT_TEMPLATE_TOKENS))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]
        /// Arbitrary server numbers (huge, zero, negative, fractions,
        /// strings) never panic or wrap, and each is flagged exactly when the documented rule
        /// says so; a believed number is the server's own.
        #[test]
        fn usage_checks_follow_the_rule(
            output in reported(),
            prompt in reported(),
            cached in reported(),
            s in seen_any(),
        ) {
            let of = |v: &Option<Value>| v.as_ref().and_then(Reported::of);
            let claims = Claims { output: of(&output), prompt: of(&prompt), cached: of(&cached), ..Claims::default() };
            let j = judge(&claims, &s);
            let flagged = |w| j.flags.contains(&w);
            let want_output = match claims.output {
                None => None,
                Some(Reported::Count(n)) if output_ok(n, &s) => Some(n),
                Some(_) => { prop_assert!(flagged(Implausible::OutputTokens)); None }
            };
            prop_assert_eq!(j.output, want_output);
            prop_assert_eq!(flagged(Implausible::OutputTokens), claims.output.is_some() && want_output.is_none());
            let want_prompt = match claims.prompt {
                Some(Reported::Count(n)) if prompt_ok(n, &s) => Some(n),
                _ => None,
            };
            prop_assert_eq!(j.prompt, want_prompt);
            prop_assert_eq!(flagged(Implausible::PromptTokens), claims.prompt.is_some() && want_prompt.is_none());
            let want_cached = match claims.cached {
                Some(Reported::Count(c)) => {
                    let in_prompt = !s.cached_within_prompt || want_prompt.is_none_or(|p| c <= p);
                    (in_prompt && prompt_ok(c, &s)).then_some(c)
                }
                _ => None,
            };
            prop_assert_eq!(j.cached, want_cached);
            prop_assert_eq!(flagged(Implausible::CachedTokens), claims.cached.is_some() && want_cached.is_none());
        }

        /// Whatever chunks, text and usage a stream carries, finishing it
        /// never panics; a count taken from the server is within what the stream carried and
        /// `max_tokens`, else the record says it was implausible and N is the chunks'.
        #[test]
        fn any_stream_gives_a_count_it_could_carry(
            texts in proptest::collection::vec("[a-z ]{0,4}|.{0,3}", 0..12),
            per_chunk in proptest::collection::vec(reported(), 0..12),
            usage in reported(),
            max_tokens in 0u64..40,
        ) {
            let mut state = Stream::new(1, false, 0, (Some(4), max_tokens), None, None, Bounds {
                max_tokens: Some(max_tokens),
                prompt_bytes: Some(50),
                cached_within_prompt: true,
            });
            let mut events = 0u64;
            for (i, text) in texts.iter().enumerate() {
                let mut e = json!({"choices": [{"text": text, "finish_reason": null}]});
                // vLLM's continuous usage: a cumulative count on each chunk.
                if let Some(Some(c)) = per_chunk.get(i) {
                    e["usage"] = json!({"completion_tokens": c});
                }
                let data = e.to_string();
                if state.event(&OpenAiStream as &dyn Streamed, None, &data, i as u64).is_ok() {
                    events += 1;
                }
            }
            let last = json!({"choices": [], "usage": {"completion_tokens": usage, "prompt_tokens": 3}});
            let _ = state.event(&OpenAiStream, None, &last.to_string(), 20);
            events += 1;
            state.rec.http_status = Some(200);
            let r = state.finish(Outcome::Ok, 30, 1.0, Default::default());
            let bytes: u64 = texts.iter().map(|t| t.len() as u64).sum();
            let n = r.output_tokens.unwrap();
            match r.output_tokens_source.unwrap() {
                TokenSource::ServerUsage => {
                    prop_assert!(n <= max_tokens && n <= bytes + events * TOKENS_PER_EVENT);
                }
                TokenSource::ChunkCount => {
                    // The final usage, when there was one, was not believed.
                    let flagged = r.implausible_usage.contains(&Implausible::OutputTokens);
                    prop_assert!(usage.as_ref().is_none_or(Value::is_null) || flagged);
                    prop_assert!(n <= bytes + r.chunk_ns.len() as u64 * TOKENS_PER_EVENT);
                }
                other => prop_assert!(false, "source {other:?}"),
            }
        }
    }
}
