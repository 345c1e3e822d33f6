//! What is sent: builds the run's [`RequestSpec`]s from the workload spec.
//!
//! With a tokenizer (`--tokenizer`), prompts come from `dataset` and have exactly the requested
//! length under it. Without one, only `random` is possible and it builds prompts of `input_len`
//! whitespace-separated words drawn (seeded) from common English words: that is exact under
//! the built-in simulator's own counting (one token per word), and only an approximation for
//! any real server, so the command line requires a tokenizer whenever `--base-url` is given.
//! It does no HTTP and reads no clock.

pub mod dataset;
pub mod error;

use std::path::PathBuf;

use rand::{RngExt, SeedableRng};

use crate::config::WorkloadSpec;
use crate::measure::client::RequestSpec;
use crate::tokenizer::Tokenizer;
use crate::workload::dataset::{DatasetError, DatasetSpec};

/// The dataset spec for `spec`.
fn dataset_spec(spec: &WorkloadSpec) -> Result<DatasetSpec, DatasetError> {
    let path = || {
        spec.dataset_path
            .clone()
            .unwrap_or_else(|| PathBuf::from("-"))
    };
    let (input_len, output_len, range_ratio) = (spec.input_len, spec.output_len, spec.range_ratio);
    Ok(match spec.dataset.as_str() {
        "random" => DatasetSpec::Random {
            input_len,
            output_len,
            range_ratio,
        },
        "book" => DatasetSpec::Book {
            path: path(),
            input_len,
            output_len,
            range_ratio,
        },
        "sharegpt" => DatasetSpec::ShareGpt {
            path: path(),
            output_len: spec.output_len_given.then_some(output_len),
        },
        "jsonl" => DatasetSpec::Jsonl {
            path: path(),
            output_len,
        },
        "prefix" => DatasetSpec::Prefix {
            prefix_len: spec.prefix_len,
            input_len,
            output_len,
            num_prefixes: spec.num_prefixes,
        },
        other => {
            return Err(DatasetError::InvalidSpec(format!(
                "unknown dataset '{other}' (expected random, book, sharegpt, jsonl or prefix)"
            )))
        }
    })
}

/// Builds `n` requests (ids from `first_id`), reproducible from `seed`.
pub fn build_requests(
    spec: &WorkloadSpec,
    tokenizer: Option<&Tokenizer>,
    n: u64,
    first_id: u64,
    seed: u64,
    warmup: bool,
) -> Result<Vec<RequestSpec>, DatasetError> {
    let Some(tok) = tokenizer else {
        return Ok(build(spec, n, first_id, seed, warmup));
    };
    let prompts = crate::workload::dataset::build(&dataset_spec(spec)?, tok, n as usize, seed)?;
    Ok(prompts
        .into_iter()
        .enumerate()
        .map(|(i, p)| RequestSpec {
            id: first_id + i as u64,
            prompt: p.text,
            messages: p.messages,
            input_len: Some(p.input_len),
            output_len: p.output_len,
            warmup,
        })
        .collect())
}

const WORDS: &[&str] = &[
    "time",
    "year",
    "people",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "government",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
];

/// Builds `n` word prompts (ids from `first_id`), reproducible from `seed`.
fn build(spec: &WorkloadSpec, n: u64, first_id: u64, seed: u64, warmup: bool) -> Vec<RequestSpec> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5EED_0F50_4D50);
    (0..n)
        .map(|i| {
            let mut prompt = String::with_capacity(spec.input_len as usize * 7);
            for w in 0..spec.input_len {
                if w > 0 {
                    prompt.push(' ');
                }
                prompt.push_str(WORDS[rng.random_range(0..WORDS.len())]);
            }
            RequestSpec {
                id: first_id + i,
                prompt,
                messages: None,
                input_len: Some(spec.input_len),
                output_len: spec.output_len,
                warmup,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_reproducible_and_have_the_requested_word_count() {
        let spec = WorkloadSpec {
            input_len: 12,
            ..WorkloadSpec::default()
        };
        let a = build(&spec, 3, 0, 1, false);
        assert_eq!(a.len(), 3);
        assert_eq!(a[0].prompt.split(' ').count(), 12);
        assert_eq!(a[2].id, 2);
        let b = build(&spec, 3, 0, 1, false);
        assert_eq!(a[1].prompt, b[1].prompt);
        assert_ne!(a[0].prompt, build(&spec, 1, 0, 2, false)[0].prompt);
    }
}

/// `--tokenizer server`: prompts built with the server's own tokenizer, through its
/// `POST /tokenize` and `POST /detokenize` (llama.cpp's `content`/`tokens` form and vLLM's
/// `prompt`/`tokens` form are both sent and read). `random` and `book` only: source text is
/// tokenized by the server, the first L ids are detokenized, and the text is re-tokenized and
/// adjusted until the server counts exactly L tokens.
pub mod server {
    use rand::{RngExt, SeedableRng};
    use serde_json::{json, Value};

    use crate::config::WorkloadSpec;
    use crate::measure::client::{Client, RequestSpec};
    use crate::workload::dataset::LengthSampler;

    /// At most this many detokenize/tokenize rounds to make one prompt exact.
    const MAX_ROUNDS: usize = 8;

    async fn tokenize(
        client: &Client,
        base: &str,
        model: &str,
        text: &str,
    ) -> Result<Vec<u64>, String> {
        let body = json!({"content": text, "prompt": text, "model": model, "add_special": false, "add_special_tokens": false});
        let v = client.post_json(base, "/tokenize", &body).await?;
        let ids = v
            .get("tokens")
            .and_then(Value::as_array)
            .ok_or("the /tokenize answer has no `tokens`")?;
        ids.iter()
            .map(|t| t.as_u64().or_else(|| t.get("id").and_then(Value::as_u64)))
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| "the /tokenize answer has a token that is not an id".to_string())
    }

    async fn detokenize(
        client: &Client,
        base: &str,
        model: &str,
        ids: &[u64],
    ) -> Result<String, String> {
        let v = client
            .post_json(base, "/detokenize", &json!({"tokens": ids, "model": model}))
            .await?;
        v.get("content")
            .or_else(|| v.get("prompt"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| "the /detokenize answer has no `content` or `prompt`".to_string())
    }

    /// Text whose server count is exactly `target`, from the ids of some source text.
    async fn exact(
        client: &Client,
        base: &str,
        model: &str,
        source: &[u64],
        target: usize,
    ) -> Result<String, String> {
        let mut take = target.min(source.len());
        for _ in 0..MAX_ROUNDS {
            let text = detokenize(client, base, model, &source[..take]).await?;
            let count = tokenize(client, base, model, &text).await?.len();
            if count == target {
                return Ok(text);
            }
            let next =
                (take as i64 + target as i64 - count as i64).clamp(1, source.len() as i64) as usize;
            if next == take {
                break;
            }
            take = next;
        }
        Err(format!(
            "could not make a prompt of exactly {target} tokens with the server's tokenizer"
        ))
    }

    /// Builds `n` requests with exact lengths under the server's tokenizer.
    pub async fn build_requests(
        spec: &WorkloadSpec,
        client: &Client,
        base: &str,
        model: &str,
        n: u64,
        seed: u64,
        warmup: bool,
    ) -> Result<Vec<RequestSpec>, String> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5E4E_70C5);
        let book = match spec.dataset.as_str() {
            "book" => {
                let path = spec
                    .dataset_path
                    .as_deref()
                    .ok_or("the book dataset needs --dataset-path")?;
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                Some(tokenize(client, base, model, &text).await?)
            }
            "random" => None,
            other => {
                return Err(format!(
                    "--tokenizer server builds random and book prompts, not {other}"
                ))
            }
        };
        // The same length draw as every other dataset (vLLM's range ratio, input and output).
        let lens = LengthSampler::new(spec.input_len, spec.output_len, spec.range_ratio)
            .map_err(|e| e.to_string())?;
        let mut out = Vec::with_capacity(n as usize);
        for i in 0..n {
            let (target, output_len) = lens.draw(&mut rng);
            let target = target as usize;
            let source = match &book {
                Some(ids) if ids.len() <= target => {
                    return Err(format!(
                        "the book has {} tokens, fewer than the {target} asked for",
                        ids.len()
                    ))
                }
                Some(ids) => {
                    let start = rng.random_range(0..ids.len() - target);
                    ids[start..(start + target + target / 4 + 8).min(ids.len())].to_vec()
                }
                None => {
                    let words = super::build(
                        &WorkloadSpec {
                            input_len: target as u64 * 2 + 16,
                            ..spec.clone()
                        },
                        1,
                        0,
                        rng.random(),
                        warmup,
                    );
                    tokenize(client, base, model, &words[0].prompt).await?
                }
            };
            let prompt = exact(client, base, model, &source, target).await?;
            out.push(RequestSpec {
                id: i,
                prompt,
                messages: None,
                input_len: Some(target as u64),
                output_len,
                warmup,
            });
        }
        Ok(out)
    }
}
