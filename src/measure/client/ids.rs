//! Request ids: the id each request is sent with (`--request-id-header`: the run's tag and
//! the request's number), its W3C `traceparent` when asked for, and which id a server sent
//! back is plausible enough to keep.
//!
//! A leaf of the client: `mod.rs` makes a [`RequestIds`] per client, `exchange.rs` sends its
//! lines and reads the server's id; it imports nothing of theirs.

use super::spec::RequestSpec;
use crate::measure::traceid::traceparent;

/// Each request's id: the run's tag and the request's number (`w` before a warm-up's), sent in
/// the header `name` (lowercase).
pub(super) struct RequestIds {
    pub(super) name: String,
    tag: String,
    /// Each request's `traceparent` is sent too (`RunConfig::propagate_trace`).
    pub(super) propagate: bool,
}

impl RequestIds {
    /// A tag for this client's ids: `sb` and 12 hex digits from the time and the process, so
    /// the ids of two runs (or two shards) sent to one server do not meet.
    pub(super) fn new(name: &str, propagate: bool) -> RequestIds {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mixed = nanos ^ u64::from(std::process::id()).rotate_left(40);
        RequestIds {
            name: name.to_ascii_lowercase(),
            tag: format!("sb{:012x}", mixed & 0xffff_ffff_ffff),
            propagate,
        }
    }

    /// The request's own header lines, each ending in CRLF: its id, and its `traceparent`
    /// when asked for.
    pub(super) fn head_lines(&self, id: &str) -> String {
        let mut lines = format!("{}: {id}\r\n", self.name);
        if self.propagate {
            lines.push_str("traceparent: ");
            lines.push_str(&traceparent(id));
            lines.push_str("\r\n");
        }
        lines
    }

    pub(super) fn id(&self, spec: &RequestSpec) -> String {
        let w = if spec.warmup { "w" } else { "" };
        format!("{}-{w}{}", self.tag, spec.id)
    }
}

/// The longest server request id a record keeps.
const MAX_SERVER_ID: usize = 128;

/// A request id the server sent, when it is plausible: 1 to [`MAX_SERVER_ID`] visible ASCII
/// characters (anything else is not kept: it cannot be a request id, and it would reach a
/// terminal or a spreadsheet).
pub(super) fn server_id(value: &str) -> Option<String> {
    let plausible = !value.is_empty()
        && value.len() <= MAX_SERVER_ID
        && value.bytes().all(|b| b.is_ascii_graphic());
    plausible.then(|| value.to_string())
}
