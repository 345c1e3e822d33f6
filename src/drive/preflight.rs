//! The pre-flight request: one short request before the run, so a server that cannot answer
//! (a wrong URL, model or key) ends the run with its reason before any load is sent.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::drive::error::RunError;
use crate::measure::client::{Client, RequestSpec};
use crate::measure::clock::Clock;
use crate::measure::record::FailureKind;

/// Sends `spec`, the run's pre-flight request (`workload::requests` builds it in the shape
/// the backend takes), bounded by `limit` (`--preflight-timeout`). Configuration mistakes
/// (unreachable server, wrong endpoint or API, rejected body or credentials) and a server that
/// does not answer within that limit stop the run with one clear line; a server that is merely
/// busy or flaky (5xx, 429, a broken stream) does not.
pub(super) async fn preflight(
    client: &Arc<Client>,
    spec: &RequestSpec,
    limit: Duration,
    clock: &Clock,
) -> Result<(), RunError> {
    let r = client
        .send_within(
            spec,
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
