//! `servebench run`'s flags for structured output and tool calls (issue 25 §5):
//! `--structured-output json|tools`, and the schema or tools it takes from a file
//! (`--json-schema-path`, vLLM's name; `--tools-path`) instead of the built-in ones. The file
//! is read by the plan (`plan.rs`, the I/O of `cli`), which hands its text here.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::config::error::{ConfigError, ValueError};
use crate::config::structured::StructuredOutput;
use crate::config::Slo;

/// One term of `--goodput`: a latency SLO, or `valid_output:1` (the answer is valid).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GoodputTerm {
    Slo(Slo),
    ValidOutput,
}

impl std::str::FromStr for GoodputTerm {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s.trim().strip_prefix("valid_output:") {
            Some("1") => Ok(GoodputTerm::ValidOutput),
            Some(_) => Err(ValueError::ValidOutput(s.to_string())),
            None => s.parse().map(GoodputTerm::Slo),
        }
    }
}

/// The latency SLOs of `--goodput`.
pub fn slos(terms: &[GoodputTerm]) -> Vec<Slo> {
    let slo = |t: &GoodputTerm| match t {
        GoodputTerm::Slo(s) => Some(*s),
        GoodputTerm::ValidOutput => None,
    };
    terms.iter().filter_map(slo).collect()
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
}

#[derive(Debug, Args)]
pub struct StructuredArgs {
    /// Ask every answer (--backend openai-chat) as JSON of a schema (json) or as a tool
    /// call (tools), and check each: the share valid is vLLM's correct_rate(%). The schema
    /// and tools are built in unless --json-schema-path or --tools-path gives them.
    #[arg(long, value_enum)]
    pub structured_output: Option<StructuredKind>,
    /// The JSON schema of --structured-output json (a file holding one JSON object).
    #[arg(long, value_name = "FILE", requires = "structured_output")]
    pub json_schema_path: Option<PathBuf>,
    /// The tools of --structured-output tools (a file holding a JSON list of OpenAI tools or
    /// of functions with name, description and parameters).
    #[arg(long, value_name = "FILE", requires = "structured_output")]
    pub tools_path: Option<PathBuf>,
}

impl StructuredArgs {
    /// What the flags ask for; `read` gives a file's text (or why it cannot).
    pub fn structured(
        &self,
        read: impl Fn(&Path) -> Result<String, String>,
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
        Ok(Some(match self.structured_output {
            None => return Ok(None),
            Some(StructuredKind::Json) => {
                if self.tools_path.is_some() {
                    return wrong("--tools-path", "tools");
                }
                match &self.json_schema_path {
                    None => StructuredOutput::builtin_json(),
                    Some(p) => {
                        let (text, name) = file("--json-schema-path", p)?;
                        StructuredOutput::json_from_text(&text, &name, "--json-schema-path")?
                    }
                }
            }
            Some(StructuredKind::Tools) => {
                if self.json_schema_path.is_some() {
                    return wrong("--json-schema-path", "json");
                }
                match &self.tools_path {
                    None => StructuredOutput::builtin_tools(),
                    Some(p) => {
                        let (text, name) = file("--tools-path", p)?;
                        StructuredOutput::tools_from_text(&text, &name, "--tools-path")?
                    }
                }
            }
        }))
    }
}
