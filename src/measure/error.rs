//! Errors of the measuring layer. A request that fails is not an error but data
//! ([`crate::measure::record::Outcome`]); this is the failure to set up the client at all.

/// The HTTP client could not be built (a header that is not a valid header, a TLS setup).
#[derive(Debug, thiserror::Error)]
#[error("cannot start the HTTP client: {0}")]
pub struct ClientError(pub String);

/// An error and its causes on one line ("a: b: c"), skipping causes already in the text.
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        source = cause.source();
    }
    s
}
