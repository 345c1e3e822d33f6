//! The pre-flight request: one short request before the run, so a server that cannot answer
//! (a wrong URL, model or key) ends the run with its reason before any load is sent.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::config::RunConfig;
use crate::drive::error::RunError;
use crate::measure::client::{Client, RequestSpec};
use crate::measure::clock::Clock;
use crate::measure::record::FailureKind;

/// One short request before the run, bounded by `--preflight-timeout`. Configuration mistakes
/// (unreachable server, wrong endpoint or API, rejected body or credentials) and a server that
/// does not answer within that limit stop the run with one clear line; a server that is merely
/// busy or flaky (5xx, 429, a broken stream) does not.
pub(super) async fn preflight(
    client: &Arc<Client>,
    cfg: &RunConfig,
    clock: &Clock,
) -> Result<(), RunError> {
    let spec = RequestSpec {
        id: u64::MAX,
        prompt: "Hello".into(),
        // A rerank scores documents: one, besides its query.
        batch: cfg
            .backend
            .takes_query()
            .then(|| "Hello".into())
            .into_iter()
            .collect(),
        messages: None,
        // A transcription sends a clip: a tenth of a second of silence.
        parts: (cfg.backend == crate::config::BackendKind::OpenaiAudio)
            .then(|| crate::workload::audio::silence(std::time::Duration::from_millis(100)))
            .into_iter()
            .collect(),
        input_len: None,
        output_len: cfg.workload.dataset.output_len().min(4),
        warmup: true,
        ..Default::default()
    };
    let limit = cfg.load.preflight_timeout();
    let r = client
        .send_within(
            &spec,
            clock.now_ns(),
            clock,
            &CancellationToken::new(),
            Some(limit),
            None,
        )
        .await;
    let crate::measure::record::Outcome::Failed { kind, message } = &r.outcome else {
        return Ok(());
    };
    let fatal = match kind {
        FailureKind::Connect => true,
        FailureKind::HttpStatus => r
            .http_status
            .is_some_and(|s| (400..500).contains(&s) && s != 429),
        FailureKind::MalformedStream | FailureKind::MalformedAnswer => true,
        // A server that does not answer a 4-token request in time would hang every request.
        FailureKind::Timeout | FailureKind::Stall => true,
        _ => false,
    };
    if !fatal {
        return Ok(());
    }
    let hint = match kind {
        FailureKind::Connect => "is the server running and --base-url right?",
        FailureKind::MalformedStream | FailureKind::MalformedAnswer => {
            "does --backend match the server's API?"
        }
        FailureKind::Timeout | FailureKind::Stall => {
            "is the server answering? raise --preflight-timeout if it is only slow"
        }
        _ => "check --backend, --endpoint, --model and the API key",
    };
    Err(RunError::Preflight(format!(
        "pre-flight request to {} failed: {message} ({hint})",
        client.url()
    )))
}
