//! Why prompts could not be built: [`DatasetError`], and what is wrong with one line of a
//! jsonl file ([`JsonlLineError`]), of a trace ([`TraceLineError`]) or of a graph file
//! ([`GraphLineError`]), each carried by the error that names the file and the line.
//!
//! A leaf beside the datasets: each of them may use it, and it imports none of them. A new
//! way to fail is a variant here with its one-line message.

use std::path::PathBuf;

use serde_json::Value;

use crate::config::limits::{MAX_TOKENS, MAX_WAIT_S};
use crate::measure::job::{MAX_CALLS_PER_JOB, MAX_GAP_MS};

/// The longest id of a call in a graph file, bytes.
pub const MAX_ID_BYTES: usize = 256;

/// Why prompts could not be built. Each message is one line naming the file or setting.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("cannot read dataset file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("dataset file {0} is empty")]
    Empty(PathBuf),
    #[error(
        "book {path} has {tokens} tokens under {tokenizer}, fewer than the {needed} a prompt needs"
    )]
    BookTooShort {
        path: PathBuf,
        tokens: usize,
        needed: u64,
        tokenizer: String,
    },
    #[error("{path}: {reason}")]
    BadFile { path: PathBuf, reason: String },
    #[error("{path} line {line}: {reason}")]
    BadJsonlLine {
        path: PathBuf,
        line: usize,
        reason: JsonlLineError,
    },
    #[error("{path} line {line}: {reason}")]
    BadTraceLine {
        path: PathBuf,
        line: usize,
        reason: TraceLineError,
    },
    #[error("{path} line {line}: {reason}")]
    BadGraphLine {
        path: PathBuf,
        line: usize,
        reason: GraphLineError,
    },
    #[error("{path}: no conversation passes the filters ({reason})")]
    NoValidPrompts { path: PathBuf, reason: String },
    #[error("invalid dataset setting: {0}")]
    InvalidSpec(String),
    #[error("the {0} dataset needs the served model's tokenizer: it cannot be built in words")]
    NeedsTokenizer(&'static str),
    #[error("could not build a prompt of exactly {target} tokens under {tokenizer}: {reason}")]
    NotExact {
        target: u64,
        tokenizer: String,
        reason: String,
    },
}

/// What is wrong with one line of a jsonl file (the line's number is in
/// [`DatasetError::BadJsonlLine`]).
#[derive(Debug, thiserror::Error)]
pub enum JsonlLineError {
    #[error("not valid JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("expected a JSON object")]
    NotAnObject,
    #[error("needs a \"prompt\" string, a \"messages\" array or a \"turns\" array")]
    NoPrompt,
    #[error("\"prompt\" must be a string")]
    PromptNotText,
    #[error("\"turns\" must be a non-empty array")]
    NoTurns,
    #[error("turn {0} needs a \"prompt\" string")]
    TurnWithoutPrompt(usize),
    #[error("turn {0} must be a string or {{\"prompt\": ...}}")]
    TurnNotText(usize),
    #[error("turn {turn}: {why}")]
    Turn {
        turn: usize,
        why: Box<JsonlLineError>,
    },
    #[error("output_len must be a whole number in 1..={MAX_TOKENS} (as --output-len), got {0}")]
    OutputLen(Value),
    #[error("\"messages\" must be an array")]
    MessagesNotArray,
    #[error("\"messages\" is empty")]
    NoMessages,
    #[error("message {0} has no \"content\"")]
    NoContent(usize),
    #[error("message {0}: \"content\" must be a string or an array")]
    ContentNotText(usize),
    #[error("\"documents\" must be a list of 1 to {max} strings beside \"query\" (a rerank pair)", max = crate::config::MAX_INPUTS_PER_REQUEST)]
    Documents,
    #[error("\"query\" must be a string")]
    QueryNotText,
    #[error("\"model\" must be an adapter's name: a string of 1 to {max} bytes without spaces or control characters", max = crate::config::lora::MAX_ADAPTER_NAME)]
    Model,
    #[error("\"image_files\" must be an array of file names, with a \"prompt\"")]
    ImageFiles,
    #[error("image file {file}: {why}")]
    ImageFile {
        file: String,
        why: crate::workload::media::ImageFileError,
    },
    #[error("\"audio\" must be a WAV file's name or an array of them, with a \"prompt\"")]
    AudioFiles,
    #[error("audio file {file}: {why}")]
    AudioFile {
        file: String,
        why: crate::workload::wav::WavError,
    },
    #[error("the media files of the lines up to this one would hold more than {0} bytes in memory; name fewer or smaller files, or ask for fewer requests")]
    MediaTooLarge(u64),
    #[error("--backend openai-audio sends one WAV clip per request: the line names {0} \"audio\" files, not exactly one")]
    NotOneClip(usize),
}

/// What is wrong with one line of a trace (the line's number is in
/// [`DatasetError::BadTraceLine`]).
#[derive(Debug, thiserror::Error)]
pub enum TraceLineError {
    #[error("not a trace line: {0}")]
    NotALine(serde_json::Error),
    #[error("timestamp {0} is not a time in ms")]
    BadTimestamp(f64),
    #[error("timestamp {at_ms} ms is {after_s:.0} s after the first line's, more than a week ({MAX_WAIT_S:.0} s)")]
    PastAWeek { at_ms: f64, after_s: f64 },
    #[error("{field} {value} is above the limit of {MAX_TOKENS} tokens (as --output-len and --input-len)")]
    TooLong { field: &'static str, value: u64 },
    #[error("needs \"hash_ids\", \"input_length\" or \"prompt\"")]
    NoPrompt,
    #[error("{ids} hash_ids of {block} tokens make a prompt of {tokens} tokens, above the limit of {MAX_TOKENS}")]
    TooManyBlocks { ids: u64, block: u64, tokens: u64 },
    #[error("input_length {input} does not fit {ids} hash_ids of {block} tokens (the last block must hold 1..={block})")]
    BlocksDoNotFit { input: u64, ids: u64, block: u64 },
}

/// What is wrong with one line (one job) of a graph file (the line's number is in
/// [`DatasetError::BadGraphLine`]). Ids are shown escaped (`{:?}`), each at most
/// [`MAX_ID_BYTES`] bytes, so a message stays one short line whatever the file holds.
#[derive(Debug, thiserror::Error)]
pub enum GraphLineError {
    #[error("longer than {0} bytes (one job a line)")]
    TooLong(usize),
    #[error("the file's lines up to this one are more than {0} bytes")]
    FileTooLarge(u64),
    #[error("not UTF-8 text")]
    NotUtf8,
    #[error("not valid JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("expected a JSON object {{\"calls\": [...]}}")]
    NotAnObject,
    #[error("unknown key {0:?}: a job line takes only \"calls\"")]
    JobKey(String),
    #[error("\"calls\" must be a non-empty array of calls")]
    NoCalls,
    #[error("the job has {0} calls, more than {MAX_CALLS_PER_JOB}")]
    TooManyCalls(usize),
    #[error("call {0} (from 0) must be a JSON object")]
    CallNotObject(usize),
    #[error("call {0} (from 0): \"id\" must be a string of 1 to {MAX_ID_BYTES} bytes")]
    Id(usize),
    #[error("call {id:?}: unknown key {key:?} (a call takes id, after, gap_ms, prompt, input_len, output_len, splice)")]
    CallKey { id: String, key: String },
    #[error("two calls have the id {0:?}")]
    DuplicateId(String),
    #[error("call {0:?}: give exactly one of \"prompt\" (its text) and \"input_len\" (random text of that many tokens)")]
    OneText(String),
    #[error("call {0:?}: \"prompt\" must be a string")]
    PromptNotText(String),
    #[error("call {0:?}: its \"prompt\" is 0 tokens")]
    EmptyPrompt(String),
    #[error("call {id:?}: {field} must be a whole number in 1..={MAX_TOKENS} (as --{flag}), got {value}", flag = field.replace('_', "-"))]
    Len {
        id: String,
        field: &'static str,
        value: Value,
    },
    #[error(
        "call {id:?}: \"gap_ms\" must be a number of ms in [0, {MAX_GAP_MS}] (a week), got {value}"
    )]
    Gap { id: String, value: Value },
    #[error("call {id:?}: {field:?} must be an array of call ids")]
    Names { id: String, field: &'static str },
    #[error("call {id:?}: {field:?} names {name:?}, which is no call of this job")]
    UnknownId {
        id: String,
        field: &'static str,
        name: String,
    },
    #[error("call {id:?}: {field:?} names {name:?} twice")]
    Twice {
        id: String,
        field: &'static str,
        name: String,
    },
    #[error("\"after\" makes a cycle: {0} (each waits for the next)")]
    Cycle(String),
    #[error(
        "call {id:?} splices {name:?}, which is not upstream of it (not reached through \"after\")"
    )]
    NotUpstream { id: String, name: String },
}
