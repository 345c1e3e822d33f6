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

use serde_json::{Map, Value};

/// Where and why an answer does not fit its schema (`$.city: expected string, got number`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaMisfit(pub String);

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

/// Whether `v` is valid against `schema` (one the subset supports, as `config::structured`
/// checked when it read it); the error names the first place where it is not
/// (`$.alerts[2]: expected string, got number`).
pub fn check(schema: &Value, v: &Value) -> Result<(), SchemaMisfit> {
    at(schema, v, "$")
}

fn at(schema: &Value, v: &Value, path: &str) -> Result<(), SchemaMisfit> {
    let Some(map) = schema.as_object() else {
        return Ok(());
    };
    let fail = |why: String| Err(SchemaMisfit(format!("{path}: {why}")));
    match map.get("type") {
        Some(Value::String(t)) if !is_type(v, t) => {
            return fail(format!("expected {t}, got {}", type_name(v)))
        }
        Some(Value::Array(ts)) if !ts.iter().any(|t| t.as_str().is_some_and(|t| is_type(v, t))) => {
            return fail(format!(
                "expected one of {}, got {}",
                Value::Array(ts.clone()),
                type_name(v)
            ))
        }
        _ => {}
    }
    if let Some(Value::Array(options)) = map.get("enum") {
        if !options.contains(v) {
            return fail(format!(
                "{v} is not one of {}",
                Value::Array(options.clone())
            ));
        }
    }
    if let Some(c) = map.get("const") {
        if c != v {
            return fail(format!("expected {c}, got {v}"));
        }
    }
    let n = |k: &str| map.get(k).and_then(Value::as_u64);
    let x = |k: &str| map.get(k).and_then(Value::as_f64);
    match v {
        Value::Object(obj) => object(map, obj, path)?,
        Value::Array(items) => {
            let len = items.len() as u64;
            if n("minItems").is_some_and(|m| len < m) || n("maxItems").is_some_and(|m| len > m) {
                return fail(format!("{len} items, outside the schema's bounds"));
            }
            if let Some(item) = map.get("items") {
                for (i, it) in items.iter().enumerate() {
                    at(item, it, &format!("{path}[{i}]"))?;
                }
            }
        }
        Value::String(s) => {
            let len = s.chars().count() as u64;
            if n("minLength").is_some_and(|m| len < m) || n("maxLength").is_some_and(|m| len > m) {
                return fail(format!(
                    "a string of {len} characters, outside the schema's bounds"
                ));
            }
        }
        Value::Number(num) => {
            let f = num.as_f64().unwrap_or(0.0);
            if x("minimum").is_some_and(|m| f < m) || x("maximum").is_some_and(|m| f > m) {
                return fail(format!("{num} is outside the schema's bounds"));
            }
        }
        _ => {}
    }
    Ok(())
}

fn object(
    map: &Map<String, Value>,
    obj: &Map<String, Value>,
    path: &str,
) -> Result<(), SchemaMisfit> {
    if let Some(Value::Array(required)) = map.get("required") {
        if let Some(missing) =
            (required.iter().filter_map(Value::as_str)).find(|k| !obj.contains_key(*k))
        {
            let why = format!("{path}: required property '{missing}' is missing");
            return Err(SchemaMisfit(why));
        }
    }
    let props = map.get("properties").and_then(Value::as_object);
    for (k, val) in obj {
        let p = format!("{path}.{k}");
        match (
            props.and_then(|ps| ps.get(k)),
            map.get("additionalProperties"),
        ) {
            (Some(s), _) => at(s, val, &p)?,
            (None, Some(Value::Bool(false))) => {
                return Err(SchemaMisfit(format!(
                    "{path}: property '{k}' is not allowed"
                )))
            }
            (None, Some(s)) if s.is_object() => at(s, val, &p)?,
            (None, _) => {}
        }
    }
    Ok(())
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
}
