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
    scan(data).map(Found::text)
}

/// As [`openai`], for the next event of the stream whose last plain event `shape` holds: an
/// event with the same bytes before and after its text is read by comparing them.
pub(super) fn openai_shaped<'a>(shape: &mut Shape, data: &'a str) -> Option<&'a str> {
    if let Some(text) = shape.read(data) {
        return Some(text);
    }
    let found = scan(data)?;
    shape.learn(data, found);
    Some(found.text())
}

/// One stream's last plain event, as the bytes before and after its text.
///
/// Mid-stream chunks of one answer differ only in their text (the id, model and creation time
/// stay), so the next event is read by comparing its first and last bytes with these: when
/// they are the same and the bytes between them hold no `"` and no backslash, the event is
/// this one with another plain string as its text, and [`openai`] would read it exactly as it
/// read this one, stopping at the same bytes (a property test checks it).
///
/// The bytes are kept in the stream's own state, not on the heap: the task's state is in the
/// cache when its socket wakes it (`drive/warm.rs`), a separate buffer would not be. An event
/// whose bytes around the text are more than [`Shape::MAX`] is not kept.
#[derive(Debug)]
pub struct Shape {
    /// The bytes before the text, then those after it.
    bytes: [u8; Shape::MAX],
    /// How many come before the text (0: none kept), and after it.
    head: u16,
    tail: u16,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape {
            bytes: [0; Shape::MAX],
            head: 0,
            tail: 0,
        }
    }
}

impl Shape {
    /// The most bytes around the text kept: vLLM's, SGLang's and llama.cpp's chunks carry
    /// 150-300.
    pub(super) const MAX: usize = 384;

    fn read<'a>(&self, data: &'a str) -> Option<&'a str> {
        let (head, tail) = (usize::from(self.head), usize::from(self.tail));
        let b = data.as_bytes();
        if head == 0
            || b.len() < head + tail
            || b[..head] != self.bytes[..head]
            || b[b.len() - tail..] != self.bytes[head..head + tail]
        {
            return None;
        }
        let text = data.get(head..b.len() - tail)?;
        memchr::memchr2(b'"', b'\\', text.as_bytes())
            .is_none()
            .then_some(text)
    }

    /// Keeps `data` when `found`, what [`scan`] read from it, is a string.
    fn learn(&mut self, data: &str, found: Found<'_>) {
        self.head = 0;
        let Found::Text(text) = found else {
            return;
        };
        // `text` lies inside `data` (`scan` cut it from it).
        let head = text.as_ptr() as usize - data.as_ptr() as usize;
        let after = &data.as_bytes()[head + text.len()..];
        if head + after.len() > Self::MAX {
            return;
        }
        self.bytes[..head].copy_from_slice(&data.as_bytes()[..head]);
        self.bytes[head..head + after.len()].copy_from_slice(after);
        // Both fit in `MAX`.
        (self.head, self.tail) = (head as u16, after.len() as u16);
    }
}

/// What [`openai`] reads: the answer text as found.
fn scan(data: &str) -> Option<Found<'_>> {
    let b = data.as_bytes();
    if b.first() != Some(&b'{') || b.last() != Some(&b'}') {
        return None;
    }
    let mut depth = 0usize;
    // The depth inside the `choices` array while in it, and whether it was seen.
    let (mut in_choices, mut choices_seen) = (None::<usize>, false);
    let (mut delta, mut text, mut content) = (false, Found::None, Found::None);
    let mut i = 0;
    loop {
        // Straight to the next byte that opens, closes or escapes something.
        while i < b.len() && !STRUCTURAL[usize::from(b[i])] {
            i += 1;
        }
        if i == b.len() {
            break;
        }
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
                let Some(value) = json_ws(&data[i..]).strip_prefix(':') else {
                    continue; // a value, not a key
                };
                let value = json_ws(value);
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
    match (delta, text) {
        (false, t) => Some(t),
        (true, Found::None) => Some(content),
        (true, _) => None,
    }
}

/// The bytes the scan stops at: a backslash, `{`, `[`, `}`, `]` and `"`.
const STRUCTURAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut k = 0;
    while k < 6 {
        t[b"\\{[}]\""[k] as usize] = true;
        k += 1;
    }
    t
};

/// `s` after its leading JSON whitespace (space, tab, CR, LF: the only whitespace JSON allows
/// between tokens).
fn json_ws(s: &str) -> &str {
    let n = (s
        .bytes()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n')))
    .unwrap_or(s.len());
    &s[n..]
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
    use super::super::apis::completions::OpenAiStream;
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
        OpenAiStream.parse(None, data).unwrap()
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

    #[test]
    fn a_streams_next_chunk_is_read_against_its_last() {
        let chunk = |text: &str| {
            format!(
                r#"{{"id":"cmpl-7","object":"text_completion","created":1,"model":"m","choices":[{{"index":0,"text":"{text}","logprobs":null,"finish_reason":null}}],"usage":null}}"#
            )
        };
        let mut shape = Shape::default();
        assert_eq!(shape.read(&chunk("a")), None, "nothing kept yet");
        assert_eq!(openai_shaped(&mut shape, &chunk(" the")), Some(" the"));
        assert_eq!(shape.read(&chunk(" other")), Some(" other"));
        assert_eq!(shape.read(&chunk("")), Some(""));
        // A quote or a backslash in the text, another id, a finish: the full scan reads it.
        for other in [
            chunk(r#"a"b"#),
            chunk(r#"a","x":"b"#),
            chunk("x").replace("cmpl-7", "cmpl-8"),
            chunk("x").replace(r#""finish_reason":null"#, r#""finish_reason":"stop""#),
        ] {
            assert_eq!(shape.read(&other), None, "{other}");
        }
        // An event the fast path refuses leaves the last kept (what it kept still reads as
        // the scan would); one with no text forgets it.
        let usage = r#"{"choices":[],"usage":{"completion_tokens":2}}"#;
        assert_eq!(openai_shaped(&mut shape, usage), None);
        assert_eq!(shape.read(&chunk("a")), Some("a"));
        assert_eq!(openai_shaped(&mut shape, &chunk("b")), Some("b"));
        assert_eq!(
            openai_shaped(&mut shape, r#"{"choices":[{"text":null}]}"#),
            Some("")
        );
        assert_eq!(shape.read(&chunk("a")), None);
        // An event with more around its text than is kept is read by the scan each time.
        let long = chunk("a").replace(
            r#""model":"m""#,
            &format!(r#""model":"{}""#, "m".repeat(Shape::MAX)),
        );
        assert_eq!(openai_shaped(&mut shape, &long), Some("a"));
        assert_eq!(shape.read(&long), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Whenever the fast path reads an event, it reads what serde reads.
        #[test]
        fn the_fast_path_agrees_with_serde(data in event()) {
            let spaced = format!(" {data}");
            if let Some(fast) = fast(&data) {
                prop_assert_eq!(fast, full(&spaced));
            }
        }

        /// After any event, reading the next against it gives what the scan alone gives: for
        /// the same event with any other text, and for any other event.
        #[test]
        fn reading_against_the_last_event_agrees_with_the_scan(
            last in event(),
            next in event(),
            text in any::<String>(),
        ) {
            let mut shape = Shape::default();
            prop_assert_eq!(openai_shaped(&mut shape, &last), openai(&last));
            let mut same = serde_json::from_str::<serde_json::Value>(&last).unwrap();
            for choice in same["choices"].as_array_mut().into_iter().flatten() {
                if choice.get("text").is_some() {
                    choice["text"] = text.clone().into();
                } else {
                    choice["delta"]["content"] = text.clone().into();
                }
            }
            for data in [same.to_string(), next] {
                if let Some(read) = shape.read(&data) {
                    prop_assert_eq!(Some(read), openai(&data), "{}", data);
                }
            }
        }
    }
}
