//! Which [`Api`] a backend speaks, and what else depends on the backend: the headers it
//! needs and whether it takes messages (else a prompt, built with the chat template).

use super::api::{Api, LlamaCpp, OpenAiChat, OpenAiCompletions, Tgi};
use super::typed::{AnthropicMessages, OpenAiResponses, ANTHROPIC_VERSION};
use crate::config::{BackendKind, RunConfig};
use crate::measure::error::ClientError;
use crate::tokenizer::chat_template::ChatTemplate;

/// The `Api` for a backend.
pub fn for_backend(kind: BackendKind) -> Box<dyn Api> {
    match kind {
        BackendKind::Openai => Box::new(OpenAiCompletions),
        BackendKind::OpenaiChat => Box::new(OpenAiChat),
        BackendKind::Tgi => Box::new(Tgi),
        BackendKind::Llamacpp => Box::new(LlamaCpp),
        BackendKind::AnthropicMessages => Box::new(AnthropicMessages),
        BackendKind::OpenaiResponses => Box::new(OpenAiResponses),
    }
}

/// The headers an API needs besides the body's content type: the API key as the API takes
/// it (`Authorization: Bearer`, or Anthropic's `x-api-key`), and `anthropic-version`.
pub fn default_headers(kind: BackendKind, api_key: Option<&str>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    match kind {
        BackendKind::AnthropicMessages => {
            if let Some(key) = api_key {
                out.push(("x-api-key".to_string(), key.to_string()));
            }
            let version = ANTHROPIC_VERSION.to_string();
            out.push(("anthropic-version".to_string(), version));
        }
        _ => out.extend(api_key.map(|k| ("authorization".to_string(), format!("Bearer {k}")))),
    }
    out
}

/// Whether the API takes a conversation as messages (the server applies the chat template).
pub fn takes_messages(kind: BackendKind) -> bool {
    matches!(
        kind,
        BackendKind::OpenaiChat | BackendKind::AnthropicMessages | BackendKind::OpenaiResponses
    )
}

/// The chat template of `--tokenizer`, for a run that may send conversations (`--turns`,
/// `--multi-turn`, a jsonl file's "turns") to an API that takes a prompt: the chat API gets
/// the messages and applies the server's own template. Read once per command, by the run's
/// plan (`drive::plan::Text`), and handed to every [`super::Client::new`].
pub fn chat_template(cfg: &RunConfig) -> Result<Option<ChatTemplate>, ClientError> {
    let w = &cfg.workload;
    let talks = cfg.load.shape.turns() > 1 || w.dataset.templates_conversations();
    match w.tokenizer.as_deref() {
        Some(spec) if talks && !takes_messages(cfg.backend) => {
            ChatTemplate::for_tokenizer(spec).map_err(|e| ClientError(e.to_string()))
        }
        _ => Ok(None),
    }
}
