//! Exports a saved run's own per-request spans (`results::otlp_export`) where `--otel-file` and
//! `--otel-endpoint` say: appended to a file, one OTLP JSON document per line (the
//! OpenTelemetry Collector's file format, which `servebench join` also reads), and POSTed to
//! an OTLP/HTTP endpoint as JSON (`Content-Type: application/json`, the collector's
//! `/v1/traces`). It runs after the run is saved and reads the records back, so nothing of it
//! touches the measured requests; a failure is an [`OtelError`] naming where, and the run's
//! saved result stays as it is.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::url::redact_url;
use crate::measure::record::{read_jsonl, records_next_to};
use crate::results::document::BenchResult;
use crate::results::otlp_export;

/// Where a run's spans go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OtelTarget {
    /// `--otel-file`: appended to, one document per line.
    pub file: Option<PathBuf>,
    /// `--otel-endpoint`: the full URL POSTed to (it may hold credentials: never shown).
    pub endpoint: Option<String>,
}

/// Longest wait for the collector's answer to one POST.
const POST_TIMEOUT: Duration = Duration::from_secs(30);

/// The spans could not be exported.
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    #[error("--otel-file {path}: {source}")]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--otel-endpoint {url}: {why}")]
    Post { url: String, why: String },
    #[error("{path}: {why}")]
    Result { path: PathBuf, why: String },
}

impl OtelTarget {
    pub fn is_set(&self) -> bool {
        self.file.is_some() || self.endpoint.is_some()
    }

    /// Exports the spans of the run saved at `result_path` (its records beside it); the
    /// number of requests exported.
    pub async fn export(&self, result_path: &Path) -> Result<u64, OtelError> {
        let bad = |why: String| OtelError::Result {
            path: result_path.to_path_buf(),
            why,
        };
        let result = BenchResult::load(result_path).map_err(|e| bad(e.to_string()))?;
        let records_path = records_next_to(result_path, result.records_file.as_deref())
            .ok_or_else(|| bad("no records file beside it".into()))?;
        let records = read_jsonl(&records_path).map_err(|e| bad(e.to_string()))?;
        let mut file = match &self.file {
            Some(path) => Some(self.open(path)?),
            None => None,
        };
        let http = match &self.endpoint {
            Some(_) => Some(client()?),
            None => None,
        };
        let requests = std::cell::Cell::new(0);
        let counted = records.inspect(|_| requests.set(requests.get() + 1));
        for doc in otlp_export::documents(&result, counted) {
            let text = doc.to_string();
            if let (Some(f), Some(path)) = (&mut file, &self.file) {
                let line = format!("{text}\n");
                f.write_all(line.as_bytes())
                    .map_err(|source| OtelError::File {
                        path: path.clone(),
                        source,
                    })?;
            }
            if let (Some(http), Some(url)) = (&http, &self.endpoint) {
                post(http, url, text).await?;
            }
        }
        Ok(requests.get())
    }

    fn open(&self, path: &Path) -> Result<std::fs::File, OtelError> {
        let err = |source| OtelError::File {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(err)
    }
}

fn client() -> Result<reqwest::Client, OtelError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(POST_TIMEOUT)
        .build()
        .map_err(|e| OtelError::Post {
            url: String::new(),
            why: e.to_string(),
        })
}

/// POSTs one document; a status other than 2xx is an error naming it.
async fn post(http: &reqwest::Client, url: &str, body: String) -> Result<(), OtelError> {
    let failed = |why: String| OtelError::Post {
        url: redact_url(url),
        why,
    };
    let req = http.post(url).header("content-type", "application/json");
    let resp = (req.body(body).send().await).map_err(|e| failed(e.without_url().to_string()))?;
    if !resp.status().is_success() {
        return Err(failed(format!("HTTP {}", resp.status())));
    }
    Ok(())
}
