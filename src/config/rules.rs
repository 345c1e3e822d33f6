//! The rules of a [`RunConfig`] on its resolved values: [`RunConfig::validate`] takes them in
//! turn, one step per concern (what the answers are asked to be, the server, the load, the
//! dataset and what it builds, what each request carries for its backend, conversations, the
//! tokenizer, the report, the body, the shard, the time limits and sizes, the mix), and stops
//! at the first broken one; the error names the option that is wrong. Its one caller is
//! `valid::ValidConfig::new`: a run takes a `ValidConfig`, so it cannot skip the check.
//!
//! The load's own rules are `load.rs`'s, a backend's `backend.rs`'s, a mix's `mix.rs`'s; a rule
//! between flags that never reach the config is the plan's (`cli::plan`). To add a rule: put
//! it in the step of its concern (or a new step, in its place in `validate`).

use super::error::ConfigError;
use super::limits::{self, MAX_PROMPTS, MAX_TOKENS};
use super::load::RequestRate;
use super::run::RunConfig;
use super::workload::Dataset;
use super::{audio, lora, mix, shape};

/// `Err` naming `option` and why.
fn bad(option: &str, why: String) -> Result<(), ConfigError> {
    Err(ConfigError::invalid(option, why))
}

impl RunConfig {
    /// Checks every field, one concern after another; the error names the option that is
    /// wrong.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        self.tags.validate()?;
        self.check_asked()?;
        self.check_target()?;
        // Users before the load's own rules: their refusal names both flags.
        super::users::check(self)?;
        self.load.check()?;
        self.check_dataset()?;
        self.check_backend_fit()?;
        lora::check(&self.lora_modules).map_err(|e| ConfigError::invalid("--lora-modules", e))?;
        self.check_turns()?;
        self.check_jobs()?;
        self.check_tokenizer()?;
        self.check_report()?;
        self.check_body()?;
        self.load.check_shard()?;
        self.load.check_timeouts()?;
        self.check_sizes()?;
        self.hooks.check()?;
        if let Some(a) = &self.autoscale {
            a.check()?;
        }
        super::adaptive_rules::check(self)?;
        let d = &self.workload.dataset;
        let sessions = d.templates_conversations()
            || matches!(d, Dataset::Trace { .. })
            || self.load.shape.turns.is_some_and(|t| t > 1);
        self.routing.check(sessions)?;
        mix::check_config(self)
    }

    /// What every answer is asked to be (`--structured-output`), and the goodput term that
    /// counts valid answers (`--goodput valid_output:1`).
    fn check_asked(&self) -> Result<(), ConfigError> {
        if let Some(s) = &self.structured {
            s.validate("--structured-output")?;
            s.check_backend(self.backend)?;
            s.check_goodput(self.goodput_valid_output)?;
        }
        if self.goodput_valid_output && self.structured.is_none() {
            let why = "valid_output:1 counts valid structured answers: give --structured-output";
            return bad("--goodput", why.into());
        }
        if !self.job_goodput.is_empty() && !self.workload.dataset.jobs() {
            let why = "jct:MS bounds a job's completion time: give a dataset of jobs (--dataset-name graph or agentic)";
            return bad("--goodput", why.into());
        }
        Ok(())
    }

    /// The server's URL is an HTTP one.
    fn check_target(&self) -> Result<(), ConfigError> {
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return bad(
                "--base-url",
                format!("'{}' must start with http:// or https://", self.base_url),
            );
        }
        Ok(())
    }

    /// The dataset's own settings, what it builds before the run, and a trace's timeline
    /// against the load's.
    fn check_dataset(&self) -> Result<(), ConfigError> {
        let w = &self.workload;
        w.dataset.check()?;
        self.check_built()?;
        if let Dataset::Trace {
            block_size,
            speedup,
            ..
        } = w.dataset
        {
            let finite = self.load.request_rate != RequestRate::Infinite;
            let shaped = finite || self.load.shape.sets_schedule();
            shape::validate_trace(shaped, (block_size, speedup))?;
        }
        Ok(())
    }

    /// Checks what a run's flags ask to build before it starts: at most [`MAX_PROMPTS`]
    /// requests (conversations times their turns) and [`limits::MAX_BUILT_TOKENS`] prompt
    /// tokens in all (the synthetic datasets; a file's prompts are as large as the file, a
    /// trace's are checked as it is read).
    fn check_built(&self) -> Result<(), ConfigError> {
        let (load, w) = (&self.load, &self.workload);
        let turns = u64::from(load.shape.turns());
        let requests = load.num_prompts.saturating_mul(turns);
        // Each input of a batch is a prompt built.
        let inputs = u64::from(self.inputs_per_request.max(1));
        // A rerank request's query is one more prompt built, of its own length.
        let (inputs, query_len) = match self.backend.takes_query() {
            true => (inputs + 1, self.rerank_query_len.unwrap_or(0)),
            false => (inputs, 0),
        };
        if requests > MAX_PROMPTS {
            return bad(
                "--turns",
                format!("{} conversations of {turns} turns are {requests} requests, more than {MAX_PROMPTS}", load.num_prompts),
            );
        }
        if requests.saturating_mul(inputs) > MAX_PROMPTS {
            return bad(
                "--embedding-batch-size",
                format!(
                    "{requests} requests of {inputs} inputs are more than {MAX_PROMPTS} prompts"
                ),
            );
        }
        let Some(longest) = w.dataset.longest_built_prompt() else {
            return Ok(());
        };
        let longest = longest.max(query_len);
        let pool = match load.shape.window_s() {
            Some(_) => requests.max(limits::POOL_MAX),
            None => requests,
        };
        let tokens = (pool.saturating_add(load.num_warmups))
            .saturating_mul(inputs)
            .saturating_mul(longest);
        if tokens > limits::MAX_BUILT_TOKENS {
            return bad(
                "--num-prompts",
                format!("with --input-len (and --num-warmups, --prefix-len, --embedding-batch-size) it asks for up to {tokens} prompt tokens, more than the {} a run builds before it starts", limits::MAX_BUILT_TOKENS),
            );
        }
        Ok(())
    }

    /// What each request carries, against what its backend takes: several inputs, a
    /// conversation, a trace's timeline (`BackendKind::check_request`), an audio clip
    /// (`audio::check`), a rerank query.
    fn check_backend_fit(&self) -> Result<(), ConfigError> {
        let w = &self.workload;
        let conversation = match (w.dataset.multi_turn(), self.load.shape.turns() > 1) {
            (true, _) => Some("--multi-turn"),
            (false, true) => Some("--turns"),
            (false, false) => None,
        };
        let trace = w.dataset.own_schedule().is_some();
        (self.backend).check_request(self.inputs_per_request, conversation, trace)?;
        audio::check(self.backend, &w.dataset, self.audio_duration)?;
        match self.rerank_query_len {
            Some(_) if !self.backend.takes_query() => {
                let why = format!(
                    "--backend {} sends no query: give a rerank backend ({})",
                    self.backend.as_str(),
                    super::backend::names_where(|i| i.takes_query, ", ")
                );
                return bad("--rerank-query-len", why);
            }
            Some(q) if q == 0 || q > MAX_TOKENS => {
                return bad(
                    "--rerank-query-len",
                    format!("must be 1 to {MAX_TOKENS}, got {q}"),
                );
            }
            _ => {}
        }
        if self.backend.takes_query()
            && self.inputs_per_request > 1
            && matches!(w.dataset, Dataset::Jsonl { .. })
        {
            let why = "a jsonl file's lines give each request's query and documents";
            return bad("--rerank-documents", why.into());
        }
        Ok(())
    }

    /// A dataset's own conversations (`--multi-turn`) give their turns and run to their end.
    fn check_turns(&self) -> Result<(), ConfigError> {
        if !self.workload.dataset.multi_turn() {
            return Ok(());
        }
        if self.load.shape.turns() > 1 {
            return bad(
                "--multi-turn",
                "the conversations give their own turns: not with --turns".into(),
            );
        }
        if self.load.shape.window_s().is_some() {
            return bad(
                "--multi-turn",
                "conversations run to their last turn: not with --duration or --stages".into(),
            );
        }
        Ok(())
    }

    /// A jobs dataset (`graph`, `agentic`): its calls follow its graph, not `--turns`; it is
    /// built locally (a tokenizer or words), not with the server's `/tokenize`; and the
    /// generator's jobs times their calls are bounded as conversations times their turns are
    /// (a graph file's calls per job are known once it is read: bounded as it is built).
    fn check_jobs(&self) -> Result<(), ConfigError> {
        let d = &self.workload.dataset;
        if !d.jobs() {
            return Ok(());
        }
        if self.load.shape.turns() > 1 {
            let why = format!("the {d} dataset's jobs give their own calls: not with --turns");
            return bad("--turns", why);
        }
        if self.workload.tokenizer.as_deref() == Some("server") {
            let why = format!("server: the {d} dataset is built with a local tokenizer (a tokenizer.json, a GGUF file, a tiktoken name) or in words, not the server's /tokenize");
            return bad("--tokenizer", why);
        }
        let Dataset::Agentic {
            input_len, shape, ..
        } = d
        else {
            return Ok(());
        };
        let calls = u64::from(shape.fanout).saturating_mul(u64::from(shape.depth));
        let jobs = (self.load.num_prompts).saturating_add(self.load.num_warmups);
        let requests = jobs.saturating_mul(calls);
        if requests > MAX_PROMPTS {
            let why = format!("{jobs} jobs (with --num-warmups) of {calls} calls are {requests} requests, more than {MAX_PROMPTS}");
            return bad("--num-prompts", why);
        }
        let tokens = requests.saturating_mul(*input_len);
        if tokens > limits::MAX_BUILT_TOKENS {
            let why = format!("{requests} calls of --input-len {input_len} are {tokens} prompt tokens, more than the {} a run builds before it starts", limits::MAX_BUILT_TOKENS);
            return bad("--num-prompts", why);
        }
        Ok(())
    }

    /// A dataset that counts tokens has the served model's tokenizer.
    fn check_tokenizer(&self) -> Result<(), ConfigError> {
        let w = &self.workload;
        if !w.dataset.builds_with_words() && w.tokenizer.is_none() {
            return bad(
                "--tokenizer",
                format!("the {} dataset needs the served model's tokenizer (a tokenizer.json, a directory holding one, a GGUF file, or a tiktoken encoding name)", w.dataset),
            );
        }
        Ok(())
    }

    /// The report's percentiles are in (0, 100]; a time slice is within its bounds.
    fn check_report(&self) -> Result<(), ConfigError> {
        if let Some(p) = self
            .metric_percentiles
            .iter()
            .find(|p| !(p.is_finite() && **p > 0.0 && **p <= 100.0))
        {
            return bad("--metric-percentiles", format!("{p} is not in (0, 100]"));
        }
        if let Some(s) = self.time_slice_s {
            limits::check_time_slice(s).map_err(|why| ConfigError::limit("--time-slice", why))?;
        }
        Ok(())
    }

    /// `--extra-body` is a JSON object (it is merged into each body).
    fn check_body(&self) -> Result<(), ConfigError> {
        if let Some(body) = &self.extra_body {
            if !body.is_object() {
                return bad("--extra-body", "must be a JSON object".into());
            }
        }
        Ok(())
    }

    /// The bytes read of a server's answers are at least one, and the simulator's time scale
    /// is a number above 0.
    fn check_sizes(&self) -> Result<(), ConfigError> {
        let sizes = [
            ("--max-event-size", self.max_event_bytes),
            ("--max-error-body", self.max_error_body_bytes),
            ("--max-generated-text", self.max_generated_text_bytes),
            ("--max-answer-size", self.max_answer_bytes()),
        ];
        if let Some((option, _)) = sizes.iter().find(|(_, n)| *n == 0) {
            return bad(option, "must be at least 1 byte".into());
        }
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            return bad("--time-scale", "must be a finite number > 0".into());
        }
        Ok(())
    }
}
