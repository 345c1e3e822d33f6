//! The server APIs, one file each: OpenAI completions (`completions.rs`, with the OpenAI
//! event reading `chat.rs` shares), chat completions (`chat.rs`), TGI (`tgi.rs`), llama.cpp's
//! native API (`llamacpp.rs`), Anthropic Messages (`anthropic.rs`) and OpenAI Responses
//! (`responses.rs`), streamed; OpenAI embeddings (`embeddings.rs`) and rerank, Jina/Cohere's
//! and TEI's (`rerank.rs`), answered whole; OpenAI transcriptions (`audio.rs`, a multipart
//! form with a WAV clip, streamed). Each is an
//! `Api` of the request shape in `../api.rs`. This file is the one table from `BackendKind` to
//! its API (a new backend's arm is the compiler's to point to), and finds the chat template a
//! backend that takes a prompt needs for a conversation's history.

pub(super) mod anthropic;
pub(super) mod audio;
pub(super) mod chat;
pub(super) mod completions;
pub(super) mod embeddings;
pub(super) mod llamacpp;
pub(super) mod rerank;
pub(super) mod responses;
pub(super) mod tgi;

use self::anthropic::AnthropicMessages;
use self::audio::OpenAiAudio;
use self::chat::OpenAiChat;
use self::completions::OpenAiCompletions;
use self::embeddings::OpenAiEmbeddings;
use self::llamacpp::LlamaCpp;
use self::rerank::{Rerank, TeiRerank};
use self::responses::OpenAiResponses;
use self::tgi::Tgi;
use super::api::{Answer, Api};
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
        BackendKind::OpenaiEmbeddings => Box::new(OpenAiEmbeddings),
        BackendKind::Rerank => Box::new(Rerank),
        BackendKind::TeiRerank => Box::new(TeiRerank),
        BackendKind::OpenaiAudio => Box::new(OpenAiAudio),
    }
}

/// The chat template of `--tokenizer`, for a run that may send conversations (`--turns`,
/// `--multi-turn`, a jsonl file's "turns") to an API that takes a prompt: the APIs that take
/// messages get them and apply the server's own template. Read once per command, by the run's
/// plan (`drive::plan::Text`), and handed to every [`super::Client::new`].
pub fn chat_template(cfg: &RunConfig) -> Result<Option<ChatTemplate>, ClientError> {
    let w = &cfg.workload;
    let api = for_backend(cfg.backend);
    let talks = cfg.load.shape.turns() > 1 || w.dataset.templates_conversations();
    let streamed = matches!(api.answer(), Answer::Streamed(_));
    match w.tokenizer.as_deref() {
        Some(spec) if talks && streamed && !api.takes_messages() => {
            ChatTemplate::for_tokenizer(spec).map_err(ClientError::ChatTemplate)
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod table_tests;
