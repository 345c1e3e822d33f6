//! What a session runs, resolved once: [`RunPlan`]. `cli::plan` makes it from the command
//! line (every rule between flags is checked there, and the config validated, once); the
//! session (`session.rs`) runs it; nothing changes it in between.
//!
//! - [`Mode`]: one run (a shard of one with `--shard`), `--repeat K`, `--stages`, a sweep over
//!   one load parameter, or a search.
//! - [`Text`]: the prompt tokenizer and the model's chat template, loaded once for every run of
//!   the session.
//! - [`Output`]: where every file goes; [`RunPlan::targets`] lists them all, so they are
//!   checked against `--overwrite` once, before anything runs.
//! - [`ask_server`]: what only the server can say before the config is final (an external
//!   simulator's clock speed).
//!
//! A trace's request count is the one figure a plan cannot know (its lines are read when the
//! run builds its requests, once): the plan's config keeps `--num-prompts` as the most lines
//! to replay, and the run writes the count into the config its result saves (`drive::run`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::config::search::SearchSpec;
use crate::config::sweep::{LoadParameter, SweepValue};
use crate::config::valid::ValidConfig;
use crate::config::{RunConfig, ScrapeSpec};
use crate::drive::error::RunError;
use crate::measure::client::{Client, Secrets};
use crate::results::document::refuse_existing;
use crate::results::error::ResultsError;
use crate::tokenizer::chat_template::ChatTemplate;
use crate::workload::PromptTokenizer;

/// Everything a session needs, final.
pub struct RunPlan {
    /// The run's config, validated: a single run's, a sweep's or search's base (each step's
    /// is derived from it, see [`Mode`]).
    pub config: ValidConfig,
    pub mode: Mode,
    pub text: Text,
    /// Where requests go and with which credentials (never saved).
    pub secrets: Secrets,
    /// `--scrape-metrics`, its default URL resolved against the server's.
    pub scrape: Option<ScrapeSpec>,
    pub output: Output,
    /// Send the pre-flight request (before each run; before a sweep's or search's first).
    pub preflight: bool,
    /// `--client-threads`: the threads that drive each run's load (`drive::lanes`).
    pub client_threads: crate::config::threads::ClientThreads,
    /// `--stop-saturated on`: sweeps and searches stop escalating at saturation
    /// (`results::saturated`); the higher steps are saved as skipped.
    pub stop_saturated: bool,
}

/// What a session runs.
#[derive(Clone, Debug)]
pub enum Mode {
    /// One run; with `--shard` (in the config's load) one shard of a run. `--start-at`: when
    /// its measured load starts.
    Single {
        start_at: Option<time::OffsetDateTime>,
    },
    /// The same run `times` (2 or more) times, and the spread across them.
    Repeat { times: u16 },
    /// One run whose `--stages` are split into a step each afterwards.
    Stages {
        start_at: Option<time::OffsetDateTime>,
    },
    /// One run per value of `param`, each step's config validated by the plan.
    Sweep {
        param: LoadParameter,
        steps: Vec<(SweepValue, ValidConfig)>,
        /// Between two steps.
        cooldown: Duration,
    },
    /// The highest load meeting the SLOs; each probe's config is derived from the plan's and
    /// validated as the probe is made.
    Search { spec: SearchSpec },
}

/// How text becomes tokens for every run of a session, resolved once.
#[derive(Clone)]
pub struct Text {
    pub tokenizer: PromptTokenizer,
    /// The model's chat template, for conversations sent to an API that takes a prompt.
    pub chat_template: Option<Arc<ChatTemplate>>,
}

impl Text {
    /// Loads `cfg`'s tokenizer and, when its runs need one, the chat template beside it.
    pub fn resolve(cfg: &RunConfig) -> Result<Text, RunError> {
        Ok(Text {
            tokenizer: PromptTokenizer::resolve(cfg.workload.tokenizer.as_deref())?,
            chat_template: crate::measure::client::chat_template(cfg)?.map(Arc::new),
        })
    }
}

/// `cfg` completed with what only the server can say, before it is validated: the clock
/// speed-up of an external `servebench sim --time-scale K` (its `/sim/info`), so the load's
/// schedule and every figure are in its simulated time, as with the built-in one. Any other
/// server (or none answering) leaves `cfg` as it is.
pub async fn ask_server(mut cfg: RunConfig, secrets: &Secrets) -> RunConfig {
    if cfg.simulated {
        return cfg;
    }
    let Ok(client) = Client::new(&cfg, secrets, None, None) else {
        return cfg;
    };
    let info = client.get_json(client.base_url(), "/sim/info").await;
    let scale = info.filter(|i| i.get("preset").is_some()).and_then(|i| {
        let k = i.get("time_scale")?.as_f64()?;
        (k.is_finite() && k > 0.0).then_some(k)
    });
    if let Some(k) = scale {
        cfg.time_scale = k;
    }
    cfg
}

/// Where a session writes: `dir/<stem>…`.
#[derive(Clone, Debug)]
pub struct Output {
    pub dir: PathBuf,
    pub stem: String,
    /// `--overwrite`: replace existing files instead of refusing to start.
    pub overwrite: bool,
    /// `--records-format parquet`: each run's records also as `<stem>.records.parquet`,
    /// written from its JSON Lines when the session ends.
    pub records_parquet: bool,
}

impl Output {
    /// The result of a single run, or repetition `i` (from 1) of `times`.
    pub fn run(&self, i: u16, times: u16) -> String {
        match times {
            1 => format!("{}.json", self.stem),
            _ => format!("{}.rep{i}.json", self.stem),
        }
    }
    /// `--repeat`'s spread.
    pub fn repeat_doc(&self) -> PathBuf {
        self.dir.join(format!("{}.repeat.json", self.stem))
    }
    /// The sweep document (of a sweep, or of a staged run's stages).
    pub fn sweep_doc(&self) -> PathBuf {
        self.dir.join(format!("{}.sweep.json", self.stem))
    }
    /// Stage `k` (from 1) of a staged run.
    pub fn stage(&self, k: usize) -> String {
        format!("{}-stage{k}.json", self.stem)
    }
    /// A sweep's step at `value`.
    pub fn step(&self, param: LoadParameter, value: SweepValue) -> String {
        format!("{}-{}{}.json", self.stem, param.file_tag(), value)
    }
    /// The search document.
    pub fn search_doc(&self) -> PathBuf {
        self.dir.join(format!("{}.search.json", self.stem))
    }
    /// Probe `i` (from 0) of a search.
    pub fn probe(&self, i: u32) -> String {
        format!("{}-probe{i}.json", self.stem)
    }
    /// Class `k`'s run alone (`--mix-alone`; `k` from 0, its index in the mix).
    pub fn alone(&self, k: usize) -> String {
        format!("{}.alone{k}.json", self.stem)
    }
}

/// The default result file stem, after vLLM's:
/// `{backend}-{rate}qps[-concurrency{N}]-{model}-{date}`.
pub fn default_stem(cfg: &RunConfig, date: &str) -> String {
    let model = Path::new(&cfg.model)
        .file_name()
        .map_or_else(|| cfg.model.clone(), |s| s.to_string_lossy().into_owned());
    let conc = cfg
        .load
        .max_concurrency
        .map_or(String::new(), |c| format!("-concurrency{c}"));
    format!(
        "{}-{}qps{conc}-{model}-{date}",
        cfg.backend.as_str(),
        cfg.load.request_rate
    )
}

impl RunPlan {
    /// Every file the session may write: each result with its records, and the documents.
    pub fn targets(&self) -> Vec<PathBuf> {
        targets(&self.output, &self.mode, &self.config)
    }

    /// The most streams one of the session's runs may hold open at once: its concurrency cap,
    /// else all its requests (a search's probes are bounded by its base config's).
    pub fn peak_streams(&self) -> u64 {
        let streams = |c: &RunConfig| {
            let requests = c
                .load
                .num_prompts
                .saturating_mul(u64::from(c.load.shape.turns()));
            c.load
                .max_concurrency
                .unwrap_or(requests)
                .min(requests.max(1))
        };
        match &self.mode {
            Mode::Sweep { steps, .. } => steps.iter().map(|(_, c)| streams(c)).max(),
            _ => None,
        }
        .unwrap_or(0)
        .max(streams(&self.config))
    }
}

/// Every file `mode` may write under `output` (a staged run's stages are `config`'s).
pub fn targets(output: &Output, mode: &Mode, config: &RunConfig) -> Vec<PathBuf> {
    let results: Vec<String> = match mode {
        Mode::Single { .. } => vec![output.run(1, 1)],
        Mode::Repeat { times } => (1..=*times).map(|i| output.run(i, *times)).collect(),
        Mode::Stages { .. } => std::iter::once(output.run(1, 1))
            .chain((1..=config.load.shape.stages.len()).map(|k| output.stage(k)))
            .collect(),
        Mode::Sweep { param, steps, .. } => (steps.iter())
            .map(|(v, _)| output.step(*param, *v))
            .collect(),
        Mode::Search { spec } => (0..spec.max_probes).map(|i| output.probe(i)).collect(),
    };
    // `--mix-alone`: each class's run alone after the mixed run (`mix_alone.rs`).
    let classes = match config.mix_alone {
        Some(crate::config::mix::MixAlone::EachClass) => config.mix.as_ref(),
        _ => None,
    };
    let alone = (0..classes.map_or(0, |m| m.classes.len())).map(|k| output.alone(k));
    let results: Vec<String> = results.into_iter().chain(alone).collect();
    let docs = match mode {
        Mode::Single { .. } => None,
        Mode::Repeat { .. } => Some(output.repeat_doc()),
        Mode::Stages { .. } | Mode::Sweep { .. } => Some(output.sweep_doc()),
        Mode::Search { .. } => Some(output.search_doc()),
    };
    let mut out: Vec<PathBuf> = docs.into_iter().collect();
    for r in results {
        let result = output.dir.join(r);
        // The result is named first when both exist.
        let records = result.with_extension("records.jsonl");
        let parquet = output
            .records_parquet
            .then(|| result.with_extension("records.parquet"));
        out.extend([result, records]);
        out.extend(parquet);
    }
    out
}

/// Refuses to start when a file `mode` would write exists, unless `--overwrite`: the one
/// check of a session's files, before anything runs.
pub fn check_targets(output: &Output, mode: &Mode, config: &RunConfig) -> Result<(), ResultsError> {
    refuse_existing(output.overwrite, targets(output, mode, config).iter())
}
