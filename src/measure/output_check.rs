//! The check of a structured answer (issue 25 §5): a request of a run that asks for JSON of a
//! schema, a tool call, a regex's match or one of a list of choices keeps its answer's text
//! (or its first tool call's arguments and name) as it streams in, up to
//! [`MAX_CHECKED_BYTES`], and at its end checks it: valid JSON, and valid against the schema
//! (`config::structured::check`); the whole text matching the pattern; the whole text,
//! untrimmed, equal to one choice. A grammar's answer is kept nowhere and not checked: its
//! verdict is [`Verdict::Unchecked`]. The verdict is the record's [`OutputCheck`]. Only such a
//! run makes a [`Checker`]: a text run keeps nothing more.

use serde::{Deserialize, Serialize};

use crate::config::structured::{check, StructuredOutput, MAX_CHECKED_BYTES};

/// The most characters of a misfit's description kept on the record.
const MAX_WHY_CHARS: usize = 200;

/// What the check of one answer found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// JSON, and valid against the schema.
    Valid,
    /// JSON, but not valid against the schema (or a call of a function not offered).
    SchemaMismatch,
    /// Not JSON.
    NotJson,
    /// No answer to check: no text, or (tools) no tool call.
    Missing,
    /// Longer than the bytes kept for the check: not checked.
    TooLong,
    /// Text that does not match the pattern in full (`--structured-output regex`).
    RegexMismatch,
    /// Text that is not exactly one of the choices (`--structured-output choice`).
    NotAChoice,
    /// Not checked: a grammar's answer (`--structured-output grammar`); counted apart, never
    /// in `correct_rate(%)`'s denominator.
    Unchecked,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::SchemaMismatch => "schema_mismatch",
            Verdict::NotJson => "not_json",
            Verdict::Missing => "missing",
            Verdict::TooLong => "too_long",
            Verdict::RegexMismatch => "regex_mismatch",
            Verdict::NotAChoice => "not_a_choice",
            Verdict::Unchecked => "unchecked",
        }
    }

    /// The answer parsed as JSON.
    pub fn is_json(self) -> bool {
        matches!(self, Verdict::Valid | Verdict::SchemaMismatch)
    }
}

/// The check of a request's structured answer, on its record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputCheck {
    pub verdict: Verdict,
    /// The function called (tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What was wrong: the parser's error or the schema's first misfit (at most 200
    /// characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The answer was checked as text (a regex's match, a choice), not parsed as JSON.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub as_text: bool,
}

impl OutputCheck {
    /// The answer parsed as JSON (a JSON or tools run's `valid` or `schema_mismatch`).
    pub fn parsed_as_json(&self) -> bool {
        self.verdict.is_json() && !self.as_text
    }
}

/// A request's answer, kept for its check while it streams in.
pub struct Checker<'a> {
    spec: &'a StructuredOutput,
    text: String,
    over: bool,
    /// Tools: the first call's function, once named, and its index (a call came).
    tool: Option<String>,
    first: Option<u64>,
}

impl<'a> Checker<'a> {
    pub fn new(spec: &'a StructuredOutput) -> Self {
        Checker {
            spec,
            text: String::new(),
            over: false,
            tool: None,
            first: None,
        }
    }

    fn keep(&mut self, piece: &str) {
        if self.text.len() + piece.len() > MAX_CHECKED_BYTES {
            self.over = true;
        } else {
            self.text.push_str(piece);
        }
    }

    /// A piece of the answer's text.
    pub fn content(&mut self, piece: &str) {
        let kept = matches!(
            self.spec,
            StructuredOutput::Json { .. }
                | StructuredOutput::Regex { .. }
                | StructuredOutput::Choice { .. }
        );
        if kept && !piece.is_empty() {
            self.keep(piece);
        }
    }

    /// A piece of tool call `index` (the API's own numbering: OpenAI's call index, Anthropic's
    /// content block, the Responses output item): its function's name where the event gives
    /// it, and a piece of its arguments. Only the first call seen is checked.
    pub fn tool_call(&mut self, index: u64, name: Option<&str>, args: &str) {
        if !matches!(self.spec, StructuredOutput::Tools { .. }) {
            return;
        }
        if *self.first.get_or_insert(index) != index {
            return;
        }
        if let (None, Some(n)) = (&self.tool, name) {
            self.tool = Some(n.chars().take(MAX_WHY_CHARS).collect());
        }
        self.keep(args);
    }

    /// The verdict on the answer kept.
    pub fn finish(self) -> OutputCheck {
        let tool = self.tool;
        let as_text = matches!(
            self.spec,
            StructuredOutput::Regex { .. } | StructuredOutput::Choice { .. }
        );
        let out = |verdict, why: Option<String>| OutputCheck {
            verdict,
            tool: tool.clone(),
            why: why.map(|w| w.chars().take(MAX_WHY_CHARS).collect()),
            as_text,
        };
        let tools = matches!(self.spec, StructuredOutput::Tools { .. });
        if let StructuredOutput::Grammar { .. } = self.spec {
            let why = "servebench does not parse grammars";
            return out(Verdict::Unchecked, Some(why.into()));
        }
        if self.over {
            return out(
                Verdict::TooLong,
                Some(format!("over {MAX_CHECKED_BYTES} bytes")),
            );
        }
        if (tools && self.first.is_none()) || (!tools && self.text.trim().is_empty()) {
            let why = if tools {
                "no tool call"
            } else {
                "no answer text"
            };
            return out(Verdict::Missing, Some(why.into()));
        }
        match self.spec {
            StructuredOutput::Regex { pattern, .. } if pattern.matches_whole(&self.text) => {
                return out(Verdict::Valid, None)
            }
            StructuredOutput::Regex { .. } => {
                let why = format!("{} does not match the pattern in full", excerpt(&self.text));
                return out(Verdict::RegexMismatch, Some(why));
            }
            StructuredOutput::Choice { choices, .. } if choices.contains(&self.text) => {
                return out(Verdict::Valid, None)
            }
            StructuredOutput::Choice { choices, .. } => {
                let why = format!(
                    "{} is not one of the {} choices",
                    excerpt(&self.text),
                    choices.len()
                );
                return out(Verdict::NotAChoice, Some(why));
            }
            _ => {}
        }
        let value: serde_json::Value = match serde_json::from_str(&self.text) {
            Ok(v) => v,
            Err(e) => return out(Verdict::NotJson, Some(e.to_string())),
        };
        let Some(schema) = self.spec.schema_for(tool.as_deref()) else {
            let name = tool.as_deref().unwrap_or("");
            let why = format!("a call of '{name}', which is not one of the tools offered");
            return out(Verdict::SchemaMismatch, Some(why));
        };
        match check(schema, &value) {
            Ok(()) => out(Verdict::Valid, None),
            Err(why) => out(Verdict::SchemaMismatch, Some(why)),
        }
    }
}

/// The start of an answer, quoted with its control characters escaped (a record's `why`
/// reaches terminals and spreadsheets).
fn excerpt(text: &str) -> String {
    let start: String = text.chars().take(60).collect();
    let more = if start.len() < text.len() { "..." } else { "" };
    format!("{start:?}{more}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 25 §5: the pieces of an answer are assembled before the check, a tool call's
    /// arguments against its own function, and each way to fail has its verdict.
    #[test]
    fn issue_25_pieces_assemble_and_each_failure_has_its_verdict() {
        let json = StructuredOutput::builtin_json();
        let mut c = Checker::new(&json);
        for p in [
            r#"{"city": "Os"#,
            r#"lo", "temperature_c": 3, "#,
            r#""conditions": "snow"}"#,
        ] {
            c.content(p);
        }
        assert_eq!(c.finish().verdict, Verdict::Valid);
        let mut c = Checker::new(&json);
        c.content(r#"{"city": "Oslo""#);
        assert_eq!(c.finish().verdict, Verdict::NotJson);
        let mut c = Checker::new(&json);
        c.content(r#"{"city": "Oslo"}"#);
        let v = c.finish();
        assert_eq!(v.verdict, Verdict::SchemaMismatch);
        assert!(v.why.unwrap().contains("temperature_c"));
        assert_eq!(Checker::new(&json).finish().verdict, Verdict::Missing);
        let mut c = Checker::new(&json);
        c.content(&" ".repeat(MAX_CHECKED_BYTES + 1));
        assert_eq!(c.finish().verdict, Verdict::TooLong);

        let tools = StructuredOutput::builtin_tools();
        let mut c = Checker::new(&tools);
        c.tool_call(0, Some("get_weather"), "");
        c.tool_call(0, None, r#"{"city": "Oslo", "#);
        c.tool_call(1, Some("get_weather"), "{");
        c.tool_call(0, None, r#""unit": "celsius"}"#);
        let v = c.finish();
        assert_eq!(
            (v.verdict, v.tool.as_deref()),
            (Verdict::Valid, Some("get_weather"))
        );
        let mut c = Checker::new(&tools);
        c.tool_call(0, Some("launch"), "{}");
        assert_eq!(c.finish().verdict, Verdict::SchemaMismatch);
        let mut c = Checker::new(&tools);
        c.content("{}");
        assert_eq!(c.finish().verdict, Verdict::Missing);
    }

    /// Issue 25 §5: a regex answer is valid when its whole text matches, a choice answer when
    /// its untrimmed text is one choice; a grammar answer is unchecked.
    #[test]
    fn issue_25_regex_choice_and_grammar_verdicts() {
        use crate::config::guided::{Pattern, BUILTIN_GRAMMAR};
        let regex = StructuredOutput::Regex {
            pattern: Pattern::new(r"\w+@\w+\.com\n", "f").unwrap(),
            legacy_fields: false,
        };
        let verdict = |spec: &StructuredOutput, pieces: &[&str]| {
            let mut c = Checker::new(spec);
            pieces.iter().for_each(|p| c.content(p));
            c.finish()
        };
        let v = verdict(&regex, &["ada@x", "y.com\n"]);
        assert_eq!(v.verdict, Verdict::Valid);
        assert!(v.as_text && !v.parsed_as_json(), "a match is not JSON");
        let v = verdict(&regex, &["ada@xy.com"]);
        assert_eq!(v.verdict, Verdict::RegexMismatch);
        assert!(v.why.unwrap().starts_with("\"ada@xy.com\""));
        let v = verdict(&regex, &["ada@xy.com\n\u{1b}[2J"]);
        assert_eq!(v.verdict, Verdict::RegexMismatch);
        assert!(!v.why.unwrap().contains('\u{1b}'));
        assert_eq!(verdict(&regex, &[]).verdict, Verdict::Missing);
        let choice = StructuredOutput::Choice {
            choices: vec!["Positive".into(), "Negative".into()],
            legacy_fields: false,
        };
        assert_eq!(verdict(&choice, &["Nega", "tive"]).verdict, Verdict::Valid);
        assert_eq!(
            verdict(&choice, &["Negative "]).verdict,
            Verdict::NotAChoice
        );
        assert_eq!(verdict(&choice, &["Neutral"]).verdict, Verdict::NotAChoice);
        let grammar = StructuredOutput::Grammar {
            grammar: BUILTIN_GRAMMAR.into(),
            legacy_fields: false,
        };
        assert_eq!(verdict(&grammar, &["SELECT"]).verdict, Verdict::Unchecked);
        assert!(!Verdict::Unchecked.is_json() && !Verdict::NotAChoice.is_json());
    }
}
