//! `--tokenizer server`: prompts built with the server's own tokenizer, through its
//! `POST /tokenize` and `POST /detokenize` (llama.cpp's `content`/`tokens` form and vLLM's
//! `prompt`/`tokens` form are both sent and read). `random` and `book` only: source text is
//! tokenized by the server, the first L ids are detokenized, and the text is re-tokenized and
//! adjusted until the server counts exactly L tokens.
//!
//! This is the one part of `workload` that does HTTP (through `measure::client`).

use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};

use crate::config::{DatasetKind, WorkloadSpec};
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
    if ids.is_empty() && !text.trim().is_empty() {
        return Err(format!(
            "the /tokenize answer has no tokens for a text of {} bytes",
            text.len()
        ));
    }
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
    if source.is_empty() || target == 0 {
        return Err(format!(
            "cannot build a prompt of {target} tokens from {} source tokens",
            source.len()
        ));
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
    let book = match spec.dataset {
        DatasetKind::Book => {
            let path = spec
                .dataset_path
                .as_deref()
                .ok_or("the book dataset needs --dataset-path")?;
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            Some(tokenize(client, base, model, &text).await?)
        }
        DatasetKind::Random => None,
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

    /// Issue 14, row 10: a `/tokenize` that answers no tokens is an error naming it, not a
    /// panic.
    #[tokio::test]
    async fn an_empty_tokenize_answer_is_an_error() {
        let url = answering(r#"{"tokens":[]}"#).await;
        let cfg = RunConfig {
            base_url: url.clone(),
            ..RunConfig::default()
        };
        let client = Client::new(&cfg, &Secrets::default(), None, None).unwrap();
        let spec = WorkloadSpec {
            input_len: 8,
            ..WorkloadSpec::default()
        };
        let e = build_requests(&spec, &client, &url, "m", 2, 1, false)
            .await
            .unwrap_err();
        assert!(e.contains("no tokens"), "{e}");
    }
}
