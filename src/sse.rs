//! A pure, incremental Server-Sent Events parser: bytes in, events out. No I/O, no async.
//!
//! Follows the WHATWG event-stream rules that LLM servers rely on: lines end with LF, CRLF or
//! CR (also when a CR and its LF arrive in different reads); `:` starts a comment; `data:`
//! lines accumulate (joined with `\n`); `event:` names the event; a blank line dispatches; one
//! leading space after the colon is dropped; `id:` and `retry:` are accepted and ignored.
//! Any split of the same bytes yields the same events (a property test checks it).
//!
//! It knows nothing about JSON or `[DONE]`: the API layer in `client` interprets `data`.
//! Hand-written because the hot path must not allocate per line and must be driven by our own
//! read loop, whose read times are the chunk timestamps; the SSE crates own the I/O instead.

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when one was given.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental parser state. Feed it every byte of the body, in order.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of a line not yet terminated.
    partial: Vec<u8>,
    data: String,
    has_data: bool,
    event: Option<String>,
    /// The previous read ended with CR: a leading LF in the next read belongs to it.
    skip_lf: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `bytes`, appending every event completed by them to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) {
        if self.skip_lf {
            self.skip_lf = false;
            if let [b'\n', rest @ ..] = bytes {
                bytes = rest;
            }
        }
        while let Some(i) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (line, rest) = (&bytes[..i], &bytes[i + 1..]);
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
            if self.partial.is_empty() {
                self.line(line, out);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.line(&whole, out);
                whole.clear();
                self.partial = whole;
            }
        }
        self.partial.extend_from_slice(bytes);
    }

    /// Ends the stream. An event whose `data:` lines were complete but which was never
    /// dispatched by a blank line is dispatched (servers that close without the final blank
    /// line still deliver it). Returns true when the body ended in the middle of a line:
    /// a truncated stream.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> bool {
        let truncated = !self.partial.is_empty();
        self.partial.clear();
        self.dispatch(out);
        truncated
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
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
                self.data.push_str(&String::from_utf8_lossy(value));
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if self.has_data {
            self.has_data = false;
            out.push(SseEvent {
                event,
                data: std::mem::take(&mut self.data),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_all(chunks: &[&[u8]]) -> (Vec<SseEvent>, bool) {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut out);
        }
        let truncated = p.finish(&mut out);
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
    fn field_without_colon_and_empty_data() {
        let (events, _) = parse_all(&[b"data\n\ndata:\n\n"]);
        assert_eq!(events, vec![data(""), data("")]);
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
