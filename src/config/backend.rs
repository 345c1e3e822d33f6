//! The server APIs servebench speaks, as `config` knows them: [`BackendKind`] and its one
//! table ([`BackendKind::info`]: the `--backend` name and aliases, the default endpoint, how
//! it answers). A new API is a variant here, its row, and its place in [`BackendKind::ALL`];
//! the wire format is `measure::client`'s (docs/architecture.md, "Recipes").

use serde::{Deserialize, Serialize};
use std::str::FromStr;

use super::error::ConfigError;

/// The most inputs one request may carry (`--embedding-batch-size`): OpenAI's own limit on an
/// embeddings request's inputs.
pub const MAX_INPUTS_PER_REQUEST: u32 = 2048;

/// The server API spoken by the client. Everything `config` knows of one is in its row of
/// [`BackendKind::info`] (a new variant's row is the compiler's to point to, and its arm in
/// `measure::client`'s `backends.rs`); the wire format is the client's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// OpenAI completions, `POST /v1/completions` (vLLM, SGLang, llama.cpp, TensorRT-LLM, ...).
    Openai,
    /// OpenAI chat completions, `POST /v1/chat/completions`.
    OpenaiChat,
    /// Hugging Face TGI, `POST /generate_stream`.
    Tgi,
    /// llama.cpp native, `POST /completion`.
    Llamacpp,
    /// Anthropic Messages, `POST /v1/messages` (vLLM, SGLang, llama.cpp).
    AnthropicMessages,
    /// OpenAI Responses, `POST /v1/responses` (vLLM, SGLang).
    OpenaiResponses,
    /// OpenAI embeddings, `POST /v1/embeddings` (vLLM, llama.cpp with `--embedding`, TEI):
    /// a whole JSON answer, one vector per input.
    OpenaiEmbeddings,
    /// Jina/Cohere-style rerank, `POST /v1/rerank` (vLLM): a query and its documents, a whole
    /// JSON answer scoring each document.
    Rerank,
    /// Hugging Face TEI's rerank, `POST /rerank` (`query`, `texts`).
    TeiRerank,
    /// OpenAI transcriptions, `POST /v1/audio/transcriptions` (vLLM serving Whisper): a
    /// multipart form with one WAV clip, its text streamed as chat-completion-like chunks.
    OpenaiAudio,
}

/// How a backend answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerShape {
    /// Server-sent events, as the answer is generated.
    Streamed,
    /// One JSON document per request; `inputs`: it answers each input of a batch
    /// (`--embedding-batch-size`) and generates nothing.
    Whole { inputs: bool },
}

/// What `config` knows of a backend: its row of [`BackendKind::info`].
#[derive(Clone, Copy, Debug)]
pub struct BackendInfo {
    /// Its `--backend` name, as saved.
    pub name: &'static str,
    /// Other names `--backend` takes for it.
    pub aliases: &'static [&'static str],
    /// The default endpoint path.
    pub endpoint: &'static str,
    pub answer: AnswerShape,
}

impl BackendKind {
    /// Every backend, in the order `--help` and errors list them.
    pub const ALL: [BackendKind; 10] = [
        BackendKind::Openai,
        BackendKind::OpenaiChat,
        BackendKind::Tgi,
        BackendKind::Llamacpp,
        BackendKind::AnthropicMessages,
        BackendKind::OpenaiResponses,
        BackendKind::OpenaiEmbeddings,
        BackendKind::Rerank,
        BackendKind::TeiRerank,
        BackendKind::OpenaiAudio,
    ];

    /// The one table of what a backend is (add a new one to [`BackendKind::ALL`] too).
    pub const fn info(self) -> BackendInfo {
        use AnswerShape::{Streamed, Whole};
        let (name, aliases, endpoint, answer): (_, &'static [&'static str], _, _) = match self {
            BackendKind::Openai => ("openai", &["vllm", "sglang"], "/v1/completions", Streamed),
            BackendKind::OpenaiChat => ("openai-chat", &[], "/v1/chat/completions", Streamed),
            BackendKind::Tgi => ("tgi", &[], "/generate_stream", Streamed),
            BackendKind::Llamacpp => ("llamacpp", &["llama.cpp"], "/completion", Streamed),
            BackendKind::AnthropicMessages => ("anthropic-messages", &[], "/v1/messages", Streamed),
            BackendKind::OpenaiResponses => ("openai-responses", &[], "/v1/responses", Streamed),
            BackendKind::OpenaiEmbeddings => {
                let answer = Whole { inputs: true };
                ("openai-embeddings", &[], "/v1/embeddings", answer)
            }
            BackendKind::Rerank => {
                let answer = Whole { inputs: true };
                ("rerank", &["vllm-rerank"], "/v1/rerank", answer)
            }
            BackendKind::TeiRerank => ("tei-rerank", &[], "/rerank", Whole { inputs: true }),
            BackendKind::OpenaiAudio => ("openai-audio", &[], "/v1/audio/transcriptions", Streamed),
        };
        BackendInfo {
            name,
            aliases,
            endpoint,
            answer,
        }
    }

    /// Default endpoint path for the API.
    pub fn default_endpoint(self) -> &'static str {
        self.info().endpoint
    }
    pub fn as_str(self) -> &'static str {
        self.info().name
    }
    /// How the API answers.
    pub fn answer(self) -> AnswerShape {
        self.info().answer
    }
    /// Every name `--backend` takes, comma-separated with aliases in parentheses.
    pub fn names() -> String {
        let name = |k: BackendKind| {
            let i = k.info();
            match i.aliases {
                [] => i.name.to_string(),
                a => format!("{} (or {})", i.name, a.join(", ")),
            }
        };
        Self::ALL.map(name).join(", ")
    }
}

impl BackendKind {
    /// Whether each request is a query and its documents (rerank): the workload builds a
    /// query for each request besides its inputs (`--rerank-query-len`).
    pub fn takes_query(self) -> bool {
        matches!(self, BackendKind::Rerank | BackendKind::TeiRerank)
    }

    /// Whether each request is one audio clip to transcribe (a multipart form, not a prompt):
    /// the workload builds a clip for each request.
    pub fn takes_clip(self) -> bool {
        self == BackendKind::OpenaiAudio
    }
}

impl BackendKind {
    /// The rules between `--backend` and what each request carries: several inputs
    /// (`inputs`, `--embedding-batch-size`) only for an API that answers each, and at most
    /// [`MAX_INPUTS_PER_REQUEST`]; a conversation (`conversation`: the flag that asks for one)
    /// or a trace's own timeline (`trace`) only where they mean something.
    pub fn check_request(
        self,
        inputs: u32,
        conversation: Option<&str>,
        trace: bool,
    ) -> Result<(), ConfigError> {
        let bad = |option: &str, why: String| {
            Err(ConfigError::Invalid {
                option: option.into(),
                why,
            })
        };
        let batches = self.answer() == AnswerShape::Whole { inputs: true };
        if inputs == 0 || inputs > MAX_INPUTS_PER_REQUEST {
            let why = format!("{inputs} inputs per request: give 1 to {MAX_INPUTS_PER_REQUEST}");
            return bad("--embedding-batch-size", why);
        }
        if inputs > 1 && !batches {
            let why = format!(
                "--backend {} sends one prompt per request; several inputs need an API that answers each (openai-embeddings, rerank, tei-rerank)",
                self.as_str()
            );
            return bad("--embedding-batch-size", why);
        }
        if inputs > 1 && trace {
            let why = "a trace's lines are sent each at its own time, one per request".into();
            return bad("--embedding-batch-size", why);
        }
        // A transcription answers its clip alone, as a whole answer does its inputs.
        let alone =
            matches!(self.answer(), AnswerShape::Whole { .. }) || self == BackendKind::OpenaiAudio;
        if let (Some(flag), true) = (conversation, alone) {
            let why = format!(
                "--backend {} answers each request on its own: a conversation needs a generation API",
                self.as_str()
            );
            return bad(flag, why);
        }
        Ok(())
    }
}

/// A `--backend` name that names no backend.
#[derive(Debug, thiserror::Error)]
#[error("unknown backend '{0}' (expected {names})", names = BackendKind::names())]
pub struct UnknownBackend(pub String);

impl FromStr for BackendKind {
    type Err = UnknownBackend;
    fn from_str(s: &str) -> Result<Self, UnknownBackend> {
        let named = |k: &&BackendKind| k.info().name == s || k.info().aliases.contains(&s);
        (Self::ALL.iter().find(named).copied()).ok_or_else(|| UnknownBackend(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_and_aliases_parse() {
        assert_eq!("vllm".parse::<BackendKind>().unwrap(), BackendKind::Openai);
        assert_eq!(
            "sglang".parse::<BackendKind>().unwrap(),
            BackendKind::Openai
        );
        assert_eq!("tgi".parse::<BackendKind>().unwrap(), BackendKind::Tgi);
        let err = "foo".parse::<BackendKind>().unwrap_err().to_string();
        assert!(err.contains("'foo'"), "{err}");
        // Every backend is named by the error, and parses back from its name.
        for k in BackendKind::ALL {
            assert!(err.contains(k.as_str()), "{err}");
            assert_eq!(k.as_str().parse::<BackendKind>().unwrap(), k);
            let saved = serde_json::to_value(k).unwrap();
            assert_eq!(saved, serde_json::json!(k.as_str()), "saved as named");
        }
        assert_eq!(
            "openai-embeddings".parse::<BackendKind>().unwrap().answer(),
            AnswerShape::Whole { inputs: true }
        );
    }

    /// Issue 25: several inputs per request only for an API that answers each, within the
    /// limit; no conversation and no trace batching for it; each refusal names the flag.
    #[test]
    fn issue_25_a_request_carries_what_its_api_can_answer() {
        let e = BackendKind::OpenaiEmbeddings;
        assert!(e.check_request(64, None, false).is_ok());
        assert!(e.check_request(1, None, true).is_ok());
        let named = |r: Result<(), ConfigError>, flag: &str, what: &str| {
            let msg = r.unwrap_err().to_string();
            assert!(
                msg.contains(flag) && msg.contains(what),
                "{flag}, {what}: {msg}"
            );
        };
        named(
            e.check_request(0, None, false),
            "--embedding-batch-size",
            "1 to 2048",
        );
        named(
            e.check_request(2049, None, false),
            "--embedding-batch-size",
            "2049",
        );
        named(
            e.check_request(4, None, true),
            "--embedding-batch-size",
            "trace",
        );
        named(
            e.check_request(1, Some("--turns"), false),
            "--turns",
            "conversation",
        );
        named(
            BackendKind::OpenaiChat.check_request(2, None, false),
            "--embedding-batch-size",
            "openai-chat sends one prompt",
        );
        assert!(BackendKind::OpenaiChat
            .check_request(1, Some("--turns"), false)
            .is_ok());
    }
}
