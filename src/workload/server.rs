//! `--tokenizer server`: prompts built with the server's own tokenizer, through its
//! `POST /tokenize` and `POST /detokenize` (llama.cpp's `content`/`tokens` form and vLLM's
//! `prompt`/`tokens` form are both sent and read). `random` and `book` only: source text is
//! tokenized by the server, the first L ids are detokenized, and the text is re-tokenized and
//! adjusted until the server counts exactly L tokens.
//!
//! This is the one part of `workload` that does HTTP (through `measure::client`).

use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};

use crate::config::{Dataset, WorkloadSpec};
use crate::measure::client::{Client, RequestSpec};
use crate::workload::dataset::LengthSampler;
use crate::workload::error::ServerTokenizerError;

use ServerTokenizerError as E;

/// At most this many detokenize/tokenize rounds to make one prompt exact.
const MAX_ROUNDS: usize = 8;

async fn tokenize(
    client: &Client,
    base: &str,
    model: &str,
    text: &str,
) -> Result<Vec<u64>, ServerTokenizerError> {
    let body = json!({"content": text, "prompt": text, "model": model, "add_special": false, "add_special_tokens": false});
    let v = (client.post_json(base, "/tokenize", &body).await).map_err(E::Request)?;
    let ids = (v.get("tokens").and_then(Value::as_array)).ok_or(E::NoTokensField)?;
    if ids.is_empty() && !text.trim().is_empty() {
        return Err(E::NoTokens(text.len()));
    }
    ids.iter()
        .map(|t| t.as_u64().or_else(|| t.get("id").and_then(Value::as_u64)))
        .collect::<Option<Vec<u64>>>()
        .ok_or(E::NotAnId)
}

async fn detokenize(
    client: &Client,
    base: &str,
    model: &str,
    ids: &[u64],
) -> Result<String, ServerTokenizerError> {
    let v = client
        .post_json(base, "/detokenize", &json!({"tokens": ids, "model": model}))
        .await
        .map_err(E::Request)?;
    v.get("content")
        .or_else(|| v.get("prompt"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or(E::NoText)
}

/// Text whose server count is exactly `target`, from the ids of some source text.
async fn exact(
    client: &Client,
    base: &str,
    model: &str,
    source: &[u64],
    target: usize,
) -> Result<String, ServerTokenizerError> {
    if source.is_empty() || target == 0 {
        let source_tokens = source.len();
        return Err(E::NoSource {
            target,
            source_tokens,
        });
    }
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
    Err(E::NotExact(target))
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
) -> Result<Vec<RequestSpec>, ServerTokenizerError> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5E4E_70C5);
    let d = &spec.dataset;
    let (book, input_len, range_ratio) = match d {
        Dataset::Book {
            path,
            input_len,
            range_ratio,
            ..
        } => {
            let text = std::fs::read_to_string(path).map_err(|source| E::Read {
                path: path.clone(),
                source,
            })?;
            let ids = tokenize(client, base, model, &text).await?;
            (Some(ids), *input_len, *range_ratio)
        }
        Dataset::Random {
            input_len,
            range_ratio,
            ..
        }
        | Dataset::RandomMm {
            input_len,
            range_ratio,
            ..
        } => (None, *input_len, *range_ratio),
        Dataset::ShareGpt { .. }
        | Dataset::Jsonl { .. }
        | Dataset::Prefix { .. }
        | Dataset::Trace { .. }
        | Dataset::Graph { .. }
        | Dataset::Agentic { .. } => return Err(E::Unsupported(d.name())),
    };
    // The same length draw as every other dataset (vLLM's range ratio, input and output).
    let lens = LengthSampler::new(input_len, d.output_len(), range_ratio)?;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let (target, output_len) = lens.draw(&mut rng);
        let target = target as usize;
        let source = match &book {
            Some(ids) if ids.len() <= target => {
                let tokens = ids.len();
                return Err(E::BookTooShort { tokens, target });
            }
            Some(ids) => {
                let start = rng.random_range(0..ids.len() - target);
                ids[start..(start + target + target / 4 + 8).min(ids.len())].to_vec()
            }
            None => {
                let len = target as u64 * 2 + 16;
                let words = super::words::prompts(len, output_len, 1, 0, rng.random(), warmup);
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
            ..Default::default()
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunConfig;
    use crate::measure::client::Secrets;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server whose every answer is `body` (HTTP/1.1, one request per connection).
    async fn answering(body: &'static str) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = vec![0u8; 64 * 1024];
                let _ = s.read(&mut buf).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(body.as_bytes()).await;
            }
        });
        url
    }

    /// A `/tokenize` that answers no tokens is an error naming it, not a
    /// panic (a typed one, with the length of the text).
    #[tokio::test]
    async fn an_empty_tokenize_answer_is_an_error() {
        let url = answering(r#"{"tokens":[]}"#).await;
        let cfg = RunConfig {
            base_url: url.clone(),
            ..RunConfig::default()
        };
        let client = Client::new(&cfg, &Secrets::default(), None, None).unwrap();
        let spec = WorkloadSpec::random(8, 4);
        let e = build_requests(&spec, &client, &url, "m", 2, 1, false)
            .await
            .unwrap_err();
        assert!(matches!(e, E::NoTokens(n) if n > 0), "{e:?}");
        assert!(e.to_string().contains("no tokens"), "{e}");
    }

    /// A dataset the server's tokenizer cannot build is refused by name before any
    /// request.
    #[tokio::test]
    async fn the_server_tokenizer_names_a_dataset_it_cannot_build() {
        let url = answering(r#"{"tokens":[1]}"#).await;
        let cfg = RunConfig {
            base_url: url.clone(),
            ..RunConfig::default()
        };
        let client = Client::new(&cfg, &Secrets::default(), None, None).unwrap();
        let spec = WorkloadSpec {
            dataset: Dataset::Prefix {
                prefix_len: 4,
                num_prefixes: 2,
                input_len: 8,
                output_len: None,
            },
            tokenizer: Some("server".into()),
        };
        let e = build_requests(&spec, &client, &url, "m", 2, 1, false)
            .await
            .unwrap_err();
        assert!(matches!(e, E::Unsupported("prefix")), "{e:?}");
    }
}
