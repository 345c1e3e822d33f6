//! `servebench run`'s load shape in time: `--duration`, vLLM's ramp flags,
//! `--stages`, and the early-stop limits. What each means: `config::shape`; set into
//! `RunConfig` by [`ShapeArgs::apply`].

use clap::Args;

use super::error::FlagError;
use super::heading;
use super::parse::List;

use crate::config::shape::{LoadShape, Ramp, RampStrategy, Stage};
use crate::config::RunConfig;

#[derive(Debug, Args)]
pub struct ShapeArgs {
    /// Send for this many seconds (the simulator's time with --time-scale), then let in-flight
    /// requests finish within --grace (or cancel them: --duration-cancel). Prompts are built
    /// for the expected requests at the peak rate (--num-prompts, or up to 50,000) and sent
    /// again past that.
    #[arg(help_heading = heading::LOAD, long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// At the end of --duration or --stages, cancel what is in flight instead of draining it.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long)]
    pub duration_cancel: bool,
    /// Ramp the request rate (vLLM's flag): linear or exponential, from --ramp-up-start-rps to
    /// --ramp-up-end-rps over --duration, or over the requests without it. Replaces
    /// --request-rate.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_enum, requires_all = ["ramp_up_start_rps", "ramp_up_end_rps"])]
    pub ramp_up_strategy: Option<RampStrategy>,
    /// The ramp's first rate, requests per second.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, requires = "ramp_up_strategy")]
    pub ramp_up_start_rps: Option<f64>,
    /// The ramp's last rate, requests per second.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, requires = "ramp_up_strategy")]
    pub ramp_up_end_rps: Option<f64>,
    /// Constant-rate stages in one run against a warm server, RATE:SECONDS,RATE:SECONDS,...;
    /// each stage is a step of the report (saved as a sweep over request_rate).
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_delimiter = ',', value_name = "RATE:SECONDS")]
    pub stages: Vec<Stage>,
    /// Stop sending once this many measured requests have failed (the result is saved and
    /// marked stopped early).
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, value_name = "N")]
    pub max_errors: Option<u64>,
    /// Stop sending once more than this fraction (0-1] of the last 100 finished requests
    /// failed (judged from 10 finished requests on).
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, value_name = "FRACTION")]
    pub max_error_rate: Option<f64>,
    /// Multi-turn conversations of N turns: each arrival (--request-rate, --max-concurrency
    /// count conversations) starts one; turn k + 1 goes once turn k has finished, its prompt
    /// the history (turn k's prompt and the server's reply) followed by --input-len new
    /// tokens. Replies are kept in the records.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "N")]
    pub turns: Option<u32>,
    /// `--dataset-name sharegpt`: send whole conversations, every human turn after the last
    /// one ended, with the history (a jsonl file gives conversations as "turns" lines).
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long)]
    pub multi_turn: bool,
    /// Seconds between a turn's end and the next turn of its conversation.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "SECONDS")]
    pub think_time: Option<f64>,
    /// A conversation's history (the text of its messages) may hold at most this many bytes
    /// (suffixes KiB, MiB, GiB): the turn that would pass it fails as `prompt` and ends its
    /// conversation. Default 16MiB.
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, value_name = "BYTES", value_parser = super::limits::parse_bytes)]
    pub max_history_bytes: Option<u64>,
    /// A conversation's history may hold at most this many tokens (each user text's built
    /// length and each reply's output count): past it, as --max-history-bytes. Default
    /// 1000000.
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, value_name = "TOKENS")]
    pub max_history_tokens: Option<u64>,
    /// N users, each sending its next unit (a request, a conversation with --turns, a job) a
    /// fixed --user-gap after its previous one ended: a closed loop per user, for a cache's
    /// time-to-live. Users start staggered over one gap; the run ends when --num-prompts
    /// units were taken. Not with --request-rate, --duration, --stages or a ramp.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "N")]
    pub users: Option<u32>,
    /// Seconds from a user's unit's end to its next unit's send (the simulator's time with
    /// --time-scale). A list (`1,10,60`) runs a sweep step per gap at the same users.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, value_name = "SECONDS", value_parser = parse_gaps)]
    pub user_gap: Option<List<f64>>,
    /// `--dataset-name trace`: tokens per `hash_ids` block (Mooncake's is 512). Default 512.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "TOKENS")]
    pub trace_block_size: Option<u64>,
    /// `--dataset-name trace`: replay K times faster than the trace's timestamps. Default 1.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "K")]
    pub trace_speedup: Option<f64>,
}

impl ShapeArgs {
    /// `cfg` with this shape (checked by `RunConfig::validate`).
    pub fn apply(&self, mut cfg: RunConfig) -> RunConfig {
        cfg.load.shape = LoadShape {
            duration_s: self.duration,
            duration_cancel: self.duration_cancel,
            ramp: self.ramp_up_strategy.map(|strategy| Ramp {
                strategy,
                start_rps: self.ramp_up_start_rps.unwrap_or(0.0),
                end_rps: self.ramp_up_end_rps.unwrap_or(0.0),
            }),
            stages: self.stages.clone(),
            max_errors: self.max_errors,
            max_error_rate: self.max_error_rate,
            turns: self.turns,
            think_time_s: self.think_time,
            max_history_bytes: self.max_history_bytes,
            max_history_tokens: self.max_history_tokens,
            users: self.users,
            user_gap_s: self.user_gap.as_ref().map(|g| g.0[0]),
            curve: None,
        };
        cfg
    }
}

/// `--user-gap`: a list of seconds, each 0 or more and at most a week.
fn parse_gaps(s: &str) -> Result<List<f64>, FlagError> {
    let gap = |p: &str| -> Result<f64, FlagError> {
        let v = (p.trim().parse::<f64>()).map_err(|_| FlagError::Seconds(p.trim().to_string()))?;
        crate::config::limits::check_span(v, true)?;
        Ok(v)
    };
    s.split(',')
        .map(gap)
        .collect::<Result<Vec<_>, _>>()
        .map(List)
}
