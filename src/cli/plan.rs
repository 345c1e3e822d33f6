//! `run`'s and `search`'s flags → one final [`RunPlan`], in one step (as ripgrep turns its
//! low-level args into high-level ones). Every rule between flags lives here, with a typed
//! error ([`PlanError`]); the config is validated once (`ValidConfig::new`), each sweep step's
//! too; every file the session will write is checked against `--overwrite` once; the
//! tokenizer and chat template are loaded once. Nothing changes the plan afterwards.
//!
//! The steps, in order: the flags' own rules ([`check`], no I/O: the mode, `--summary-only`,
//! `--metadata`, the simulator's flags); then what needs the outside: the built-in simulator
//! is started (its address, port 0, is part of the config) or a given server is asked what
//! the config cannot know (`drive::plan::ask_server`); then the config is built and
//! validated, the mode's steps derived, the files checked and the text loaded. This is the one
//! place in `cli` that does I/O.

use std::time::Duration;

use super::error::{FileError, PlanError};
use super::structured;
use super::{RunArgs, SearchArgs};
use crate::config::error::ConfigError;
use crate::config::search::SearchSpec;
use crate::config::sweep::{LoadParameter, SweepValue};
use crate::config::url::redact_url;
use crate::config::valid::ValidConfig;
use crate::config::{LoadSpec, RunConfig, ScrapeSpec, WorkloadSpec};
use crate::drive::plan::{ask_server, check_targets, default_stem, Mode, Output, RunPlan, Text};
use crate::measure::client::Secrets;
use crate::sim::{Preset, SimConfig, SimServer};

/// A plan, with what runs beside it and how it is shown.
pub struct Planned {
    pub plan: RunPlan,
    /// The built-in simulator, started while planning; shut it down after the session.
    pub simulator: Option<SimServer>,
    pub show: Show,
    /// Where each run's own spans go once it is saved (`--otel-file`, `--otel-endpoint`).
    pub otel: crate::drive::otel::OtelTarget,
    /// Where `--save-llm-d` writes llm-d's Benchmark Report once the session is saved.
    pub llm_d: Option<std::path::PathBuf>,
}

/// How a session is shown (`--quiet`, `--no-tui`, `--summary-only`).
#[derive(Clone, Copy, Debug)]
pub struct Show {
    pub quiet: bool,
    pub no_tui: bool,
    pub summary_only: bool,
}

/// What the flags ask for, before there is a config to derive steps from.
#[derive(Debug, PartialEq)]
pub enum Asked {
    Single,
    Repeat(u16),
    Stages,
    Sweep(LoadParameter, Vec<SweepValue>),
    Search(SearchSpec),
}

/// What the flags' own rules leave: the mode asked for, and the built-in simulator's
/// settings (`None` with `--base-url`).
pub struct Checked {
    pub asked: Asked,
    pub sim: Option<SimConfig>,
}

/// `servebench run`'s plan.
pub async fn run(args: RunArgs) -> Result<Planned, PlanError> {
    let checked = check(&args, None)?;
    plan(args, checked).await
}

/// `servebench search`'s plan.
pub async fn search(args: SearchArgs) -> Result<Planned, PlanError> {
    let checked = check(&args.run, Some(&args))?;
    plan(args.run, checked).await
}

/// The rules between flags that need nothing from outside: what `args` ask for (a search when
/// `search` is given), or the first rule they break.
pub fn check(args: &RunArgs, search: Option<&SearchArgs>) -> Result<Checked, PlanError> {
    let asked = match search {
        Some(s) => Asked::Search(s.spec()?),
        None => args.asked()?,
    };
    if args.summary_only && asked == Asked::Single {
        return Err(PlanError::SummaryOfOne);
    }
    if args.mix_alone && (asked != Asked::Single || args.start_at.is_some()) {
        return Err(PlanError::MixAloneNotARun);
    }
    if args.save_llm_d.is_some() && matches!(asked, Asked::Search(_)) {
        return Err(PlanError::LlmDSearch);
    }
    args.tags.check()?;
    (args.adaptive).check(asked == Asked::Single, search.is_some())?;
    super::threads::check(args.client_threads, crate::drive::lanes::cores())?;
    let sim = args.sim_config()?;
    Ok(Checked { asked, sim })
}

async fn plan(args: RunArgs, Checked { asked, sim }: Checked) -> Result<Planned, PlanError> {
    let urls = args.endpoints.urls(&args.base_url)?;
    let mut secrets = args.secrets();
    (secrets.base_url, secrets.more_base_urls) =
        (urls.first().cloned(), urls[1.min(urls.len())..].to_vec());
    let (simulator, base_url) = match (urls.first(), sim) {
        (Some(url), _) => (None, url.clone()),
        (None, sim_config) => {
            let addr = ([127, 0, 0, 1], 0).into();
            let sim = crate::sim::spawn_on_own_runtime(sim_config.unwrap_or_default(), addr)
                .await
                .map_err(PlanError::SimStart)?;
            let url = sim.base_url();
            (Some(sim), url)
        }
    };
    let scrape = args.scrape_spec(&base_url);
    let mut config = args.config(base_url, simulator.is_some())?;
    config.routing = args.endpoints.routing(&urls);
    let config = ValidConfig::new(ask_server(config, &secrets).await)?;
    let date = crate::measure::clock::Clock::start().started_at_compact();
    let stem = match (&args.result_filename, &asked) {
        (Some(name), _) => name.strip_suffix(".json").unwrap_or(name).to_string(),
        (None, Asked::Search(_)) => format!("search-{}", default_stem(&config, &date)),
        (None, _) => default_stem(&config, &date),
    };
    let mode = mode(&args, asked, &config)?;
    let output = Output {
        dir: args.result_dir.clone(),
        stem,
        overwrite: args.overwrite,
        records_parquet: args.records_format == super::export::RecordsFormat::Parquet,
    };
    check_targets(&output, &mode, &config)?;
    crate::results::document::refuse_existing(args.overwrite, args.trace.otel_file.iter())?;
    let llm_d = (args.save_llm_d.as_deref()).map(|p| match p.is_empty() {
        true => output.dir.join(format!("{}.llm-d.json", output.stem)),
        false => std::path::PathBuf::from(p),
    });
    crate::results::document::refuse_existing(args.overwrite, llm_d.iter())?;
    let text = Text::resolve(&config)?;
    Ok(Planned {
        plan: RunPlan {
            config,
            mode,
            text,
            secrets,
            scrape,
            output,
            preflight: !args.no_preflight,
            client_threads: args.client_threads,
            stop_saturated: args.adaptive.stop_saturated(),
        },
        simulator,
        show: Show {
            quiet: args.quiet,
            no_tui: args.no_tui,
            summary_only: args.summary_only,
        },
        otel: args.trace.otel(),
        llm_d,
    })
}

/// A `--json-schema-path`, `--tools-path` or `--structured-output-grammar` file's text, at most
/// `config::structured::MAX_SCHEMA_FILE_BYTES` of it (or why it cannot be read).
fn read_structured(path: &std::path::Path) -> Result<String, FileError> {
    use crate::config::structured::MAX_SCHEMA_FILE_BYTES;
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_SCHEMA_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SCHEMA_FILE_BYTES {
        return Err(FileError::TooLong(MAX_SCHEMA_FILE_BYTES));
    }
    String::from_utf8(bytes).map_err(|_| FileError::NotUtf8)
}

/// The mode `asked` for, its steps derived from `config`.
fn mode(args: &RunArgs, asked: Asked, config: &ValidConfig) -> Result<Mode, PlanError> {
    Ok(match asked {
        Asked::Single => Mode::Single {
            start_at: args.start_at,
        },
        Asked::Repeat(times) => Mode::Repeat { times },
        Asked::Stages => Mode::Stages {
            start_at: args.start_at,
        },
        Asked::Sweep(param, values) => Mode::Sweep {
            param,
            steps: sweep_steps(config, param, &values)?,
            cooldown: Duration::try_from_secs_f64(args.cooldown)
                .map_err(|_| PlanError::Cooldown(args.cooldown))?,
        },
        Asked::Search(spec) => Mode::Search { spec },
    })
}

/// Each step of a sweep over `param`, its config validated: a value given twice is refused
/// (each step is its own run and file), and so is a step that breaks a rule.
pub fn sweep_steps(
    config: &ValidConfig,
    param: LoadParameter,
    values: &[SweepValue],
) -> Result<Vec<(SweepValue, ValidConfig)>, PlanError> {
    if let Some((i, v)) = (values.iter().enumerate()).find(|(i, v)| values[..*i].contains(v)) {
        let first = values.iter().position(|x| x == v).map_or(0, |p| p + 1);
        return Err(PlanError::Config(
            crate::config::error::ConfigError::invalid(
                format!("--{}", param.as_str().replace('_', "-")),
                format!(
                    "{v} is given twice (steps {first} and {}): each step is its own run and file",
                    i + 1
                ),
            ),
        ));
    }
    let step = |&v: &SweepValue| Ok((v, config.step(param, v)?));
    values.iter().map(step).collect()
}

impl RunArgs {
    /// What the flags ask for: the swept parameter and its values when one option was given
    /// several, `--stages`, `--repeat`, or one run; the error when they combine wrongly.
    pub fn asked(&self) -> Result<Asked, PlanError> {
        let counts = |v: &[u64]| v.iter().map(|&n| SweepValue::Count(n)).collect::<Vec<_>>();
        let mut swept = Vec::new();
        if self.num_prompts.0.len() > 1 {
            swept.push((LoadParameter::NumPrompts, counts(&self.num_prompts.0)));
        }
        if let Some(c) = self.max_concurrency.as_ref().filter(|c| c.0.len() > 1) {
            swept.push((LoadParameter::MaxConcurrency, counts(&c.0)));
        }
        if let Some(p) = self.dataset.num_prefixes.as_ref().filter(|p| p.0.len() > 1) {
            swept.push((LoadParameter::NumPrefixes, counts(&p.0)));
        }
        if let Some(g) = self.shape.user_gap.as_ref().filter(|g| g.0.len() > 1) {
            let gaps = g.0.iter().map(|&s| SweepValue::Seconds(s));
            swept.push((LoadParameter::UserGap, gaps.collect()));
        }
        if self.request_rate.0.len() > 1 {
            let rates = (self.request_rate.0.iter()).map(|&r| SweepValue::Rate(r));
            swept.push((LoadParameter::RequestRate, rates.collect()));
        }
        let sweep = match swept.len() {
            0 | 1 => swept.pop(),
            _ => return Err(PlanError::SweepOfTwo),
        };
        let synced = self.shard.is_some() || self.start_at.is_some();
        if sweep.is_some() && synced {
            return Err(PlanError::ShardedSweep);
        }
        let staged = !self.shape.stages.is_empty();
        if staged && (sweep.is_some() || self.repeat > 1) {
            return Err(PlanError::StagesNotARun);
        }
        if self.repeat > 1 && (sweep.is_some() || synced) {
            return Err(PlanError::RepeatNotARun);
        }
        Ok(match sweep {
            Some((param, values)) => Asked::Sweep(param, values),
            None if staged => Asked::Stages,
            None if self.repeat > 1 => Asked::Repeat(self.repeat),
            None => Asked::Single,
        })
    }

    /// The run's config, with `base_url` set to `server` (the given one or the simulator's);
    /// checked by `ValidConfig::new`; an error names a dataset flag that the chosen dataset
    /// lacks or has no setting for.
    pub fn config(&self, base_url: String, simulated: bool) -> Result<RunConfig, ConfigError> {
        let cfg = self.limits.apply(RunConfig {
            backend: self.backend,
            base_url: redact_url(&base_url),
            endpoint: redact_url(
                self.endpoint
                    .as_deref()
                    .unwrap_or(self.backend.default_endpoint()),
            ),
            model: self.model.clone(),
            header_names: self.headers.iter().map(|(k, _)| k.clone()).collect(),
            extra_body: asking_metrics(self.extra_body.clone(), self.server_timings, self.backend),
            ignore_eos: self.ignore_eos,
            insecure: self.insecure,
            load: LoadSpec {
                num_prompts: self.num_prompts.0[0],
                request_rate: self.request_rate.0[0],
                burstiness: self.burstiness,
                max_concurrency: self.max_concurrency.as_ref().map(|c| c.0[0]),
                num_warmups: self.num_warmups,
                seed: self.seed,
                timeout_s: self.timeout,
                grace_s: self.grace,
                shard: self.shard,
                source_addresses: (self.source_addresses.as_ref())
                    .map_or(Vec::new(), |l| l.0.clone()),
                ..LoadSpec::default()
            },
            workload: WorkloadSpec {
                dataset: self.dataset.dataset(&self.shape)?,
                tokenizer: self.tokenizer.clone().filter(|t| t != "words"),
            },
            metric_percentiles: self.metric_percentiles.clone(),
            percentile_metrics: self.percentile_metrics.clone(),
            goodput: structured::slos(&self.goodput),
            goodput_valid_output: structured::wants_valid_output(&self.goodput),
            job_goodput: structured::job_slos(&self.goodput),
            simulated,
            save_generated_text: self.save_generated_text,
            steady_state: self.steady_state == super::SteadyState::Auto,
            time_slice_s: self.time_slice,
            bucket_by: self.bucket_by.clone(),
            time_scale: if simulated {
                self.time_scale.unwrap_or(1.0)
            } else {
                1.0
            },
            sim_preset: simulated.then(|| {
                self.sim_preset
                    .unwrap_or(Preset::RUN_DEFAULT)
                    .name()
                    .to_string()
            }),
            tags: self.tags.tags(),
            mix: self.mix.as_deref().map(read_mix).transpose()?,
            probe_request_rate: self.probe_request_rate,
            mix_alone: (self.mix_alone).then_some(crate::config::mix::MixAlone::EachClass),
            structured: self.structured.structured(read_structured)?,
            ..RunConfig::default()
        });
        let cfg = self.trace.apply(self.shape.apply(self.request.apply(cfg)));
        let cfg = self.autoscale.apply(self.hooks.apply(cfg)?)?;
        Ok(self.adaptive.apply(cfg))
    }

    /// What `--scrape-metrics` asks for, with the default URL resolved against `base_url` (the
    /// given server or the simulator's); `None` without the flag.
    pub fn scrape_spec(&self, base_url: &str) -> Option<ScrapeSpec> {
        let mut urls = self.scrape_metrics.iter().map(|u| match u.as_str() {
            "" => format!("{}/metrics", base_url.trim_end_matches('/')),
            u => u.to_string(),
        });
        Some(ScrapeSpec {
            url: urls.next()?,
            more_urls: urls.collect(),
            interval: self.scrape_interval,
            insecure: self.insecure,
        })
    }

    /// The built-in server's configuration, or `None` when a server was given; an error when
    /// simulator flags come with `--base-url`, or a given server comes without `--tokenizer`.
    pub fn sim_config(&self) -> Result<Option<SimConfig>, PlanError> {
        if !self.base_url.is_empty() || self.endpoints.has_file() {
            if self.sim_preset.is_some() {
                return Err(PlanError::SimFlagWithServer("--sim-preset"));
            }
            if self.time_scale.is_some() {
                return Err(PlanError::SimFlagWithServer("--time-scale"));
            }
            if self.tokenizer.is_none() {
                return Err(PlanError::TokenizerRequired);
            }
            return Ok(None);
        }
        let mut cfg = SimConfig::from_preset(self.sim_preset.unwrap_or(Preset::RUN_DEFAULT));
        cfg.time_scale = self.time_scale.unwrap_or(1.0);
        // The built-in server serves `--model` and the adapters of `--lora-modules`, all
        // resident (`servebench sim --max-loras` models the swaps).
        let adapters: Vec<String> = (self.request.lora_modules.iter())
            .map(|m| m.name.clone())
            .collect();
        if !adapters.is_empty() {
            cfg.model = self.model.clone();
            cfg.lora = Some(crate::sim::LoraConfig {
                max_resident: adapters.len(),
                adapters,
                load_time: std::time::Duration::ZERO,
            });
        }
        cfg.validate()
            .map_err(|e| PlanError::Simulator(e.to_string()))?;
        Ok(Some(cfg))
    }

    /// The user's secrets: kept out of every saved or printed text, used only to send.
    pub fn secrets(&self) -> Secrets {
        Secrets {
            api_key: self.api_key.clone(),
            headers: self.headers.clone(),
            base_url: self.base_url.first().cloned(),
            endpoint: self.endpoint.clone(),
            more_base_urls: self.base_url.iter().skip(1).cloned().collect(),
        }
    }
}

impl SearchArgs {
    /// The search's bounds and stopping rule; the error when a flag is out of its range, no
    /// SLO is given, or the run is to be sharded.
    pub fn spec(&self) -> Result<SearchSpec, PlanError> {
        if !(self.target > 0.0 && self.target <= 1.0) {
            return Err(PlanError::Target(self.target));
        }
        let (start, max) = (self.start, self.max);
        if !(start > 0.0 && start.is_finite() && max >= start && max.is_finite()) {
            return Err(PlanError::StartMax);
        }
        if !(self.precision > 0.0 && self.precision < 1.0) {
            return Err(PlanError::Precision(self.precision));
        }
        // A search over prefixes judges the hit rates; its SLOs are optional. It judges
        // requests: a job SLO (`jct:MS`) alone is not one of its SLOs.
        let request_slos =
            (self.run.goodput.iter()).any(|t| !matches!(t, structured::GoodputTerm::Job(_)));
        if !request_slos && self.by != LoadParameter::NumPrefixes {
            return Err(PlanError::SearchWithoutSlo);
        }
        if self.by == LoadParameter::NumPrefixes
            && self.run.dataset.dataset_name != super::dataset::DatasetName::Prefix
        {
            return Err(PlanError::PrefixSearchDataset);
        }
        if self.run.shard.is_some() || self.run.start_at.is_some() {
            return Err(PlanError::ShardedSearch);
        }
        Ok(SearchSpec {
            by: self.by,
            start,
            max,
            precision: self.precision,
            target: self.target,
            max_probes: self.max_probes,
            stop_saturated: self.run.adaptive.stop_saturated(),
        })
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

/// Reads `--mix FILE` (at most `mix::MAX_FILE_BYTES`) and parses it; an error names the file.
fn read_mix(path: &std::path::Path) -> Result<crate::config::mix::Mix, ConfigError> {
    use std::io::Read as _;
    let name = path.display().to_string();
    let cannot =
        |e: std::io::Error| ConfigError::invalid("--mix", format!("cannot read {name}: {e}"));
    let max = crate::config::mix::MAX_FILE_BYTES;
    let mut text = String::new();
    let file = std::fs::File::open(path).map_err(cannot)?;
    file.take(max + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    if text.len() as u64 > max {
        return Err(ConfigError::invalid(
            "--mix",
            format!("{name} is larger than {max} bytes"),
        ));
    }
    crate::config::mix::Mix::from_json(&text, &name)
}

/// `extra_body` with vLLM's `include_metrics: true` when `--server-timings` asks a backend that
/// takes it (the OpenAI APIs vLLM serves); unchanged otherwise.
fn asking_metrics(
    extra: Option<serde_json::Value>,
    asked: bool,
    backend: crate::config::BackendKind,
) -> Option<serde_json::Value> {
    use crate::config::BackendKind::{Openai, OpenaiChat, OpenaiResponses};
    if !asked || !matches!(backend, Openai | OpenaiChat | OpenaiResponses) {
        return extra;
    }
    let mut body = extra.unwrap_or_else(|| serde_json::json!({}));
    body["include_metrics"] = serde_json::Value::Bool(true);
    Some(body)
}
