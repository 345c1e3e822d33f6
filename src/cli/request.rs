//! `servebench run`'s flags for what each request carries besides its prompt: several inputs
//! for an API that answers each (`--embedding-batch-size`, `--rerank-documents`), a rerank
//! query's length (`--rerank-query-len`), the LoRA adapter each is sent to (`--lora-modules`),
//! a transcription's synthetic clip length (`--audio-duration-s`).
//! Set into `RunConfig` by
//! [`RequestArgs::apply`]; the rules between them and `--backend` are
//! `config::BackendKind::check_request`'s.

use clap::Args;

use super::heading;

use crate::config::RunConfig;

#[derive(Debug, Args)]
pub struct RequestArgs {
    /// Inputs per request for openai-embeddings (vLLM's batch of one request's `input`
    /// list), or documents per request for rerank and tei-rerank (vLLM's --random-batch-size),
    /// each of exactly --input-len tokens; --num-prompts counts requests.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true,
        long,
        value_name = "B",
        default_value_t = 1,
        visible_alias = "rerank-documents"
    )]
    pub embedding_batch_size: u32,
    /// A rerank request's query length, tokens (rerank, tei-rerank; --input-len unless given;
    /// the datasets that take a length).
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "Q")]
    pub rerank_query_len: Option<u64>,
    /// LoRA adapters to send requests to, NAME[:WEIGHT] comma- or space-separated (weights
    /// relative, default equal; vLLM's bare names work): each request's model is one drawn by
    /// weight from a stream seeded by --seed, or a jsonl line's own "model".
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "NAME[:WEIGHT]", num_args = 1.., value_delimiter = ',',
          value_parser = crate::config::lora::LoraModule::parse)]
    pub lora_modules: Vec<crate::config::lora::LoraModule>,
    /// Seconds of each synthetic audio clip a transcription run makes (--backend openai-audio
    /// with --dataset-name random: 16 kHz mono 16-bit WAV, a seeded tone under noise; at most
    /// 600) [default: 5]
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "S", value_parser = crate::config::audio::parse_seconds)]
    pub audio_duration_s: Option<std::time::Duration>,
}

impl RequestArgs {
    /// `cfg` with these flags.
    pub fn apply(&self, mut cfg: RunConfig) -> RunConfig {
        cfg.inputs_per_request = self.embedding_batch_size;
        cfg.rerank_query_len = self.rerank_query_len;
        cfg.lora_modules = self.lora_modules.clone();
        cfg.audio_duration = self.audio_duration_s;
        cfg
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use crate::config::BackendKind;

    /// `run --help` names every backend `--backend` takes (it listed 4 of 6 once; it
    /// is now written from `BackendKind`'s table).
    #[test]
    fn run_help_lists_every_backend() {
        let mut cli = super::super::Cli::command();
        let run = cli.find_subcommand_mut("run").expect("run is a subcommand");
        let backend = run.get_arguments().find(|a| a.get_id() == "backend");
        let help = backend.and_then(|a| a.get_help()).map(ToString::to_string);
        let help = help.expect("--backend has a help line");
        for k in BackendKind::ALL {
            assert!(help.contains(k.as_str()), "{}: {help}", k.as_str());
        }
    }
}
