//! `trace`: a JSONL trace replayed on its own schedule.
//!
//! One request a line, sorted here by `timestamp` (ms; the send time is the timestamp less the
//! first one). Two shapes, both read from every line:
//! - **Mooncake** (`timestamp`, `input_length`, `output_length`, `hash_ids`): each id is a
//!   block of `block` tokens (512 in Mooncake's traces); equal ids are equal blocks, so equal
//!   leading ids are a shared prefix. Block `h` is `block` word tokens drawn from a generator
//!   seeded by (seed, `h`), the same in every prompt that names it; a prompt is its blocks in
//!   order, the last one cut to `input_length − (ids − 1) · block` tokens, which must be in
//!   1..=block (the line is refused otherwise, as AIPerf and GuideLLM do). Without
//!   `input_length` every block is whole.
//! - **generic** (`timestamp`, `prompt` or `input_length`, `output_length`): a `prompt` is sent
//!   as written; an `input_length` alone gets fresh words of exactly that length.
//!   Lines with the same `session_id` (a string or a number) are one conversation, its turns
//!   in timestamp order: the session starts at its first line's time, and each later turn is
//!   sent at its own time or once the turn before it ended, whichever is later, with the
//!   history (as `--turns` sends it).
//!
//! `output_length` defaults to `--output-len`. Prompts are exact: each one's token count is
//! checked against its `input_length`. Each prompt also gets its designed cache reuse
//! (`Prompt::designed_cached`): the tokens of its leading blocks whose whole chain of ids was
//! already sent by an earlier line (an unbounded prefix cache would hold them).

use std::collections::HashMap;
use std::path::Path;

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Deserialize;

use super::common::{read_file, Prompt};
use super::error::{DatasetError, TraceLineError as LineError};
use crate::config::limits::{MAX_BUILT_TOKENS, MAX_TOKENS, MAX_WAIT_S};

/// How text is made and counted: a tokenizer's word tokens, or the simulator's words.
pub struct Vocab<'a> {
    /// One unit (a token id, or a word index) drawn at random.
    pub draw: &'a dyn Fn(&mut StdRng) -> u32,
    /// Units to text; `render(a) + render(b) == render(a ++ b)` must hold.
    pub render: &'a dyn Fn(&[u32]) -> String,
    /// The count of text, in units (the tokenizer's count, or words).
    pub count: &'a dyn Fn(&str) -> usize,
    pub name: String,
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

/// The most tokens of one `hash_ids` block (`--trace-block-size`).
pub const MAX_BLOCK: u64 = 1 << 20;

/// The first `n` requests of the trace at `path`, in send order.
///
/// Every line is checked before any prompt is built: its fields within the limits
/// of the flags they stand for (`input_length`, `output_length` and the prompt its `hash_ids`
/// make at most [`MAX_TOKENS`]; its timestamp at most a week after the first), and the
/// prompts of the `n` lines sent at most [`MAX_BUILT_TOKENS`] in all. A block is drawn only
/// as far as a prompt uses it.
pub fn build(
    path: &Path,
    vocab: &Vocab,
    block: u64,
    output_len: u64,
    n: usize,
    seed: u64,
) -> Result<Vec<Prompt>, DatasetError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if !(1..=MAX_BLOCK).contains(&block) {
        return Err(DatasetError::InvalidSpec(format!(
            "--trace-block-size {block} is not in 1..={MAX_BLOCK} tokens"
        )));
    }
    let (lines, t0) = read_lines(path, block, n)?;
    let mut blocks = Blocks::new(seed);
    let mut fresh = StdRng::seed_from_u64(seed ^ 0x0074_5241_4345);
    let mut out = Vec::with_capacity(lines.len());
    let mut sessions = Vec::with_capacity(lines.len());
    for (no, l, _) in lines {
        sessions.push(l.session_id.as_ref().map(|v| v.to_string()));
        let output_len = l.output_length.unwrap_or(output_len).max(1);
        let at_ms = Some(l.timestamp - t0);
        if let Some(text) = l.prompt {
            let input_len = (vocab.count)(&text) as u64;
            out.push(Prompt {
                text,
                input_len,
                output_len,
                at_ms,
                ..Prompt::default()
            });
            continue;
        }
        let (units, designed) = if l.hash_ids.is_empty() {
            let len = l.input_length.unwrap_or(0);
            ((0..len).map(|_| (vocab.draw)(&mut fresh)).collect(), 0)
        } else {
            let lens = block_lengths(&l.hash_ids, l.input_length, block).map_err(|reason| {
                DatasetError::BadTraceLine {
                    path: path.to_path_buf(),
                    line: no,
                    reason,
                }
            })?;
            blocks.units(&l.hash_ids, &lens, vocab)
        };
        let text = (vocab.render)(&units);
        let input_len = units.len() as u64;
        let counted = (vocab.count)(&text) as u64;
        if counted != input_len {
            return Err(DatasetError::NotExact {
                target: input_len,
                tokenizer: vocab.name.clone(),
                reason: format!("line {no}'s text counts {counted}"),
            });
        }
        out.push(Prompt {
            text,
            input_len,
            output_len,
            at_ms,
            designed_cached: Some(designed),
            ..Prompt::default()
        });
    }
    Ok(by_session(out, &sessions))
}

/// A trace line with its number in the file and the tokens its prompt will hold.
type Numbered = (usize, Line, u64);

/// The first `n` lines of the trace at `path` in timestamp order, each with its number and the
/// tokens its prompt will hold, and the first line's timestamp: every line checked
/// ([`check_line`]), the last at most a week after the first, and the `n` at most
/// [`MAX_BUILT_TOKENS`] in all.
fn read_lines(path: &Path, block: u64, n: usize) -> Result<(Vec<Numbered>, f64), DatasetError> {
    let body = read_file(path)?;
    let bad = |line: usize, reason: LineError| DatasetError::BadTraceLine {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut lines = Vec::new();
    for (i, text) in body.lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        let l: Line = serde_json::from_str(text).map_err(|e| bad(i + 1, LineError::NotALine(e)))?;
        let tokens = check_line(&l, block).map_err(|r| bad(i + 1, r))?;
        lines.push((i + 1, l, tokens));
    }
    if lines.is_empty() {
        return Err(DatasetError::Empty(path.to_path_buf()));
    }
    lines.sort_by(|a, b| a.1.timestamp.total_cmp(&b.1.timestamp));
    let t0 = lines[0].1.timestamp;
    if let Some((no, last, _)) = lines
        .last()
        .filter(|l| l.1.timestamp - t0 > MAX_WAIT_S * 1e3)
    {
        let (at_ms, after_s) = (last.timestamp, (last.timestamp - t0) / 1e3);
        return Err(bad(*no, LineError::PastAWeek { at_ms, after_s }));
    }
    lines.truncate(n);
    let total = (lines.iter()).fold(0u64, |sum, l| sum.saturating_add(l.2));
    if total > MAX_BUILT_TOKENS {
        return Err(DatasetError::BadFile {
            path: path.to_path_buf(),
            reason: format!(
                "its {} lines ask for {total} prompt tokens in all, more than the {MAX_BUILT_TOKENS} a run builds before it starts",
                lines.len()
            ),
        });
    }
    Ok((lines, t0))
}

/// The blocks of a build's `hash_ids`: each block's generator and the units drawn from it so
/// far, and every chain of leading ids sent so far with the most tokens of its last block sent.
struct Blocks {
    seed: u64,
    drawn: HashMap<u64, (StdRng, Vec<u32>)>,
    sent: HashMap<u64, u64>,
}

impl Blocks {
    fn new(seed: u64) -> Blocks {
        Blocks {
            seed,
            drawn: HashMap::new(),
            sent: HashMap::new(),
        }
    }

    /// A prompt's units, its blocks `ids` of `lens` tokens in order, and its designed cache
    /// reuse: the tokens of its leading blocks whose whole chain of ids was sent before.
    fn units(&mut self, ids: &[u64], lens: &[u64], vocab: &Vocab) -> (Vec<u32>, u64) {
        let mut units = Vec::new();
        let mut designed = 0;
        let mut chain = 0xcbf2_9ce4_8422_2325u64;
        let mut cached_so_far = true;
        for (&h, &len) in ids.iter().zip(lens) {
            let seed = self.seed;
            let (rng, b) = self.drawn.entry(h).or_insert_with(|| {
                let rng = StdRng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ h);
                (rng, Vec::new())
            });
            while (b.len() as u64) < len {
                b.push((vocab.draw)(rng));
            }
            units.extend_from_slice(&b[..len as usize]);
            chain = (chain ^ h).wrapping_mul(0x0100_0000_01b3);
            let seen = self.sent.entry(chain).or_insert(0);
            if cached_so_far && *seen > 0 {
                designed += len.min(*seen);
            }
            cached_so_far &= *seen >= len;
            *seen = (*seen).max(len);
        }
        (units, designed)
    }
}

/// Checks one line's fields against the limits of the flags they stand for; `Ok`: the
/// tokens its prompt will hold (0 for a `prompt` given as text: it is as long as the file).
fn check_line(l: &Line, block: u64) -> Result<u64, LineError> {
    if !(l.timestamp.is_finite() && l.timestamp >= 0.0) {
        return Err(LineError::BadTimestamp(l.timestamp));
    }
    let fields = [
        ("output_length", l.output_length),
        ("input_length", l.input_length),
    ];
    for (field, value) in fields {
        if let Some(value) = value.filter(|&v| v > MAX_TOKENS) {
            return Err(LineError::TooLong { field, value });
        }
    }
    if l.prompt.is_some() {
        return Ok(0);
    }
    if l.hash_ids.is_empty() {
        return l.input_length.ok_or(LineError::NoPrompt);
    }
    // The prompt its blocks make, checked before any block is drawn.
    let ids = l.hash_ids.len() as u64;
    let whole = ids.saturating_mul(block);
    if l.input_length.is_none() && whole > MAX_TOKENS {
        let tokens = whole;
        return Err(LineError::TooManyBlocks { ids, block, tokens });
    }
    block_lengths(&l.hash_ids, l.input_length, block)?;
    Ok(l.input_length.unwrap_or(whole))
}

/// Puts each session's prompts together, numbered as turns, at its first prompt's place;
/// prompts without a session stay single.
fn by_session(prompts: Vec<Prompt>, sessions: &[Option<String>]) -> Vec<Prompt> {
    if sessions.iter().all(Option::is_none) {
        return prompts;
    }
    let mut groups: Vec<Vec<Prompt>> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (mut p, s) in prompts.into_iter().zip(sessions) {
        match s.as_deref() {
            Some(id) if index.contains_key(id) => {
                let g = &mut groups[index[id]];
                p.turn = Some(g.len() as u32);
                g.push(p);
            }
            Some(id) => {
                index.insert(id, groups.len());
                p.turn = Some(0);
                groups.push(vec![p]);
            }
            None => groups.push(vec![p]),
        }
    }
    groups.into_iter().flatten().collect()
}

/// The token count of each block of a line: whole blocks, the last one cut to what
/// `input_length` leaves.
fn block_lengths(ids: &[u64], input: Option<u64>, block: u64) -> Result<Vec<u64>, LineError> {
    let n = ids.len() as u64;
    let mut lens = vec![block; ids.len()];
    if let (Some(input), Some(last)) = (input, lens.last_mut()) {
        let whole = n.saturating_sub(1).saturating_mul(block);
        if input <= whole || input > n.saturating_mul(block) {
            return Err(LineError::BlocksDoNotFit {
                input,
                ids: n,
                block,
            });
        }
        *last = input - whole;
    }
    Ok(lens)
}

#[cfg(test)]
mod tests;
