//! A trace read for its analysis: every line the trace dataset replays (Mooncake's
//! `timestamp`, `input_length`, `output_length`, `hash_ids`; the generic `prompt` or
//! `input_length`; a `session_id`) checked by the replay's own rules, each line bounded
//! before it is parsed and the file's lines and block ids bounded as they add up. Lines come
//! back in timestamp order, as the replay sends them.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde::Deserialize;

use super::error::{LineError, TraceFileError, MAX_BLOCKS, MAX_LINES, MAX_LINE_BYTES};
use crate::config::limits::{MAX_TOKENS, MAX_WAIT_S};
use crate::measure::lines::Lines;

/// One request of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceLine {
    /// Its time, ms from the trace's first.
    pub at_ms: f64,
    /// Its prompt's tokens (a `prompt`'s counted by the analysis's tokenizer).
    pub input: u64,
    /// Its `output_length`, when given.
    pub output: Option<u64>,
    /// Its session (numbered from 0 in order of first appearance), when it has one.
    pub session: Option<u32>,
    /// Its blocks in order: each id and the tokens of it the prompt holds.
    pub blocks: Vec<(u64, u64)>,
}

#[derive(Deserialize)]
struct Line {
    timestamp: f64,
    #[serde(default)]
    input_length: Option<u64>,
    #[serde(default)]
    output_length: Option<u64>,
    #[serde(default)]
    hash_ids: Vec<u64>,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    session_id: Option<serde_json::Value>,
}

/// Every request of the trace at `path`, in timestamp order; `block`: tokens per `hash_ids`
/// block, `count`: the tokens of a `prompt` line's text.
pub fn read(
    path: &Path,
    block: u64,
    count: &dyn Fn(&str) -> u64,
) -> Result<Vec<TraceLine>, TraceFileError> {
    let read_err = |source| TraceFileError::Read {
        path: path.to_path_buf(),
        source,
    };
    if !std::fs::metadata(path).map_err(read_err)?.is_file() {
        return Err(TraceFileError::NotAFile(path.to_path_buf()));
    }
    let reader = BufReader::new(File::open(path).map_err(read_err)?);
    let at = |line, reason| TraceFileError::Line {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let (mut out, mut sessions) = (Vec::new(), HashMap::new());
    let mut blocks = 0u64;
    let mut lines = Lines::new(reader, MAX_LINE_BYTES);
    while let Some((no, text)) = lines.next_line().map_err(read_err)? {
        let text = text.map_err(|bad| at(no, bad.into()))?;
        if out.len() as u64 >= MAX_LINES {
            return Err(TraceFileError::TooManyLines {
                path: path.to_path_buf(),
            });
        }
        let l: Line = serde_json::from_str(text).map_err(|e| at(no, LineError::NotALine(e)))?;
        blocks += l.hash_ids.len() as u64;
        if blocks > MAX_BLOCKS {
            let path = path.to_path_buf();
            return Err(TraceFileError::TooManyBlocks { path, line: no });
        }
        out.push((
            no,
            line(l, block, count, &mut sessions).map_err(|r| at(no, r))?,
        ));
    }
    if out.is_empty() {
        return Err(TraceFileError::Empty(path.to_path_buf()));
    }
    // Stable: lines of one time keep their order in the file, as the replay's sort does.
    out.sort_by(|a: &(u64, TraceLine), b| a.1.at_ms.total_cmp(&b.1.at_ms));
    let t0 = out[0].1.at_ms;
    if let Some((no, last)) = out.last().filter(|l| l.1.at_ms - t0 > MAX_WAIT_S * 1e3) {
        return Err(at(*no, LineError::PastAWeek { at_ms: last.at_ms }));
    }
    Ok((out.into_iter())
        .map(|(_, mut l)| {
            l.at_ms -= t0;
            l
        })
        .collect())
}

/// One line checked by the replay's rules.
fn line(
    l: Line,
    block: u64,
    count: &dyn Fn(&str) -> u64,
    sessions: &mut HashMap<String, u32>,
) -> Result<TraceLine, LineError> {
    if !(l.timestamp.is_finite() && l.timestamp >= 0.0) {
        return Err(LineError::BadTimestamp(l.timestamp));
    }
    for (field, value) in [
        ("output_length", l.output_length),
        ("input_length", l.input_length),
    ] {
        if let Some(value) = value.filter(|&v| v > MAX_TOKENS) {
            return Err(LineError::TooMany { field, value });
        }
    }
    let session = match l.session_id {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        Some(_) => return Err(LineError::Session),
    };
    let next = sessions.len() as u32;
    let session = session.map(|s| *sessions.entry(s).or_insert(next));
    let (input, blocks) = if let Some(text) = &l.prompt {
        (count(text), Vec::new())
    } else if l.hash_ids.is_empty() {
        (l.input_length.ok_or(LineError::NoPrompt)?, Vec::new())
    } else {
        let lens = block_lengths(&l.hash_ids, l.input_length, block)?;
        let input = lens.iter().sum();
        (input, l.hash_ids.iter().copied().zip(lens).collect())
    };
    Ok(TraceLine {
        at_ms: l.timestamp,
        input,
        output: l.output_length,
        session,
        blocks,
    })
}

/// The token count of each block of a line: whole blocks, the last one cut to what
/// `input_length` leaves (the trace dataset's rule).
fn block_lengths(ids: &[u64], input: Option<u64>, block: u64) -> Result<Vec<u64>, LineError> {
    let n = ids.len() as u64;
    let whole = n.saturating_mul(block);
    if input.is_none() && whole > MAX_TOKENS {
        return Err(LineError::TooManyBlocks {
            ids: n,
            block,
            tokens: whole,
        });
    }
    let mut lens = vec![block; ids.len()];
    if let (Some(input), Some(last)) = (input, lens.last_mut()) {
        let before = n.saturating_sub(1).saturating_mul(block);
        if input <= before || input > whole {
            return Err(LineError::BlocksDoNotFit {
                input,
                ids: n,
                block,
            });
        }
        *last = input - before;
    }
    Ok(lens)
}
