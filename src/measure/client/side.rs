//! The client's side channels: small requests to the server beside the measured ones (the
//! simulator's `/sim/info` and `/sim/stats`, the server's `/tokenize`, the `Date` of a `GET`
//! for the clock-offset probe). Each is bounded in time and size, and never measured; their
//! answers are cleared of the user's secrets.

use std::time::Duration;

use super::body::read_at_most;
use super::Client;
use crate::config::url::{join_url, redact_url};
use crate::measure::error::{describe, SideChannelError};

/// The most a side channel's JSON answer (`/sim/info`, `/sim/stats`, a small `/tokenize`)
/// may hold; a larger one is refused rather than read whole.
const SIDE_ANSWER_MAX: usize = 1 << 20;

impl Client {
    /// GETs `path` on the server's base URL and parses JSON; `None` on any failure. Used for
    /// optional side channels (the simulator's `/sim/stats`), never for measured requests.
    pub async fn get_json(&self, base_url: &str, path: &str) -> Option<serde_json::Value> {
        let resp = self.get(&join_url(base_url, path)).await?;
        if !resp.status().is_success() {
            return None;
        }
        let (bytes, over) = read_at_most(resp, SIDE_ANSWER_MAX).await.ok()?;
        if over {
            return None;
        }
        let mut answer = serde_json::from_slice(&bytes).ok()?;
        self.scrub.json(&mut answer);
        Some(answer)
    }

    /// The `Date` header of `GET base_url` (any status), for the clock-offset probe (`shard`).
    pub async fn get_date(&self, base_url: &str) -> Option<std::time::SystemTime> {
        let resp = self.get(base_url).await?;
        let date = resp.headers().get(reqwest::header::DATE)?.to_str().ok()?;
        httpdate::parse_http_date(date).ok()
    }

    /// A side-channel GET with a 2 s limit (any status); `None` when it failed.
    async fn get(&self, url: &str) -> Option<reqwest::Response> {
        let req = self.http.get(url).timeout(Duration::from_secs(2));
        req.send().await.ok()
    }

    /// POSTs a JSON body to `path` on the server's base URL and parses the JSON answer. Used
    /// for side channels (the server's `/tokenize`), never for measured requests.
    pub async fn post_json(
        &self,
        base_url: &str,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, SideChannelError> {
        let url = join_url(base_url, path);
        let shown = redact_url(&url);
        let failed = |e: reqwest::Error| SideChannelError::Send {
            url: shown.clone(),
            why: describe(&e.without_url()),
        };
        // A `Value` always serializes.
        let body = serde_json::to_vec(body).unwrap_or_default();
        let body_len = body.len();
        let req = self.http.post(&url).body(body);
        let resp = (req.timeout(Duration::from_secs(60)).send().await).map_err(failed)?;
        let status = resp.status();
        // An answer is proportional to what was asked (a token id per prompt byte at most).
        let max = SIDE_ANSWER_MAX.max(body_len.saturating_mul(64));
        let (bytes, over) = read_at_most(resp, max).await.map_err(failed)?;
        if over && status.is_success() {
            return Err(SideChannelError::TooLong { url: shown, max });
        }
        if !status.is_success() {
            // Secrets out before the excerpt is cut, so none is left half-hidden.
            let text = String::from_utf8_lossy(&bytes);
            return Err(SideChannelError::Status {
                url: shown,
                status: status.to_string(),
                excerpt: self.scrub.text(&text).chars().take(200).collect(),
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| SideChannelError::NotJson {
            url: shown,
            why: e.to_string(),
        })
    }
}

/// What one call made by [`Client::call`] came back with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SideCall {
    /// The answer's status; `None` when none came.
    pub status: Option<u16>,
    /// The start of the answer's body, at most `excerpt_chars` characters, cleared of the
    /// user's secrets.
    pub excerpt: String,
    /// Why no answer came.
    pub error: Option<String>,
}

/// The most of a called endpoint's answer read (only its start is kept).
const CALL_ANSWER_MAX: usize = 64 << 10;

impl Client {
    /// `method` `path` on the server's base URL with an empty body (a hook: a cache reset, the
    /// profiler), within `limit`; never measured. At most 64 KiB of the answer is read and
    /// its first `excerpt_chars` characters kept.
    pub async fn call(
        &self,
        method: crate::config::hooks::HookMethod,
        path: &str,
        limit: Duration,
        excerpt_chars: usize,
    ) -> SideCall {
        use crate::config::hooks::HookMethod;
        let url = join_url(self.base_url(), path);
        let method = match method {
            HookMethod::Get => reqwest::Method::GET,
            HookMethod::Post => reqwest::Method::POST,
            HookMethod::Put => reqwest::Method::PUT,
            HookMethod::Delete => reqwest::Method::DELETE,
        };
        let sent = self.http.request(method, &url).body(Vec::new());
        let answer = async {
            let resp = sent.send().await?;
            let status = resp.status().as_u16();
            let (bytes, _) = read_at_most(resp, CALL_ANSWER_MAX).await?;
            Ok::<_, reqwest::Error>((status, bytes))
        };
        let failed = |why: String| SideCall {
            error: Some(why),
            ..SideCall::default()
        };
        match tokio::time::timeout(limit, answer).await {
            Err(_) => failed(format!("got no answer within {} s", limit.as_secs())),
            Ok(Err(e)) => failed(describe(&e.without_url())),
            Ok(Ok((status, bytes))) => {
                let text = String::from_utf8_lossy(&bytes);
                let excerpt = self.scrub.text(&text).chars().take(excerpt_chars).collect();
                SideCall {
                    status: Some(status),
                    excerpt,
                    error: None,
                }
            }
        }
    }
}
