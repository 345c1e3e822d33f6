//! One line of a `graph` file: a job's calls read and checked, then put in an order where
//! every call comes after the calls it waits for, and numbered in that order.
//!
//! The order is Kahn's, taking among the calls whose upstream calls are all placed the one
//! first in the file, so a file already in such an order keeps it. A cycle in `after` is named
//! by its calls; a `splice` must name a call upstream of the splicing one (reached backwards
//! through `after`), checked on bit sets of each call's upstream calls, built in that order.
//! A leaf beside `graph.rs`, which reads the file and makes the texts.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use serde_json::{Map, Value};

use super::error::{GraphLineError as LineError, MAX_ID_BYTES};
use crate::config::MAX_TOKENS;
use crate::measure::job::{CallPlace, MAX_CALLS_PER_JOB, MAX_GAP_MS};

/// The keys a call takes (any other is refused: a typo such as `"afer"` would change the
/// graph unseen).
const CALL_KEYS: [&str; 7] = [
    "id",
    "after",
    "gap_ms",
    "prompt",
    "input_len",
    "output_len",
    "splice",
];

/// The most calls a cycle's message names (the rest are counted).
const CYCLE_NAMES: usize = 8;

/// A call's own new text: as the file writes it, or random text of that many tokens.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Own {
    Text(String),
    Len(u64),
}

/// One call of a job, in its job's order.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Call {
    pub own: Own,
    /// The count of its own text (`Own::Len`'s length).
    pub input_len: u64,
    pub output_len: u64,
    pub place: CallPlace,
}

/// A call as the file gives it, its ids not yet resolved.
struct Raw<'a> {
    id: &'a str,
    after: Vec<&'a str>,
    splice: Vec<&'a str>,
    gap_ms: f64,
    own: Own,
    input_len: u64,
    output_len: u64,
}

/// The calls of the job on `line`, in their order (`output_len`: `--output-len`, for a call
/// that gives none; `count`: the tokens of a text).
pub(super) fn job(
    line: &str,
    output_len: u64,
    count: &dyn Fn(&str) -> usize,
) -> Result<Vec<Call>, LineError> {
    let v: Value = serde_json::from_str(line).map_err(LineError::NotJson)?;
    let obj = v.as_object().ok_or(LineError::NotAnObject)?;
    if let Some(k) = obj.keys().find(|k| *k != "calls") {
        return Err(LineError::JobKey(shown(k)));
    }
    let calls = (obj.get("calls").and_then(Value::as_array))
        .filter(|c| !c.is_empty())
        .ok_or(LineError::NoCalls)?;
    if calls.len() > MAX_CALLS_PER_JOB {
        return Err(LineError::TooManyCalls(calls.len()));
    }
    let raw = (calls.iter().enumerate())
        .map(|(i, c)| raw_call(i, c, output_len, count))
        .collect::<Result<Vec<_>, _>>()?;
    let mut index = HashMap::with_capacity(raw.len());
    for (i, c) in raw.iter().enumerate() {
        if index.insert(c.id, i).is_some() {
            return Err(LineError::DuplicateId(c.id.to_string()));
        }
    }
    let after = resolve(&raw, &index, "after", |c| &c.after)?;
    let splice = resolve(&raw, &index, "splice", |c| &c.splice)?;
    let order = order(&raw, &after)?;
    let mut number = vec![0u32; raw.len()];
    for (new, &old) in order.iter().enumerate() {
        number[old] = new as u32;
    }
    check_upstream(&raw, &order, &number, &after, &splice)?;
    let of = raw.len() as u32;
    let renumber = |ids: &[usize]| ids.iter().map(|&i| number[i]).collect::<Vec<u32>>();
    let mut raw: Vec<Option<Raw>> = raw.into_iter().map(Some).collect();
    Ok((order.iter().enumerate())
        .map(|(new, &old)| {
            let r = raw[old].take().expect("each call is placed once");
            Call {
                own: r.own,
                input_len: r.input_len,
                output_len: r.output_len,
                place: CallPlace {
                    call: new as u32,
                    of,
                    after: renumber(&after[old]),
                    splice: renumber(&splice[old]),
                    gap_ms: r.gap_ms,
                },
            }
        })
        .collect())
}

/// Call `i` of a job's `"calls"`, each field checked.
fn raw_call<'a>(
    i: usize,
    v: &'a Value,
    output_len: u64,
    count: &dyn Fn(&str) -> usize,
) -> Result<Raw<'a>, LineError> {
    let o = v.as_object().ok_or(LineError::CallNotObject(i))?;
    let id = (o.get("id").and_then(Value::as_str))
        .filter(|s| !s.is_empty() && s.len() <= MAX_ID_BYTES)
        .ok_or(LineError::Id(i))?;
    let owned = || id.to_string();
    if let Some(k) = o.keys().find(|k| !CALL_KEYS.contains(&k.as_str())) {
        return Err(LineError::CallKey {
            id: owned(),
            key: shown(k),
        });
    }
    let len = |field: &'static str, default: Option<u64>| match o.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(x) => (x.as_u64())
            .filter(|l| (1..=MAX_TOKENS).contains(l))
            .map(Some)
            .ok_or_else(|| LineError::Len {
                id: owned(),
                field,
                value: x.clone(),
            }),
    };
    let output_len = len("output_len", Some(output_len))?.unwrap_or(output_len);
    let (own, input_len) = match (o.get("prompt"), len("input_len", None)?) {
        (Some(_), Some(_)) | (None, None) => return Err(LineError::OneText(owned())),
        (None, Some(l)) => (Own::Len(l), l),
        (Some(p), None) => {
            let text = p
                .as_str()
                .ok_or_else(|| LineError::PromptNotText(owned()))?;
            let n = count(text) as u64;
            match n {
                0 => return Err(LineError::EmptyPrompt(owned())),
                n if n > MAX_TOKENS => {
                    return Err(LineError::Len {
                        id: owned(),
                        field: "input_len",
                        value: n.into(),
                    })
                }
                n => (Own::Text(text.to_string()), n),
            }
        }
    };
    Ok(Raw {
        id,
        after: names(o, "after", id)?,
        splice: names(o, "splice", id)?,
        gap_ms: gap(o.get("gap_ms"), id)?,
        own,
        input_len,
        output_len,
    })
}

/// A call's `field` (`after`, `splice`): a list of ids, empty when absent.
fn names<'a>(
    o: &'a Map<String, Value>,
    field: &'static str,
    id: &str,
) -> Result<Vec<&'a str>, LineError> {
    let bad = || LineError::Names {
        id: id.to_string(),
        field,
    };
    match o.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => (a.iter())
            .map(|n| {
                n.as_str()
                    .filter(|s| s.len() <= MAX_ID_BYTES)
                    .ok_or_else(bad)
            })
            .collect(),
        Some(_) => Err(bad()),
    }
}

/// A call's `gap_ms`: a number of ms in [0, a week], 0 when absent.
fn gap(v: Option<&Value>, id: &str) -> Result<f64, LineError> {
    match v {
        None | Some(Value::Null) => Ok(0.0),
        Some(x) => (x.as_f64())
            .filter(|g| (0.0..=MAX_GAP_MS).contains(g))
            .ok_or_else(|| LineError::Gap {
                id: id.to_string(),
                value: x.clone(),
            }),
    }
}

/// Each call's `field` as the calls' places in the file: every id known, none twice (a call
/// naming itself in `after` is a cycle of one, named by `order`).
fn resolve<'a>(
    raw: &'a [Raw<'a>],
    index: &HashMap<&str, usize>,
    field: &'static str,
    of: impl Fn(&'a Raw<'a>) -> &'a Vec<&'a str>,
) -> Result<Vec<Vec<usize>>, LineError> {
    let mut out = Vec::with_capacity(raw.len());
    for c in raw {
        let names = of(c);
        let mut ids = Vec::with_capacity(names.len());
        for &name in names {
            let &i = index.get(name).ok_or_else(|| LineError::UnknownId {
                id: c.id.to_string(),
                field,
                name: name.to_string(),
            })?;
            if ids.contains(&i) {
                return Err(LineError::Twice {
                    id: c.id.to_string(),
                    field,
                    name: name.to_string(),
                });
            }
            ids.push(i);
        }
        out.push(ids);
    }
    Ok(out)
}

/// The calls' places in the file, in an order where each comes after those it waits for
/// (among those ready, the first in the file), or the cycle that leaves none.
fn order(raw: &[Raw], after: &[Vec<usize>]) -> Result<Vec<usize>, LineError> {
    let n = raw.len();
    let mut waiting: Vec<usize> = after.iter().map(Vec::len).collect();
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, up) in after.iter().enumerate() {
        for &j in up {
            next[j].push(i);
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..n).filter(|&i| waiting[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        for &k in &next[i] {
            waiting[k] -= 1;
            if waiting[k] == 0 {
                ready.push(Reverse(k));
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    Err(LineError::Cycle(cycle(raw, after, &waiting)))
}

/// A cycle among the calls left waiting (each has an upstream call left waiting), as
/// `a -> b -> a`, its first [`CYCLE_NAMES`] calls named.
fn cycle(raw: &[Raw], after: &[Vec<usize>], waiting: &[usize]) -> String {
    let left = |i: &usize| waiting[*i] > 0;
    let mut at = (0..raw.len()).find(left).unwrap_or(0);
    let mut seen: HashMap<usize, usize> = HashMap::new();
    let mut path = Vec::new();
    while let std::collections::hash_map::Entry::Vacant(e) = seen.entry(at) {
        e.insert(path.len());
        path.push(at);
        at = after[at].iter().copied().find(left).unwrap_or(at);
    }
    let ring = &path[seen[&at]..];
    let mut names: Vec<String> = (ring.iter().take(CYCLE_NAMES))
        .map(|&i| format!("{:?}", raw[i].id))
        .collect();
    if ring.len() > CYCLE_NAMES {
        names.push(format!("... ({} calls)", ring.len()));
    }
    names.push(format!("{:?}", raw[ring[0]].id));
    names.join(" -> ")
}

/// Every splice names a call upstream of its own: one bit set a call of its upstream calls
/// (by their new numbers), built in order from those of the calls it waits for.
fn check_upstream(
    raw: &[Raw],
    order: &[usize],
    number: &[u32],
    after: &[Vec<usize>],
    splice: &[Vec<usize>],
) -> Result<(), LineError> {
    if splice.iter().all(Vec::is_empty) {
        return Ok(());
    }
    let words = raw.len().div_ceil(64);
    let mut up: Vec<Vec<u64>> = Vec::with_capacity(raw.len());
    for &old in order {
        let mut set = vec![0u64; words];
        for &j in &after[old] {
            let k = number[j] as usize;
            for (w, u) in set.iter_mut().zip(&up[k]) {
                *w |= u;
            }
            set[k / 64] |= 1 << (k % 64);
        }
        for &s in &splice[old] {
            let k = number[s] as usize;
            if set[k / 64] & (1 << (k % 64)) == 0 {
                return Err(LineError::NotUpstream {
                    id: raw[old].id.to_string(),
                    name: raw[s].id.to_string(),
                });
            }
        }
        up.push(set);
    }
    Ok(())
}

/// A key from the file, cut to [`MAX_ID_BYTES`] for a message.
fn shown(key: &str) -> String {
    let mut end = key.len().min(MAX_ID_BYTES);
    while !key.is_char_boundary(end) {
        end -= 1;
    }
    key[..end].to_string()
}
