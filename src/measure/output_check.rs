//! The check of a structured answer: a request of a run that asks for JSON of a
//! schema, a tool call, a regex's match or one of a list of choices keeps its answer's text
//! (or every tool call's arguments and name, at most [`MAX_TOOL_CALLS`] calls) as it streams
//! in, up to [`MAX_CHECKED_BYTES`] in all, and at its end checks it: valid JSON, and valid
//! against the schema (`answer_schema::check`; each call against its own function's
//! parameters, the answer valid only when every call is); the whole text matching the
//! pattern; the whole text, untrimmed, equal to one choice. A grammar's answer is kept nowhere and not checked: its
//! verdict is [`Verdict::Unchecked`]. The verdict is the record's [`OutputCheck`]. Only such a
//! run makes a [`Checker`]: a text run keeps nothing more.
//!
//! What is checked against is compiled once per run ([`Judge`]: the schemas with their enums
//! as hash sets, the pattern's budgeted automaton, the choices as a set), and every check has
//! a work budget (`answer_schema.rs`'s steps, `answer_regex.rs`'s states): an answer past it
//! is [`Verdict::Unchecked`] with `over_budget` set, never a stall. The check itself runs on
//! a checker thread (`checker_pool.rs`), never on the thread that reads streams.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::answer_regex::WholeMatch;
use super::answer_schema::{Misfit, Schema};
use crate::config::structured::{StructuredOutput, MAX_CHECKED_BYTES};

/// The most steps of one answer's schema checks, every tool call's together
/// (`answer_schema.rs`; docs/reliability.md, limits).
pub const MAX_CHECK_STEPS: u64 = 20_000_000;

/// The most characters of a misfit's description kept on the record.
const MAX_WHY_CHARS: usize = 200;

/// The most tool calls of one answer kept for the check; an answer with more is `too_long`,
/// not checked (docs/reliability.md, limits).
pub const MAX_TOOL_CALLS: usize = 64;

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
    /// Longer than the bytes kept for the check, or with more tool calls than kept: not
    /// checked.
    TooLong,
    /// Text that does not match the pattern in full (`--structured-output regex`).
    RegexMismatch,
    /// Text that is not exactly one of the choices (`--structured-output choice`).
    NotAChoice,
    /// Not checked: a grammar's answer (`--structured-output grammar`), an answer whose check
    /// went over its budget (`over_budget`), or one whose check the run's stop cut short;
    /// counted apart, never in `correct_rate(%)`'s denominator.
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
    /// The function called (tools; the first call's, when the answer has several).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The tool calls the answer had (tools; at most [`MAX_TOOL_CALLS`] + 1, the one over).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_calls: u32,
    /// What was wrong: the parser's error or the schema's first misfit (at most 200
    /// characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The answer was checked as text (a regex's match, a choice), not parsed as JSON.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub as_text: bool,
    /// `unchecked` because the check went over its work budget (or waited past its time for
    /// a checker thread): what it spent is in `why`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_budget: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl OutputCheck {
    /// The answer parsed as JSON (a JSON or tools run's `valid` or `schema_mismatch`).
    pub fn parsed_as_json(&self) -> bool {
        self.verdict.is_json() && !self.as_text
    }
}

/// One tool call of an answer: the API's index, its function once named, its arguments.
struct Call {
    index: u64,
    name: Option<String>,
    args: String,
}

/// What a run's answers are checked against, compiled once for all of them.
pub struct Judge {
    rule: Rule,
}

enum Rule {
    Json(Box<Schema>),
    /// Each tool's name and its parameters' schema, in the order offered.
    Tools(Vec<(String, Schema)>),
    /// `None`: the pattern does not compile for the budgeted search.
    Regex(Option<Box<WholeMatch>>),
    Choice(HashSet<String>),
    Grammar,
}

impl Judge {
    /// `spec` compiled: its schemas (each `enum` a hash set), its pattern, its choices.
    pub fn new(spec: &StructuredOutput) -> Arc<Judge> {
        let rule = match spec {
            StructuredOutput::Json { schema } => Rule::Json(Box::new(Schema::new(schema))),
            StructuredOutput::Tools { tools } => Rule::Tools(
                (tools.iter())
                    .map(|t| (t.name.clone(), Schema::new(&t.parameters)))
                    .collect(),
            ),
            StructuredOutput::Regex { pattern, .. } => {
                Rule::Regex(WholeMatch::new(pattern.as_str()).map(Box::new))
            }
            StructuredOutput::Choice { choices, .. } => {
                Rule::Choice(choices.iter().cloned().collect())
            }
            StructuredOutput::Grammar { .. } => Rule::Grammar,
        };
        Arc::new(Judge { rule })
    }

    /// The schema an answer is checked against: a JSON answer's, or the called tool's
    /// parameters (`None`: no such tool).
    fn schema_for(&self, tool: Option<&str>) -> Option<&Schema> {
        match (&self.rule, tool) {
            (Rule::Json(schema), _) => Some(schema),
            (Rule::Tools(tools), Some(name)) => {
                tools.iter().find(|(n, _)| n == name).map(|(_, s)| s)
            }
            _ => None,
        }
    }
}

/// A request's answer, kept for its check while it streams in.
pub struct Checker {
    judge: Arc<Judge>,
    text: String,
    /// Bytes kept, the text's and every call's arguments together.
    kept: usize,
    over: bool,
    /// Tools: every call, in the order its first piece came.
    calls: Vec<Call>,
    /// Tools: a call came past the [`MAX_TOOL_CALLS`] kept.
    too_many: bool,
}

/// `piece` appended to `to` when the bytes kept stay within [`MAX_CHECKED_BYTES`]; else
/// `over` set.
fn keep(to: &mut String, kept: &mut usize, over: &mut bool, piece: &str) {
    if *kept + piece.len() > MAX_CHECKED_BYTES {
        *over = true;
    } else {
        *kept += piece.len();
        to.push_str(piece);
    }
}

impl Checker {
    pub fn new(judge: &Arc<Judge>) -> Self {
        Checker {
            judge: Arc::clone(judge),
            text: String::new(),
            kept: 0,
            over: false,
            calls: Vec::new(),
            too_many: false,
        }
    }

    /// A piece of the answer's text.
    pub fn content(&mut self, piece: &str) {
        let kept = matches!(
            self.judge.rule,
            Rule::Json(_) | Rule::Regex(_) | Rule::Choice(_)
        );
        if kept && !piece.is_empty() {
            keep(&mut self.text, &mut self.kept, &mut self.over, piece);
        }
    }

    /// A piece of tool call `index` (the API's own numbering: OpenAI's call index, Anthropic's
    /// content block, the Responses output item): its function's name where the event gives
    /// it, and a piece of its arguments. Every call is kept, up to [`MAX_TOOL_CALLS`].
    pub fn tool_call(&mut self, index: u64, name: Option<&str>, args: &str) {
        if !matches!(self.judge.rule, Rule::Tools(_)) {
            return;
        }
        // Pieces come call by call: the last call is nearly always the one.
        let at = match self.calls.iter().rposition(|c| c.index == index) {
            Some(at) => at,
            None if self.calls.len() >= MAX_TOOL_CALLS => {
                self.too_many = true;
                return;
            }
            None => {
                self.calls.push(Call {
                    index,
                    name: None,
                    args: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[at];
        if let (None, Some(n)) = (&call.name, name) {
            call.name = Some(n.chars().take(MAX_WHY_CHARS).collect());
        }
        keep(&mut call.args, &mut self.kept, &mut self.over, args);
    }

    /// The verdict on the answer kept (a check no run's stop can cut short).
    pub fn finish(self) -> OutputCheck {
        self.finish_unless(&AtomicBool::new(false))
    }

    /// The answer's verdict without a check: `unchecked`, saying `why` (a stopped run, a
    /// checker thread waited for past its time: `over_budget`).
    pub fn unchecked(&self, why: &str, over_budget: bool) -> OutputCheck {
        let mut out = self.outline(Verdict::Unchecked, Some(why.to_string()));
        out.over_budget = over_budget;
        out
    }

    /// The record's check with `verdict` and `why`, and what the answer held.
    fn outline(&self, verdict: Verdict, why: Option<String>) -> OutputCheck {
        OutputCheck {
            verdict,
            tool: self.calls.first().and_then(|c| c.name.clone()),
            tool_calls: u32::try_from(self.calls.len() + usize::from(self.too_many))
                .unwrap_or(u32::MAX),
            why: why.map(|w| w.chars().take(MAX_WHY_CHARS).collect()),
            as_text: matches!(self.judge.rule, Rule::Regex(_) | Rule::Choice(_)),
            over_budget: false,
        }
    }

    /// The verdict on the answer kept, within the check's budget; once `stop` is set (the
    /// run stopped) a long check ends `unchecked`.
    pub fn finish_unless(self, stop: &AtomicBool) -> OutputCheck {
        let out = |verdict, why: Option<String>| self.outline(verdict, why);
        let tools = matches!(self.judge.rule, Rule::Tools(_));
        if let Rule::Grammar = self.judge.rule {
            let why = "servebench does not parse grammars";
            return out(Verdict::Unchecked, Some(why.into()));
        }
        if self.over {
            return out(
                Verdict::TooLong,
                Some(format!("over {MAX_CHECKED_BYTES} bytes")),
            );
        }
        if self.too_many {
            let why = format!("over {MAX_TOOL_CALLS} tool calls");
            return out(Verdict::TooLong, Some(why));
        }
        if (tools && self.calls.is_empty()) || (!tools && self.text.trim().is_empty()) {
            let why = if tools {
                "no tool call"
            } else {
                "no answer text"
            };
            return out(Verdict::Missing, Some(why.into()));
        }
        match &self.judge.rule {
            Rule::Regex(None) => {
                let why = "the pattern does not compile for the check";
                return out(Verdict::Unchecked, Some(why.into()));
            }
            Rule::Regex(Some(pattern)) => {
                return match pattern.matches(&self.text) {
                    Ok(true) => out(Verdict::Valid, None),
                    Ok(false) => {
                        let why =
                            format!("{} does not match the pattern in full", excerpt(&self.text));
                        out(Verdict::RegexMismatch, Some(why))
                    }
                    Err(over) => self.unchecked(&over.0, true),
                };
            }
            Rule::Choice(choices) if choices.contains(&self.text) => {
                return out(Verdict::Valid, None)
            }
            Rule::Choice(choices) => {
                let why = format!(
                    "{} is not one of the {} choices",
                    excerpt(&self.text),
                    choices.len()
                );
                return out(Verdict::NotAChoice, Some(why));
            }
            _ => {}
        }
        let mut budget = MAX_CHECK_STEPS;
        if !tools {
            return self.judged(check_json(&self.judge, None, &self.text, &mut budget, stop));
        }
        // Every call: the answer's verdict is its first failing call's, named by its place.
        let n = self.calls.len();
        for (i, call) in self.calls.iter().enumerate() {
            let name = Some(call.name.as_deref());
            let judged = check_json(&self.judge, name, &call.args, &mut budget, stop);
            if !matches!(judged, Judged::Is(Verdict::Valid, _)) {
                return self.judged(match judged {
                    Judged::Is(v, Some(w)) if n > 1 => {
                        Judged::Is(v, Some(format!("call {} of {n}: {w}", i + 1)))
                    }
                    other => other,
                });
            }
        }
        out(Verdict::Valid, None)
    }

    /// The record's check of what [`check_json`] found.
    fn judged(&self, judged: Judged) -> OutputCheck {
        match judged {
            Judged::Is(verdict, why) => self.outline(verdict, why),
            Judged::OverBudget(why) => self.unchecked(&why, true),
            Judged::Stopped => self.unchecked("the run stopped during the check", false),
        }
    }
}

/// What the check of one JSON text found.
enum Judged {
    Is(Verdict, Option<String>),
    OverBudget(String),
    Stopped,
}

/// The verdict on `text` as JSON against the run's schema, or (`call`: `Some(name)`) against
/// the parameters of the function named, taking its steps from `budget`.
fn check_json(
    judge: &Judge,
    call: Option<Option<&str>>,
    text: &str,
    budget: &mut u64,
    stop: &AtomicBool,
) -> Judged {
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Judged::Is(Verdict::NotJson, Some(e.to_string())),
    };
    let Some(schema) = judge.schema_for(call.flatten()) else {
        let name = call.flatten().unwrap_or("");
        let why = format!("a call of '{name}', which is not one of the tools offered");
        return Judged::Is(Verdict::SchemaMismatch, Some(why));
    };
    match schema.check_within(&value, *budget, stop) {
        Ok(steps) => {
            *budget = budget.saturating_sub(steps);
            Judged::Is(Verdict::Valid, None)
        }
        Err(Misfit::At(why)) => Judged::Is(Verdict::SchemaMismatch, Some(why.0)),
        Err(over @ Misfit::OverBudget(_)) => Judged::OverBudget(over.to_string()),
        Err(Misfit::Stopped) => Judged::Stopped,
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

    /// The pieces of an answer are assembled before the check, a tool call's
    /// arguments against its own function, and each way to fail has its verdict.
    #[test]
    fn pieces_assemble_and_each_failure_has_its_verdict() {
        let json = StructuredOutput::builtin_json();
        let mut c = Checker::new(&Judge::new(&json));
        for p in [
            r#"{"city": "Os"#,
            r#"lo", "temperature_c": 3, "#,
            r#""conditions": "snow"}"#,
        ] {
            c.content(p);
        }
        assert_eq!(c.finish().verdict, Verdict::Valid);
        let mut c = Checker::new(&Judge::new(&json));
        c.content(r#"{"city": "Oslo""#);
        assert_eq!(c.finish().verdict, Verdict::NotJson);
        let mut c = Checker::new(&Judge::new(&json));
        c.content(r#"{"city": "Oslo"}"#);
        let v = c.finish();
        assert_eq!(v.verdict, Verdict::SchemaMismatch);
        assert!(v.why.unwrap().contains("temperature_c"));
        assert_eq!(
            Checker::new(&Judge::new(&json)).finish().verdict,
            Verdict::Missing
        );
        let mut c = Checker::new(&Judge::new(&json));
        c.content(&" ".repeat(MAX_CHECKED_BYTES + 1));
        assert_eq!(c.finish().verdict, Verdict::TooLong);

        let tools = StructuredOutput::builtin_tools();
        let mut c = Checker::new(&Judge::new(&tools));
        c.tool_call(0, Some("get_weather"), "");
        c.tool_call(0, None, r#"{"city": "Oslo", "#);
        c.tool_call(1, Some("convert_currency"), "{");
        c.tool_call(0, None, r#""unit": "celsius"}"#);
        c.tool_call(1, None, r#""amount": 2, "from": "EUR", "to": "NOK"}"#);
        let v = c.finish();
        assert_eq!(
            (v.verdict, v.tool.as_deref(), v.tool_calls),
            (Verdict::Valid, Some("get_weather"), 2)
        );
        let mut c = Checker::new(&Judge::new(&tools));
        c.tool_call(0, Some("launch"), "{}");
        assert_eq!(c.finish().verdict, Verdict::SchemaMismatch);
        let mut c = Checker::new(&Judge::new(&tools));
        c.content("{}");
        assert_eq!(c.finish().verdict, Verdict::Missing);
    }

    /// Every tool call of an answer is checked, each against its own function: a
    /// valid first call and an invalid second one make the answer invalid, named by the
    /// call's place; a call of a function not offered anywhere in the answer too; calls past
    /// the most kept make it `too_long`, never valid.
    #[test]
    fn every_tool_call_of_an_answer_is_checked() {
        let tools = StructuredOutput::builtin_tools();
        let weather = r#"{"city": "Oslo", "unit": "celsius"}"#;
        let answer = |calls: &[(&str, &str)]| {
            let mut c = Checker::new(&Judge::new(&tools));
            for (i, (name, args)) in calls.iter().enumerate() {
                let (head, tail) = args.split_at(args.len() / 2);
                c.tool_call(i as u64, Some(name), head);
                c.tool_call(i as u64, None, tail);
            }
            c.finish()
        };
        let v = answer(&[
            ("get_weather", weather),
            ("get_weather", r#"{"city": "Oslo"}"#),
        ]);
        assert_eq!((v.verdict, v.tool_calls), (Verdict::SchemaMismatch, 2));
        let why = v.why.unwrap();
        assert!(
            why.starts_with("call 2 of 2: ") && why.contains("'unit'"),
            "{why}"
        );
        let v = answer(&[("get_weather", weather), ("get_weather", r#"{"city": "#)]);
        assert_eq!(v.verdict, Verdict::NotJson);
        let v = answer(&[("get_weather", weather), ("launch", "{}")]);
        assert_eq!(v.verdict, Verdict::SchemaMismatch);
        let v = answer(&[("get_weather", weather), ("get_weather", weather)]);
        assert_eq!((v.verdict, v.tool_calls), (Verdict::Valid, 2));
        let many = vec![("get_weather", weather); MAX_TOOL_CALLS + 1];
        let v = answer(&many);
        assert_eq!(v.verdict, Verdict::TooLong);
        assert_eq!(v.tool_calls as usize, MAX_TOOL_CALLS + 1);
        assert_eq!(answer(&many[..MAX_TOOL_CALLS]).verdict, Verdict::Valid);
    }

    /// A regex answer is valid when its whole text matches, a choice answer when
    /// its untrimmed text is one choice; a grammar answer is unchecked.
    #[test]
    fn regex_choice_and_grammar_verdicts() {
        use crate::config::guided::{Pattern, BUILTIN_GRAMMAR};
        let regex = StructuredOutput::Regex {
            pattern: Pattern::new(r"\w+@\w+\.com\n", "f").unwrap(),
            legacy_fields: false,
        };
        let verdict = |spec: &StructuredOutput, pieces: &[&str]| {
            let mut c = Checker::new(&Judge::new(spec));
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
