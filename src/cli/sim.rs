//! `servebench sim`'s flags ([`SimArgs`]) and their rules: the built-in simulated server's
//! settings as one `sim::SimConfig` ([`SimArgs::config`]), refused with a [`PlanError`] when a
//! flag needs an engine the preset lacks, a time is not a duration, or the settings break the
//! simulator's own rules. `run` starts the same server without a `--base-url` (`plan.rs`, from
//! `run`'s `--sim-preset` and `--time-scale`).

use std::time::Duration;

use clap::builder::PossibleValuesParser;
use clap::Args;

use super::error::PlanError;
use super::parse::parse_time_scale;
use crate::sim::{FaultConfig, MetricsFlavor, Preset, SimConfig};

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Address to bind (loopback by default).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// Port (0: any free port; the address is printed).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Time to first token, ms.
    #[arg(long, default_value_t = 50.0)]
    pub ttft_ms: f64,
    /// Interval between output chunks, ms.
    #[arg(long, default_value_t = 10.0)]
    pub itl_ms: f64,
    /// Tokens per output chunk.
    #[arg(long, default_value_t = 1)]
    pub tokens_per_chunk: u32,
    /// A reasoning model: the first R tokens of each chat, Anthropic and Responses answer
    /// are reasoning (a request's `sim_reasoning_tokens` sets its own).
    #[arg(long, default_value_t = 0, value_name = "R")]
    pub reasoning_tokens: u32,
    /// Speculative decoding (exact preset): draft tokens each decoding step proposes, K
    /// (1 to 15); each chunk after the first is one step. Needs --spec-accepted.
    #[arg(long, value_name = "K")]
    pub spec_draft_tokens: Option<u32>,
    /// Speculative decoding: the tokens each step accepts, cycled over a stream's steps
    /// (e.g. 3,1,2,0; each at most K, at most 16 steps); a step sends them and one more.
    #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
    pub spec_accepted: Vec<u32>,
    /// Output tokens when a request does not set max tokens.
    #[arg(long, default_value_t = 128)]
    pub output_tokens: u32,
    /// Never report token usage (clients must count tokens themselves).
    #[arg(long)]
    pub no_usage: bool,
    /// Model name served.
    #[arg(long, default_value = "servebench-sim")]
    pub model: String,
    /// Seed for text and faults.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Fraction of requests answered HTTP 500.
    #[arg(long, default_value_t = 0.0)]
    pub error_rate: f64,
    /// Fraction of requests answered HTTP 429.
    #[arg(long, default_value_t = 0.0)]
    pub rate_limit_rate: f64,
    /// Fraction of streams cut off mid-way.
    #[arg(long, default_value_t = 0.0)]
    pub disconnect_rate: f64,
    /// Fraction of streams that stall mid-way.
    #[arg(long, default_value_t = 0.0)]
    pub stall_rate: f64,
    /// Fraction of streams with one malformed event.
    #[arg(long, default_value_t = 0.0)]
    pub malformed_rate: f64,
    /// How long a stalled stream hangs, seconds.
    #[arg(long, default_value_t = 3600.0)]
    pub stall_s: f64,
    /// Server model: exact (the fixed --ttft-ms/--itl-ms schedule), or an engine preset:
    /// tgi-llama-405b, vllm-llama-405b, vllm-llama-8b-rtx4090, llamacpp-llama-8b-rtx4090.
    #[arg(long, default_value = "exact")]
    pub preset: Preset,
    /// The simulated clock runs K times faster than real time (every simulated duration is
    /// divided by K; reported at GET /sim/info).
    #[arg(long, default_value_t = 1.0, value_parser = parse_time_scale)]
    pub time_scale: f64,
    /// Engine presets: answer HTTP 503 to requests not scheduled within S simulated seconds.
    #[arg(long)]
    pub queue_timeout_s: Option<f64>,
    /// Metric names at GET /metrics: vllm or llamacpp (default: the preset's).
    #[arg(long)]
    pub metrics_flavor: Option<MetricsFlavor>,
    /// The form of the per-request account in each answer: vllm (a `metrics` object, the
    /// default), llamacpp (`timings`), sglang (`meta_info`), or tgi (timing headers; exact
    /// mode, on the streamed answer's head).
    #[arg(long)]
    pub timings: Option<crate::sim::TimingsShape>,
    /// Engine presets: override the most sequences in a batch.
    #[arg(long)]
    pub max_num_seqs: Option<u32>,
    /// Engine presets: override the per-step token budget.
    #[arg(long)]
    pub max_batched_tokens: Option<u32>,
    /// Engine presets: override the KV cache capacity, tokens.
    #[arg(long)]
    pub kv_capacity_tokens: Option<u64>,
    /// Engine presets: override the mean natural output length (0: always the token budget).
    #[arg(long)]
    pub mean_output_tokens: Option<u32>,
    /// Worker threads of the server's runtime (default: one per CPU). One thread avoids
    /// context switches when the server is pinned to one core (bench/sim_throughput.sh).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Most connections open at once; one more is answered 503 and closed (raise `ulimit -n`
    /// to match).
    #[arg(long, default_value_t = crate::sim::HttpLimits::default().max_connections)]
    pub max_connections: usize,
    /// LoRA adapters served beside --model (vLLM's --lora-modules; NAME=PATH is taken as
    /// NAME): a request naming another model is answered 404, as vLLM does.
    #[arg(long, value_name = "NAME", num_args = 1.., value_delimiter = ',')]
    pub lora_modules: Vec<String>,
    /// Adapters resident at once (vLLM's --max-loras; default: all): a request to another
    /// waits --lora-load-ms for its load, evicting the least recently used.
    #[arg(long, value_name = "K")]
    pub max_loras: Option<usize>,
    /// The time to load an adapter that is not resident, ms (default 0).
    #[arg(long, value_name = "MS")]
    pub lora_load_ms: Option<f64>,
    /// Exact mode: at most N streams at once; the others wait in a queue, and a queued
    /// request's TTFT is its wait plus --ttft-ms.
    #[arg(long, value_name = "N")]
    pub slots: Option<u32>,
    /// fcfs: the queue of --slots first come first served; priority: by vLLM's `priority`
    /// request field, lower first, then arrival (vLLM's --scheduling-policy).
    #[arg(long, default_value = "fcfs", value_parser = PossibleValuesParser::new(["fcfs", "priority"]))]
    pub scheduling_policy: String,
    /// Fraction of structured answers (a schema's JSON, a tool call, a regex's match, a
    /// choice) that are invalid, by an exact rule: of requests 0..N, floor(N × rate);
    /// alternately not JSON and not the schema's; no match in full; no choice.
    #[arg(long, default_value_t = 0.0)]
    pub invalid_output_rate: f64,
    /// Tool calls in each streamed chat, Messages or Responses answer to a request offering
    /// tools (1 to 16): call j calls the tool after call j-1's; an invalid answer's last call is the
    /// invalid one.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub tool_calls_per_answer: u32,
    /// A hostile server, for tests of the answer checks: every streamed regex or choice
    /// answer is its text repeated to N bytes; every streamed chat answer of a schema's JSON
    /// has its first list filled to N bytes, each item an enum's last value. 0: off.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub hostile_answer_bytes: u32,
    /// The control endpoints (/reset_prefix_cache, /flush_cache, /start_profile,
    /// /stop_profile) answer this error status (400 to 599) and do nothing, as a server
    /// without them does (vLLM without its dev endpoints answers 404).
    #[arg(long, value_name = "CODE")]
    pub control_status: Option<u16>,
    /// Exact mode with --slots (per replica): an autoscaler running the server as replicas,
    /// from MIN; every simulated second, ceil(in flight / TARGET_IN_FLIGHT) clamped to
    /// [MIN, MAX], in effect DELAY_S later. The count is the gauge servebench_sim_replicas
    /// at /metrics and /api/v1/query (Prometheus' API), every change at /sim/replicas.
    #[arg(long, value_name = "MIN,MAX,TARGET_IN_FLIGHT,DELAY_S")]
    pub autoscale: Option<String>,
    /// Send a router's session token in this response header: the one a request sent back,
    /// else a new one; /sim/stats counts them (sessions_minted, sessions_echoed).
    #[arg(long, value_name = "NAME")]
    pub session_header: Option<String>,
}

impl SimArgs {
    /// The adapters of `--lora-modules`, `--max-loras` and `--lora-load-ms`; `None` without.
    fn lora(&self) -> Result<Option<crate::sim::LoraConfig>, PlanError> {
        if self.lora_modules.is_empty() {
            let given = [
                ("--max-loras", self.max_loras.is_some()),
                ("--lora-load-ms", self.lora_load_ms.is_some()),
            ];
            return match given.iter().find(|(_, set)| *set) {
                Some((flag, _)) => Err(PlanError::Simulator(format!(
                    "{flag} needs --lora-modules (the adapters served)"
                ))),
                None => Ok(None),
            };
        }
        let adapters: Vec<String> = (self.lora_modules.iter())
            .map(|m| {
                m.split_once('=')
                    .map_or(m.as_str(), |(name, _)| name)
                    .trim()
                    .to_string()
            })
            .collect();
        let ms = self.lora_load_ms.unwrap_or(0.0);
        let load_time =
            Duration::try_from_secs_f64(ms / 1000.0).map_err(|_| PlanError::NotADuration {
                flag: "lora-load-ms",
                value: ms,
            })?;
        Ok(Some(crate::sim::LoraConfig {
            max_resident: self.max_loras.unwrap_or(adapters.len()),
            adapters,
            load_time,
        }))
    }
}

impl SimArgs {
    /// The simulator's settings; the error when a flag needs an engine the preset lacks, a
    /// time is not a duration, or the settings break the simulator's rules.
    pub fn config(&self) -> Result<SimConfig, PlanError> {
        let dur = |flag: &'static str, ms: f64| {
            Duration::try_from_secs_f64(ms / 1000.0)
                .map_err(|_| PlanError::NotADuration { flag, value: ms })
        };
        let base = SimConfig::from_preset(self.preset);
        let mut engine = base.engine.clone();
        let engine_only = [
            ("--queue-timeout-s", self.queue_timeout_s.is_some()),
            ("--max-num-seqs", self.max_num_seqs.is_some()),
            ("--max-batched-tokens", self.max_batched_tokens.is_some()),
            ("--kv-capacity-tokens", self.kv_capacity_tokens.is_some()),
            ("--mean-output-tokens", self.mean_output_tokens.is_some()),
        ];
        match engine.as_mut() {
            None => {
                if let Some((flag, _)) = engine_only.iter().find(|(_, set)| *set) {
                    return Err(PlanError::EngineOnly {
                        flag,
                        preset: self.preset.to_string(),
                    });
                }
            }
            Some(e) => {
                if let Some(s) = self.queue_timeout_s {
                    e.queue_timeout = Some(dur("queue-timeout-s", s * 1000.0)?);
                }
                if let Some(v) = self.max_num_seqs {
                    e.max_num_seqs = v;
                }
                if let Some(v) = self.max_batched_tokens {
                    e.max_batched_tokens = v;
                }
                if let Some(v) = self.kv_capacity_tokens {
                    e.kv_capacity_tokens = v;
                }
                if let Some(v) = self.mean_output_tokens {
                    e.mean_output_tokens = (v > 0).then_some(v);
                }
            }
        }
        let cfg = SimConfig {
            preset: self.preset,
            engine,
            time_scale: self.time_scale,
            metrics_flavor: self.metrics_flavor.unwrap_or(base.metrics_flavor),
            timings: self.timings.unwrap_or_default(),
            ttft: dur("ttft-ms", self.ttft_ms)?,
            itl: dur("itl-ms", self.itl_ms)?,
            tokens_per_chunk: self.tokens_per_chunk,
            output_tokens: self.output_tokens,
            usage: !self.no_usage,
            model: self.model.clone(),
            seed: self.seed,
            faults: FaultConfig {
                error_rate: self.error_rate,
                rate_limit_rate: self.rate_limit_rate,
                disconnect_rate: self.disconnect_rate,
                stall_rate: self.stall_rate,
                malformed_rate: self.malformed_rate,
                stall: dur("stall-s", self.stall_s * 1000.0)?,
            },
            precise_timing: true,
            limits: crate::sim::HttpLimits {
                max_connections: self.max_connections,
                ..crate::sim::HttpLimits::default()
            },
            reasoning_tokens: self.reasoning_tokens,
            spec: match (self.spec_draft_tokens, self.spec_accepted.is_empty()) {
                (Some(k), _) => Some(crate::sim::SpecDecode {
                    draft_tokens: k,
                    accepted: self.spec_accepted.clone(),
                }),
                (None, true) => None,
                (None, false) => {
                    let why = "--spec-accepted needs --spec-draft-tokens";
                    return Err(PlanError::Simulator(why.into()));
                }
            },
            lora: self.lora()?,
            slots: self.slots,
            priority_scheduling: self.scheduling_policy == "priority",
            invalid_output_rate: self.invalid_output_rate,
            tool_calls_per_answer: self.tool_calls_per_answer,
            hostile_answer_bytes: self.hostile_answer_bytes,
            control_status: self.control_status,
            autoscale: (self.autoscale.as_deref())
                .map(str::parse)
                .transpose()
                .map_err(|e: crate::sim::SimConfigError| PlanError::Simulator(e.to_string()))?,
            session_header: self.session_header.clone(),
        };
        (cfg.validate()).map_err(|e| PlanError::Simulator(e.to_string()))?;
        Ok(cfg)
    }
}
