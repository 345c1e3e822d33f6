//! Structured answers of the simulated server: a chat (or completions) request
//! that asks for JSON of a schema (`response_format: {"type": "json_schema", ...}`) or for a
//! tool call (`tools`) is answered with a document generated from the schema (or the called
//! function's `parameters`), deterministic from (seed, request number), and split over the request's
//! tokens, so the schedule is the same as a text answer's.
//!
//! A configurable share of answers is invalid, by a rule with no randomness, so a test's
//! share is exact: with the rate `r` in parts per million, request `n` (numbered from 0, as
//! every generation request) is the `k`-th invalid one when `⌊(n+1)·r⌋ > ⌊n·r⌋` (in 10⁶ths):
//! among requests `0..N`, exactly `⌊N·r⌋` are invalid. Even `k`: the document without its last
//! character (not JSON); odd `k`: the document wrapped in a list (JSON, but not valid against
//! a schema of an object). Every string and list the generator writes is bounded (a hostile
//! schema gets a bounded answer, valid or not).
//!
//! The tool called is the request number modulo the tools offered. A chat answer may make
//! several calls (`--tool-calls-per-answer`): call `j` calls the next tool after call `j − 1`'s,
//! each its own document over its share of the tokens; in an invalid answer only the last
//! call is invalid, so the share of invalid answers stays exact.
//!
//! vLLM's guided decoding besides JSON ([`Guided`]): a chat or completions request's
//! `structured_outputs` (`regex`, `choice`; or the older `guided_regex`, `guided_choice`) is
//! answered with a string built for request `n` ([`guided_answer`]): one of the choices, or a string built
//! from the pattern's syntax tree (`regex-syntax`'s HIR: each class's printable ASCII
//! members first, each repetition its minimum plus up to 7 more, one branch of each
//! alternation, look-arounds skipped, at most 4 KiB), checked against the compiled pattern.
//! An invalid one (the same exact share) is a string longer than every choice, or the first
//! of the answer with `!` after it, `!` before it, or its last character cut that the
//! pattern does not match in full (a pattern every one matches gets a valid answer). A
//! pattern that does not parse or compile, or an empty choice list, is refused (HTTP 400, as
//! vLLM). A `grammar` is not read: the answer is the ordinary text. Imports only `text`.

use std::cell::RefCell;

use regex_syntax::hir::{Class, Hir, HirKind};
use serde_json::{json, Map, Value};

use super::error::GuidedError;
use super::text::{splitmix64, WORDS};

/// Bounds on what the generator writes for any schema.
const MAX_DEPTH: usize = 16;
const MAX_ITEMS: u64 = 16;
const MAX_STRING: u64 = 256;

/// What a request asked for.
pub(crate) enum Asked {
    Json(Value),
    /// A call of a tool offered (the calls themselves: [`tool_call_answer`]).
    Tool,
}

/// What a request's answer format (chat's `response_format`, the Responses API's
/// `text.format`) and `tools` (OpenAI's, nested in `function` or flat; Anthropic's with
/// `input_schema`) ask; `None`: a text answer.
pub(crate) fn asked(
    response_format: Option<&Value>,
    tools: Option<&Value>,
    n: u64,
) -> Option<Asked> {
    if !tool_calls(tools, n, 1).is_empty() {
        return Some(Asked::Tool);
    }
    let rf = response_format?;
    match rf.get("type").and_then(Value::as_str) {
        Some("json_schema") => {
            let nested = rf.get("json_schema").and_then(|j| j.get("schema"));
            let schema = nested.or_else(|| rf.get("schema"));
            Some(Asked::Json(schema.cloned().unwrap_or(json!({}))))
        }
        Some("json_object") => Some(Asked::Json(json!({"type": "object"}))),
        _ => None,
    }
}

/// The functions of request `n`'s `calls` tool calls (`servebench sim
/// --tool-calls-per-answer`): call `j` calls the tool `(n + j)` modulo the tools offered,
/// each its name as JSON (escaped) and its parameters' schema; none when no tool is offered.
pub(crate) fn tool_calls(tools: Option<&Value>, n: u64, calls: u32) -> Vec<(String, Value)> {
    let Some(list) = tools.and_then(Value::as_array).filter(|l| !l.is_empty()) else {
        return Vec::new();
    };
    (0..u64::from(calls))
        .map(|j| {
            let t = &list[(n.wrapping_add(j) % list.len() as u64) as usize];
            let f = t.get("function").unwrap_or(t);
            let name = f.get("name").and_then(Value::as_str).unwrap_or("tool");
            let schema = f.get("parameters").or_else(|| f.get("input_schema"));
            (
                Value::from(name).to_string(),
                schema.cloned().unwrap_or(json!({})),
            )
        })
        .collect()
}

/// One tool call of an answer: its tokens `[first, end)` of the answer's, its function's
/// name as JSON and its arguments' pieces.
pub(crate) struct ToolCall {
    pub(crate) first: u32,
    pub(crate) end: u32,
    pub(crate) name_json: String,
    pub(crate) pieces: Pieces,
}

/// The `calls` tool calls of request `n`'s answer of `tokens` tokens (at most one per token,
/// each over its share), the last one invalid when `bad` says so.
pub(crate) fn tool_call_answer(
    tools: Option<&Value>,
    n: u64,
    calls: u32,
    seed: u64,
    bad: Option<u64>,
    tokens: u32,
) -> Vec<ToolCall> {
    let made = tool_calls(tools, n, calls.clamp(1, tokens.max(1)));
    let count = made.len() as u64;
    let at = |j: u64| (u64::from(tokens) * j / count.max(1)) as u32;
    (made.into_iter().enumerate())
        .map(|(j, (name_json, parameters))| {
            let j = j as u64;
            let (first, end) = (at(j), at(j + 1));
            let bad = bad.filter(|_| j + 1 == count);
            let pieces = Pieces::new(&parameters, seed.wrapping_add(j), n, bad, end - first);
            ToolCall {
                first,
                end,
                name_json,
                pieces,
            }
        })
        .collect()
}

/// The `k` of request `n` when it is an invalid one, at `rate` (parts per million).
pub(crate) fn invalid(n: u64, rate_ppm: u64) -> Option<u64> {
    let before = u128::from(n) * u128::from(rate_ppm) / 1_000_000;
    let after = (u128::from(n) + 1) * u128::from(rate_ppm) / 1_000_000;
    (after > before).then_some(before as u64)
}

/// A rate in `[0, 1]` in parts per million.
pub(crate) fn ppm(rate: f64) -> u64 {
    (rate.clamp(0.0, 1.0) * 1e6).round() as u64
}

/// The answer's text, split over `tokens` tokens: piece `i` is token `i`'s text, already
/// escaped for a JSON string.
pub(crate) struct Pieces(Vec<String>);

impl Pieces {
    /// The answer to `schema` for request `n`, invalid as its `k` says.
    pub(crate) fn new(schema: &Value, seed: u64, n: u64, bad: Option<u64>, tokens: u32) -> Self {
        let mut h = splitmix64(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let doc = instance(schema, &mut h, 0);
        let text = match bad {
            Some(k) if k % 2 == 1 => Value::Array(vec![doc]).to_string(),
            Some(_) => {
                let mut t = doc.to_string();
                t.pop();
                t
            }
            None => doc.to_string(),
        };
        Pieces(split(&text, tokens.max(1) as usize))
    }

    /// `text` (a guided answer) over `tokens` tokens.
    pub(crate) fn from_text(text: &str, tokens: u32) -> Self {
        Pieces(split(text, tokens.max(1) as usize))
    }

    /// The escaped text of tokens `[start, end)`.
    pub(crate) fn text(&self, start: u32, end: u32) -> String {
        let mut out = Vec::new();
        self.push(&mut out, start, end);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Appends the escaped text of tokens `[start, end)`.
    pub(crate) fn push(&self, out: &mut Vec<u8>, start: u32, end: u32) {
        let end = (end as usize).min(self.0.len());
        for p in self.0.get(start as usize..end).unwrap_or_default() {
            out.extend_from_slice(p.as_bytes());
        }
    }
}

/// `text` in `n` non-empty pieces (padded with spaces, which JSON allows after a document,
/// when it has fewer characters than `n`), each escaped for a JSON string.
fn split(text: &str, n: usize) -> Vec<String> {
    let mut chars: Vec<char> = text.chars().collect();
    if chars.len() < n {
        chars.resize(n, ' ');
    }
    let len = chars.len();
    (0..n)
        .map(|i| {
            let piece: String = chars[i * len / n..(i + 1) * len / n].iter().collect();
            let quoted = Value::from(piece).to_string();
            quoted[1..quoted.len() - 1].to_string()
        })
        .collect()
}

fn next(h: &mut u64) -> u64 {
    *h = splitmix64(*h);
    *h
}

/// A document valid against `schema` (for the keywords servebench's check knows), bounded.
fn instance(schema: &Value, h: &mut u64, depth: usize) -> Value {
    let Some(s) = schema.as_object() else {
        return json!(null);
    };
    if let Some(c) = s.get("const") {
        return c.clone();
    }
    if let Some(Value::Array(options)) = s.get("enum") {
        if !options.is_empty() {
            return options[(next(h) % options.len() as u64) as usize].clone();
        }
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.first().and_then(Value::as_str).unwrap_or("string"),
        _ if s.contains_key("properties") => "object",
        _ => "string",
    };
    let n = |k: &str| s.get(k).and_then(Value::as_u64);
    let x = |k: &str| s.get(k).and_then(Value::as_f64);
    match ty {
        "object" if depth < MAX_DEPTH => {
            let mut out = Map::new();
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (k, p) in props {
                    out.insert(k.clone(), instance(p, h, depth + 1));
                }
            }
            Value::Object(out)
        }
        "array" if depth < MAX_DEPTH => {
            let len = n("minItems")
                .unwrap_or(1)
                .max(1)
                .min(n("maxItems").unwrap_or(u64::MAX));
            let item = s.get("items").cloned().unwrap_or(json!({"type": "string"}));
            let items = (0..len.min(MAX_ITEMS)).map(|_| instance(&item, h, depth + 1));
            Value::Array(items.collect())
        }
        "integer" => {
            let lo = x("minimum").map_or(0, |m| m.ceil() as i64);
            let hi = x("maximum").map_or(lo.saturating_add(100), |m| m.floor() as i64);
            let span = hi.saturating_sub(lo).max(0) as u64;
            json!(lo.saturating_add((next(h) % span.saturating_add(1)) as i64))
        }
        "number" => {
            let lo = x("minimum").unwrap_or(0.0);
            let hi = x("maximum").unwrap_or(lo + 100.0);
            let f = (next(h) % 1000) as f64 / 1000.0;
            json!(lo + (hi - lo) * f)
        }
        "boolean" => json!(next(h) % 2 == 0),
        "null" => json!(null),
        _ => {
            let min = n("minLength").unwrap_or(1).min(MAX_STRING);
            let max = n("maxLength")
                .unwrap_or(MAX_STRING)
                .min(MAX_STRING)
                .max(min);
            let mut text = String::new();
            while (text.chars().count() as u64) < min.max(1) {
                let w = WORDS[(next(h) % WORDS.len() as u64) as usize];
                text.push_str(w.trim_start());
            }
            json!(text.chars().take(max as usize).collect::<String>())
        }
    }
}

/// A hostile server's guided answer (`--hostile-answer-bytes`): `text` repeated to `bytes`
/// bytes (cut at a character), so a pattern's answer keeps its alphabet (`[01]`...) and is
/// as long as a check may keep; `text` itself when `bytes` is 0 or the text is empty.
pub(crate) fn hostile_text(text: String, bytes: u32) -> String {
    let bytes = bytes as usize;
    if bytes == 0 || text.is_empty() {
        return text;
    }
    let mut out = String::with_capacity(bytes + 4);
    while out.len() < bytes {
        for c in text.chars() {
            if out.len() + c.len_utf8() > bytes {
                return out;
            }
            out.push(c);
        }
    }
    out
}

/// A hostile server's answer to `schema` (`--hostile-answer-bytes`), over `tokens` tokens:
/// the document of request `n` with its first list (the document itself, or its first
/// property that is a list) filled to about `bytes` bytes with one item, an `enum`'s last
/// value where the items have an enum (the worst for a check that searches the enum).
pub(crate) fn hostile_json(schema: &Value, seed: u64, n: u64, bytes: u32, tokens: u32) -> Pieces {
    let mut h = splitmix64(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let is_list = |s: &Value| s.get("type").and_then(Value::as_str) == Some("array");
    let item_of = |s: &Value, h: &mut u64| {
        let items = s.get("items").cloned().unwrap_or(json!({"type": "string"}));
        match items
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.last())
        {
            Some(last) => last.clone(),
            None => instance(&items, h, 1),
        }
    };
    let fill = |item: &Value| {
        let one = item.to_string();
        let count = (bytes as usize / (one.len() + 1)).max(1);
        format!("[{}]", vec![one; count].join(","))
    };
    let text = if is_list(schema) {
        fill(&item_of(schema, &mut h))
    } else {
        let doc = instance(schema, &mut h, 0);
        let props = schema.get("properties").and_then(Value::as_object);
        let list = props.and_then(|ps| ps.iter().find(|(_, p)| is_list(p)));
        match (list, doc) {
            (Some((key, p)), Value::Object(mut obj)) => {
                let long = fill(&item_of(p, &mut h));
                obj.insert(key.clone(), json!(null));
                let rest = Value::Object(obj).to_string();
                let marker = format!("{}:null", Value::from(key.as_str()));
                rest.replacen(&marker, &format!("{}:{long}", Value::from(key.as_str())), 1)
            }
            (_, doc) => doc.to_string(),
        }
    };
    Pieces(split(&text, tokens.max(1) as usize))
}

/// The longest pattern read (as `--structured-output-regex`'s bound), the most memory its
/// compiled form may take, and the longest answer built from it.
const MAX_PATTERN_BYTES: usize = 16 * 1024;
const MAX_COMPILED_BYTES: usize = 1 << 20;
const MAX_GUIDED_BYTES: usize = 4096;
/// The most syntax-tree nodes visited building one answer (`(){99999}` repeats nothing).
const MAX_BUILD_STEPS: u32 = 100_000;

/// What a guided request asks: a whole match of a pattern, or one of a list of choices.
pub(crate) enum Guided {
    Regex(String),
    Choice(Vec<String>),
}

/// The guided answer a chat or completions request asks for (`structured_outputs.regex`/`.choice`, or the
/// older top-level `guided_regex`/`guided_choice`), checked so it can be answered; `None`:
/// none asked (a `grammar` or `json` is answered otherwise).
pub(crate) fn guided(
    structured_outputs: Option<&Value>,
    guided_regex: Option<&Value>,
    guided_choice: Option<&Value>,
) -> Result<Option<Guided>, GuidedError> {
    let field = |k: &str| {
        structured_outputs
            .and_then(|so| so.get(k))
            .filter(|v| !v.is_null())
    };
    if let Some(p) = field("regex").or(guided_regex.filter(|v| !v.is_null())) {
        let Some(p) = p.as_str() else {
            return Err(GuidedError::RegexNotString);
        };
        with_pattern(p, |_, _| ())?;
        return Ok(Some(Guided::Regex(p.to_string())));
    }
    if let Some(c) = field("choice").or(guided_choice.filter(|v| !v.is_null())) {
        let list: Option<Vec<String>> = c.as_array().and_then(|items| {
            (items.iter())
                .map(|i| i.as_str().map(str::to_string))
                .collect()
        });
        return match list {
            Some(l) if !l.is_empty() => Ok(Some(Guided::Choice(l))),
            _ => Err(GuidedError::ChoiceList),
        };
    }
    Ok(None)
}

thread_local! {
    /// The last pattern read on this thread: its text, syntax tree and whole-match regex.
    static COMPILED: RefCell<Option<(String, Hir, regex::Regex)>> = const { RefCell::new(None) };
}

/// Calls `f` with `pattern`'s syntax tree and whole-match regex (parsed and compiled once
/// per thread for a run's one pattern), or says why it cannot be.
fn with_pattern<T>(
    pattern: &str,
    f: impl FnOnce(&Hir, &regex::Regex) -> T,
) -> Result<T, GuidedError> {
    let bad = |why: String| GuidedError::Pattern(why.replace('\n', " "));
    COMPILED.with(|cell| {
        let mut slot = cell.borrow_mut();
        let entry = match slot.take() {
            Some(e) if e.0 == pattern => e,
            _ => {
                if pattern.len() > MAX_PATTERN_BYTES {
                    let max = MAX_PATTERN_BYTES;
                    return Err(GuidedError::PatternTooLong { max });
                }
                let hir = regex_syntax::ParserBuilder::new()
                    .nest_limit(64)
                    .build()
                    .parse(pattern)
                    .map_err(|e| bad(e.to_string()))?;
                let whole = regex::RegexBuilder::new(&format!(r"\A(?:{pattern})\z"))
                    .size_limit(MAX_COMPILED_BYTES)
                    .build()
                    .map_err(|e| bad(e.to_string()))?;
                (pattern.to_string(), hir, whole)
            }
        };
        let out = f(&entry.1, &entry.2);
        *slot = Some(entry);
        Ok(out)
    })
}

/// The answer to `g` for request `n` (seeded by `seed`), invalid when `bad` says so.
pub(crate) fn guided_answer(
    g: &Guided,
    seed: u64,
    n: u64,
    bad: Option<u64>,
) -> Result<String, GuidedError> {
    let mut h = splitmix64(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    match g {
        Guided::Choice(choices) => {
            let longest = choices.iter().max_by_key(|c| c.len());
            Ok(match (bad, longest) {
                (Some(_), Some(l)) => format!("{l}?"),
                _ => {
                    let pick = next(&mut h) % choices.len().max(1) as u64;
                    choices.get(pick as usize).cloned().unwrap_or_default()
                }
            })
        }
        Guided::Regex(p) => with_pattern(p, |hir, whole| {
            let mut valid = String::new();
            build(hir, &mut h, &mut valid, &mut { MAX_BUILD_STEPS });
            if bad.is_none() {
                return valid;
            }
            let mut cut = valid.clone();
            cut.pop();
            let candidates = [format!("{valid}!"), format!("!{valid}"), cut];
            let wrong = candidates.iter().find(|c| !whole.is_match(c));
            wrong.cloned().unwrap_or(valid)
        }),
    }
}

/// Appends a string `hir` matches (look-arounds aside), bounded by [`MAX_GUIDED_BYTES`] and
/// `steps` nodes visited.
fn build(hir: &Hir, h: &mut u64, out: &mut String, steps: &mut u32) {
    if out.len() >= MAX_GUIDED_BYTES || *steps == 0 {
        return;
    }
    *steps -= 1;
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(lit) => out.push_str(&String::from_utf8_lossy(&lit.0)),
        HirKind::Class(Class::Unicode(c)) => {
            let ranges = c
                .ranges()
                .iter()
                .map(|r| (r.start() as u32, r.end() as u32));
            out.extend(member(ranges, h));
        }
        HirKind::Class(Class::Bytes(c)) => {
            let ranges = (c.ranges().iter()).map(|r| (u32::from(r.start()), u32::from(r.end())));
            out.extend(member(ranges, h));
        }
        HirKind::Repetition(r) => {
            let most = r.max.unwrap_or(u32::MAX).min(r.min.saturating_add(7));
            let span = u64::from(most.saturating_sub(r.min)) + 1;
            let times = u64::from(r.min) + next(h) % span;
            for _ in 0..times {
                if out.len() >= MAX_GUIDED_BYTES || *steps == 0 {
                    break;
                }
                build(&r.sub, h, out, steps);
            }
        }
        HirKind::Capture(c) => build(&c.sub, h, out, steps),
        HirKind::Concat(parts) => parts.iter().for_each(|p| build(p, h, out, steps)),
        HirKind::Alternation(branches) => {
            if !branches.is_empty() {
                let pick = (next(h) % branches.len() as u64) as usize;
                build(&branches[pick], h, out, steps);
            }
        }
    }
}

/// A member of a class given by its code-point ranges: a printable ASCII one (`!` to `~`)
/// drawn by `h` where the class has any, else its first; `None` for an empty class.
fn member(mut ranges: impl Iterator<Item = (u32, u32)> + Clone, h: &mut u64) -> Option<char> {
    let printable = ranges.clone().filter_map(|(a, b)| {
        let (a, b) = (a.max(0x21), b.min(0x7E));
        (a <= b).then_some((a, b))
    });
    let count: u64 = printable.clone().map(|(a, b)| u64::from(b - a + 1)).sum();
    if count > 0 {
        let mut k = next(h) % count;
        for (a, b) in printable {
            let len = u64::from(b - a + 1);
            if k < len {
                return char::from_u32(a + k as u32);
            }
            k -= len;
        }
    }
    ranges.next().and_then(|(a, _)| char::from_u32(a))
}

#[cfg(test)]
#[path = "structured_tests.rs"]
mod tests;
