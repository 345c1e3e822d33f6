//! A run's requests, all of them, from its config in one call ([`build`]): the warm-ups, the
//! measured pool (a mix's classes in the mix's order), each transcription's clip, each
//! rerank request's query, each request's LoRA adapter, the probes a mix sends beside the
//! load, and the pre-flight request. Every choice that depends on the backend is asked of
//! its table (`config::backend`: `takes_clip`, `takes_query`), never by naming a backend.
//!
//! The driver (`drive::run`) calls [`build`] once per run, before its clock starts, and only
//! schedules and sends what it gets. Nothing here sends a request of the run; the server is
//! asked only by `--tokenizer server` (through `build_for`). What making the media cost is
//! counted and timed here, where they are made, and returned with the requests.
//!
//! A new per-request ingredient is one step in [`build`], in the order the steps below
//! keep: prompts, then what replaces or checks them whole (clips), then grouping
//! (`--embedding-batch-size`), then what goes beside each grouped request (a query, an
//! adapter).

use crate::config::audio::DEFAULT_AUDIO_DURATION;
use crate::config::limits::POOL_MAX;
use crate::config::mix::{Mix, MixAlone};
use crate::config::{Dataset, LoadSpec, RequestRate, RunConfig, WorkloadSpec};
use std::time::Instant;

use crate::measure::client::{Client, RequestSpec};
use crate::measure::media_made::MediaGeneration;
use crate::workload::error::WorkloadError;
use crate::workload::{audio, batch, lora, mix, rerank, PromptTokenizer};

/// What a run sends, built before its clock starts.
#[derive(Debug, Default)]
pub struct RunRequests {
    /// Sent before the measured load (each lane its share), not measured.
    pub warmups: Vec<RequestSpec>,
    /// The pool the measured load takes its requests from (`drive::load` picks each by its
    /// place in the schedule), ids from 0.
    pub requests: Vec<RequestSpec>,
    /// The one short request sent first, when the run checks the server before its load.
    pub preflight: RequestSpec,
    /// What a mix's probes send in turn (`--probe-request-rate`): each class's first request,
    /// in the classes' order; `None` without a mix or without probes.
    pub probes: Option<Vec<RequestSpec>>,
    /// Some request goes to a LoRA adapter: the result has each adapter's figures.
    pub adapters: bool,
    /// What making the requests' media cost (random-mm, clips, files); `None` without media.
    pub generation: Option<MediaGeneration>,
}

/// How many requests to build for `spec`'s load: `--num-prompts` (times the turns of a
/// conversation), or for a time-bounded run at a known peak rate its expected requests with a
/// 10% margin (at most [`POOL_MAX`]) when that is more.
pub fn pool_size(spec: &LoadSpec) -> u64 {
    let rate = match spec.request_rate {
        RequestRate::PerSecond(r) => Some(r),
        RequestRate::Infinite => None,
    };
    let expected = spec.shape.window_s().zip(spec.shape.peak_rate(rate));
    match expected {
        Some((w, r)) => spec
            .num_prompts
            .max(((w * r * 1.1).ceil() as u64 + 16).min(POOL_MAX)),
        None => spec.num_prompts * u64::from(spec.shape.turns()),
    }
}

/// The seed of the warm-ups' stream (and of their clips, queries and adapters), beside the
/// run's `seed`: warm-ups never repeat a measured prompt.
fn warmup_seed(seed: u64) -> u64 {
    seed ^ 0xA5A5
}

/// Every request `cfg`'s run sends, built with `tokenizer` (the server's through `client`
/// with `--tokenizer server`), reproducible from `--seed`.
///
/// The media are counted and timed (from the first prompt to the last medium made) once every
/// prompt and medium exists, before inputs are grouped into requests (grouping keeps only the
/// first input's media).
pub async fn build(
    cfg: &RunConfig,
    tokenizer: &PromptTokenizer,
    client: &Client,
) -> Result<RunRequests, WorkloadError> {
    let began = Instant::now();
    let prompts = Prompts {
        cfg,
        tokenizer,
        client,
    };
    let seed = cfg.load.seed;
    // Each request carries `--embedding-batch-size` inputs, each one prompt of the workload.
    let k = cfg.inputs_per_request;
    let inputs = |requests: u64| requests.saturating_mul(u64::from(k.max(1)));
    let warm_n = inputs(cfg.load.num_warmups);
    let mut warmups = (prompts.of(&cfg.workload, warm_n, warmup_seed(seed), true)).await?;
    let pool = inputs(pool_size(&cfg.load));
    let mut requests = match &cfg.mix {
        None => prompts.of(&cfg.workload, pool, seed, false).await?,
        Some(m) => prompts.mix(m, pool, seed).await?,
    };
    clips(cfg, &mut warmups, &mut requests, seed)?;
    let generation = MediaGeneration::of(warmups.iter().chain(&requests), began.elapsed());
    let (mut warmups, mut requests) = (batch::batch(warmups, k), batch::batch(requests, k));
    // A rerank request's query goes before its documents (`rerank.rs`).
    if cfg.backend.takes_query() {
        let ask = rerank::Queries::new(cfg, tokenizer, client);
        warmups = ask.before(warmups, warmup_seed(seed), true).await?;
        requests = ask.before(requests, seed, false).await?;
    }
    // Each request's LoRA adapter (`--lora-modules`), drawn from a seeded stream.
    lora::assign(&mut warmups, &cfg.lora_modules, warmup_seed(seed));
    lora::assign(&mut requests, &cfg.lora_modules, seed);
    let probes = (cfg.mix.as_ref())
        .filter(|_| cfg.probe_request_rate.is_some())
        .map(|m| probe_specs(m, &requests));
    Ok(RunRequests {
        adapters: requests.iter().any(|r| r.model.is_some()),
        generation,
        preflight: preflight(cfg),
        probes,
        warmups,
        requests,
    })
}

/// Where prompts come from: the run's tokenizer, and its server for `--tokenizer server`.
struct Prompts<'a> {
    cfg: &'a RunConfig,
    tokenizer: &'a PromptTokenizer,
    client: &'a Client,
}

impl Prompts<'_> {
    /// `n` prompts of `spec` (warm-ups when `warmup`), reproducible from `seed`.
    async fn of(
        &self,
        spec: &WorkloadSpec,
        n: u64,
        seed: u64,
        warmup: bool,
    ) -> Result<Vec<RequestSpec>, WorkloadError> {
        let (client, model) = (self.client, &self.cfg.model);
        let base = client.base_url();
        crate::workload::build_for(spec, self.tokenizer, client, base, model, n, seed, warmup).await
    }

    /// The run's `pool` requests of `mix`: each class's share built with its own workload and
    /// a seed of its own from `seed`, then put in the mix's order and tagged (`mix.rs`). A
    /// class's run alone (`--mix-alone`, `MixAlone::Class`) builds only that class's, from the
    /// same seed, so its requests are the ones it sent in the mixed run (the random dataset
    /// draws them in order).
    async fn mix(&self, m: &Mix, pool: u64, seed: u64) -> Result<Vec<RequestSpec>, WorkloadError> {
        let order = match self.cfg.mix_alone {
            Some(MixAlone::Class(k)) => vec![k; usize::try_from(pool).unwrap_or(0)],
            _ => m.order(pool),
        };
        let mut per_class = Vec::with_capacity(m.classes.len());
        for i in 0..m.classes.len() {
            let count = mix::count(&order, i);
            if count == 0 {
                per_class.push(Vec::new());
                continue;
            }
            let w = m.workload_of(i, &self.cfg.workload);
            let seed = seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            per_class.push(self.of(&w, count, seed, false).await?);
        }
        Ok(mix::interleave(m, &order, per_class))
    }
}

/// A transcription run's clips, for a backend whose requests are each one clip
/// (`takes_clip`): with `--dataset-name random` a seeded clip of `--audio-duration-s` made
/// for each request; from a jsonl file (not a mix) each line's own, checked to be exactly
/// one, or refused here by the line that is not.
fn clips(
    cfg: &RunConfig,
    warmups: &mut [RequestSpec],
    requests: &mut [RequestSpec],
    seed: u64,
) -> Result<(), WorkloadError> {
    if !cfg.backend.takes_clip() {
        return Ok(());
    }
    match (&cfg.workload.dataset, &cfg.mix) {
        (Dataset::Random { .. }, _) => {
            let d = cfg.audio_duration.unwrap_or(DEFAULT_AUDIO_DURATION);
            audio::transcribe(warmups, d, warmup_seed(seed))?;
            audio::transcribe(requests, d, seed)?;
        }
        (Dataset::Jsonl { path, .. }, None) => {
            audio::one_clip_each(warmups.iter().chain(requests.iter()), path)?;
        }
        _ => {}
    }
    Ok(())
}

/// The first request of each class in `requests`, in the classes' order: what the probes
/// send.
fn probe_specs(m: &Mix, requests: &[RequestSpec]) -> Vec<RequestSpec> {
    (0..m.classes.len() as u32)
        .filter_map(|c| {
            (requests.iter())
                .find(|r| r.class.as_ref().is_some_and(|t| t.index == c))
                .cloned()
        })
        .collect()
}

/// The pre-flight request: "Hello", asking for at most 4 tokens, in the shape the backend
/// takes: with one document beside its query for a backend that takes a query, and a tenth
/// of a second of silence for one that takes a clip.
fn preflight(cfg: &RunConfig) -> RequestSpec {
    RequestSpec {
        id: u64::MAX,
        prompt: "Hello".into(),
        // A rerank scores documents: one, besides its query.
        batch: (cfg.backend.takes_query())
            .then(|| "Hello".into())
            .into_iter()
            .collect(),
        messages: None,
        // A transcription sends a clip.
        parts: (cfg.backend.takes_clip())
            .then(|| audio::silence(std::time::Duration::from_millis(100)))
            .into_iter()
            .collect(),
        input_len: None,
        output_len: cfg.workload.dataset.output_len().min(4),
        warmup: true,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BackendKind;

    #[test]
    fn the_preflight_request_takes_the_backend_s_shape() {
        let mut cfg = RunConfig::default();
        let plain = preflight(&cfg);
        assert_eq!((plain.prompt.as_str(), plain.id), ("Hello", u64::MAX));
        assert!(plain.batch.is_empty() && plain.parts.is_empty() && plain.warmup);
        assert!(plain.output_len <= 4);
        cfg.backend = BackendKind::Rerank;
        assert_eq!(
            preflight(&cfg).batch,
            ["Hello"],
            "a document beside its query"
        );
        cfg.backend = BackendKind::OpenaiAudio;
        let clip = preflight(&cfg);
        assert_eq!(clip.parts.len(), 1, "one clip");
        assert!(clip.batch.is_empty());
    }

    #[test]
    fn a_time_bounded_pool_holds_its_expected_requests_with_a_margin() {
        let mut load = LoadSpec {
            num_prompts: 10,
            ..LoadSpec::default()
        };
        assert_eq!(pool_size(&load), 10);
        load.request_rate = RequestRate::PerSecond(100.0);
        load.shape.duration_s = Some(10.0);
        assert_eq!(pool_size(&load), 1100 + 16);
        load.request_rate = RequestRate::PerSecond(1e9);
        assert_eq!(pool_size(&load), POOL_MAX);
    }

    #[test]
    fn probes_send_each_class_s_first_request_in_the_classes_order() {
        let m = Mix::from_json(
            r#"{"tenant_header": "x-t", "classes": [{"name": "a", "weight": 1}, {"name": "b", "weight": 1}]}"#,
            "m",
        )
        .unwrap();
        let spec = |id| RequestSpec {
            id,
            ..RequestSpec::default()
        };
        let per_class = vec![vec![spec(10), spec(11)], vec![spec(20)]];
        let requests = mix::interleave(&m, &[1, 0, 0], per_class);
        let probes = probe_specs(&m, &requests);
        let classes: Vec<u32> = (probes.iter())
            .map(|r| r.class.as_ref().unwrap().index)
            .collect();
        assert_eq!(classes, [0, 1]);
        assert_eq!((probes[0].id, probes[1].id), (1, 0), "each class's first");
    }
}
