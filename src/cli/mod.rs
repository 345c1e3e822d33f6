//! The command line (clap derive). Flags keep the names of vLLM's `benchmark_serving.py`
//! where the meaning is the same, so the seeds' commands carry over. This file holds the
//! subcommands' clap types (`sim`'s are `sim.rs`'s; `run`'s flag groups are `dataset.rs`,
//! `limits.rs`, `shape.rs`, `tags.rs`, `request.rs`, `trace.rs`, `structured.rs` and `hooks.rs`, each
//! option under a heading of `heading.rs`; `trace`'s subcommands are `trace_share.rs`'s);
//! `parse.rs` turns one flag's text into a value
//! ([`error::FlagError`]); `plan.rs` turns `run`'s and `search`'s flags into one final
//! `drive::plan::RunPlan`, every rule between flags with it ([`error::PlanError`]), and is the
//! only part of `cli` that does I/O. No file here takes anything from this one: they name
//! the file they use (`super::parse::List`).

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
use crate::sim::Preset;

pub mod adaptive;
pub mod autoscale;
pub mod capacity;
pub mod dataset;
pub mod endpoints;
pub mod error;
pub mod export;
mod heading;
pub mod history;
pub mod hooks;
pub mod limits;
mod parse;
pub mod plan;
pub mod reference;
pub mod replica_capacity;
pub mod request;
pub mod shape;
pub mod sim;
pub mod structured;
pub mod tags;
pub mod threads;
pub mod trace;
pub mod trace_share;

use parse::{
    parse_bucket_by, parse_counts, parse_gate, parse_header, parse_interval, parse_json_object,
    parse_percentile, parse_rates, parse_scrape_url, parse_source_addresses, parse_span,
    parse_threshold_ms, parse_time_scale, parse_time_slice,
};
pub use parse::{Gate, List};
pub use sim::SimArgs;

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
    /// Traces people can share: `anonymize` a trace with text into block ids, `analyze` a
    /// trace's lengths, rate, sessions, prefix reuse and LRU cache hit rate.
    Trace(trace_share::TraceShareArgs),
    /// Convert a records file: JSON Lines to Parquet (one row per request, one column per
    /// field), or back.
    Export(export::ExportArgs),
    /// Many saved results of one configuration over time: each headline figure with its
    /// interval, and a regression flag when the newest run is worse than the ones before.
    History(history::HistoryArgs),
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
    #[arg(help_heading = heading::TARGET, long, default_value = "openai",
          help = format!("Server API: {}", BackendKind::names()))]
    pub backend: BackendKind,
    /// Server base URL, e.g. http://127.0.0.1:8000. Without it the built-in simulator is used.
    /// Given more than once, requests are spread over the URLs (--balance).
    #[arg(help_heading = heading::TARGET, long)]
    pub base_url: Vec<String>,
    /// Endpoint path (default: the backend's, e.g. /v1/completions).
    #[arg(help_heading = heading::TARGET, hide_short_help = true, long)]
    pub endpoint: Option<String>,
    /// Model name sent in requests.
    #[arg(help_heading = heading::TARGET, long, default_value = "servebench-sim")]
    pub model: String,
    /// The served model's tokenizer: a tokenizer.json (or a directory holding one), a GGUF
    /// model file, or a tiktoken encoding name (cl100k_base, o200k_base, ...); `server` builds
    /// random/book prompts with the server's own /tokenize and /detokenize; `words` counts
    /// whitespace-separated words, as servebench's simulator does. Required with --base-url;
    /// the built-in simulator defaults to `words`.
    #[arg(help_heading = heading::TARGET, long)]
    pub tokenizer: Option<String>,
    /// API key: sent as `Authorization: Bearer KEY`; as `x-api-key` for anthropic-messages.
    #[arg(help_heading = heading::TARGET, hide_short_help = true, long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Extra header NAME:VALUE (repeatable).
    #[arg(help_heading = heading::TARGET, hide_short_help = true, long = "header", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Do not verify the server's TLS certificate.
    #[arg(help_heading = heading::TARGET, hide_short_help = true, long)]
    pub insecure: bool,
    /// Number of measured requests; a list (`1,2,4`) or range (`1,2,...,4096`) runs a sweep.
    #[arg(help_heading = heading::LOAD, long, alias = "num-prompt", default_value = "1000", value_parser = parse_counts)]
    pub num_prompts: List<u64>,
    /// Requests per second ('inf': all at once), or a list to sweep. Finite rates are Poisson
    /// (or gamma, see --burstiness).
    #[arg(help_heading = heading::LOAD, long, default_value = "inf", value_parser = parse_rates)]
    pub request_rate: List<RequestRate>,
    /// Gamma shape of inter-arrival times (1 = Poisson; lower = burstier).
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, default_value_t = 1.0)]
    pub burstiness: f64,
    /// At most this many requests in flight, or a list/range to sweep.
    #[arg(help_heading = heading::LOAD, long, value_parser = parse_counts)]
    pub max_concurrency: Option<List<u64>>,
    /// Requests sent one at a time before the run, excluded from every statistic.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, default_value_t = 0)]
    pub num_warmups: u64,
    /// Seed for prompts and arrival times.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, default_value_t = 0)]
    pub seed: u64,
    /// Run the same configuration K times (files NAME.rep1.json ... NAME.repK.json, each saved
    /// as it finishes) and save the spread of each figure across the runs, next to the
    /// within-run 95% interval, in NAME.repeat.json.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub repeat: u16,
    /// Seconds to wait between sweep steps.
    #[arg(help_heading = heading::LOAD, hide_short_help = true, long, default_value_t = 0.0, value_parser = parse_span)]
    pub cooldown: f64,
    #[command(flatten)]
    pub dataset: dataset::DatasetArgs,
    #[command(flatten)]
    pub request: request::RequestArgs,
    #[command(flatten)]
    pub structured: structured::StructuredArgs,
    /// JSON object merged into every request body.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_parser = parse_json_object)]
    pub extra_body: Option<serde_json::Value>,
    /// Ask the server to ignore end-of-sequence and generate exactly --output-len tokens.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long)]
    pub ignore_eos: bool,
    /// Ask a vLLM-like server (openai, openai-chat, openai-responses) for its own account of
    /// each request: sends `include_metrics: true` (vLLM answers with a `metrics` object when
    /// started with --enable-per-request-metrics). llama.cpp, TGI and SGLang send theirs
    /// unasked.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long)]
    pub server_timings: bool,
    /// A workload mix: a JSON file of classes, each with its weight (or share), vLLM's
    /// `priority`, a tenant id sent in a header, its lengths and SLOs; the report gives each
    /// class's goodput, SLO attainment and token share, and Jain's fairness index.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "FILE")]
    pub mix: Option<PathBuf>,
    /// With --mix: while the load runs, send a probe every 1/R s (at most 100 a second),
    /// each class's first request in turn, outside --max-concurrency; each class's probe
    /// latency is reported beside its own.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_name = "R")]
    pub probe_request_rate: Option<f64>,
    /// With --mix: after the mixed run, run each class alone at its share of the load (its
    /// requests only, the same seed; saved as <stem>.alone<N>.json): each class's latency
    /// alone and its interference (mixed ÷ alone) are added to the mixed run's result.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long)]
    pub mix_alone: bool,
    /// Metrics that get percentile lines: comma-separated ttft,tpot,itl,e2el.
    #[arg(help_heading = heading::OUTPUT, long, default_value = "ttft,tpot,itl", value_delimiter = ',')]
    pub percentile_metrics: Vec<Metric>,
    /// Percentiles to report, comma-separated (e.g. 50,75,90,95,99).
    #[arg(help_heading = heading::OUTPUT, long, default_value = "99", value_delimiter = ',', value_parser = parse_percentile)]
    pub metric_percentiles: Vec<f64>,
    /// Goodput SLOs, e.g. `--goodput ttft:500 tpot:50`: a request is good when it meets all;
    /// `valid_output:1` (with --structured-output): and its answer is valid; `jct:MS` (a
    /// dataset of jobs): a completed job is good when it took at most MS.
    #[arg(help_heading = heading::OUTPUT, long, num_args = 1..)]
    pub goodput: Vec<structured::GoodputTerm>,
    /// Directory for the result and records files.
    #[arg(help_heading = heading::OUTPUT, long, default_value = "servebench-results")]
    pub result_dir: PathBuf,
    /// Result file name (default: {backend}-{rate}qps[-concurrency{N}]-{model}-{date}.json).
    #[arg(help_heading = heading::OUTPUT, long)]
    pub result_filename: Option<String>,
    /// Accepted for vLLM compatibility: results are always saved.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long)]
    pub save_result: bool,
    /// Accepted for vLLM compatibility: the per-request arrays vLLM saves with it (ttfts, itls,
    /// generated lengths, errors) are always saved, up to the document's cap.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long)]
    pub save_detailed: bool,
    /// Keep each request's generated text in the records and result.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long)]
    pub save_generated_text: bool,
    /// auto: find the run's steady window (MSER-5 on its throughput, in-flight, TTFT and TPOT
    /// series) and report its figures with batch-means 95% intervals beside the whole run's,
    /// or say it never settled; off: the whole run only.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_enum, default_value_t = SteadyState::Auto)]
    pub steady_state: SteadyState,
    /// Also every figure per window of S seconds from the measured window's start: requests,
    /// throughput, TTFT/ITL/E2EL percentiles, goodput, errors, in flight, the server's queue
    /// (the result's `slices`, a table in the report, charts in the HTML page; S from 0.01 to
    /// 604800).
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_name = "S", value_parser = parse_time_slice)]
    pub time_slice: Option<f64>,
    /// Also the run's figures per bucket of each request's length, beside the whole run's:
    /// input_len:0,512,2048,8192 (or output_len:...) is 0-511, 512-2047, 2048-8191 and 8192+
    /// tokens (the result's `buckets`, a block in the report; at most 32 edges).
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_name = "FIELD:EDGES", value_parser = parse_bucket_by)]
    pub bucket_by: Option<crate::config::buckets::BucketBy>,
    /// Replace existing result and records files of the same name (otherwise the run refuses
    /// to start, before it touches any file).
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long)]
    pub overwrite: bool,
    /// Print nothing but errors.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, short)]
    pub quiet: bool,
    /// No live dashboard on a terminal: the one-line progress bar.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long)]
    pub no_tui: bool,
    /// Print only the table at the end (a sweep's or --stages' steps, --repeat's spread), not
    /// each run's report; refused for a single run.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long)]
    pub summary_only: bool,
    /// Sample the server's Prometheus metrics during the run and summarize them in the report
    /// (vLLM, SGLang, TGI, llama.cpp names). Without a URL: /metrics at --base-url.
    /// Repeatable: a DCGM exporter's URL adds GPU power (joules per output token) and
    /// utilisation.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_name = "URL", num_args = 0..=1, default_missing_value = "",
          action = clap::ArgAction::Append, value_parser = parse_scrape_url)]
    pub scrape_metrics: Vec<String>,
    /// Seconds between two metric scrapes (with --scrape-metrics).
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_name = "SECONDS", default_value = "1", value_parser = parse_interval)]
    pub scrape_interval: Duration,
    /// Also write each run's records in this format at its end, from its .records.jsonl
    /// (kept, the crash-safe source): parquet writes <stem>.records.parquet (docs/report.md).
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_enum, default_value = "jsonl")]
    pub records_format: export::RecordsFormat,
    /// Also write the run, or the sweep's or stages' steps, as llm-d's Benchmark Report
    /// (version 0.2; a JSON array of reports for several steps) once saved. Without a PATH:
    /// <result stem>.llm-d.json beside the result.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_name = "PATH", num_args = 0..=1, default_missing_value = "")]
    pub save_llm_d: Option<String>,
    #[command(flatten)]
    pub tags: tags::TagArgs,
    #[command(flatten)]
    pub shape: shape::ShapeArgs,
    /// Per-request time limit, seconds.
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, default_value_t = 21600.0)]
    pub timeout: f64,
    /// After Ctrl-C, seconds in-flight requests may still finish.
    #[arg(help_heading = heading::LIMITS, hide_short_help = true, long, default_value_t = 10.0)]
    pub grace: f64,
    #[command(flatten)]
    pub limits: limits::LimitsArgs,
    /// Preset of the built-in server (only without --base-url): exact, tgi-llama-405b,
    /// vllm-llama-405b, vllm-llama-8b-rtx4090 (default), llamacpp-llama-8b-rtx4090.
    #[arg(help_heading = heading::SIMULATOR, long)]
    pub sim_preset: Option<Preset>,
    /// The built-in server's clock runs K times faster than real time (only without
    /// --base-url). Default 1.
    #[arg(help_heading = heading::SIMULATOR, long, value_parser = parse_time_scale)]
    pub time_scale: Option<f64>,
    /// Skip the pre-flight request that checks the server and endpoint before the run.
    #[arg(help_heading = heading::ADVANCED, hide_short_help = true, long)]
    pub no_preflight: bool,
    /// Threads that drive the load and read the streams, each with its own runtime,
    /// connections and share of the schedule (every Nth request, as --shard splits it). One
    /// is the cheapest per streamed event and reads about 50,000 events/s on time; auto: one
    /// per 50,000 expected events/s (rate × output tokens, or 100/s per stream), at most
    /// the cores. A client-bound verdict names the number to use.
    #[arg(help_heading = heading::ADVANCED, hide_short_help = true, long, default_value = "1")]
    pub client_threads: crate::config::threads::ClientThreads,
    /// Bind each new connection to one of these local addresses in turn (comma-separated,
    /// at most 64, one family), e.g. 127.0.0.2,127.0.0.3: each address brings its own ~64,500
    /// ephemeral ports to the server's one address and port. Default: the kernel's choice.
    #[arg(help_heading = heading::ADVANCED, hide_short_help = true, long, value_name = "ADDRS", value_parser = parse_source_addresses)]
    pub source_addresses: Option<List<std::net::IpAddr>>,
    /// Send only shard INDEX of COUNT of the run's schedule (requests whose number is INDEX
    /// mod COUNT; the concurrency cap split between shards). In a Kubernetes Indexed Job:
    /// `--shard $(JOB_COMPLETION_INDEX)/4`. Merge the shards with `servebench merge`.
    #[arg(help_heading = heading::ADVANCED, hide_short_help = true, long, value_name = "INDEX/COUNT")]
    pub shard: Option<Shard>,
    /// Start the measured load at this wall-clock time (RFC 3339, e.g. 2026-05-01T12:00:00Z),
    /// after the workload, pre-flight and warm-ups: give every shard the same time.
    #[arg(help_heading = heading::ADVANCED, hide_short_help = true, long, value_name = "TIME", value_parser = parse_start_at)]
    pub start_at: Option<time::OffsetDateTime>,
    #[command(flatten)]
    pub trace: trace::TraceArgs,
    #[command(flatten)]
    pub hooks: hooks::HookArgs,
    #[command(flatten)]
    pub autoscale: autoscale::AutoscaleArgs,
    #[command(flatten)]
    pub adaptive: adaptive::AdaptiveArgs,
    #[command(flatten)]
    pub endpoints: endpoints::EndpointArgs,
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
    /// The HTML page's request timeline: a gap between output chunks longer than this many
    /// milliseconds is marked slow (in black).
    #[arg(long, value_name = "MS", default_value_t = crate::views::timeline::DEFAULT_SLOW_ITL_MS, value_parser = parse_threshold_ms)]
    pub timeline_itl_ms: f64,
    /// A result: re-slice it from its records file into windows of S seconds (as run's
    /// --time-slice) and print those slices; with --format csv, a row per window.
    #[arg(long, value_name = "S", value_parser = parse_time_slice)]
    pub time_slice: Option<f64>,
    /// Re-judge a saved result's (or each sweep step's) goodput and SLO attainment under these
    /// SLOs from its records file, e.g. `--goodput ttft:500 tpot:50`; the figures are labelled
    /// re-judged.
    #[arg(long, num_args = 1.., value_name = "SLO")]
    pub goodput: Vec<crate::config::Slo>,
    /// A result of an autoscaler benchmark (`run --load-shape`, `--replicas-*`): its windows'
    /// load, attainment and replicas, a row per window (with --format csv).
    #[arg(long)]
    pub autoscale: bool,
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
    /// How many accelerators (GPUs) served the imported runs, kept in the document: output
    /// tokens/s per GPU in plot's Pareto front, compare and plan (default: unknown).
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::config::tags::MAX_GPUS)))]
    pub gpus: Option<u32>,
}
