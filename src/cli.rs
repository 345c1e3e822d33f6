//! The command line (clap derive). Flags keep the names of vLLM's `benchmark_serving.py`
//! where the meaning is the same, so the seeds' commands carry over. This module turns flags
//! into `config` and `sim` values; it does no I/O.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::client::Secrets;
use crate::config::{BackendKind, LoadSpec, Metric, RequestRate, RunConfig, Slo, WorkloadSpec};
use crate::sim::{FaultConfig, SimConfig};

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
    Sim(SimArgs),
    /// Print the report of a saved result, sweep or import (or write it as HTML).
    Report(ReportArgs),
    /// Compare results, sweeps or imports side by side, step by step.
    Compare(CompareArgs),
    /// Draw charts (SVG, PNG) of results, sweeps or imports.
    Plot(PlotArgs),
    /// Convert vLLM text/JSON or llmperf JSON results into servebench's imported document.
    Import(ImportArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Server API: openai (aliases vllm, sglang), openai-chat, tgi, llamacpp.
    #[arg(long, default_value = "openai", value_parser = parse_backend)]
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
    /// API key, sent as a bearer token.
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
    /// Number of measured requests.
    #[arg(long, alias = "num-prompt", default_value_t = 1000)]
    pub num_prompts: u64,
    /// Requests per second ('inf': all at once). Finite rates are Poisson (or gamma, see --burstiness).
    #[arg(long, default_value = "inf", value_parser = parse_rate)]
    pub request_rate: RequestRate,
    /// Gamma shape of inter-arrival times (1 = Poisson; lower = burstier).
    #[arg(long, default_value_t = 1.0)]
    pub burstiness: f64,
    /// At most this many requests in flight.
    #[arg(long)]
    pub max_concurrency: Option<u64>,
    /// Requests sent one at a time before the run, excluded from every statistic.
    #[arg(long, default_value_t = 0)]
    pub num_warmups: u64,
    /// Seed for prompts and arrival times.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Dataset (only `random` for now).
    #[arg(long, default_value = "random", value_parser = ["random"])]
    pub dataset_name: String,
    /// Prompt length, tokens.
    #[arg(long, alias = "random-input-len", default_value_t = 128)]
    pub input_len: u64,
    /// Max output tokens per request.
    #[arg(long, alias = "random-output-len", default_value_t = 128)]
    pub output_len: u64,
    /// Metrics that get percentile lines: comma-separated ttft,tpot,itl,e2el.
    #[arg(long, default_value = "ttft,tpot,itl", value_delimiter = ',', value_parser = parse_metric)]
    pub percentile_metrics: Vec<Metric>,
    /// Percentiles to report, comma-separated (e.g. 50,75,90,95,99).
    #[arg(long, default_value = "99", value_delimiter = ',', value_parser = parse_percentile)]
    pub metric_percentiles: Vec<f64>,
    /// Goodput SLOs, e.g. `--goodput ttft:500 tpot:50`: a request is good when it meets all.
    #[arg(long, num_args = 1.., value_parser = parse_slo)]
    pub goodput: Vec<Slo>,
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
    /// Skip the pre-flight request that checks the server and endpoint before the run.
    #[arg(long)]
    pub no_preflight: bool,
    /// After Ctrl-C, seconds in-flight requests may still finish.
    #[arg(long, default_value_t = 10.0)]
    pub grace: f64,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

impl RunArgs {
    /// The run's config, with `base_url` set to `server` (the given one or the simulator's).
    pub fn config(&self, base_url: String, simulated: bool) -> RunConfig {
        RunConfig {
            backend: self.backend,
            base_url,
            endpoint: self
                .endpoint
                .clone()
                .unwrap_or_else(|| self.backend.default_endpoint().to_string()),
            model: self.model.clone(),
            header_names: self.headers.iter().map(|(k, _)| k.clone()).collect(),
            extra_body: self.extra_body.clone(),
            ignore_eos: self.ignore_eos,
            insecure: self.insecure,
            load: LoadSpec {
                num_prompts: self.num_prompts,
                request_rate: self.request_rate,
                burstiness: self.burstiness,
                max_concurrency: self.max_concurrency,
                num_warmups: self.num_warmups,
                seed: self.seed,
                timeout_s: self.timeout,
                grace_s: self.grace,
            },
            workload: WorkloadSpec {
                dataset: self.dataset_name.clone(),
                input_len: self.input_len,
                output_len: self.output_len,
            },
            metric_percentiles: self.metric_percentiles.clone(),
            percentile_metrics: self.percentile_metrics.clone(),
            goodput: self.goodput.clone(),
            simulated,
            save_generated_text: self.save_generated_text,
        }
    }

    pub fn secrets(&self) -> Secrets {
        Secrets {
            api_key: self.api_key.clone(),
            headers: self.headers.clone(),
        }
    }
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
}

impl SimArgs {
    pub fn config(&self) -> Result<SimConfig, String> {
        let dur = |name: &str, ms: f64| {
            Duration::try_from_secs_f64(ms / 1000.0)
                .map_err(|_| format!("invalid --{name}: {ms} is not a duration"))
        };
        let cfg = SimConfig {
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
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A result, sweep or imported document (or a file `servebench import` reads).
    pub file: PathBuf,
    /// Write one self-contained HTML page (tables and inline SVG charts) to this file.
    #[arg(long, value_name = "OUT.html")]
    pub html: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Results, sweeps or imports; the first is the baseline (A).
    #[arg(required = true, num_args = 2..)]
    pub files: Vec<PathBuf>,
    /// Print Markdown tables instead of aligned text.
    #[arg(long)]
    pub markdown: bool,
    /// Only these metrics (vLLM key names, comma-separated, e.g. output_throughput,p99_ttft_ms).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
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
    #[arg(long, default_value = "both", value_parser = ["svg", "png", "both"])]
    pub format: String,
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

fn parse_backend(s: &str) -> Result<BackendKind, String> {
    s.parse()
}

fn parse_rate(s: &str) -> Result<RequestRate, String> {
    s.parse()
}

fn parse_slo(s: &str) -> Result<Slo, String> {
    s.parse()
}

fn parse_header(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' is not NAME:VALUE"))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(format!("'{s}' has an empty header name"));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

fn parse_json_object(s: &str) -> Result<serde_json::Value, String> {
    let v: serde_json::Value =
        serde_json::from_str(s).map_err(|e| format!("not valid JSON: {e}"))?;
    if !v.is_object() {
        return Err("must be a JSON object, e.g. '{\"top_k\": 5}'".into());
    }
    Ok(v)
}

fn parse_metric(s: &str) -> Result<Metric, String> {
    s.parse()
}

fn parse_percentile(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!("'{s}' is not a percentile in (0, 100]")),
    }
}
