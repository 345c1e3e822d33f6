//! `servebench run`'s hooks into the server: `--reset-prefix-cache[=SERVER]` (before each run,
//! the server's cache emptied), `--profile` (its profiler around the measured window), `--hook
//! EVENT=METHOD:PATH` and `--hook-errors`. Set into `RunConfig` by [`HookArgs::apply`]
//! through `config::hooks::Hooks::resolve`, which takes the endpoints from the backend's row.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;

use super::heading;

use crate::config::error::ConfigError;
use crate::config::hooks::{Hook, HookAsk, HookErrors, Hooks};
use crate::config::{RunConfig, ServerKind};

#[derive(Debug, Args)]
pub struct HookArgs {
    /// Empty the server's prefix cache before each run (each sweep step, search probe and
    /// repetition): POST /reset_prefix_cache (vllm, the default for OpenAI-style backends)
    /// or /flush_cache (sglang). Without it a sweep re-sending the same seeded prompts finds
    /// the previous step's prompts cached. A server that cannot (vLLM without
    /// VLLM_SERVER_DEV_MODE=1 answers 404) stops the run.
    #[arg(help_heading = heading::ADVANCED, hide_short_help = true, long, value_name = "SERVER",
          num_args = 0..=1, require_equals = true,
          value_parser = PossibleValuesParser::new(["vllm", "sglang"]).map(|s| match s.as_str() {
              "sglang" => ServerKind::Sglang,
              _ => ServerKind::Vllm,
          }))]
    pub reset_prefix_cache: Option<Option<ServerKind>>,
    /// Start the server's profiler when the measured window starts (after the warm-ups) and
    /// stop it when it ends: POST /start_profile and /stop_profile (vLLM with
    /// --profiler-config, SGLang).
    #[arg(help_heading = heading::ADVANCED, hide_short_help = true, long)]
    pub profile: bool,
    /// Call METHOD PATH on the server's base URL at EVENT (repeatable; in order): EVENT is
    /// before-run, before-step, measure-start, measure-end, after-step or after-run; METHOD
    /// GET, POST, PUT or DELETE; e.g. before-step=POST:/reset_prefix_cache. Each call's
    /// status, time and answer are in the result.
    // Parsed by `apply`, not clap: a refusal is then one line whatever the text holds.
    #[arg(help_heading = heading::ADVANCED, hide_short_help = true, long = "hook",
          value_name = "EVENT=METHOD:PATH")]
    pub hooks: Vec<String>,
    /// What a failing hook (no answer, or a status outside 2xx) does: stop the run with one
    /// line (what was measured stays saved), or ignore it (recorded as failed).
    #[arg(help_heading = heading::ADVANCED, hide_short_help = true, long, value_name = "WHAT",
          default_value = "stop",
          value_parser = PossibleValuesParser::new(["stop", "ignore"]).map(|s| match s.as_str() {
              "ignore" => HookErrors::Ignore,
              _ => HookErrors::Stop,
          }))]
    pub hook_errors: HookErrors,
}

impl HookArgs {
    /// `cfg` with these hooks (its backend decides the control endpoints).
    pub fn apply(&self, mut cfg: RunConfig) -> Result<RunConfig, ConfigError> {
        let ask = HookAsk {
            reset: self.reset_prefix_cache,
            profile: self.profile,
            hooks: (self.hooks.iter())
                .map(|h| Hook::parse(h).map_err(|e| ConfigError::invalid("--hook", e)))
                .collect::<Result<_, _>>()?,
            errors: self.hook_errors,
        };
        cfg.hooks = Hooks::resolve(cfg.backend, ask)?;
        Ok(cfg)
    }
}
