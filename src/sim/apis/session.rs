//! A router's session token (`servebench sim --session-header NAME`): a request without the
//! header gets a new token on its response (`s-<port-free number>`), one that sends it back
//! gets the same value again; the server counts the tokens it minted and the ones it heard
//! back, split by whether it minted them (`SimStats::sessions_*`), so a test knows a client
//! echoed each session's token to the server that gave it.
//!
//! # What it must not touch
//! Any API's wire format, the request life cycle (`common.rs`), pacing (`stream/`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;

use crate::sim::state::Shared;

/// The longest token read back (a longer one counts as unknown).
const MAX_TOKEN: usize = 64;

/// Middleware: with `--session-header NAME`, echoes a known token or mints one, and counts.
pub(crate) async fn with_session_header(
    State(shared): State<Arc<Shared>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let Some(name) = shared.config.session_header.as_deref() else {
        return next.run(req).await;
    };
    let sent = (req.headers().get(name))
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= MAX_TOKEN)
        .map(str::to_owned);
    let stats = &shared.stats;
    let token = match sent {
        Some(t) => {
            let minted = (t.strip_prefix("s-"))
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| n < stats.sessions_minted.load(Relaxed));
            match minted {
                true => stats.sessions_echoed.fetch_add(1, Relaxed),
                false => stats.sessions_unknown.fetch_add(1, Relaxed),
            };
            t
        }
        None => format!("s-{}", stats.sessions_minted.fetch_add(1, Relaxed)),
    };
    let mut response = next.run(req).await;
    if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::from_str(&token)) {
        response.headers_mut().insert(n, v);
    }
    response
}
