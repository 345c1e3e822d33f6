//! The common OpenAI stream event read without a JSON parser.
//!
//! Nearly every event of a stream is a mid-stream chunk such as
//! `{"id":"cmpl-1","object":"text_completion",...,"choices":[{"index":0,"text":" the",...}],"usage":null}`:
//! one choice, one short text, nothing else servebench reads. Parsing it with serde spends
//! most of its time skipping the keys servebench ignores (`docs/performance.md`), so
//! [`openai`] reads such an event's text by looking for its keys, and gives up (`None`: the
//! caller parses it with serde) on anything it cannot read with certainty:
//!
//! - a backslash anywhere (an escaped string; with none, every `"` opens or closes a string,
//!   so each string followed by `:` is a key);
//! - an event that does not start with `{` and end with `}`, or whose braces and brackets
//!   (outside strings) do not balance (a cut or malformed event: serde names the error);
//! - any key that says more than text: `error` (also `"object":"error"`), `message`,
//!   `timings`, `metrics`, `tool_calls`, `reasoning…`, a `usage` or a `finish_reason` that is not `null`;
//! - more than one `choices` key, or one not followed by an array, or more than one text or
//!   content key inside it.
//!
//! An event it reads carries nothing but that text, and the text is exactly what the serde
//! path reads from the same event (a property test checks it on generated events).

/// The answer text of a plain OpenAI completions or chat chunk ("" for none), read in one pass
/// over its bytes; `None` when the full parser must read the event.
pub(super) fn openai(data: &str) -> Option<&str> {
    let b = data.as_bytes();
    if b.first() != Some(&b'{') || b.last() != Some(&b'}') {
        return None;
    }
    let mut depth = 0usize;
    // The depth inside the `choices` array while in it, and whether it was seen.
    let (mut in_choices, mut choices_seen) = (None::<usize>, false);
    let (mut delta, mut text, mut content) = (false, Found::None, Found::None);
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => return None,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if in_choices.is_some_and(|d| depth < d) {
                    in_choices = None;
                }
            }
            b'"' => {
                let len = memchr::memchr2(b'"', b'\\', &b[i + 1..])?;
                let (name, end) = (&data[i + 1..i + 1 + len], i + 1 + len);
                if b[end] == b'\\' {
                    return None;
                }
                i = end + 1;
                let Some(value) = data[i..].trim_start().strip_prefix(':') else {
                    continue; // a value, not a key
                };
                let value = value.trim_start();
                match name {
                    "error" | "message" | "timings" | "metrics" | "tool_calls" => return None,
                    n if n.starts_with("reasoning") => return None,
                    "usage" | "finish_reason" if !value.starts_with("null") => return None,
                    "choices" => {
                        if choices_seen || !value.starts_with('[') {
                            return None;
                        }
                        choices_seen = true;
                        in_choices = Some(depth + 1);
                    }
                    "delta" if in_choices.is_some() => delta = true,
                    "text" if in_choices.is_some() => text = text.then(value)?,
                    "content" if in_choices.is_some() => content = content.then(value)?,
                    _ => {}
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if depth != 0 {
        return None;
    }
    // Completions carry `text`; chat carries `delta.content` (the serde path reads `text`,
    // then lets a `delta` override it).
    let answer = match (delta, text) {
        (false, t) => t,
        (true, Found::None) => content,
        (true, _) => return None,
    };
    Some(answer.text())
}

/// A text key's value seen so far in `choices`.
#[derive(Clone, Copy)]
enum Found<'a> {
    None,
    Null,
    Text(&'a str),
}

impl<'a> Found<'a> {
    /// After a (further) key whose value starts `value`: `None` on a second key or a value
    /// that is neither a string nor `null`.
    fn then(self, value: &'a str) -> Option<Found<'a>> {
        if !matches!(self, Found::None) {
            return None;
        }
        if value.starts_with("null") {
            return Some(Found::Null);
        }
        let rest = value.strip_prefix('"')?;
        Some(Found::Text(&rest[..memchr::memchr(b'"', rest.as_bytes())?]))
    }

    fn text(self) -> &'a str {
        match self {
            Found::Text(t) => t,
            _ => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::api::{Parsed, Streamed};
    use super::super::apis::chat::OpenAiChat;
    use super::super::apis::completions::OpenAiCompletions;
    use super::*;
    use proptest::prelude::*;
    use std::borrow::Cow;

    /// What the serde path would give for an event the fast path read.
    fn fast(data: &str) -> Option<Parsed<'_>> {
        openai(data).map(|text| Parsed {
            content: Cow::Borrowed(text),
            ..Parsed::default()
        })
    }

    /// The serde path alone: the event with one leading space, which the fast path refuses.
    fn full(data: &str) -> Parsed<'_> {
        OpenAiCompletions.parse(None, data).unwrap()
    }

    #[test]
    fn the_simulators_and_vllms_mid_stream_chunks_take_the_fast_path() {
        let completions = r#"{"id":"cmpl-7","object":"text_completion","created":1795476569,"model":"m","choices":[{"index":0,"text":" other","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}"#;
        assert_eq!(openai(completions).unwrap(), " other");
        let chat = r#"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" long"},"logprobs":null,"finish_reason":null}]}"#;
        assert_eq!(openai(chat).unwrap(), " long");
        let role = r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#;
        assert_eq!(fast(role).unwrap(), Parsed::default());
        assert_eq!(openai(r#"{"choices":[],"usage":null}"#), Some(""));
        // Braces inside a string are text.
        assert_eq!(openai(r#"{"choices":[{"text":"a}"}]}"#), Some("a}"));
        // A `text` key outside `choices` is not the answer, for either path.
        assert_eq!(openai(r#"{"choices":[],"text":"x"}"#), Some(""));
    }

    #[test]
    fn anything_else_goes_to_the_full_parser() {
        for data in [
            r#"{"choices":[{"text":"say \"hi\""}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3}}"#,
            r#"{"error":{"message":"boom"}}"#,
            r#"{"object":"error","message":"boom"}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#,
            r#"{"choices":[{"text":"a"}],"timings":{"prompt_ms":1}}"#,
            r#"{"choices":[{"text":"a"},{"text":"b"}]}"#,
            r#"{"choices":[{"text":"a"}"#,
            r#"{"choices":{"text":"a"}}"#,
            r#" {"choices":[{"text":"a"}]}"#,
            r#"{"choices":[{"text":"a"}],"choices":[]}"#,
            r#"{"choices":[{"text":"a","finish_reason":"stop"}]}"#,
        ] {
            assert_eq!(openai(data), None, "{data}");
        }
    }

    fn event() -> impl Strategy<Value = String> {
        let text = prop_oneof![
            "[a-z ]{0,8}".prop_map(serde_json::Value::from),
            any::<String>().prop_map(serde_json::Value::from),
            Just(serde_json::Value::Null),
        ];
        let usage = prop_oneof![
            Just(None),
            Just(Some(serde_json::Value::Null)),
            (0u64..9).prop_map(|n| Some(serde_json::json!({"completion_tokens": n}))),
        ];
        // A finish reason ends the answer (the full parser reads it).
        let finish = prop_oneof![
            Just(None),
            Just(Some(serde_json::Value::Null)),
            Just(Some(serde_json::json!("length"))),
        ];
        (text, any::<bool>(), 0usize..3, usage, any::<bool>(), finish).prop_map(
            |(text, chat, n, usage, junk, finish)| {
                let mut choice = if chat {
                    serde_json::json!({"index": 0, "delta": {"content": text}})
                } else {
                    serde_json::json!({"index": 0, "text": text, "logprobs": null})
                };
                if let Some(f) = finish {
                    choice["finish_reason"] = f;
                }
                let mut e =
                    serde_json::json!({"id": "x-1", "object": "o", "choices": vec![choice; n]});
                if let Some(u) = usage {
                    e["usage"] = u;
                }
                if junk {
                    e["model"] = serde_json::json!("m]{");
                    e["text"] = serde_json::json!("outside");
                }
                e.to_string()
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Whenever the fast path reads an event, it reads what serde reads.
        #[test]
        fn the_fast_path_agrees_with_serde(data in event()) {
            let spaced = format!(" {data}");
            if let Some(fast) = fast(&data) {
                prop_assert_eq!(&fast, &full(&spaced));
                prop_assert_eq!(fast, OpenAiChat.parse(None, &spaced).unwrap());
            }
        }
    }
}
