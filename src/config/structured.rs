//! Structured output and tool calls: what a run asks the server to answer in,
//! [`StructuredOutput`] (a JSON schema sent as `response_format`, function tools sent as
//! `tools`, or vLLM's regex, choice and grammar of `guided.rs`), the built-in schema and
//! tools, the reading of a user's schema or tools file ([`StructuredOutput::json_from_text`],
//! [`StructuredOutput::tools_from_text`]: text in, a one-line error naming the flag, the file
//! and its line out), and which backends can ask for each (the backend table's rows).
//!
//! An answer is checked against its schema by `measure::answer_schema::check`, a documented
//! subset of JSON Schema: `type`, `properties`, `required`, `additionalProperties`, `enum`,
//! `const`, `items`, `minItems`/`maxItems`, `minLength`/`maxLength` and
//! `minimum`/`maximum`; the annotations `title`, `description`, `default`, `examples` and
//! `$schema` are read past. A schema using any other keyword is refused here when it is read
//! ([`CHECKED`] lists the keywords that check reads), so no answer is ever called valid
//! against a rule that was not checked. Pure values, no I/O.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::backend::{BackendKind, StructuredKinds};
use super::error::{ConfigError, SchemaError};
use super::guided::Pattern;

/// The most bytes of one request's answer (its text, or its tool call's arguments) kept for
/// the check; a longer answer is `too_long`, not checked (docs/reliability.md, limits).
pub const MAX_CHECKED_BYTES: usize = 1 << 20;

/// The most bytes of a schema or tools file read.
pub const MAX_SCHEMA_FILE_BYTES: u64 = 1 << 20;

/// The deepest nesting of a schema checked (a deeper one is refused when read).
const MAX_SCHEMA_DEPTH: usize = 32;

/// What a run asks every request's answer to be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StructuredOutput {
    /// A JSON document valid against `schema`, asked with
    /// `response_format: {"type": "json_schema", ...}` (vLLM's `--dataset json`).
    Json { schema: Value },
    /// A call of one of `tools`, asked with `tools` and `tool_choice: "required"`; its
    /// arguments are checked against the called function's `parameters`.
    Tools { tools: Vec<Tool> },
    /// An answer matching `pattern` in full, asked with vLLM's `structured_outputs.regex`
    /// (`guided.rs`).
    Regex {
        pattern: Pattern,
        /// Asked in vLLM's older top-level field instead (`guided_regex`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        legacy_fields: bool,
    },
    /// An answer that is exactly one of `choices` (`structured_outputs.choice`).
    Choice {
        choices: Vec<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        legacy_fields: bool,
    },
    /// An answer following `grammar` (`structured_outputs.grammar`); not checked.
    Grammar {
        grammar: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        legacy_fields: bool,
    },
}

/// A function the model may call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The JSON schema of its arguments.
    pub parameters: Value,
}

impl Tool {
    /// The tool as OpenAI's `tools` list writes it.
    pub fn openai(&self) -> Value {
        json!({"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters
        }})
    }
}

/// The built-in schema: a small weather report with a string, a number, an enum and a list.
fn builtin_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "temperature_c": {"type": "number", "minimum": -90, "maximum": 60},
            "conditions": {"type": "string", "enum": ["sunny", "cloudy", "rain", "snow"]},
            "alerts": {"type": "array", "items": {"type": "string"}, "maxItems": 8}
        },
        "required": ["city", "temperature_c", "conditions"],
        "additionalProperties": false
    })
}

/// The built-in tools: three functions of different shapes.
fn builtin_tools() -> Vec<Tool> {
    let tool = |name: &str, description: &str, parameters: Value| Tool {
        name: name.into(),
        description: description.into(),
        parameters,
    };
    vec![
        tool(
            "get_weather",
            "The current weather in a city.",
            json!({"type": "object", "properties": {
                "city": {"type": "string", "minLength": 1},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            }, "required": ["city", "unit"], "additionalProperties": false}),
        ),
        tool(
            "search_flights",
            "Flights between two airports on a day.",
            json!({"type": "object", "properties": {
                "origin": {"type": "string", "minLength": 3, "maxLength": 3},
                "destination": {"type": "string", "minLength": 3, "maxLength": 3},
                "date": {"type": "string"},
                "passengers": {"type": "integer", "minimum": 1, "maximum": 9}
            }, "required": ["origin", "destination", "date", "passengers"]}),
        ),
        tool(
            "convert_currency",
            "An amount of money in another currency.",
            json!({"type": "object", "properties": {
                "amount": {"type": "number", "minimum": 0},
                "from": {"type": "string"},
                "to": {"type": "string"}
            }, "required": ["amount", "from", "to"]}),
        ),
    ]
}

impl StructuredOutput {
    /// `--structured-output json` without `--json-schema-path`.
    pub fn builtin_json() -> Self {
        StructuredOutput::Json {
            schema: builtin_schema(),
        }
    }

    /// `--structured-output tools` without `--tools-path`.
    pub fn builtin_tools() -> Self {
        StructuredOutput::Tools {
            tools: builtin_tools(),
        }
    }

    /// The schema in `text` (the file `file`, given to `flag`).
    pub fn json_from_text(text: &str, file: &str, flag: &str) -> Result<Self, ConfigError> {
        let schema = parse(text, file, flag)?;
        let out = StructuredOutput::Json { schema };
        out.validate(flag)?;
        Ok(out)
    }

    /// The tools in `text`: a list of OpenAI tools (`{"type": "function", "function":
    /// {...}}`) or of bare functions (`{"name", "description", "parameters"}`).
    pub fn tools_from_text(text: &str, file: &str, flag: &str) -> Result<Self, ConfigError> {
        let value = parse(text, file, flag)?;
        let bad = |why: String| ConfigError::invalid(flag, format!("{file}: {why}"));
        let Value::Array(items) = value else {
            return Err(bad("expected a JSON list of tools".into()));
        };
        let mut tools = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let f = match item.get("function") {
                Some(f) => f.clone(),
                None => item,
            };
            let tool: Tool = serde_json::from_value(f).map_err(|e| {
                bad(format!(
                    "tool {}: {e} (expected name and parameters)",
                    i + 1
                ))
            })?;
            tools.push(tool);
        }
        let out = StructuredOutput::Tools { tools };
        out.validate(flag)?;
        Ok(out)
    }

    /// The schemas are ones `measure::answer_schema::check` checks in full, and tools have distinct names.
    pub fn validate(&self, flag: &str) -> Result<(), ConfigError> {
        let bad = |why: String| Err(ConfigError::invalid(flag, why));
        match self {
            StructuredOutput::Json { schema } => {
                supported(schema, "schema", 0).map_err(|why| ConfigError::invalid(flag, why))
            }
            StructuredOutput::Tools { tools } => {
                if tools.is_empty() {
                    return bad("no tool given".into());
                }
                for (i, t) in tools.iter().enumerate() {
                    if t.name.is_empty() || tools[..i].iter().any(|o| o.name == t.name) {
                        return bad(format!("tool {}: its name is empty or repeated", i + 1));
                    }
                    supported(&t.parameters, &format!("tool '{}' parameters", t.name), 0)
                        .map_err(|why| ConfigError::invalid(flag, why))?;
                }
                Ok(())
            }
            StructuredOutput::Choice { choices, .. } => {
                super::guided::choices(Some(choices.as_slice()), flag).map(|_| ())
            }
            StructuredOutput::Regex { .. } | StructuredOutput::Grammar { .. } => Ok(()),
        }
    }

    /// Whether a backend can ask for it: its row of the backend table says
    /// (`BackendInfo::structured`).
    pub fn asked_of(&self, kinds: StructuredKinds) -> bool {
        match self {
            StructuredOutput::Json { .. } => kinds.json,
            StructuredOutput::Tools { .. } => kinds.tools,
            StructuredOutput::Regex { .. }
            | StructuredOutput::Choice { .. }
            | StructuredOutput::Grammar { .. } => kinds.guided,
        }
    }

    /// Refused unless the backend's row says it can ask for it ([`Self::asked_of`]); the
    /// message lists the backends that can ([`Self::backends_listed`]).
    pub fn check_backend(&self, backend: BackendKind) -> Result<(), ConfigError> {
        if self.asked_of(backend.info().structured) {
            return Ok(());
        }
        let apis = self.backends_listed();
        let why = format!(
            "{} is asked of {apis}, not --backend {}",
            self.kind(),
            backend.as_str()
        );
        Err(ConfigError::invalid("--structured-output", why))
    }

    /// The backends that can ask for it, as its refusal names them (the text is kept as
    /// users have read it; a test holds it to the backend table's rows).
    pub fn backends_listed(&self) -> &'static str {
        match self {
            StructuredOutput::Json { .. } => "openai, openai-chat or openai-responses",
            StructuredOutput::Tools { .. } => "openai-chat, openai-responses or anthropic-messages",
            _ => "openai or openai-chat",
        }
    }

    /// `--goodput valid_output:1` (`valid_output`) needs answers that are checked: not a
    /// grammar's.
    pub fn check_goodput(&self, valid_output: bool) -> Result<(), ConfigError> {
        if valid_output && matches!(self, StructuredOutput::Grammar { .. }) {
            let why =
                "valid_output:1 counts valid answers, and a grammar's answers are not checked";
            return Err(ConfigError::invalid("--goodput", why));
        }
        Ok(())
    }

    /// The schema an answer is checked against: a JSON answer's, or the called tool's
    /// parameters (`None`: no such tool).
    pub fn schema_for(&self, tool: Option<&str>) -> Option<&Value> {
        match (self, tool) {
            (StructuredOutput::Json { schema }, _) => Some(schema),
            (StructuredOutput::Tools { tools }, Some(name)) => {
                tools.iter().find(|t| t.name == name).map(|t| &t.parameters)
            }
            _ => None,
        }
    }

    /// `json`, `tools`, `regex`, `choice` or `grammar`, as `--structured-output` takes it.
    pub fn kind(&self) -> &'static str {
        match self {
            StructuredOutput::Json { .. } => "json",
            StructuredOutput::Tools { .. } => "tools",
            StructuredOutput::Regex { .. } => "regex",
            StructuredOutput::Choice { .. } => "choice",
            StructuredOutput::Grammar { .. } => "grammar",
        }
    }

    /// Whether answers are checked as JSON (`json`, `tools`): `json_rate(%)` means something.
    pub fn is_json(&self) -> bool {
        matches!(
            self,
            StructuredOutput::Json { .. } | StructuredOutput::Tools { .. }
        )
    }

    /// What a regex, choice or grammar run adds to a body: vLLM's `structured_outputs`
    /// field (`{"regex": P}`, ...), or with `legacy_fields` its older top-level field
    /// (`guided_regex: P`, ...); `None` for JSON and tools (asked in their own fields).
    pub fn guided_field(&self) -> Option<(String, Value)> {
        let (key, value, legacy) = match self {
            StructuredOutput::Regex {
                pattern,
                legacy_fields,
            } => ("regex", json!(pattern.as_str()), legacy_fields),
            StructuredOutput::Choice {
                choices,
                legacy_fields,
            } => ("choice", json!(choices), legacy_fields),
            StructuredOutput::Grammar {
                grammar,
                legacy_fields,
            } => ("grammar", json!(grammar), legacy_fields),
            StructuredOutput::Json { .. } | StructuredOutput::Tools { .. } => return None,
        };
        Some(match legacy {
            true => (format!("guided_{key}"), value),
            false => ("structured_outputs".into(), json!({ key: value })),
        })
    }
}

/// `text` as JSON, or the error naming the flag, the file and the line.
fn parse(text: &str, file: &str, flag: &str) -> Result<Value, ConfigError> {
    serde_json::from_str(text).map_err(|e| {
        let why = format!(
            "{file} line {} column {}: not JSON ({})",
            e.line(),
            e.column(),
            e.to_string().split(" at line").next().unwrap_or_default()
        );
        ConfigError::invalid(flag, why)
    })
}

/// The keywords `measure::answer_schema::check` checks; the annotations it reads past.
pub const CHECKED: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "const",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
];
const ANNOTATIONS: &[&str] = &["title", "description", "default", "examples", "$schema"];
const TYPES: &[&str] = &[
    "object", "array", "string", "number", "integer", "boolean", "null",
];

/// `schema` (at `at`) uses only [`CHECKED`] keywords (and annotations), each of the right
/// shape.
fn supported(schema: &Value, at: &str, depth: usize) -> Result<(), SchemaError> {
    if depth > MAX_SCHEMA_DEPTH {
        return Err(SchemaError::TooDeep {
            at: at.to_string(),
            most: MAX_SCHEMA_DEPTH,
        });
    }
    let Value::Object(map) = schema else {
        let at = at.to_string();
        return Err(SchemaError::NotAnObject { at });
    };
    for (k, v) in map {
        let shape_ok = match k.as_str() {
            k if ANNOTATIONS.contains(&k) => true,
            "type" => match v {
                Value::String(t) => TYPES.contains(&t.as_str()),
                Value::Array(ts) => ts
                    .iter()
                    .all(|t| t.as_str().is_some_and(|t| TYPES.contains(&t))),
                _ => false,
            },
            "properties" => match v {
                Value::Object(props) => {
                    for (name, s) in props {
                        supported(s, &format!("{at}.properties.{name}"), depth + 1)?;
                    }
                    true
                }
                _ => false,
            },
            "items" => {
                supported(v, &format!("{at}.items"), depth + 1)?;
                true
            }
            "additionalProperties" => match v {
                Value::Bool(_) => true,
                _ => {
                    supported(v, &format!("{at}.additionalProperties"), depth + 1)?;
                    true
                }
            },
            "required" => v.as_array().is_some_and(|r| r.iter().all(Value::is_string)),
            "enum" => v.is_array(),
            "const" => true,
            "minItems" | "maxItems" | "minLength" | "maxLength" => v.is_u64(),
            "minimum" | "maximum" => v.is_number(),
            other => {
                return Err(SchemaError::Unchecked {
                    at: at.to_string(),
                    keyword: other.to_string(),
                    checked: CHECKED.join(", "),
                })
            }
        };
        if !shape_ok {
            return Err(SchemaError::Shape {
                at: at.to_string(),
                key: k.clone(),
                value: v.to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schema file that is not JSON is one line naming the flag, the file and
    /// the line; a keyword the checker does not check is refused by name.
    #[test]
    fn a_bad_schema_file_is_named_with_its_line() {
        let err = StructuredOutput::json_from_text(
            "{\n  \"type\": \"object\",\n  oops\n}",
            "s.json",
            "--json-schema-path",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("--json-schema-path") && err.contains("s.json line 3"),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
        let err = StructuredOutput::json_from_text(
            r#"{"type":"string","pattern":"^a"}"#,
            "s.json",
            "--json-schema-path",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("'pattern'"), "{err}");
        let tools =
            r#"[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]"#;
        let t = StructuredOutput::tools_from_text(tools, "t.json", "--tools-path").unwrap();
        assert_eq!(t.schema_for(Some("f")), Some(&json!({"type": "object"})));
        assert!(StructuredOutput::tools_from_text("[]", "t.json", "--tools-path").is_err());
        assert!(StructuredOutput::builtin_json().validate("x").is_ok());
        assert!(StructuredOutput::builtin_tools().validate("x").is_ok());
    }

    /// A refusal's list of backends names exactly those whose row of the backend table can
    /// ask for the kind (the list is kept as users have read it, not in the table's order).
    #[test]
    fn the_refusal_names_the_backends_the_table_allows() {
        let guided = StructuredOutput::Grammar {
            grammar: "g".into(),
            legacy_fields: false,
        };
        for s in [
            StructuredOutput::builtin_json(),
            StructuredOutput::builtin_tools(),
            guided,
        ] {
            let mut listed: Vec<&str> = (s.backends_listed().split(", "))
                .flat_map(|n| n.split(" or "))
                .collect();
            listed.sort_unstable();
            let mut allowed: Vec<&str> = (BackendKind::ALL.iter())
                .filter(|k| s.asked_of(k.info().structured))
                .map(|k| k.as_str())
                .collect();
            allowed.sort_unstable();
            assert_eq!(listed, allowed, "{}", s.kind());
        }
    }
}
