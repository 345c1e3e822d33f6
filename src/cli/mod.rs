//! The command line (clap derive). Flags keep the names of vLLM's `benchmark_serving.py`
//! where the meaning is the same, so the seeds' commands carry over. This file holds the
//! clap types; `parse.rs` (and `limits.rs`, `shape.rs`, `tags.rs` for their flag groups) turns
//! one flag's text into a value ([`error::FlagError`]); `plan.rs` turns `run`'s and `search`'s
//! flags into one final `drive::plan::RunPlan`, every rule between flags with it
//! ([`error::PlanError`]), and is the only part of `cli` that does I/O.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};

use crate::config::figure::FigureKey;
use crate::config::search::parse_axis;
use crate::config::shard::{parse_start_at, Shard};
use crate::config::sweep::LoadParameter;
use crate::config::{BackendKind, Metric, RequestRate};
use crate::render::plot::ImageFormat;
use crate::render::print::Format;
use crate::sim::{FaultConfig, MetricsFlavor, Preset, SimConfig};

pub mod capacity;
pub mod dataset;
pub mod error;
pub mod limits;
mod parse;
pub mod plan;
pub mod request;
pub mod shape;
pub mod structured;
pub mod tags;
pub mod trace;

use error::PlanError;
use parse::{
    parse_counts, parse_gate, parse_header, parse_interval, parse_json_object, parse_percentile,
    parse_rates, parse_scrape_url, parse_span, parse_time_scale,
};
pub use parse::{Gate, List};

#[derive(Debug, Parser)]
#[command(
    name = "servebench",
    version,
    about = "Benchmark streaming LLM inference servers with one consistent set of metrics"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark a server (the built-in simulated one when no --base-url is given).
    Run(Box<RunArgs>),
    /// Run the built-in simulated LLM server.
    Sim(Box<SimArgs>),
    /// Print the report of a saved result, sweep or import (or write it as HTML).
    Report(ReportArgs),
    /// Find the highest request rate (or concurrency) at which enough requests meet the SLOs.
    Search(Box<SearchArgs>),
    /// Compare results, sweeps or imports side by side, step by step.
    Compare(CompareArgs),
    /// Draw charts (SVG, PNG) of results, sweeps or imports.
    Plot(PlotArgs),
    /// Convert vLLM text/JSON or llmperf JSON results into servebench's imported document.
    Import(ImportArgs),
    /// Merge the results of a sharded run's shards (`run --shard I/N`) into one result.
    Merge(MergeArgs),
    /// Join a run's requests with the server's own account of each (an OTLP JSON trace) by
    /// request id, and split each TTFT into network, queue, prefill and KV transfer.
    Join(trace::JoinArgs),
    /// Capacity per dollar over saved sweeps and searches (one per server configuration):
    /// the highest load each sustains within the SLOs, $ per 1M input and output tokens there,
    /// and the cheapest configuration and replica count for a demand.
    Plan(capacity::CapacityArgs),
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' result files (each with its .records.jsonl next to it).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Merge even when some shards' results are missing (the result names them).
    #[arg(long)]
    pub allow_missing: bool,
    /// The merged result file (its records are written next to it).
    #[arg(long, short, default_value = "merged.json")]
    pub output: PathBuf,
    /// Replace an existing output file (otherwise merge refuses, before it writes anything).
    #[arg(long)]
    pub overwrite: bool,
    /// Print nothing but errors and warnings.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `--steady-state`: find the steady window, or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SteadyState {
    Auto,
    Off,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    // Its help lists every backend from `BackendKind`'s table, so it cannot fall behind.
    #[arg(long, default_value = "openai",
          help = format!("Server API: {}", BackendKind::names()))]
    pub backend: BackendKind,
    /// Server base URL, e.g. http://127.0.0.1:8000. Without it the built-in simulator is used.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Endpoint path (default: the backend's, e.g. /v1/completions).
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Model name sent in requests.
    #[arg(long, default_value = "servebench-sim")]
    pub model: String,
    /// API key: sent as `Authorization: Bearer KEY`; as `x-api-key` for anthropic-messages.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Extra header NAME:VALUE (repeatable).
    #[arg(long = "header", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// JSON object merged into every request body.
    #[arg(long, value_parser = parse_json_object)]
    pub extra_body: Option<serde_json::Value>,
    /// Ask the server to ignore end-of-sequence and generate exactly --output-len tokens.
    #[arg(long)]
    pub ignore_eos: bool,
    /// Per-request time limit, seconds.
    #[arg(long, default_value_t = 21600.0)]
    pub timeout: f64,
    /// Do not verify the server's TLS certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Number of measured requests; a list (`1,2,4`) or range (`1,2,...,4096`) runs a sweep.
    #[arg(long, alias = "num-prompt", default_value = "1000", value_parser = parse_counts)]
    pub num_prompts: List<u64>,
    /// Requests per second ('inf': all at once), or a list to sweep. Finite rates are Poisson
    /// (or gamma, see --burstiness).
    #[arg(long, default_value = "inf", value_parser = parse_rates)]
    pub request_rate: List<RequestRate>,
    /// Gamma shape of inter-arrival times (1 = Poisson; lower = burstier).
    #[arg(long, default_value_t = 1.0)]
    pub burstiness: f64,
    /// At most this many requests in flight, or a list/range to sweep.
    #[arg(long, value_parser = parse_counts)]
    pub max_concurrency: Option<List<u64>>,
    /// Requests sent one at a time before the run, excluded from every statistic.
    #[arg(long, default_value_t = 0)]
    pub num_warmups: u64,
    /// Seed for prompts and arrival times.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The served model's tokenizer: a tokenizer.json (or a directory holding one), a GGUF
    /// model file, or a tiktoken encoding name (cl100k_base, o200k_base, ...); `server` builds
    /// random/book prompts with the server's own /tokenize and /detokenize; `words` counts
    /// whitespace-separated words, as servebench's simulator does. Required with --base-url;
    /// the built-in simulator defaults to `words`.
    #[arg(long)]
    pub tokenizer: Option<String>,
    #[command(flatten)]
    pub dataset: dataset::DatasetArgs,
    /// Metrics that get percentile lines: comma-separated ttft,tpot,itl,e2el.
    #[arg(long, default_value = "ttft,tpot,itl", value_delimiter = ',')]
    pub percentile_metrics: Vec<Metric>,
    /// Percentiles to report, comma-separated (e.g. 50,75,90,95,99).
    #[arg(long, default_value = "99", value_delimiter = ',', value_parser = parse_percentile)]
    pub metric_percentiles: Vec<f64>,
    /// Goodput SLOs, e.g. `--goodput ttft:500 tpot:50`: a request is good when it meets all;
    /// `valid_output:1` (with --structured-output): and its answer is valid.
    #[arg(long, num_args = 1..)]
    pub goodput: Vec<structured::GoodputTerm>,
    /// Directory for the result and records files.
    #[arg(long, default_value = "servebench-results")]
    pub result_dir: PathBuf,
    /// Result file name (default: {backend}-{rate}qps[-concurrency{N}]-{model}-{date}.json).
    #[arg(long)]
    pub result_filename: Option<String>,
    /// Accepted for vLLM compatibility: results are always saved.
    #[arg(long)]
    pub save_result: bool,
    /// Keep each request's generated text in the records and result.
    #[arg(long)]
    pub save_generated_text: bool,
    /// auto: find the run's steady window (MSER-5 on its throughput, in-flight, TTFT and TPOT
    /// series) and report its figures with batch-means 95% intervals beside the whole run's,
    /// or say it never settled; off: the whole run only.
    #[arg(long, value_enum, default_value_t = SteadyState::Auto)]
    pub steady_state: SteadyState,
    /// Skip the pre-flight request that checks the server and endpoint before the run.
    #[arg(long)]
    pub no_preflight: bool,
    /// Threads that drive the load and read the streams, each with its own runtime,
    /// connections and share of the schedule (every Nth request, as --shard splits it). One
    /// is the cheapest per streamed event and reads about 50,000 events/s on time; auto: one
    /// per 50,000 expected events/s (rate × output tokens, or 100/s per stream), at most
    /// the cores. A client-bound verdict names the number to use.
    #[arg(long, default_value = "1")]
    pub client_threads: crate::config::threads::ClientThreads,
    /// Run the same configuration K times (files NAME.rep1.json ... NAME.repK.json, each saved
    /// as it finishes) and save the spread of each figure across the runs, next to the
    /// within-run 95% interval, in NAME.repeat.json.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub repeat: u16,
    /// Replace existing result and records files of the same name (otherwise the run refuses
    /// to start, before it touches any file).
    #[arg(long)]
    pub overwrite: bool,
    /// After Ctrl-C, seconds in-flight requests may still finish.
    #[arg(long, default_value_t = 10.0)]
    pub grace: f64,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// No live dashboard on a terminal: the one-line progress bar.
    #[arg(long)]
    pub no_tui: bool,
    /// Print only the table at the end (a sweep's or --stages' steps, --repeat's spread), not
    /// each run's report; refused for a single run.
    #[arg(long)]
    pub summary_only: bool,
    /// Seconds to wait between sweep steps.
    #[arg(long, default_value_t = 0.0, value_parser = parse_span)]
    pub cooldown: f64,
    /// Sample the server's Prometheus metrics during the run and summarize them in the report
    /// (vLLM, SGLang, TGI, llama.cpp names). Without a URL: /metrics at --base-url.
    /// Repeatable: a DCGM exporter's URL adds GPU power (joules per output token) and
    /// utilisation.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "",
          action = clap::ArgAction::Append, value_parser = parse_scrape_url)]
    pub scrape_metrics: Vec<String>,
    /// Seconds between two metric scrapes (with --scrape-metrics).
    #[arg(long, value_name = "SECONDS", default_value = "1", value_parser = parse_interval)]
    pub scrape_interval: Duration,
    /// Preset of the built-in server (only without --base-url): exact, tgi-llama-405b,
    /// vllm-llama-405b, vllm-llama-8b-rtx4090 (default), llamacpp-llama-8b-rtx4090.
    #[arg(long)]
    pub sim_preset: Option<Preset>,
    /// The built-in server's clock runs K times faster than real time (only without
    /// --base-url). Default 1.
    #[arg(long, value_parser = parse_time_scale)]
    pub time_scale: Option<f64>,
    /// Send only shard INDEX of COUNT of the run's schedule (requests whose number is INDEX
    /// mod COUNT; the concurrency cap split between shards). In a Kubernetes Indexed Job:
    /// `--shard $(JOB_COMPLETION_INDEX)/4`. Merge the shards with `servebench merge`.
    #[arg(long, value_name = "INDEX/COUNT")]
    pub shard: Option<Shard>,
    /// Start the measured load at this wall-clock time (RFC 3339, e.g. 2026-05-01T12:00:00Z),
    /// after the workload, pre-flight and warm-ups: give every shard the same time.
    #[arg(long, value_name = "TIME", value_parser = parse_start_at)]
    pub start_at: Option<time::OffsetDateTime>,
    /// A workload mix: a JSON file of classes, each with its weight (or share), vLLM's
    /// `priority`, a tenant id sent in a header, its lengths and SLOs; the report gives each
    /// class's goodput, SLO attainment and token share, and Jain's fairness index.
    #[arg(long, value_name = "FILE")]
    pub mix: Option<PathBuf>,
    /// With --mix: while the load runs, send a probe every 1/R s (at most 100 a second),
    /// each class's first request in turn, outside --max-concurrency; each class's probe
    /// latency is reported beside its own.
    #[arg(long, value_name = "R")]
    pub probe_request_rate: Option<f64>,
    /// With --mix: after the mixed run, run each class alone at its share of the load (its
    /// requests only, the same seed; saved as <stem>.alone<N>.json): each class's latency
    /// alone and its interference (mixed ÷ alone) are added to the mixed run's result.
    #[arg(long)]
    pub mix_alone: bool,
    #[command(flatten)]
    pub limits: limits::LimitsArgs,
    #[command(flatten)]
    pub shape: shape::ShapeArgs,
    #[command(flatten)]
    pub tags: tags::TagArgs,
    #[command(flatten)]
    pub request: request::RequestArgs,
    #[command(flatten)]
    pub trace: trace::TraceArgs,
    #[command(flatten)]
    pub structured: structured::StructuredArgs,
}

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
        };
        (cfg.validate()).map_err(|e| PlanError::Simulator(e.to_string()))?;
        Ok(cfg)
    }
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to vary: the request rate, the concurrency, or (prefixes) the prefix dataset's
    /// distinct prefixes at a fixed load, for the largest count whose measured prefix-cache hit
    /// rate stays at least half its designed one (and, with --goodput, meets --target).
    #[arg(
        long,
        default_value = "rate",
        value_parser = PossibleValuesParser::new(["rate", "concurrency", "prefixes"]).try_map(|s| parse_axis(&s))
    )]
    pub by: LoadParameter,
    /// Fraction of requests that must meet every --goodput SLO.
    #[arg(long, default_value_t = 0.9)]
    pub target: f64,
    /// First value probed.
    #[arg(long, default_value_t = 1.0)]
    pub start: f64,
    /// Highest value probed.
    #[arg(long, default_value_t = 4096.0)]
    pub max: f64,
    /// Relative precision of the answer (rate searches).
    #[arg(long, default_value_t = 0.05)]
    pub precision: f64,
    /// At most this many probes.
    #[arg(long, default_value_t = 20)]
    pub max_probes: u32,
    /// The benchmark each probe runs (its --request-rate or --max-concurrency is set by the search).
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A result, sweep or imported document (or a file `servebench import` reads).
    pub file: PathBuf,
    /// Write one self-contained HTML page (tables and inline SVG charts) to this file.
    #[arg(long, value_name = "OUT.html")]
    pub html: Option<PathBuf>,
    /// A result, sweep or import: text, markdown, csv (a result: one row; a sweep or import: a
    /// row per step) or html (the page of --html); a records .jsonl file: csv (a row per request).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Results, sweeps or imports; the first is the baseline (A).
    #[arg(required = true, num_args = 2..)]
    pub files: Vec<PathBuf>,
    /// Print Markdown tables instead of aligned text (as --format markdown).
    #[arg(long)]
    pub markdown: bool,
    /// text, markdown, csv (a row per document and step, the columns of report's csv) or json.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Only these metrics (vLLM key names, comma-separated, e.g. output_throughput,p99_ttft_ms).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<FigureKey>,
    /// Exit 1 when an input is significantly worse than A on METRIC by more than PCT percent
    /// (e.g. tpot:5 for mean TPOT, p99_ttft_ms:10); repeatable. An input without an interval
    /// for METRIC is an error (exit 2), never a pass.
    #[arg(long, value_parser = parse_gate)]
    pub fail_if_worse: Vec<Gate>,
}

#[derive(Debug, Args)]
pub struct PlotArgs {
    /// Results, sweeps or imports; each series is one line.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Directory for the charts (created if missing).
    #[arg(long, short = 'o')]
    pub out_dir: PathBuf,
    /// Image format: svg, png or both.
    #[arg(long, default_value = "both", value_enum)]
    pub format: ImageFormat,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// vLLM text reports or --save-result JSON, llmperf individual-responses or summary JSON.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output file (one input) or directory (several); default: NAME.imported.json here.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}
