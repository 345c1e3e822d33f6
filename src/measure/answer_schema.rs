//! The check of a structured answer against its JSON schema: [`check`] says whether a
//! server's answer (a JSON document, or a tool call's arguments) is valid against the schema
//! the run asked for, and names the first place where it is not. `output_check.rs` calls it
//! at the end of each answer of a `--structured-output json` or `tools` run.
//!
//! The check is a documented subset of JSON Schema written here (README, "Dependencies": the
//! `jsonschema` crate pulls a regex engine, an HTTP client for remote references and more
//! than the rest of a 2-core CI build can afford): `type`, `properties`, `required`,
//! `additionalProperties`, `enum`, `const`, `items`, `minItems`/`maxItems`,
//! `minLength`/`maxLength` and `minimum`/`maximum`. Which keywords a schema may use is
//! `config::structured`'s to say when it reads the schema (a schema using any other is
//! refused there), so no answer is ever called valid against a rule that was not checked: a
//! keyword checked here is one listed there. Pure values, no I/O.
//!
//! A schema is compiled once per run ([`Schema::new`]): each `enum` becomes a hash set, so
//! an item is checked in constant time however many values the enum lists (a linear search
//! made a 50,000-value enum against a 1 MB list take 26-37 s). Every check has a step
//! budget ([`Schema::check_within`]: each value visited and each value hashed or compared is
//! a step); past it, or once the run stops, the check ends as [`Misfit::OverBudget`] or
//! [`Misfit::Stopped`], never a stall.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

/// Where and why an answer does not fit its schema (`$.city: expected string, got number`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaMisfit(pub String);

/// Why a check ended without saying valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Misfit {
    /// The answer does not fit.
    #[error("{0}")]
    At(SchemaMisfit),
    /// The check took its whole step budget.
    #[error("over the check's budget of {0} steps")]
    OverBudget(u64),
    /// The run stopped during the check.
    #[error("the run stopped during the check")]
    Stopped,
}

/// How often (in steps) a check looks whether the run stopped.
const STOP_EVERY: u64 = 1 << 16;

/// The enums listing more values than this are named by their count in a misfit, not listed.
const MAX_LISTED: usize = 16;

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_type(v: &Value, t: &str) -> bool {
    let own = type_name(v);
    own == t
        || (t == "number" && own == "integer")
        || (t == "integer" && v.as_f64().is_some_and(|f| f.fract() == 0.0))
}

/// An `enum`'s values, hashed once: a lookup hashes the item and compares it with the values
/// of its hash only. The hash agrees with `Value`'s equality (an object's entries in any
/// order, `0.0` and `-0.0` alike).
struct ValueSet {
    values: Vec<Value>,
    state: RandomState,
    by_hash: HashMap<u64, Vec<usize>>,
}

impl ValueSet {
    fn new(values: Vec<Value>) -> ValueSet {
        let state = RandomState::new();
        let mut by_hash: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, v) in values.iter().enumerate() {
            by_hash
                .entry(hash_of(&state, v, &mut 0))
                .or_default()
                .push(i);
        }
        ValueSet {
            values,
            state,
            by_hash,
        }
    }

    /// Whether `v` is one of the values; `steps` counts the values hashed and compared.
    fn contains(&self, v: &Value, steps: &mut u64) -> bool {
        let h = hash_of(&self.state, v, steps);
        let same = self.by_hash.get(&h).into_iter().flatten();
        same.into_iter().any(|&i| {
            *steps += 1;
            self.values[i] == *v
        })
    }

    /// The values, for a misfit's message: listed when few, else counted.
    fn described(&self) -> String {
        match self.values.len() {
            n if n <= MAX_LISTED => Value::Array(self.values.clone()).to_string(),
            n => format!("the {n} values of the enum"),
        }
    }
}

/// `v`'s hash under `state`; each value hashed is a step.
fn hash_of(state: &RandomState, v: &Value, steps: &mut u64) -> u64 {
    let mut h = state.build_hasher();
    hash_into(state, v, &mut h, steps);
    h.finish()
}

fn hash_into(state: &RandomState, v: &Value, h: &mut impl Hasher, steps: &mut u64) {
    *steps += 1;
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => (2u8, u).hash(h),
            (None, Some(i), _) => (3u8, i).hash(h),
            // `0.0 == -0.0`: one hash for both.
            (_, _, f) => (4u8, f.filter(|f| *f != 0.0).map_or(0, f64::to_bits)).hash(h),
        },
        Value::String(s) => (5u8, s).hash(h),
        Value::Array(items) => {
            (6u8, items.len()).hash(h);
            items.iter().for_each(|i| hash_into(state, i, h, steps));
        }
        Value::Object(obj) => {
            // Entries in any order: the sum of each entry's own hash.
            let sum = obj.iter().fold(0u64, |acc, (k, val)| {
                let mut e = state.build_hasher();
                k.hash(&mut e);
                hash_into(state, val, &mut e, steps);
                acc.wrapping_add(e.finish())
            });
            (7u8, obj.len(), sum).hash(h);
        }
    }
}

/// The number of values in `v` (itself and everything it holds).
fn size(v: &Value) -> u64 {
    match v {
        Value::Array(items) => 1 + items.iter().map(size).sum::<u64>(),
        Value::Object(obj) => 1 + obj.values().map(size).sum::<u64>(),
        _ => 1,
    }
}

/// What an object's properties not listed may be.
enum Additional {
    Any,
    Forbidden,
    Schema(Box<Schema>),
}

/// A schema of the subset, compiled once for every answer of a run.
pub struct Schema {
    /// `type`: one name, or several (`None`: any).
    types: Option<Vec<String>>,
    /// `type` was a list (for the misfit's words).
    type_list: Option<Value>,
    enumerated: Option<ValueSet>,
    /// `const`, and its size in values (the steps a comparison may take).
    constant: Option<(Value, u64)>,
    required: Vec<String>,
    properties: Option<HashMap<String, Schema>>,
    additional: Additional,
    items: Option<Box<Schema>>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    minimum: Option<f64>,
    maximum: Option<f64>,
}

impl Schema {
    /// `schema` compiled (one `config::structured` accepted; anything not an object allows
    /// everything).
    pub fn new(schema: &Value) -> Schema {
        let empty = Map::new();
        let map = schema.as_object().unwrap_or(&empty);
        let n = |k: &str| map.get(k).and_then(Value::as_u64);
        let x = |k: &str| map.get(k).and_then(Value::as_f64);
        let (types, type_list) = match map.get("type") {
            Some(Value::String(t)) => (Some(vec![t.clone()]), None),
            Some(Value::Array(ts)) => {
                let names = ts.iter().filter_map(Value::as_str).map(str::to_string);
                (Some(names.collect()), Some(Value::Array(ts.clone())))
            }
            _ => (None, None),
        };
        let additional = match map.get("additionalProperties") {
            Some(Value::Bool(false)) => Additional::Forbidden,
            Some(s) if s.is_object() => Additional::Schema(Box::new(Schema::new(s))),
            _ => Additional::Any,
        };
        Schema {
            types,
            type_list,
            enumerated: match map.get("enum") {
                Some(Value::Array(options)) => Some(ValueSet::new(options.clone())),
                _ => None,
            },
            constant: map.get("const").map(|c| (c.clone(), size(c))),
            required: match map.get("required") {
                Some(Value::Array(r)) => r
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                _ => Vec::new(),
            },
            properties: map.get("properties").and_then(Value::as_object).map(|ps| {
                ps.iter()
                    .map(|(k, s)| (k.clone(), Schema::new(s)))
                    .collect()
            }),
            additional,
            items: map.get("items").map(|s| Box::new(Schema::new(s))),
            min_items: n("minItems"),
            max_items: n("maxItems"),
            min_length: n("minLength"),
            max_length: n("maxLength"),
            minimum: x("minimum"),
            maximum: x("maximum"),
        }
    }

    /// Whether `v` is valid (and the steps it took), within `budget` steps, stopping early
    /// once `stop` is set; the misfit names the first place where it is not (`$.alerts[2]:
    /// expected string, got number`).
    pub fn check_within(&self, v: &Value, budget: u64, stop: &AtomicBool) -> Result<u64, Misfit> {
        let mut walk = Walk {
            steps: 0,
            budget,
            stop,
        };
        self.at(v, "$", &mut walk).map(|()| walk.steps)
    }

    fn at(&self, v: &Value, path: &str, walk: &mut Walk) -> Result<(), Misfit> {
        walk.step(1)?;
        let fail = |why: String| Err(Misfit::At(SchemaMisfit(format!("{path}: {why}"))));
        match (&self.types, &self.type_list) {
            (Some(ts), None) if !ts.iter().any(|t| is_type(v, t)) => {
                return fail(format!("expected {}, got {}", ts[0], type_name(v)))
            }
            (Some(ts), Some(list)) if !ts.iter().any(|t| is_type(v, t)) => {
                return fail(format!("expected one of {list}, got {}", type_name(v)))
            }
            _ => {}
        }
        if let Some(set) = &self.enumerated {
            let mut steps = 0;
            let found = set.contains(v, &mut steps);
            walk.step(steps)?;
            if !found {
                return fail(format!("{v} is not one of {}", set.described()));
            }
        }
        if let Some((c, cost)) = &self.constant {
            walk.step(*cost)?;
            if c != v {
                return fail(format!("expected {c}, got {v}"));
            }
        }
        match v {
            Value::Object(obj) => self.object(obj, path, walk)?,
            Value::Array(items) => {
                let len = items.len() as u64;
                if self.min_items.is_some_and(|m| len < m)
                    || self.max_items.is_some_and(|m| len > m)
                {
                    return fail(format!("{len} items, outside the schema's bounds"));
                }
                if let Some(item) = &self.items {
                    for (i, it) in items.iter().enumerate() {
                        item.at(it, &format!("{path}[{i}]"), walk)?;
                    }
                }
            }
            Value::String(s) => {
                let len = s.chars().count() as u64;
                if self.min_length.is_some_and(|m| len < m)
                    || self.max_length.is_some_and(|m| len > m)
                {
                    return fail(format!(
                        "a string of {len} characters, outside the schema's bounds"
                    ));
                }
            }
            Value::Number(num) => {
                let f = num.as_f64().unwrap_or(0.0);
                if self.minimum.is_some_and(|m| f < m) || self.maximum.is_some_and(|m| f > m) {
                    return fail(format!("{num} is outside the schema's bounds"));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn object(&self, obj: &Map<String, Value>, path: &str, walk: &mut Walk) -> Result<(), Misfit> {
        if let Some(missing) = self.required.iter().find(|k| !obj.contains_key(*k)) {
            let why = format!("{path}: required property '{missing}' is missing");
            return Err(Misfit::At(SchemaMisfit(why)));
        }
        for (k, val) in obj {
            let p = || format!("{path}.{k}");
            match (
                self.properties.as_ref().and_then(|ps| ps.get(k)),
                &self.additional,
            ) {
                (Some(s), _) => s.at(val, &p(), walk)?,
                (None, Additional::Forbidden) => {
                    let why = format!("{path}: property '{k}' is not allowed");
                    return Err(Misfit::At(SchemaMisfit(why)));
                }
                (None, Additional::Schema(s)) => s.at(val, &p(), walk)?,
                (None, Additional::Any) => {}
            }
        }
        Ok(())
    }
}

/// A check's steps so far, its budget, and the run's stop.
struct Walk<'a> {
    steps: u64,
    budget: u64,
    stop: &'a AtomicBool,
}

impl Walk<'_> {
    fn step(&mut self, n: u64) -> Result<(), Misfit> {
        let before = self.steps;
        self.steps = self.steps.saturating_add(n);
        if self.steps > self.budget {
            return Err(Misfit::OverBudget(self.budget));
        }
        if before / STOP_EVERY != self.steps / STOP_EVERY && self.stop.load(Ordering::Relaxed) {
            return Err(Misfit::Stopped);
        }
        Ok(())
    }
}

/// Whether `v` is valid against `schema` (compiled for this one check, with no budget); the
/// error names the first place where it is not.
pub fn check(schema: &Value, v: &Value) -> Result<(), SchemaMisfit> {
    match Schema::new(schema).check_within(v, u64::MAX, &AtomicBool::new(false)) {
        Ok(_) => Ok(()),
        Err(Misfit::At(m)) => Err(m),
        Err(other) => Err(SchemaMisfit(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::structured::StructuredOutput;
    use serde_json::json;

    /// The subset checker says valid for what fits and names the first place that does not.
    #[test]
    fn the_schema_check_names_the_first_misfit() {
        let builtin = StructuredOutput::builtin_json();
        let s = builtin.schema_for(None).unwrap().clone();
        let ok = json!({"city": "Oslo", "temperature_c": 4.5, "conditions": "rain", "alerts": []});
        assert_eq!(check(&s, &ok), Ok(()));
        let cases = [
            (
                json!({"city": "Oslo", "temperature_c": 4}),
                "'conditions' is missing",
            ),
            (
                json!({"city": "Oslo", "temperature_c": "4", "conditions": "rain"}),
                "$.temperature_c: expected number",
            ),
            (
                json!({"city": "Oslo", "temperature_c": 4, "conditions": "fog"}),
                "$.conditions",
            ),
            (
                json!({"city": "", "temperature_c": 4, "conditions": "rain"}),
                "$.city",
            ),
            (
                json!({"city": "O", "temperature_c": 99, "conditions": "rain"}),
                "outside",
            ),
            (
                json!({"city": "O", "temperature_c": 9, "conditions": "rain", "x": 1}),
                "'x' is not allowed",
            ),
            (
                json!({"city": "O", "temperature_c": 9, "conditions": "rain", "alerts": [1]}),
                "$.alerts[0]",
            ),
            (json!([ok.clone()]), "expected object, got array"),
        ];
        for (v, why) in cases {
            let err = check(&s, &v).unwrap_err();
            assert!(err.0.contains(why), "{v}: {err}");
        }
        let int = json!({"type": "integer"});
        assert!(check(&int, &json!(3)).is_ok() && check(&int, &json!(3.5)).is_err());
    }

    /// An enum is a hash set: a value found whatever its place, object keys in any order,
    /// numbers as `Value` compares them; a 50,000-value enum against 100,000 items is checked
    /// in well under the budget; a budget too small for the answer ends the check as over
    /// budget, and a stopped run ends it as stopped.
    #[test]
    fn enums_are_sets_and_checks_have_a_budget() {
        let values: Vec<Value> = (0..50_000).map(|i| json!(format!("v{i}"))).collect();
        let schema = Schema::new(&json!({"type": "array", "items": {"enum": values}}));
        let answer = Value::Array(vec![json!("v49999"); 100_000]);
        let stop = AtomicBool::new(false);
        assert!(schema.check_within(&answer, 20_000_000, &stop).is_ok());
        let bad = json!(["v1", "w"]);
        let why = schema
            .check_within(&bad, 1_000, &stop)
            .unwrap_err()
            .to_string();
        assert!(
            why.contains("$[1]") && why.contains("50000 values"),
            "{why}"
        );
        assert_eq!(
            schema.check_within(&answer, 1_000, &stop),
            Err(Misfit::OverBudget(1_000))
        );
        stop.store(true, Ordering::Relaxed);
        assert_eq!(
            schema.check_within(&answer, u64::MAX, &stop),
            Err(Misfit::Stopped)
        );
        let mixed = json!({"enum": [{"a": 1, "b": [2.5, null]}, 3, -4, 0.0, "x", true]});
        for found in [
            json!({"b": [2.5, null], "a": 1}),
            json!(3),
            json!(-4),
            json!(-0.0),
            json!("x"),
            json!(true),
        ] {
            assert_eq!(check(&mixed, &found), Ok(()), "{found}");
        }
        for missing in [
            json!({"a": 1}),
            json!(3.0),
            json!(4),
            json!("y"),
            json!(false),
            json!(null),
        ] {
            assert!(check(&mixed, &missing).is_err(), "{missing}");
        }
    }
}
