//! `servebench trace anonymize IN OUT`: a trace that carries text read line by line (each
//! line bounded before it is parsed, the file's lines, tokens and distinct blocks bounded as
//! they add up) and written as a Mooncake-style trace of block ids (`timestamp`,
//! `input_length`, `output_length`, `hash_ids`, `session_id`), which `--dataset-name trace`
//! replays. OUT is written beside itself under a temporary name and renamed when the whole
//! input was read, so a refused input leaves no half-written trace.

use std::collections::HashMap;
use std::fs::File;
use std::hash::RandomState;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::blocks::{word_tokens, BlockIds};
use super::error::{
    AnonymizeError, LineError, MAX_BLOCK, MAX_DISTINCT_BLOCKS, MAX_FILE_TOKENS, MAX_LINES,
    MAX_LINE_BYTES,
};
use super::lines::{self, Session};
use crate::config::limits::{MAX_TOKENS, MAX_WAIT_S};
use crate::measure::lines::Lines;
use crate::tokenizer::Tokenizer;

/// How prompts are cut into tokens: whitespace-separated words (as the simulator counts), or
/// the served model's tokenizer.
pub enum Tokens {
    Words,
    Local(Tokenizer),
}

/// What one anonymization read and wrote.
#[derive(Debug, Default, PartialEq)]
pub struct Summary {
    /// Non-blank lines read.
    pub lines: u64,
    /// Lines written: one per prompt (a conversation's turns are one each).
    pub requests: u64,
    /// Sessions numbered (conversations and named sessions).
    pub sessions: u64,
    /// Tokens of all prompts.
    pub tokens: u64,
    /// Block ids written, and the distinct ones among them.
    pub blocks: u64,
    pub distinct: u64,
}

/// Anonymizes the trace at `input` into `output`, cutting each prompt into blocks of `block`
/// tokens; `overwrite` replaces an existing `output`.
pub fn anonymize(
    input: &Path,
    output: &Path,
    tokens: &Tokens,
    block: u64,
    overwrite: bool,
) -> Result<Summary, AnonymizeError> {
    if !(1..=MAX_BLOCK).contains(&block) {
        return Err(AnonymizeError::BlockSize(block));
    }
    let read_err = |source| AnonymizeError::Read {
        path: input.to_path_buf(),
        source,
    };
    if !std::fs::metadata(input).map_err(read_err)?.is_file() {
        return Err(AnonymizeError::NotAFile(input.to_path_buf()));
    }
    if !overwrite && output.exists() {
        return Err(AnonymizeError::Exists(output.to_path_buf()));
    }
    let reader = BufReader::new(File::open(input).map_err(read_err)?);
    let partial = partial_name(output);
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| AnonymizeError::Write { path, source }
    };
    let file = File::create(&partial).map_err(write_err(&partial))?;
    let mut writer = BufWriter::new(file);
    let done = copy(reader, &mut writer, input, &partial, tokens, block)
        .and_then(|s| writer.flush().map_err(write_err(&partial)).map(|_| s));
    drop(writer);
    match done {
        Ok(summary) => {
            std::fs::rename(&partial, output).map_err(write_err(output))?;
            Ok(summary)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

/// `OUT.partial-PID`, beside OUT.
fn partial_name(output: &Path) -> PathBuf {
    let mut name = output.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".partial-{}", std::process::id()));
    output.with_file_name(name)
}

/// The state of one pass over the input: its time span, sessions and blocks so far.
struct Pass<'a> {
    tokens: &'a Tokens,
    word_key: RandomState,
    ids: BlockIds,
    sessions: HashMap<String, u64>,
    last_at: f64,
    span: Option<(f64, f64)>,
    summary: Summary,
}

fn copy(
    reader: impl BufRead,
    writer: &mut impl Write,
    input: &Path,
    partial: &Path,
    tokens: &Tokens,
    block: u64,
) -> Result<Summary, AnonymizeError> {
    let mut pass = Pass {
        tokens,
        word_key: RandomState::new(),
        ids: BlockIds::new(block as usize),
        sessions: HashMap::new(),
        last_at: 0.0,
        span: None,
        summary: Summary::default(),
    };
    let at = |line, reason| AnonymizeError::Line {
        path: input.to_path_buf(),
        line,
        reason,
    };
    let read_err = |source| AnonymizeError::Read {
        path: input.to_path_buf(),
        source,
    };
    let mut lines = Lines::new(reader, MAX_LINE_BYTES);
    while let Some((no, text)) = lines.next_line().map_err(read_err)? {
        let text = text.map_err(|bad| at(no, bad.into()))?;
        pass.summary.lines += 1;
        if pass.summary.lines > MAX_LINES {
            return Err(AnonymizeError::TooManyLines {
                path: input.to_path_buf(),
            });
        }
        let line = lines::read(text).map_err(|r| at(no, r))?;
        for out in pass.line(line, input, no)? {
            serde_json::to_writer(&mut *writer, &out)
                .map_err(std::io::Error::from)
                .and_then(|_| writer.write_all(b"\n"))
                .map_err(|source| AnonymizeError::Write {
                    path: partial.to_path_buf(),
                    source,
                })?;
        }
    }
    if pass.summary.requests == 0 {
        return Err(AnonymizeError::Empty(input.to_path_buf()));
    }
    pass.summary.distinct = pass.ids.distinct();
    Ok(pass.summary)
}

impl Pass<'_> {
    /// The anonymized lines of input line `no`: one per prompt, its text gone.
    fn line(
        &mut self,
        line: lines::TextLine,
        input: &Path,
        no: u64,
    ) -> Result<Vec<Value>, AnonymizeError> {
        let at = |reason| AnonymizeError::Line {
            path: input.to_path_buf(),
            line: no,
            reason,
        };
        // A line without a time is sent with the line before it (the first at 0).
        let t = line.at_ms.unwrap_or(self.last_at);
        let (lo, hi) = self.span.map_or((t, t), |(lo, hi)| (lo.min(t), hi.max(t)));
        if hi - lo > MAX_WAIT_S * 1e3 {
            return Err(at(LineError::PastAWeek { at_ms: t }));
        }
        self.span = Some((lo, hi));
        self.last_at = t;
        let next = self.summary.sessions;
        let session = match line.session {
            Session::None => None,
            Session::Fresh => {
                self.summary.sessions += 1;
                Some(next)
            }
            Session::Named(name) => Some(*self.sessions.entry(name).or_insert_with(|| {
                self.summary.sessions += 1;
                next
            })),
        };
        let mut out = Vec::with_capacity(line.prompts.len());
        for (text, output) in line.prompts {
            let units = match self.tokens {
                Tokens::Words => word_tokens(&self.word_key, &text),
                Tokens::Local(tok) => tok.encode(&text).into_iter().map(u64::from).collect(),
            };
            drop(text);
            let n = units.len() as u64;
            if n == 0 {
                return Err(at(LineError::NoTokens));
            }
            if n > MAX_TOKENS {
                return Err(at(LineError::TooManyTokens(n)));
            }
            self.summary.tokens += n;
            if self.summary.tokens > MAX_FILE_TOKENS {
                let path = input.to_path_buf();
                return Err(AnonymizeError::TooManyTokens { path, line: no });
            }
            let ids = (self.ids.ids(&units, MAX_DISTINCT_BLOCKS)).map_err(|_| {
                let path = input.to_path_buf();
                AnonymizeError::TooManyBlocks { path, line: no }
            })?;
            self.summary.blocks += ids.len() as u64;
            self.summary.requests += 1;
            let mut l = json!({"timestamp": time(t), "input_length": n});
            if let Some(o) = output {
                l["output_length"] = json!(o);
            }
            l["hash_ids"] = json!(ids);
            if let Some(s) = session {
                l["session_id"] = json!(s);
            }
            out.push(l);
        }
        Ok(out)
    }
}

/// A time in ms as JSON: a whole number when it is one (as Mooncake's traces write it).
fn time(t: f64) -> Value {
    if t.fract() == 0.0 && t < 9.0e15 {
        json!(t as u64)
    } else {
        json!(t)
    }
}
