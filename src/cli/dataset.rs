//! `--dataset-name` and the flags of the datasets, turned into one [`Dataset`]. Each dataset
//! takes the flags it uses; a flag given for a dataset that has no such setting is refused by
//! name (it would be ignored in silence, and the result would not say what was sent).
//! `--multi-turn`, `--trace-block-size` and `--trace-speedup` are shown with the load's shape
//! ([`ShapeArgs`]) and read from there.

use std::path::PathBuf;

use clap::Args;

use super::heading;

use super::shape::ShapeArgs;
use crate::config::error::ConfigError;
use crate::config::media::{parse_buckets, parse_limit, MmSpec};
use crate::config::workload::{AgenticShape, DEFAULT_TRACE_BLOCK_SIZE, DEFAULT_TRACE_SPEEDUP};
use crate::config::{Dataset, DEFAULT_INPUT_LEN};

/// Where prompts come from (`--dataset-name`; each variant is one of [`Dataset`]'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DatasetName {
    /// Random text of exact lengths.
    Random,
    /// Passages of a text file (`--dataset-path`).
    Book,
    /// ShareGPT conversations (a JSON file).
    Sharegpt,
    /// One prompt per line of a JSON Lines file.
    Jsonl,
    /// Groups of prompts sharing a prefix.
    Prefix,
    /// A JSONL trace replayed on its own schedule (Mooncake's format, or a generic one).
    Trace,
    /// Random text with synthetic images and videos beside it (vLLM's random-mm).
    RandomMm,
    /// Agentic jobs, one graph of calls per line of a JSON Lines file.
    Graph,
    /// Seeded agentic jobs: levels of parallel calls, each carrying the level before's
    /// replies.
    Agentic,
}

#[derive(Debug, Args)]
pub struct DatasetArgs {
    /// Dataset: random, book (a text file), sharegpt, jsonl, prefix (shared-prefix groups),
    /// trace (a JSONL trace replayed on its timestamps: Mooncake's or a generic one), graph
    /// (agentic jobs from a JSONL file), agentic (generated jobs).
    #[arg(help_heading = heading::WORKLOAD, long, value_enum, default_value_t = DatasetName::Random)]
    pub dataset_name: DatasetName,
    /// The dataset file (book, sharegpt, jsonl, trace).
    #[arg(help_heading = heading::WORKLOAD, long)]
    pub dataset_path: Option<PathBuf>,
    /// Prompt length, tokens (exact under --tokenizer): random, book, prefix (its suffix).
    /// Default 128.
    #[arg(help_heading = heading::WORKLOAD, long, aliases = ["random-input-len", "book-input-len"])]
    pub input_len: Option<u64>,
    /// Max output tokens per request (default 128; ShareGPT: each answer's length).
    #[arg(help_heading = heading::WORKLOAD, long, alias = "random-output-len")]
    pub output_len: Option<u64>,
    /// random, book: lengths uniform in [L(1-r), L(1+r)]. Default 0.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, alias = "random-range-ratio")]
    pub range_ratio: Option<f64>,
    /// prefix dataset: tokens in each shared prefix. Default 0.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long)]
    pub prefix_len: Option<u64>,
    /// prefix dataset: number of distinct prefixes. Default 1. A list (`1,2,4`) or range
    /// (`1,2,...,64`) runs a sweep over them at a fixed load: the prefix-cache cliff.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long, value_parser = super::parse::parse_counts)]
    pub num_prefixes: Option<super::parse::List<u64>>,
    /// random-mm: media items per request, before the range ratio. Default 1.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long)]
    pub random_mm_base_items_per_request: Option<u64>,
    /// random-mm: item counts uniform in [floor(n(1-r)), ceil(n(1+r))], r in [0, 1].
    /// Default 0.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long)]
    pub random_mm_num_mm_items_range_ratio: Option<f64>,
    /// random-mm: most items per request by modality, as JSON: '{"image": 3, "video": 0}'.
    /// Default {"image": 255, "video": 1}.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long)]
    pub random_mm_limit_mm_per_prompt: Option<String>,
    /// random-mm: item sizes and their probabilities, (height, width, num_frames):
    /// probability; num_frames 1 is an image, more a video (JPEG frames).
    /// Default '{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}'.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long)]
    pub random_mm_bucket_config: Option<String>,
    /// agentic: parallel calls per level of a job. Default 1 (a tool loop).
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long)]
    pub agentic_fanout: Option<u32>,
    /// agentic: levels of a job; each level's calls carry every reply of the level before.
    /// Default 1 (a pure fan-out).
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long)]
    pub agentic_depth: Option<u32>,
    /// agentic: ms between the end of a level's last call and the next level's start (a
    /// tool's time). Default 0.
    #[arg(help_heading = heading::WORKLOAD, hide_short_help = true, long)]
    pub agentic_gap_ms: Option<f64>,
}

/// The dataset flags not yet taken by the chosen dataset.
struct Unused {
    path: Option<PathBuf>,
    input_len: Option<u64>,
    range_ratio: Option<f64>,
    prefix_len: Option<u64>,
    num_prefixes: Option<u64>,
    multi_turn: Option<bool>,
    block_size: Option<u64>,
    speedup: Option<f64>,
    mm_given: Option<&'static str>,
    agentic_given: Option<&'static str>,
}

impl Unused {
    /// `--dataset-path`, which the chosen dataset `name` needs.
    fn path(&mut self, name: &str) -> Result<PathBuf, ConfigError> {
        self.path.take().ok_or_else(|| ConfigError::Invalid {
            option: "--dataset-path".into(),
            why: format!("the {name} dataset needs a file"),
        })
    }

    /// The first flag left over: one the dataset `name` has no setting for.
    fn refuse(self, name: &str) -> Result<(), ConfigError> {
        if self.multi_turn.is_some() {
            return Err(ConfigError::Invalid {
                option: "--multi-turn".into(),
                why: "only with --dataset-name sharegpt (jsonl gives conversations as \"turns\" lines)".into(),
            });
        }
        let left = [
            (
                "--dataset-path",
                self.path.is_some(),
                "book, sharegpt, jsonl, trace or graph",
            ),
            (
                "--input-len",
                self.input_len.is_some(),
                "random, book, prefix or agentic",
            ),
            (
                "--range-ratio",
                self.range_ratio.is_some(),
                "random or book",
            ),
            ("--prefix-len", self.prefix_len.is_some(), "prefix"),
            ("--num-prefixes", self.num_prefixes.is_some(), "prefix"),
            ("--trace-block-size", self.block_size.is_some(), "trace"),
            ("--trace-speedup", self.speedup.is_some(), "trace"),
            (
                self.mm_given.unwrap_or(""),
                self.mm_given.is_some(),
                "random-mm",
            ),
            (
                self.agentic_given.unwrap_or(""),
                self.agentic_given.is_some(),
                "agentic",
            ),
        ];
        match left.into_iter().find(|(_, given, _)| *given) {
            Some((flag, _, owners)) => Err(ConfigError::Invalid {
                option: flag.into(),
                why: format!(
                    "the {name} dataset has no such setting (only --dataset-name {owners})"
                ),
            }),
            None => Ok(()),
        }
    }
}

impl DatasetArgs {
    /// The chosen dataset with its settings; an error names a flag it needs and lacks, or one
    /// it has no setting for.
    pub fn dataset(&self, shape: &ShapeArgs) -> Result<Dataset, ConfigError> {
        let mut f = Unused {
            path: self.dataset_path.clone(),
            input_len: self.input_len,
            range_ratio: self.range_ratio,
            prefix_len: self.prefix_len,
            // A sweep's first value; each step sets its own (`config::sweep::step_config`).
            num_prefixes: self
                .num_prefixes
                .as_ref()
                .and_then(|l| l.0.first().copied()),
            multi_turn: shape.multi_turn.then_some(true),
            block_size: shape.trace_block_size,
            speedup: shape.trace_speedup,
            mm_given: self.mm_flag_given(),
            agentic_given: self.agentic_flag_given(),
        };
        let output_len = self.output_len;
        let name = match self.dataset_name {
            DatasetName::Random => "random",
            DatasetName::Book => "book",
            DatasetName::Sharegpt => "sharegpt",
            DatasetName::Jsonl => "jsonl",
            DatasetName::Prefix => "prefix",
            DatasetName::Trace => "trace",
            DatasetName::RandomMm => "random-mm",
            DatasetName::Graph => "graph",
            DatasetName::Agentic => "agentic",
        };
        let input_len = |f: &mut Unused| f.input_len.take().unwrap_or(DEFAULT_INPUT_LEN);
        let range_ratio = |f: &mut Unused| f.range_ratio.take().unwrap_or(0.0);
        let dataset = match self.dataset_name {
            DatasetName::Random => Dataset::Random {
                input_len: input_len(&mut f),
                output_len,
                range_ratio: range_ratio(&mut f),
            },
            DatasetName::Book => Dataset::Book {
                path: f.path(name)?,
                input_len: input_len(&mut f),
                output_len,
                range_ratio: range_ratio(&mut f),
            },
            DatasetName::Sharegpt => Dataset::ShareGpt {
                path: f.path(name)?,
                output_len,
                multi_turn: f.multi_turn.take().unwrap_or(false),
            },
            DatasetName::Jsonl => Dataset::Jsonl {
                path: f.path(name)?,
                output_len,
            },
            DatasetName::Prefix => Dataset::Prefix {
                prefix_len: f.prefix_len.take().unwrap_or(0),
                num_prefixes: f.num_prefixes.take().unwrap_or(1),
                input_len: input_len(&mut f),
                output_len,
            },
            DatasetName::Trace => Dataset::Trace {
                path: f.path(name)?,
                output_len,
                block_size: f.block_size.take().unwrap_or(DEFAULT_TRACE_BLOCK_SIZE),
                speedup: f.speedup.take().unwrap_or(DEFAULT_TRACE_SPEEDUP),
            },
            DatasetName::RandomMm => {
                f.mm_given = None;
                Dataset::RandomMm {
                    input_len: input_len(&mut f),
                    output_len,
                    range_ratio: range_ratio(&mut f),
                    mm: self.mm()?,
                }
            }
            DatasetName::Graph => Dataset::Graph {
                path: f.path(name)?,
                output_len,
            },
            DatasetName::Agentic => {
                f.agentic_given = None;
                let d = AgenticShape::default();
                Dataset::Agentic {
                    input_len: input_len(&mut f),
                    output_len,
                    shape: AgenticShape {
                        fanout: self.agentic_fanout.unwrap_or(d.fanout),
                        depth: self.agentic_depth.unwrap_or(d.depth),
                        gap_ms: self.agentic_gap_ms.unwrap_or(d.gap_ms),
                    },
                }
            }
        };
        f.refuse(name)?;
        Ok(dataset)
    }

    /// The first agentic flag given, for a refusal when the dataset is another.
    fn agentic_flag_given(&self) -> Option<&'static str> {
        [
            ("--agentic-fanout", self.agentic_fanout.is_some()),
            ("--agentic-depth", self.agentic_depth.is_some()),
            ("--agentic-gap-ms", self.agentic_gap_ms.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }

    /// The first random-mm flag given, for a refusal when the dataset is another.
    fn mm_flag_given(&self) -> Option<&'static str> {
        [
            (
                "--random-mm-base-items-per-request",
                self.random_mm_base_items_per_request.is_some(),
            ),
            (
                "--random-mm-num-mm-items-range-ratio",
                self.random_mm_num_mm_items_range_ratio.is_some(),
            ),
            (
                "--random-mm-limit-mm-per-prompt",
                self.random_mm_limit_mm_per_prompt.is_some(),
            ),
            (
                "--random-mm-bucket-config",
                self.random_mm_bucket_config.is_some(),
            ),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }

    /// random-mm's media settings from its flags (vLLM's defaults for those not given); a
    /// value that cannot be read is refused naming its flag.
    fn mm(&self) -> Result<MmSpec, ConfigError> {
        let mut mm = MmSpec::default();
        if let Some(n) = self.random_mm_base_items_per_request {
            mm.base_items = n;
        }
        if let Some(r) = self.random_mm_num_mm_items_range_ratio {
            mm.items_range_ratio = r;
        }
        if let Some(l) = &self.random_mm_limit_mm_per_prompt {
            mm.limit = parse_limit(l)?;
        }
        if let Some(b) = &self.random_mm_bucket_config {
            mm.buckets = parse_buckets(b)?;
        }
        Ok(mm)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    /// The dataset `run` would send with `flags`.
    fn dataset(flags: &[&str]) -> Result<Dataset, ConfigError> {
        let cli = Cli::try_parse_from([&["servebench", "run"], flags].concat()).unwrap();
        let Command::Run(args) = cli.command else {
            unreachable!("a run")
        };
        args.dataset.dataset(&args.shape)
    }

    /// A flag the chosen dataset has no setting for was ignored in silence (the
    /// result then saved its default, not what was given); now it is refused by name.
    #[test]
    fn a_flag_the_dataset_has_no_setting_for_is_refused_by_name() {
        for (flags, flag) in [
            (&["--prefix-len", "16"][..], "--prefix-len"),
            (&["--dataset-path", "b.txt"], "--dataset-path"),
            (&["--trace-speedup", "2"], "--trace-speedup"),
            (
                &[
                    "--dataset-name",
                    "sharegpt",
                    "--dataset-path",
                    "s.json",
                    "--input-len",
                    "64",
                ],
                "--input-len",
            ),
            (
                &[
                    "--dataset-name",
                    "jsonl",
                    "--dataset-path",
                    "p.jsonl",
                    "--range-ratio",
                    "0.5",
                ],
                "--range-ratio",
            ),
            (
                &[
                    "--dataset-name",
                    "trace",
                    "--dataset-path",
                    "t.jsonl",
                    "--num-prefixes",
                    "2",
                ],
                "--num-prefixes",
            ),
            (
                &["--dataset-name", "prefix", "--range-ratio", "0.5"],
                "--range-ratio",
            ),
            (
                &[
                    "--dataset-name",
                    "book",
                    "--dataset-path",
                    "b.txt",
                    "--trace-block-size",
                    "8",
                ],
                "--trace-block-size",
            ),
        ] {
            let e = dataset(flags).unwrap_err().to_string();
            let name = flags
                .iter()
                .position(|f| *f == "--dataset-name")
                .map_or("random", |i| flags[i + 1]);
            assert!(
                e.contains(flag) && e.contains(&format!("the {name} dataset")) && !e.contains('\n'),
                "{flags:?}: {e}"
            );
        }
        let e = dataset(&["--multi-turn"]).unwrap_err().to_string();
        assert!(e.contains("--multi-turn") && e.contains("sharegpt"), "{e}");
        let e = dataset(&["--dataset-name", "trace"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--dataset-path") && e.contains("trace"), "{e}");
    }

    #[test]
    fn each_dataset_takes_its_own_flags() {
        assert_eq!(
            dataset(&["--input-len", "8", "--range-ratio", "0.5"]).unwrap(),
            Dataset::Random {
                input_len: 8,
                output_len: None,
                range_ratio: 0.5,
            }
        );
        assert_eq!(
            dataset(&[
                "--dataset-name",
                "sharegpt",
                "--dataset-path",
                "s",
                "--multi-turn"
            ])
            .unwrap(),
            Dataset::ShareGpt {
                path: "s".into(),
                output_len: None,
                multi_turn: true,
            }
        );
        let flags = [
            "--dataset-name",
            "prefix",
            "--prefix-len",
            "4",
            "--num-prefixes",
            "3",
        ];
        assert_eq!(
            dataset(&[&flags[..], &["--output-len", "2"]].concat()).unwrap(),
            Dataset::Prefix {
                prefix_len: 4,
                num_prefixes: 3,
                input_len: DEFAULT_INPUT_LEN,
                output_len: Some(2),
            }
        );
        let flags = [
            "--dataset-name",
            "trace",
            "--dataset-path",
            "t",
            "--trace-block-size",
        ];
        assert_eq!(
            dataset(&[&flags[..], &["32", "--trace-speedup", "2"]].concat()).unwrap(),
            Dataset::Trace {
                path: "t".into(),
                output_len: None,
                block_size: 32,
                speedup: 2.0,
            }
        );
    }
}
