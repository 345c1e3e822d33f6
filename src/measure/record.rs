//! The raw per-request record: what happened to one request, with every timestamp kept.
//!
//! A [`RequestRecord`] is data, not behaviour: the client fills it, the run writes it to the
//! JSON Lines file the moment the request ends, and `stats` derives every figure from it.
//! Times are integer nanoseconds since the run's anchor (see `clock`), so sums of gaps are
//! exact: TTFT + Σ ITL = E2EL holds with no rounding.
//!
//! How a request ended ([`Outcome`], [`FailureKind`]) is `outcome.rs`'s, re-exported here.
//!
//! To add a field: add it here with `#[serde(default)]` so older record files still load,
//! and fill it in `client`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use super::outcome::{FailureKind, Outcome};

/// Where a token count came from. Every count in servebench carries one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The server's own count (`usage`, TGI `details`, llama.cpp `tokens_predicted`).
    ServerUsage,
    /// The served model's tokenizer, run by servebench on the text.
    Tokenizer,
    /// Fallback: the number of output chunks. Labelled everywhere it is used, because a chunk
    /// can carry more than one token.
    ChunkCount,
    /// The length servebench asked for (prompt lengths of a built workload).
    Requested,
}

impl TokenSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenSource::ServerUsage => "server_usage",
            TokenSource::Tokenizer => "tokenizer",
            TokenSource::ChunkCount => "chunk_count",
            TokenSource::Requested => "requested",
        }
    }
}

/// A number the server reported about a request that contradicts what the client saw
/// (`docs/metrics.md`, "Numbers a server reports"): flagged on the record, and not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Implausible {
    /// The output count: more than `max_tokens` or than the stream could carry, none for a
    /// stream with text, or no count at all (a negative number, a fraction); also a
    /// per-chunk count (vLLM's continuous usage) more than its chunk could carry.
    OutputTokens,
    /// The prompt count: more than the request body and its media could hold, or no count.
    PromptTokens,
    /// The cached prompt tokens: more than the prompt, or no count.
    CachedTokens,
    /// llama.cpp's `timings`: a duration negative, not finite or longer than the client saw;
    /// a count that is none or out of bounds.
    ServerTimings,
    /// vLLM's per-request `metrics`: the same rules.
    ServerRequestMetrics,
    /// TGI's timing headers: a value that is no number, negative, or a duration longer than
    /// the client saw.
    ServerTimingHeaders,
    /// SGLang's `meta_info`: a duration or timestamp gap that is no finite number, negative
    /// or longer than the client saw; a count out of bounds.
    ServerMetaInfo,
    /// The reasoning count (`completion_tokens_details.reasoning_tokens`, the Responses API's
    /// `output_tokens_details.reasoning_tokens`): no count, more than the output count, all of
    /// it while answer text streamed, or 0 for a stream that carried reasoning text.
    ReasoningTokens,
}

impl Implausible {
    pub fn as_str(self) -> &'static str {
        match self {
            Implausible::OutputTokens => "output_tokens",
            Implausible::PromptTokens => "prompt_tokens",
            Implausible::CachedTokens => "cached_tokens",
            Implausible::ServerTimings => "server_timings",
            Implausible::ServerRequestMetrics => "server_request_metrics",
            Implausible::ServerTimingHeaders => "server_timing_headers",
            Implausible::ServerMetaInfo => "server_meta_info",
            Implausible::ReasoningTokens => "reasoning_tokens",
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One request, as it happened.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Position in the run's schedule (warm-ups have their own numbering, before the run).
    pub id: u64,
    /// Warm-up requests are written to the records file but excluded from every statistic.
    #[serde(default)]
    pub warmup: bool,
    /// When the load schedule wanted the request sent.
    pub scheduled_ns: u64,
    /// When the first byte of the request was written to its connection: after any
    /// concurrency gate and after a new connection's setup. Every latency counts from here.
    /// (Where the transport cannot tell, as over reqwest for https, and in records written
    /// before servebench timed connections: when the request was handed to the connection.)
    pub sent_ns: u64,
    /// A new connection's setup, TCP connect (and TLS handshake, where timed): when it began
    /// and when it was done. Absent for a reused connection and where the transport cannot tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_start_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_end_ns: Option<u64>,
    /// Whether the request went over a kept-alive connection; absent where unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_reused: Option<bool>,
    /// Times the request was re-sent because a kept-alive connection turned out closed before
    /// the request reached the server (its latencies still count from `sent_ns`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connection_retries: u32,
    /// The id servebench sent with the request (`--request-id-header`, `x-request-id` unless
    /// set): unique in the run. Absent when none was sent and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The id the server returned in the same response header, when it sent a plausible one
    /// (`measure::client`, `server_id`), without the user's secrets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_request_id: Option<String>,
    /// Arrival time of every chunk that carried output (content, reasoning or a tool call's
    /// arguments), in order.
    /// Role-only deltas, empty finish chunks and usage-only chunks are not here.
    pub chunk_ns: Vec<u64>,
    /// Tokens in each output chunk, when the server says so per chunk (TGI: one event per
    /// token; llama.cpp native: its `tokens` array). Same length as `chunk_ns` when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_tokens: Option<Vec<u32>>,
    /// First chunk with reasoning output (`reasoning_content`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_reasoning_ns: Option<u64>,
    /// First chunk with answer output (`content`/`text`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_answer_ns: Option<u64>,
    /// The reasoning phase: the output chunks up to and including the last one
    /// with reasoning text (the first `reasoning_chunks` of `chunk_ns`); absent when no chunk
    /// carried reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_chunks: Option<u64>,
    /// Of the N output tokens, those spent reasoning, and where the count came from (the
    /// server's `reasoning_tokens`, the tokenizer on the reasoning text, or the reasoning
    /// chunks); absent when the request showed and reported no reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens_source: Option<TokenSource>,
    /// First chunk with a piece of a tool call's arguments, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_tool_call_ns: Option<u64>,
    /// A successful request of a run that asks for structured output: its answer's check
    /// (`output_check.rs`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_check: Option<super::output_check::OutputCheck>,
    /// When the stream ended (terminator, end of body, or failure).
    pub end_ns: u64,
    /// For a response whose body was read (2xx): whether the API's terminator came (`[DONE]`,
    /// TGI's final event, llama.cpp's `stop: true`, `message_stop`, `response.completed`).
    /// `false` on a success: the body ended cleanly after the chunk that ended the answer
    /// (`docs/metrics.md`, "How a stream ends"). Absent for other responses and older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_marker: Option<bool>,
    /// HTTP status of the response, when one arrived.
    pub http_status: Option<u16>,
    pub outcome: Outcome,
    /// Prompt length servebench built (under its tokenizer), when known; a batch's inputs
    /// together.
    #[serde(default)]
    pub input_len_requested: Option<u64>,
    /// The inputs a request carried when its API answers each one (an embeddings request:
    /// its batch, `--embedding-batch-size`); such a request generates nothing (`output_tokens`
    /// 0, no source). Absent for every generation request and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<u64>,
    /// The model the request was sent to when it was not the run's `--model`: the LoRA
    /// adapter (`--lora-modules`, a jsonl line's `model`). Absent otherwise and in older
    /// records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// Images the request carried as content parts (random-mm); absent for a request without
    /// media and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<u32>,
    /// Videos the request carried as `video_url` parts (random-mm's buckets of more than one
    /// frame); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub videos: Option<u32>,
    /// Audio clips the request carried as `input_audio` parts (a jsonl line's `audio`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_clips: Option<u32>,
    /// The audio the request carried, ns: its clips' durations summed (a WAV's frames over
    /// its rate); absent without audio and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_duration_ns: Option<u64>,
    /// Bytes of the request's body as sent, for a request with media; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_bytes: Option<u64>,
    /// For a request with media: when its last byte was handed to its connection (lean
    /// transport) or its body's last piece to the HTTP library (reqwest, HTTPS); absent
    /// otherwise. The upload is `upload_start_ns` (or `sent_ns`)..this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload_end_ns: Option<u64>,
    /// For a request with media over reqwest (HTTPS): when its body's first piece was taken,
    /// after the connection was up and the head written. Absent over the lean transport,
    /// whose upload starts at `sent_ns` (after the connect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload_start_ns: Option<u64>,
    /// Prompt tokens and where the count came from.
    pub prompt_tokens: Option<u64>,
    pub prompt_tokens_source: Option<TokenSource>,
    /// Output tokens max requested.
    #[serde(default)]
    pub output_len_requested: Option<u64>,
    /// N, the output token count used by every metric, and its one source.
    pub output_tokens: Option<u64>,
    pub output_tokens_source: Option<TokenSource>,
    /// The server's own output count, kept even when it is not the chosen source.
    #[serde(default)]
    pub usage_output_tokens: Option<u64>,
    /// The tokenizer's count of the output text, when a tokenizer was given.
    #[serde(default)]
    pub tokenizer_output_tokens: Option<u64>,
    /// Multi-turn runs: the conversation (its schedule number) and this request's turn in it,
    /// from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Agentic runs: the job (its schedule number) and this request's place in its graph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<crate::measure::job::CallPlace>,
    /// `--users`: the user (numbered from 0) that sent the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<u32>,
    /// Prompt tokens the server took from its prefix cache: `usage.prompt_tokens_details.
    /// cached_tokens`, else llama.cpp's `timings.cache_n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_tokens: Option<u64>,
    /// Prompt tokens the workload built to repeat an earlier prompt's prefix (`prefix`,
    /// `trace` datasets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub designed_cached_tokens: Option<u64>,
    /// The `--mix` class of the request: its number in the mix's `classes`, from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<u32>,
    /// Timings the server reported about itself (llama.cpp `timings`), verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timings: Option<serde_json::Value>,
    /// The server's own per-request timing (vLLM's `metrics` object: `queue_time_ms`,
    /// `time_to_first_token_ms`, ...; servebench's simulator sends the same), verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_request_metrics: Option<serde_json::Value>,
    /// TGI's timing headers (`x-queue-time`, `x-inference-time`, ...), name to value as sent
    /// (each value at most 64 bytes), when the answer carried any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timing_headers: Option<serde_json::Value>,
    /// SGLang's `meta_info`: its timing and count keys only (`measure::client::server_forms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_meta_info: Option<serde_json::Value>,
    /// What the server reported about this request that was implausible, each
    /// once; such a number is not used (the output count falls back to the tokenizer, else the
    /// chunks; the prompt count to the built length; timings are left out of every figure).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub implausible_usage: Vec<Implausible>,
    /// Generated text, kept only when asked for (`--save-generated-text`), at most
    /// `--max-generated-text` bytes of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated_text: Option<String>,
    /// The generated text was longer than `--max-generated-text` and was cut.
    #[serde(default, skip_serializing_if = "is_false")]
    pub generated_text_truncated: bool,
    /// The endpoint the request went to (its index among the run's `--base-url`s, from 0),
    /// in a run with several; absent otherwise and for a request never sent to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<u32>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl RequestRecord {
    /// True when the request succeeded (and so enters the latency statistics).
    pub fn is_ok(&self) -> bool {
        self.outcome.is_ok()
    }
    /// When the client began sending this request: a new connection's setup, or the first
    /// byte's write on a reused one (client-side queueing ends here).
    pub fn began_ns(&self) -> u64 {
        self.connect_start_ns.unwrap_or(self.sent_ns)
    }
    /// A new connection's setup time (TCP connect, and TLS where timed), ns.
    pub fn setup_ns(&self) -> Option<u64> {
        Some(self.connect_end_ns?.saturating_sub(self.connect_start_ns?))
    }
    /// First output chunk arrival, if any.
    pub fn first_chunk_ns(&self) -> Option<u64> {
        self.chunk_ns.first().copied()
    }
    /// Last output chunk arrival, if any.
    pub fn last_chunk_ns(&self) -> Option<u64> {
        self.chunk_ns.last().copied()
    }
    /// True when the record's times are in the order they happen: scheduled ≤ sent ≤ every
    /// chunk (in order) ≤ end. servebench's client writes them so (one clock per stream,
    /// `measure::rxtime::StreamClock`) and fails a record that is not (`time_disorder`); a
    /// records file edited by hand or corrupted may not be.
    pub fn times_are_ordered(&self) -> bool {
        self.time_disorder().is_none()
    }

    /// The first of the record's times out of the order they happen in (see
    /// [`RequestRecord::times_are_ordered`]), named with how far; `None` when all are in order.
    pub fn time_disorder(&self) -> Option<String> {
        let ms = |later: u64, earlier: u64| later.saturating_sub(earlier) as f64 / 1e6;
        let (sched, sent) = (self.scheduled_ns, self.sent_ns);
        if sched > sent {
            return Some(format!(
                "sent {:.3} ms before it was scheduled",
                ms(sched, sent)
            ));
        }
        match (self.connect_start_ns, self.connect_end_ns) {
            (Some(a), Some(b)) if sched <= a && a <= b && b <= sent => {}
            (None, None) => {}
            _ => {
                return Some(
                    "its connection's setup is not between its schedule and its send".into(),
                )
            }
        }
        if let Some(&first) = self.chunk_ns.first().filter(|&&f| f < sent) {
            return Some(format!(
                "chunk 0 is {:.3} ms before the request was sent",
                ms(sent, first)
            ));
        }
        if let Some(i) = self.chunk_ns.windows(2).position(|w| w[1] < w[0]) {
            let (a, b) = (self.chunk_ns[i], self.chunk_ns[i + 1]);
            return Some(format!(
                "times go backwards: chunk {} is {:.3} ms before chunk {i}",
                i + 1,
                ms(a, b)
            ));
        }
        let last = self.chunk_ns.last().copied().unwrap_or(sent);
        (last > self.end_ns).then(|| {
            format!(
                "its last chunk is {:.3} ms after the request ended",
                ms(last, self.end_ns)
            )
        })
    }

    /// This record, failed as `malformed_stream`, when its times are out of order (see
    /// [`RequestRecord::time_disorder`]): no figure is computed from impossible times.
    pub fn with_ordered_times(mut self) -> RequestRecord {
        if let Some(why) = self.time_disorder() {
            self.outcome = Outcome::failed(
                FailureKind::MalformedStream,
                format!("its times are out of order: {why}"),
            );
        }
        self
    }

    /// True when both the server and the tokenizer counted the output and disagree.
    pub fn output_count_disagrees(&self) -> bool {
        matches!((self.usage_output_tokens, self.tokenizer_output_tokens), (Some(a), Some(b)) if a != b)
    }
}

/// The one writer of records files: one JSON object per line, appended as records arrive.
/// Creates the file's directory; flushing is the caller's choice (the run flushes whenever no
/// other record is waiting). The file only ever holds whole lines: lines are buffered whole
/// and written together, and a write that fails part-way (a full disk, a file-size limit) is
/// cut back to the last whole line, so a killed or failed run leaves no torn record.
pub struct RecordsWriter {
    file: std::fs::File,
    /// Whole lines not yet written.
    buf: Vec<u8>,
    /// Bytes of whole lines in the file.
    len: u64,
}

/// Buffered bytes past which [`RecordsWriter::write`] writes them out.
const RECORDS_BUFFER: usize = 64 * 1024;

impl RecordsWriter {
    /// Creates (or truncates) `path`, and its directory.
    pub fn create(path: &Path) -> std::io::Result<RecordsWriter> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        Ok(RecordsWriter {
            file: std::fs::File::create(path)?,
            buf: Vec::with_capacity(RECORDS_BUFFER),
            len: 0,
        })
    }

    /// Appends `r` as one line.
    pub fn write(&mut self, r: &RequestRecord) -> std::io::Result<()> {
        let start = self.buf.len();
        if let Err(e) = serde_json::to_writer(&mut self.buf, r) {
            self.buf.truncate(start);
            return Err(e.into());
        }
        self.buf.push(b'\n');
        if self.buf.len() >= RECORDS_BUFFER {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the buffered lines; on failure the file is cut back to its last whole line.
    pub fn flush(&mut self) -> std::io::Result<()> {
        use std::io::{Seek, Write};
        if self.buf.is_empty() {
            return Ok(());
        }
        let written = self.file.write_all(&self.buf);
        if written.is_err() {
            let _ = self.file.set_len(self.len);
            let _ = self.file.seek(std::io::SeekFrom::Start(self.len));
        } else {
            self.len += self.buf.len() as u64;
        }
        self.buf.clear();
        written
    }
}

impl Drop for RecordsWriter {
    /// Writes what is buffered, as a `BufWriter` would (an error is lost: flush first to see it).
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// The records file of a result: `<stem>.records.jsonl` next to it, else the path it names.
pub fn records_next_to(result: &Path, named: Option<&Path>) -> Option<PathBuf> {
    let sibling = result.with_extension("records.jsonl");
    if sibling.is_file() {
        return Some(sibling);
    }
    named.filter(|p| p.is_file()).map(Path::to_path_buf)
}

/// The records of a JSON Lines records file, read one line at a time (memory does not grow
/// with the file). Lines that do not parse as a record (the torn last line of a killed run, a
/// line edited by hand) are skipped and counted ([`RecordLines::skipped`]), never dropped
/// silently; an I/O error ends the iteration.
pub fn read_jsonl(path: &Path) -> std::io::Result<RecordLines> {
    use std::io::BufRead;
    let file = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    Ok(RecordLines {
        lines: Box::new(file.split(b'\n')),
        line: 0,
        skipped: Skipped::default(),
    })
}

/// Lines of a records file that were not records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    pub count: u64,
    /// 1-based number of the first such line.
    pub first_line: Option<u64>,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} line(s) that are not records skipped", self.count)?;
        if let Some(l) = self.first_line {
            write!(f, " (the first is line {l})")?;
        }
        Ok(())
    }
}

/// The iterator of [`read_jsonl`].
pub struct RecordLines {
    lines: Box<dyn Iterator<Item = std::io::Result<Vec<u8>>> + Send>,
    line: u64,
    skipped: Skipped,
}

impl RecordLines {
    /// The lines skipped so far (all of them once the iteration has ended).
    pub fn skipped(&self) -> Skipped {
        self.skipped
    }
}

impl Iterator for RecordLines {
    type Item = RequestRecord;
    fn next(&mut self) -> Option<RequestRecord> {
        loop {
            let line = self.lines.next()?.ok()?;
            self.line += 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice(&line) {
                Ok(r) => return Some(r),
                Err(_) => {
                    self.skipped.count += 1;
                    self.skipped.first_line.get_or_insert(self.line);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines that are not records are counted, with the first one's number.
    #[test]
    fn unreadable_lines_are_counted_not_dropped_silently() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.records.jsonl");
        let rec = RequestRecord {
            id: 3,
            ..RequestRecord::default()
        };
        let good = serde_json::to_string(&rec).unwrap();
        let text = format!(
            "{good}\n\nnot json\n{good}\n{{\"id\": \"x\"}}\n{}",
            &good[..10]
        );
        std::fs::write(&path, text).unwrap();
        let mut lines = read_jsonl(&path).unwrap();
        let ids: Vec<u64> = lines.by_ref().map(|r| r.id).collect();
        assert_eq!(ids, [3, 3]);
        assert_eq!(
            lines.skipped(),
            Skipped {
                count: 3,
                first_line: Some(3)
            }
        );
        assert!(lines.skipped().to_string().contains("line 3"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
        /// Any bytes in a records file read as records or counted skips,
        /// never a panic; every line is one or the other.
        #[test]
        fn arbitrary_bytes_read_without_panic(
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("r.records.jsonl");
            std::fs::write(&path, &body).unwrap();
            let mut lines = read_jsonl(&path).unwrap();
            let read = lines.by_ref().count() as u64;
            let non_blank = body
                .split(|&b| b == b'\n')
                .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
                .count() as u64;
            proptest::prop_assert_eq!(read + lines.skipped().count, non_blank);
        }
    }
}
