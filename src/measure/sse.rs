//! A pure, incremental Server-Sent Events parser: bytes in, events out. No I/O, no async.
//!
//! Follows the WHATWG event-stream rules that LLM servers rely on: lines end with LF, CRLF or
//! CR (also when a CR and its LF arrive in different reads); `:` starts a comment; `data:`
//! lines accumulate (joined with `\n`); `event:` names the event; a blank line dispatches; one
//! leading space after the colon is dropped; `id:` and `retry:` are accepted and ignored.
//! Any split of the same bytes yields the same events (a property test checks it).
//!
//! It knows nothing about JSON or `[DONE]`: the API layer in `client` interprets `data`.
//! Hand-written because the hot path must not allocate per line or per event and must be
//! driven by our own read loop, whose read times are the chunk timestamps; the SSE crates own
//! the I/O instead. Events are handed to a callback as borrowed `&str`s whose buffers are
//! reused, lines are found with `memchr`, and UTF-8 is checked with the standard library's
//! fast validator (invalid bytes are replaced, as `String::from_utf8_lossy` does, only when
//! there are some): this parser was a quarter of the client's instructions per streamed event
//! before (see docs/performance.md, "Client CPU per streamed event").

/// Incremental parser state. Feed it every byte of the body, in order.
///
/// Memory is bounded by [`SseParser::with_limit`]: a line, or an event's data, longer than the
/// limit stops the parser (every later byte is dropped) and [`SseParser::too_long`] says so; the
/// caller ends the stream. A server that sends one `data:` line that never ends, or never sends
/// the blank line that ends an event, cannot grow the client's memory.
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of a line not yet terminated.
    partial: Vec<u8>,
    data: String,
    has_data: bool,
    event: String,
    has_event: bool,
    /// The previous read ended with CR: a leading LF in the next read belongs to it.
    skip_lf: bool,
    /// Most bytes of one line, or of one event's data.
    max: usize,
    /// A line or event went over `max`: the parser has stopped.
    too_long: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::with_limit(usize::MAX)
    }
}

impl SseParser {
    /// A parser without a size limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser that stops at a line or an event's data longer than `max` bytes.
    pub fn with_limit(max: usize) -> Self {
        SseParser {
            partial: Vec::new(),
            data: String::new(),
            has_data: false,
            event: String::new(),
            has_event: false,
            skip_lf: false,
            max,
            too_long: false,
        }
    }

    /// True when a line or an event went over the limit; the parser then ignores every byte.
    pub fn too_long(&self) -> bool {
        self.too_long
    }

    /// Parses `bytes`, calling `on_event(event name, data)` for every event completed by them,
    /// in order. The first error from `on_event` stops parsing and is returned (the rest of
    /// `bytes` is dropped: the caller ends the stream).
    pub fn feed<E>(
        &mut self,
        mut bytes: &[u8],
        on_event: &mut impl FnMut(Option<&str>, &str) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.too_long {
            return Ok(());
        }
        if self.skip_lf {
            self.skip_lf = false;
            if let [b'\n', rest @ ..] = bytes {
                bytes = rest;
            }
        }
        while let Some(i) = memchr::memchr2(b'\n', b'\r', bytes) {
            let (line, rest) = (&bytes[..i], &bytes[i + 1..]);
            let lf = bytes[i] == b'\n';
            bytes = if bytes[i] == b'\r' {
                match rest {
                    [b'\n', tail @ ..] => tail,
                    [] => {
                        self.skip_lf = true;
                        rest
                    }
                    _ => rest,
                }
            } else {
                rest
            };
            if self.partial.len() + line.len() > self.max {
                self.stop();
                return Ok(());
            }
            // The common event, one `data:` line and the blank line after it, both whole in
            // this read: handed over from the read's own bytes, without copying.
            if lf && self.partial.is_empty() && !self.has_data && !self.has_event {
                if let (Some(value), [b'\n', after @ ..]) = (line.strip_prefix(b"data:"), rest) {
                    let value = value.strip_prefix(b" ").unwrap_or(value);
                    if let Ok(text) = std::str::from_utf8(value) {
                        on_event(None, text)?;
                        bytes = after;
                        continue;
                    }
                }
            }
            if self.partial.is_empty() {
                self.line(line, on_event)?;
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                let r = self.line(&whole, on_event);
                whole.clear();
                self.partial = whole;
                r?;
            }
            if self.data.len() > self.max {
                self.stop();
                return Ok(());
            }
        }
        if self.partial.len() + bytes.len() > self.max {
            self.stop();
            return Ok(());
        }
        self.partial.extend_from_slice(bytes);
        Ok(())
    }

    /// Stops at a line or event over the limit, and frees what it held.
    fn stop(&mut self) {
        self.too_long = true;
        self.partial = Vec::new();
        self.data = String::new();
        self.has_data = false;
    }

    /// Ends the stream. An event whose `data:` lines were complete but which was never
    /// dispatched by a blank line is dispatched (servers that close without the final blank
    /// line still deliver it). Returns `Ok(true)` when the body ended in the middle of a
    /// line: a truncated stream.
    pub fn finish<E>(
        &mut self,
        on_event: &mut impl FnMut(Option<&str>, &str) -> Result<(), E>,
    ) -> Result<bool, E> {
        if self.too_long {
            return Ok(false);
        }
        let truncated = !self.partial.is_empty();
        self.partial.clear();
        self.dispatch(on_event)?;
        Ok(truncated)
    }

    fn line<E>(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(Option<&str>, &str) -> Result<(), E>,
    ) -> Result<(), E> {
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                push_utf8(&mut self.data, value);
            }
            b"event" => {
                self.event.clear();
                self.has_event = true;
                push_utf8(&mut self.event, value);
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch<E>(
        &mut self,
        on_event: &mut impl FnMut(Option<&str>, &str) -> Result<(), E>,
    ) -> Result<(), E> {
        let has_event = std::mem::take(&mut self.has_event);
        if !std::mem::take(&mut self.has_data) {
            return Ok(());
        }
        let r = on_event(has_event.then_some(self.event.as_str()), &self.data);
        self.data.clear();
        r
    }
}

/// Appends `bytes` to `out`, replacing invalid UTF-8 with U+FFFD.
fn push_utf8(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => out.push_str(s),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One dispatched event, owned.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct SseEvent {
        /// The `event:` field, when one was given.
        pub event: Option<String>,
        /// The `data:` lines joined with `\n`.
        pub data: String,
    }

    fn parse_all(chunks: &[&[u8]]) -> (Vec<SseEvent>, bool) {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let mut collect = |event: Option<&str>, data: &str| {
            out.push(SseEvent {
                event: event.map(str::to_string),
                data: data.to_string(),
            });
            Ok::<(), ()>(())
        };
        for c in chunks {
            p.feed(c, &mut collect).unwrap();
        }
        let truncated = p.finish(&mut collect).unwrap();
        (out, truncated)
    }

    fn data(d: &str) -> SseEvent {
        SseEvent {
            event: None,
            data: d.into(),
        }
    }

    const SAMPLE: &[u8] = b": keep-alive\n\ndata: {\"a\":1}\n\ndata:{\"b\":2}\r\n\r\nevent: error\ndata: line1\ndata: line2\n\nid: 7\nretry: 10\ndata: x\r\rdata: [DONE]\n\n";

    #[test]
    fn parses_lf_crlf_cr_comments_multiline_and_event_names() {
        let (events, truncated) = parse_all(&[SAMPLE]);
        assert!(!truncated);
        assert_eq!(
            events,
            vec![
                data("{\"a\":1}"),
                data("{\"b\":2}"),
                SseEvent {
                    event: Some("error".into()),
                    data: "line1\nline2".into()
                },
                data("x"),
                data("[DONE]"),
            ]
        );
    }

    #[test]
    fn stream_without_final_blank_line_still_delivers_complete_event() {
        let (events, truncated) = parse_all(&[b"data: a\n\ndata: b\n"]);
        assert_eq!(events, vec![data("a"), data("b")]);
        assert!(!truncated);
    }

    #[test]
    fn body_cut_mid_line_is_reported_truncated() {
        let (events, truncated) = parse_all(&[b"data: a\n\ndata: {\"choi"]);
        assert_eq!(events, vec![data("a")]);
        assert!(truncated);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_an_error_from_the_callback_stops_parsing() {
        let (events, _) = parse_all(&[b"event: e\xff\ndata: a\xffb\n\n"]);
        assert_eq!(
            events,
            vec![SseEvent {
                event: Some("e\u{fffd}".into()),
                data: "a\u{fffd}b".into()
            }]
        );
        let mut p = SseParser::new();
        let mut seen = 0;
        let r = p.feed(b"data: 1\n\ndata: 2\n\n", &mut |_, _| {
            seen += 1;
            Err("stop")
        });
        assert_eq!((r, seen), (Err("stop"), 1));
    }

    #[test]
    fn field_without_colon_and_empty_data() {
        let (events, _) = parse_all(&[b"data\n\ndata:\n\n"]);
        assert_eq!(events, vec![data(""), data("")]);
    }

    /// A line that never ends, or an event that never ends, stops the parser
    /// at the limit; memory stays bounded, and nothing after it is parsed.
    #[test]
    fn a_line_or_event_over_the_limit_stops_the_parser() {
        let mut p = SseParser::with_limit(64);
        let mut events = 0;
        let mut count = |_: Option<&str>, _: &str| {
            events += 1;
            Ok::<(), ()>(())
        };
        p.feed(b"data: ok\n\ndata: ", &mut count).unwrap();
        for _ in 0..1000 {
            p.feed(b"xxxxxxxxxxxxxxxx", &mut count).unwrap();
            assert!(p.partial.capacity() <= 128);
        }
        assert!(p.too_long());
        p.feed(b"\n\ndata: late\n\n", &mut count).unwrap();
        assert_eq!(p.finish(&mut count), Ok(false));
        // Many short data lines and never a blank one: the event's data is bounded too.
        let mut p = SseParser::with_limit(64);
        for _ in 0..100 {
            p.feed(b"data: 0123456789\n", &mut count).unwrap();
        }
        assert!(p.too_long() && p.data.capacity() <= 128);
        assert_eq!(events, 1);
        // At the limit exactly: still fine.
        let mut p = SseParser::with_limit(14);
        p.feed(b"data: 12345678\n\n", &mut |_, _| Ok::<(), ()>(()))
            .unwrap();
        assert!(!p.too_long());
    }

    proptest! {
        /// Any split of the same bytes yields the same events.
        #[test]
        fn any_split_gives_same_events(cuts in proptest::collection::vec(0usize..SAMPLE.len(), 0..12)) {
            let mut cuts = cuts;
            cuts.sort_unstable();
            let mut pieces = Vec::new();
            let mut start = 0;
            for c in cuts {
                pieces.push(&SAMPLE[start..c]);
                start = c;
            }
            pieces.push(&SAMPLE[start..]);
            prop_assert_eq!(parse_all(&pieces), parse_all(&[SAMPLE]));
        }

        #[test]
        fn any_split_of_random_streams(body in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), Just(b'd'), Just(b'a'), Just(b't'), Just(b'x')], 0..200), cut in 0usize..200) {
            let cut = cut.min(body.len());
            prop_assert_eq!(parse_all(&[&body[..cut], &body[cut..]]), parse_all(&[&body]));
        }
    }
}
