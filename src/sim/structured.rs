//! Structured answers of the simulated server (issue 25 §5): a chat request that asks for
//! JSON of a schema (`response_format: {"type": "json_schema", ...}`) or for a tool call
//! (`tools`) is answered with a document generated from the schema (or the called function's
//! `parameters`), deterministic from (seed, request number), and split over the request's
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
//! The tool called is the request number modulo the tools offered. Imports only `text`.

use serde_json::{json, Map, Value};

use super::text::{splitmix64, WORDS};

/// Bounds on what the generator writes for any schema.
const MAX_DEPTH: usize = 16;
const MAX_ITEMS: u64 = 16;
const MAX_STRING: u64 = 256;

/// What a request asked for.
pub(crate) enum Asked {
    Json(Value),
    /// The function called (its name as JSON, escaped) and its parameters' schema.
    Tool {
        name_json: String,
        parameters: Value,
    },
}

/// What a request's answer format (chat's `response_format`, the Responses API's
/// `text.format`) and `tools` (OpenAI's, nested in `function` or flat; Anthropic's with
/// `input_schema`) ask; `None`: a text answer.
pub(crate) fn asked(
    response_format: Option<&Value>,
    tools: Option<&Value>,
    n: u64,
) -> Option<Asked> {
    if let Some(list) = tools.and_then(Value::as_array).filter(|l| !l.is_empty()) {
        let t = &list[(n % list.len() as u64) as usize];
        let f = t.get("function").unwrap_or(t);
        let name = f.get("name").and_then(Value::as_str).unwrap_or("tool");
        let schema = f.get("parameters").or_else(|| f.get("input_schema"));
        let parameters = schema.cloned().unwrap_or(json!({}));
        return Some(Asked::Tool {
            name_json: Value::from(name).to_string(),
            parameters,
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 25 §5: exactly ⌊N·r⌋ of requests 0..N are invalid, alternately not JSON and
    /// not of the schema; the pieces of every answer join into its text.
    #[test]
    fn issue_25_invalid_answers_are_an_exact_share() {
        let rate = ppm(0.25);
        let bad: Vec<u64> = (0..20).filter(|&n| invalid(n, rate).is_some()).collect();
        assert_eq!(bad, [3, 7, 11, 15, 19]);
        assert_eq!(
            (0..1000)
                .filter(|&n| invalid(n, ppm(0.29)).is_some())
                .count(),
            290
        );
        assert_eq!(
            (0..7).filter(|&n| invalid(n, ppm(1.0)).is_some()).count(),
            7
        );
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string", "minLength": 3, "maxLength": 3},
            "b": {"type": "integer", "minimum": 1, "maximum": 9},
            "c": {"type": "array", "items": {"type": "number"}, "minItems": 2}
        }});
        let joined = |p: &Pieces| {
            let mut out = Vec::new();
            p.push(&mut out, 0, u32::MAX);
            serde_json::from_slice::<String>(&[b"\"", &out[..], b"\""].concat()).unwrap()
        };
        let good = joined(&Pieces::new(&schema, 1, 0, None, 40));
        let v: Value = serde_json::from_str(&good).unwrap();
        assert_eq!(v["a"].as_str().unwrap().len(), 3);
        assert!((1..=9).contains(&v["b"].as_i64().unwrap()));
        assert_eq!(v["c"].as_array().unwrap().len(), 2);
        let cut = joined(&Pieces::new(&schema, 1, 0, Some(0), 3));
        assert!(serde_json::from_str::<Value>(&cut).is_err());
        let list = joined(&Pieces::new(&schema, 1, 0, Some(1), 3));
        assert!(serde_json::from_str::<Value>(&list).unwrap().is_array());
        let p = Pieces::new(&schema, 1, 0, None, 500);
        assert!(p.0.iter().all(|s| !s.is_empty()) && p.0.len() == 500);
    }
}
