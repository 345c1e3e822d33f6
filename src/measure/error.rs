//! Errors of the measuring layer. A request that fails is not an error but data
//! ([`crate::measure::record::Outcome`]); this is the failure to set up the client at all.

/// The HTTP client could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A header whose name is not a header name (`--header`).
    #[error("cannot start the HTTP client: invalid header name '{0}'")]
    HeaderName(String),
    /// A header whose value cannot be sent (the value is never shown: it may be the API key).
    #[error("cannot start the HTTP client: invalid value for header '{0}'")]
    HeaderValue(String),
    /// The HTTP client could not be built (its TLS setup).
    #[error("cannot start the HTTP client: {0}")]
    Build(String),
    /// `--header` names the header servebench sets per request (`--request-id-header`).
    #[error("cannot start the HTTP client: --header {0} is also --request-id-header, which servebench sets to each request's own id; give --request-id-header none to send your value instead")]
    RequestIdHeader(String),
    /// The chat template of `--tokenizer`, which a conversation sent as a prompt needs.
    #[error("cannot start the HTTP client: {0}")]
    ChatTemplate(#[source] crate::tokenizer::chat_template::TemplateError),
}

/// A side channel's POST (the server's `/tokenize`, `/detokenize`) failed; the URL is shown
/// redacted.
#[derive(Debug, thiserror::Error)]
pub enum SideChannelError {
    /// The request could not be sent or its answer read.
    #[error("POST {url}: {why}")]
    Send { url: String, why: String },
    /// The answer is longer than the most a side channel may send.
    #[error("POST {url}: the answer is over {max} bytes")]
    TooLong { url: String, max: usize },
    /// An error status, with the start of its body (the user's secrets replaced).
    #[error("POST {url}: HTTP {status}: {excerpt}")]
    Status {
        url: String,
        status: String,
        excerpt: String,
    },
    /// The answer is not JSON.
    #[error("POST {url}: not JSON: {why}")]
    NotJson { url: String, why: String },
}

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
