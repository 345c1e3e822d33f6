//! The `graph` dataset: agentic jobs from a JSON Lines file, one job (a graph of calls) per
//! non-blank line (docs/workloads.md, "Jobs (agentic workloads)", has the format):
//!
//! ```json
//! {"calls": [{"id": "plan", "prompt": "Plan a trip.", "output_len": 64},
//!            {"id": "a", "after": ["plan"], "gap_ms": 250, "input_len": 40, "splice": ["plan"]}]}
//! ```
//!
//! Each call: `id` (unique in its job), `after` (the ids it waits for), `gap_ms` (the wait
//! after the last of them ended), `output_len` (else `--output-len`), exactly one of `prompt`
//! (its own text) and `input_len` (seeded random text of exactly that many tokens, made as the
//! `random` dataset makes it), and `splice` (ids of calls upstream of it, whose replies the
//! driver adds to its prompt when it is sent). Any other key is refused. Each job's calls are
//! put in an order where every call comes after those it waits for and numbered in it
//! (`graph_line.rs`); each call is one [`Prompt`] with its [`CallPlace`].
//!
//! Only the lines the run's `n` jobs need are read, each at most [`MAX_LINE_BYTES`], at most
//! [`MAX_FILE_BYTES`] in all; a file of fewer jobs is used again from the start (as `jsonl`
//! does), each use of an `input_len` call with fresh text. The calls and the tokens of the `n`
//! jobs are bounded ([`MAX_PROMPTS`], [`MAX_BUILT_TOKENS`]) before any text is made.
//!
//! [`CallPlace`]: crate::measure::job::CallPlace

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use rand::rngs::StdRng;

use super::common::{rngs, Prompt};
use super::error::{DatasetError, GraphLineError as LineError};
use super::graph_line::{job, Call, Own};
use crate::config::limits::{MAX_BUILT_TOKENS, MAX_PROMPTS};

/// The longest line of a graph file (one job), bytes.
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// The most of a graph file read, bytes (its lines up to the last job a run uses).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// How a call's text is made and counted: a tokenizer's words and count, or the simulator's
/// whitespace words.
pub struct Text<'a> {
    /// Text of exactly this many tokens, drawn from the stream.
    pub make: &'a dyn Fn(u64, &mut StdRng) -> Result<String, DatasetError>,
    /// The tokens of a text.
    pub count: &'a dyn Fn(&str) -> usize,
}

/// The calls of `n` jobs of the graph file at `path`, each job's calls in its order
/// (`output_len`: a call's when it gives none; `seed`: the random texts).
pub fn build(
    path: &Path,
    text: &Text,
    output_len: u64,
    n: usize,
    seed: u64,
) -> Result<Vec<Prompt>, DatasetError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let jobs = read_jobs(path, text, output_len, n)?;
    let (calls, tokens) = totals(&jobs, n);
    let bad = |reason: String| DatasetError::BadFile {
        path: path.to_path_buf(),
        reason,
    };
    let used = match jobs.len() < n {
        true => format!(" (its {} jobs used again from the start)", jobs.len()),
        false => String::new(),
    };
    if calls > MAX_PROMPTS {
        return Err(bad(format!(
            "{n} jobs{used} are {calls} calls, more than the {MAX_PROMPTS} requests a run builds"
        )));
    }
    if tokens > MAX_BUILT_TOKENS {
        return Err(bad(format!("{n} jobs{used} ask for {tokens} prompt tokens, more than the {MAX_BUILT_TOKENS} a run builds before it starts")));
    }
    let (_, mut rng) = rngs(seed);
    let mut out = Vec::with_capacity((calls as usize).min(1 << 16));
    for i in 0..n {
        for c in &jobs[i % jobs.len()] {
            let body = match &c.own {
                Own::Text(t) => t.clone(),
                Own::Len(len) => (text.make)(*len, &mut rng)?,
            };
            out.push(Prompt {
                text: body,
                input_len: c.input_len,
                output_len: c.output_len,
                call: Some(c.place.clone()),
                ..Prompt::default()
            });
        }
    }
    Ok(out)
}

/// The calls and own-text tokens of `n` jobs, the file's `jobs` used in turn.
fn totals(jobs: &[Vec<Call>], n: usize) -> (u64, u64) {
    let sum = |js: &[Vec<Call>]| {
        js.iter().fold((0u64, 0u64), |(c, t), j| {
            let tokens = j
                .iter()
                .map(|c| c.input_len)
                .fold(0u64, u64::saturating_add);
            (c + j.len() as u64, t.saturating_add(tokens))
        })
    };
    let (whole, part) = (n / jobs.len(), n % jobs.len());
    let (all, some) = (sum(jobs), sum(&jobs[..part]));
    let times = whole as u64;
    (
        all.0.saturating_mul(times).saturating_add(some.0),
        all.1.saturating_mul(times).saturating_add(some.1),
    )
}

/// The jobs of the file's first `n` non-blank lines (fewer when it has fewer).
fn read_jobs(
    path: &Path,
    text: &Text,
    output_len: u64,
    n: usize,
) -> Result<Vec<Vec<Call>>, DatasetError> {
    let io = |source| DatasetError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = BufReader::new(File::open(path).map_err(io)?);
    let mut jobs = Vec::new();
    let (mut buf, mut read, mut line) = (Vec::new(), 0u64, 0usize);
    while jobs.len() < n {
        buf.clear();
        let mut bounded = (&mut reader).take(MAX_LINE_BYTES as u64 + 1);
        let got = bounded.read_until(b'\n', &mut buf).map_err(io)?;
        if got == 0 {
            break;
        }
        line += 1;
        read += got as u64;
        let bad = |reason| DatasetError::BadGraphLine {
            path: path.to_path_buf(),
            line,
            reason,
        };
        if got > MAX_LINE_BYTES && buf.last() != Some(&b'\n') {
            return Err(bad(LineError::TooLong(MAX_LINE_BYTES)));
        }
        if read > MAX_FILE_BYTES {
            return Err(bad(LineError::FileTooLarge(MAX_FILE_BYTES)));
        }
        let s = std::str::from_utf8(&buf).map_err(|_| bad(LineError::NotUtf8))?;
        if s.trim().is_empty() {
            continue;
        }
        jobs.push(job(s, output_len, text.count).map_err(bad)?);
    }
    if jobs.is_empty() {
        return Err(DatasetError::Empty(path.to_path_buf()));
    }
    Ok(jobs)
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
