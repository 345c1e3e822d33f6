//! `servebench run`'s flags for structured output and tool calls:
//! `--structured-output json|tools|regex|choice|grammar`, and the schema, tools, pattern,
//! choices or grammar it takes (`--json-schema-path`, vLLM's name; `--tools-path`,
//! `--structured-output-regex`, `--structured-output-choices`, `--structured-output-grammar`)
//! instead of the built-in ones. A file is read by the plan (`plan.rs`, the I/O of `cli`),
//! which hands its text here.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::heading;

use crate::config::error::{ConfigError, ValueError};
use crate::config::guided::{self, Pattern};
use crate::config::structured::StructuredOutput;
use crate::config::{JobSlo, Slo};

/// One term of `--goodput`: a latency SLO, `valid_output:1` (the answer is valid), or a job's
/// completion time (`jct:MS`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GoodputTerm {
    Slo(Slo),
    ValidOutput,
    Job(JobSlo),
}

impl std::str::FromStr for GoodputTerm {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s.trim().strip_prefix("valid_output:") {
            Some("1") => Ok(GoodputTerm::ValidOutput),
            Some(_) => Err(ValueError::ValidOutput(s.to_string())),
            None if s.trim().starts_with("jct:") => s.parse().map(GoodputTerm::Job),
            None => s.parse().map(GoodputTerm::Slo),
        }
    }
}

/// The latency SLOs of `--goodput`.
pub fn slos(terms: &[GoodputTerm]) -> Vec<Slo> {
    let slo = |t: &GoodputTerm| match t {
        GoodputTerm::Slo(s) => Some(*s),
        GoodputTerm::ValidOutput | GoodputTerm::Job(_) => None,
    };
    terms.iter().filter_map(slo).collect()
}

/// The job SLOs of `--goodput` (`jct:MS`).
pub fn job_slos(terms: &[GoodputTerm]) -> Vec<JobSlo> {
    let job = |t: &GoodputTerm| match t {
        GoodputTerm::Job(s) => Some(*s),
        _ => None,
    };
    terms.iter().filter_map(job).collect()
}

/// Whether `--goodput` asks for valid answers.
pub fn wants_valid_output(terms: &[GoodputTerm]) -> bool {
    terms.contains(&GoodputTerm::ValidOutput)
}

/// What `--structured-output` asks every answer to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StructuredKind {
    /// JSON valid against a schema (`response_format: json_schema`).
    Json,
    /// A call of one of the tools offered (`tools`, `tool_choice: required`).
    Tools,
    /// A whole answer matching a regular expression (vLLM's `structured_outputs.regex`).
    Regex,
    /// An answer that is exactly one of a list of choices (`structured_outputs.choice`).
    Choice,
    /// An answer following a grammar (`structured_outputs.grammar`); not checked.
    Grammar,
}

#[derive(Debug, Args)]
pub struct StructuredArgs {
    /// Ask every answer (--backend openai-chat) as JSON of a schema (json), as a tool call
    /// (tools), matching a regex, as one of a list of choices, or following a grammar (the
    /// last three in vLLM's structured_outputs field), and check each (a grammar's answers
    /// are not checked): the share valid is vLLM's correct_rate(%). The schema, tools,
    /// pattern, choices and grammar are built in unless the flags below give them.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_enum)]
    pub structured_output: Option<StructuredKind>,
    /// The JSON schema of --structured-output json (a file holding one JSON object).
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "FILE", requires = "structured_output")]
    pub json_schema_path: Option<PathBuf>,
    /// The tools of --structured-output tools (a file holding a JSON list of OpenAI tools or
    /// of functions with name, description and parameters).
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "FILE", requires = "structured_output")]
    pub tools_path: Option<PathBuf>,
    /// The pattern of --structured-output regex (the regex crate's syntax; an answer is valid
    /// when the whole of it matches). Default: \w+@\w+\.com\n.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "PATTERN", requires = "structured_output")]
    pub structured_output_regex: Option<String>,
    /// The choices of --structured-output choice: comma-separated (yes,no), or a JSON array
    /// of strings when a choice holds a comma ('["yes, sir", "no"]'). Default:
    /// Positive,Negative (vLLM's structured-output benchmark always asks these two; it has
    /// no flag for others).
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "A,B,...|JSON", requires = "structured_output")]
    pub structured_output_choices: Option<String>,
    /// The grammar of --structured-output grammar (a file of EBNF/GBNF text, sent as it is).
    /// Default: a small SQL query grammar.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "FILE", requires = "structured_output")]
    pub structured_output_grammar: Option<PathBuf>,
    /// Send a regex, choice or grammar in vLLM's older top-level fields (guided_regex,
    /// guided_choice, guided_grammar: vLLM before 0.10.2) instead of structured_outputs.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, requires = "structured_output")]
    pub structured_output_legacy_fields: bool,
}

impl StructuredArgs {
    /// What the flags ask for; `read` gives a file's text (or why it cannot).
    pub fn structured<E: std::fmt::Display>(
        &self,
        read: impl Fn(&Path) -> Result<String, E>,
    ) -> Result<Option<StructuredOutput>, ConfigError> {
        let file = |flag: &str, path: &Path| {
            let name = path.display().to_string();
            read(path)
                .map(|text| (text, name.clone()))
                .map_err(|why| ConfigError::invalid(flag, format!("{name}: {why}")))
        };
        let wrong = |flag: &str, kind: &str| {
            let why = format!("goes with --structured-output {kind}");
            Err(ConfigError::invalid(flag, why))
        };
        let kind = match self.structured_output {
            None => return Ok(None),
            Some(kind) => kind,
        };
        let given = [
            (
                self.json_schema_path.is_some(),
                "--json-schema-path",
                "json",
            ),
            (self.tools_path.is_some(), "--tools-path", "tools"),
            (
                self.structured_output_regex.is_some(),
                "--structured-output-regex",
                "regex",
            ),
            (
                self.structured_output_choices.is_some(),
                "--structured-output-choices",
                "choice",
            ),
            (
                self.structured_output_grammar.is_some(),
                "--structured-output-grammar",
                "grammar",
            ),
        ];
        let asked = kind.to_possible_value().map(|v| v.get_name().to_string());
        if let Some((_, flag, owner)) =
            (given.iter()).find(|(set, _, owner)| *set && asked.as_deref() != Some(*owner))
        {
            return wrong(flag, owner);
        }
        let legacy_fields = self.structured_output_legacy_fields;
        if legacy_fields && matches!(kind, StructuredKind::Json | StructuredKind::Tools) {
            return wrong(
                "--structured-output-legacy-fields",
                "regex, choice or grammar",
            );
        }
        Ok(Some(match kind {
            StructuredKind::Regex => {
                let text = self.structured_output_regex.as_deref();
                let pattern = Pattern::new(
                    text.unwrap_or(guided::BUILTIN_PATTERN),
                    "--structured-output-regex",
                )?;
                StructuredOutput::Regex {
                    pattern,
                    legacy_fields,
                }
            }
            StructuredKind::Choice => StructuredOutput::Choice {
                choices: match self.structured_output_choices.as_deref() {
                    None => guided::choices(None, "--structured-output-choices")?,
                    Some(text) => guided::choices_from_text(text, "--structured-output-choices")?,
                },
                legacy_fields,
            },
            StructuredKind::Grammar => StructuredOutput::Grammar {
                grammar: match &self.structured_output_grammar {
                    None => guided::BUILTIN_GRAMMAR.to_string(),
                    Some(p) => {
                        let flag = "--structured-output-grammar";
                        let (text, name) = file(flag, p)?;
                        guided::grammar_from_text(&text, &name, flag)?
                    }
                },
                legacy_fields,
            },
            StructuredKind::Json => match &self.json_schema_path {
                None => StructuredOutput::builtin_json(),
                Some(p) => {
                    let (text, name) = file("--json-schema-path", p)?;
                    StructuredOutput::json_from_text(&text, &name, "--json-schema-path")?
                }
            },
            StructuredKind::Tools => match &self.tools_path {
                None => StructuredOutput::builtin_tools(),
                Some(p) => {
                    let (text, name) = file("--tools-path", p)?;
                    StructuredOutput::tools_from_text(&text, &name, "--tools-path")?
                }
            },
        }))
    }
}
