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

/// What `config` knows of a backend: its row of [`BackendKind::info`]. Every rule that
/// depends on the backend asks its row (never a list of backends), so a new backend is one
/// row; `measure::client::apis`'s tests hold the rows to what the client's `Api` of each
/// backend does where it states the same fact (structured output, media parts, streaming,
/// conversations, the rerank query, the audio clip).
#[derive(Clone, Copy, Debug)]
pub struct BackendInfo {
    /// Its `--backend` name, as saved.
    pub name: &'static str,
    /// Other names `--backend` takes for it.
    pub aliases: &'static [&'static str],
    /// The default endpoint path.
    pub endpoint: &'static str,
    /// How it answers: streamed as it is generated, or whole.
    pub answer: AnswerShape,
    /// Which `--structured-output` kinds it can ask for.
    pub structured: StructuredKinds,
    /// The media parts a request may carry beside its text (openai-audio's: its one clip).
    pub media: MediaKinds,
    /// Whether it can be sent a conversation (`--turns`, `--multi-turn`): a generation API
    /// that answers each turn with the history before it.
    pub conversations: bool,
    /// Whether each request is a query and its documents (rerank): the workload builds a
    /// query for each request besides its inputs (`--rerank-query-len`).
    pub takes_query: bool,
    /// Whether each request is one audio clip to transcribe (a multipart form, not a prompt):
    /// the workload builds a clip for each request.
    pub takes_clip: bool,
    /// The server whose control endpoints (`--reset-prefix-cache`, `--profile`) are reached
    /// by default: vLLM's for the APIs vLLM serves, none for TGI, llama.cpp and TEI (they have
    /// no such endpoint: `--hook` names one).
    pub control: Option<ServerKind>,
}

/// A server family with control endpoints beside its API (`--reset-prefix-cache`,
/// `--profile`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    /// vLLM: `POST /reset_prefix_cache`, `/start_profile`, `/stop_profile` (its dev and
    /// profiler endpoints, served when it was started with them).
    Vllm,
    /// SGLang: `POST /flush_cache`, `/start_profile`, `/stop_profile`.
    Sglang,
}

impl ServerKind {
    /// Its name, as `--reset-prefix-cache` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::Vllm => "vllm",
            ServerKind::Sglang => "sglang",
        }
    }
    /// The path that empties its prefix cache.
    pub fn reset_path(self) -> &'static str {
        match self {
            ServerKind::Vllm => "/reset_prefix_cache",
            ServerKind::Sglang => "/flush_cache",
        }
    }
}

/// The `--structured-output` kinds a backend can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StructuredKinds {
    /// A JSON schema (`json`).
    pub json: bool,
    /// Function tools (`tools`).
    pub tools: bool,
    /// vLLM's regex, choice and grammar (`structured_outputs`).
    pub guided: bool,
}

/// The media parts a backend's request may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaKinds {
    pub images: bool,
    pub audio: bool,
    pub video: bool,
}

/// No structured output, no media.
const NONE_ASKED: StructuredKinds = StructuredKinds {
    json: false,
    tools: false,
    guided: false,
};
const TEXT_ONLY: MediaKinds = MediaKinds {
    images: false,
    audio: false,
    video: false,
};
const IMAGES: MediaKinds = MediaKinds {
    images: true,
    ..TEXT_ONLY
};

/// A row's defaults: a streamed generation API that takes text alone and a conversation,
/// asks for no structured output, and sends a prompt (no query, no clip).
const GENERATES: BackendInfo = BackendInfo {
    name: "",
    aliases: &[],
    endpoint: "",
    answer: AnswerShape::Streamed,
    structured: NONE_ASKED,
    media: TEXT_ONLY,
    conversations: true,
    takes_query: false,
    takes_clip: false,
    control: Some(ServerKind::Vllm),
};

/// A row's defaults for an API answered whole, one answer per input of a batch, and
/// generating nothing (embeddings, rerank): no conversation.
const ANSWERS_EACH: BackendInfo = BackendInfo {
    answer: AnswerShape::Whole { inputs: true },
    conversations: false,
    ..GENERATES
};

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
        match self {
            // JSON on completions as vLLM's structured-output benchmark sends it
            // (`response_format`), with vLLM's regex, choice and grammar.
            BackendKind::Openai => BackendInfo {
                name: "openai",
                aliases: &["vllm", "sglang"],
                endpoint: "/v1/completions",
                structured: StructuredKinds {
                    json: true,
                    tools: false,
                    guided: true,
                },
                ..GENERATES
            },
            BackendKind::OpenaiChat => BackendInfo {
                name: "openai-chat",
                endpoint: "/v1/chat/completions",
                structured: StructuredKinds {
                    json: true,
                    tools: true,
                    guided: true,
                },
                media: MediaKinds {
                    images: true,
                    audio: true,
                    video: true,
                },
                ..GENERATES
            },
            BackendKind::Tgi => BackendInfo {
                name: "tgi",
                endpoint: "/generate_stream",
                control: None,
                ..GENERATES
            },
            BackendKind::Llamacpp => BackendInfo {
                name: "llamacpp",
                aliases: &["llama.cpp"],
                endpoint: "/completion",
                control: None,
                ..GENERATES
            },
            // The Messages API has tools but no JSON-schema answer format.
            BackendKind::AnthropicMessages => BackendInfo {
                name: "anthropic-messages",
                endpoint: "/v1/messages",
                structured: StructuredKinds {
                    json: false,
                    tools: true,
                    guided: false,
                },
                media: IMAGES,
                ..GENERATES
            },
            BackendKind::OpenaiResponses => BackendInfo {
                name: "openai-responses",
                endpoint: "/v1/responses",
                structured: StructuredKinds {
                    json: true,
                    tools: true,
                    guided: false,
                },
                media: IMAGES,
                ..GENERATES
            },
            BackendKind::OpenaiEmbeddings => BackendInfo {
                name: "openai-embeddings",
                endpoint: "/v1/embeddings",
                ..ANSWERS_EACH
            },
            BackendKind::Rerank => BackendInfo {
                name: "rerank",
                aliases: &["vllm-rerank"],
                endpoint: "/v1/rerank",
                takes_query: true,
                ..ANSWERS_EACH
            },
            BackendKind::TeiRerank => BackendInfo {
                name: "tei-rerank",
                endpoint: "/rerank",
                control: None,
                takes_query: true,
                ..ANSWERS_EACH
            },
            // A transcription streams its text, but answers its clip alone: no conversation.
            BackendKind::OpenaiAudio => BackendInfo {
                name: "openai-audio",
                endpoint: "/v1/audio/transcriptions",
                media: MediaKinds {
                    audio: true,
                    ..TEXT_ONLY
                },
                conversations: false,
                takes_clip: true,
                ..GENERATES
            },
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
    /// Whether its answer streams as it is generated.
    pub fn streams(self) -> bool {
        self.answer() == AnswerShape::Streamed
    }
    /// Whether each request is a query and its documents (the row's `takes_query`).
    pub fn takes_query(self) -> bool {
        self.info().takes_query
    }
    /// Whether each request is one audio clip to transcribe (the row's `takes_clip`).
    pub fn takes_clip(self) -> bool {
        self.info().takes_clip
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

/// The names of the backends whose row `fits`, in [`BackendKind::ALL`]'s order, joined by
/// `sep` (a message's list: "rerank, tei-rerank").
pub fn names_where(fits: impl Fn(&BackendInfo) -> bool, sep: &str) -> String {
    let names: Vec<&str> = (BackendKind::ALL.iter())
        .map(|k| k.info())
        .filter(|i| fits(i))
        .map(|i| i.name)
        .collect();
    names.join(sep)
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
        let bad = |option: &str, why: String| Err(ConfigError::invalid(option, why));
        let answers_each = |i: &BackendInfo| i.answer == AnswerShape::Whole { inputs: true };
        if inputs == 0 || inputs > MAX_INPUTS_PER_REQUEST {
            let why = format!("{inputs} inputs per request: give 1 to {MAX_INPUTS_PER_REQUEST}");
            return bad("--embedding-batch-size", why);
        }
        if inputs > 1 && !answers_each(&self.info()) {
            let why = format!(
                "--backend {} sends one prompt per request; several inputs need an API that answers each ({})",
                self.as_str(),
                names_where(answers_each, ", ")
            );
            return bad("--embedding-batch-size", why);
        }
        if inputs > 1 && trace {
            let why = "a trace's lines are sent each at its own time, one per request".into();
            return bad("--embedding-batch-size", why);
        }
        if let (Some(flag), false) = (conversation, self.info().conversations) {
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

    /// Several inputs per request only for an API that answers each, within the
    /// limit; no conversation and no trace batching for it; each refusal names the flag.
    #[test]
    fn a_request_carries_what_its_api_can_answer() {
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
