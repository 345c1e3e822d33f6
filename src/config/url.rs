//! URLs as the user gave them and as servebench shows them.
//!
//! A URL given on the command line (`--base-url`, `--endpoint`, `--scrape-metrics`) may carry
//! credentials: userinfo (`https://user:TOKEN@host`) or query parameters (`?key=...`).
//! [`redact_url`] is the form of a URL that is saved or printed anywhere (result documents,
//! records, reports, HTML, error texts); the URL itself is kept only where requests are sent
//! (`measure::client::Secrets`, the scraper's spec). [`join_url`] puts a base URL and an endpoint
//! path together, the query staying at the end.
//!
//! Plain string handling, no parsing library: a URL too broken to parse must still be redacted.

/// What stands in for a secret.
const HIDDEN: &str = "***";

/// `url` with its userinfo and every query value (and any fragment) replaced by `***`:
/// `https://user:pw@host/v1?key=abc&x` → `https://***@host/v1?key=***&***`. A string without a
/// scheme (an endpoint path) only has its query redacted.
pub fn redact_url(url: &str) -> String {
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (url, None),
    };
    let (before_query, query) = match before_fragment.split_once('?') {
        Some((u, q)) => (u, Some(q)),
        None => (before_fragment, None),
    };
    let mut out = String::with_capacity(url.len());
    match before_query.split_once("://") {
        Some((scheme, rest)) => {
            out.push_str(scheme);
            out.push_str("://");
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            match authority.rsplit_once('@') {
                Some((_, host)) => {
                    out.push_str(HIDDEN);
                    out.push('@');
                    out.push_str(host);
                }
                None => out.push_str(authority),
            }
            out.push_str(path);
        }
        None => out.push_str(before_query),
    }
    if let Some(query) = query {
        out.push('?');
        let params: Vec<String> = query
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((name, _)) => format!("{name}={HIDDEN}"),
                None if p.is_empty() => String::new(),
                None => HIDDEN.to_string(),
            })
            .collect();
        out.push_str(&params.join("&"));
    }
    if let Some(fragment) = fragment {
        out.push('#');
        if !fragment.is_empty() {
            out.push_str(HIDDEN);
        }
    }
    out
}

/// The URL of `endpoint` on `base`: the paths joined with one `/`, a query of the base URL
/// (`https://host/v1?key=abc`) kept after the endpoint's path, and merged with the endpoint's
/// own query.
pub fn join_url(base: &str, endpoint: &str) -> String {
    let (base, base_query) = match base.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (base, None),
    };
    let (path, endpoint_query) = match endpoint.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (endpoint, None),
    };
    let base = base.trim_end_matches('/');
    let mut url = if path.starts_with('/') || path.is_empty() {
        format!("{base}{path}")
    } else {
        format!("{base}/{path}")
    };
    let queries: Vec<&str> = [base_query, endpoint_query]
        .into_iter()
        .flatten()
        .filter(|q| !q.is_empty())
        .collect();
    if !queries.is_empty() {
        url.push('?');
        url.push_str(&queries.join("&"));
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_userinfo_query_values_and_fragments() {
        for (given, shown) in [
            (
                "https://user:TOKEN@host/v1?key=abc",
                "https://***@host/v1?key=***",
            ),
            ("http://TOKEN@h:8000", "http://***@h:8000"),
            (
                "http://h:8000/v1?a=1&b=2&flag",
                "http://h:8000/v1?a=***&b=***&***",
            ),
            ("http://h/?key=abc#frag", "http://h/?key=***#***"),
            ("http://h/p@x?k=v", "http://h/p@x?k=***"),
            ("http://u:p@w@h/p", "http://***@h/p"),
            ("/v1/completions?api-key=abc", "/v1/completions?api-key=***"),
            ("/v1/completions", "/v1/completions"),
            ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
            ("not a url ?secret", "not a url ?***"),
        ] {
            assert_eq!(redact_url(given), shown, "{given}");
        }
    }

    #[test]
    fn redacting_twice_changes_nothing() {
        let once = redact_url("https://u:p@h/v1?key=abc#x");
        assert_eq!(redact_url(&once), once);
    }

    #[test]
    fn joins_base_and_endpoint_keeping_queries_at_the_end() {
        assert_eq!(
            join_url("http://h:1/", "/v1/completions"),
            "http://h:1/v1/completions"
        );
        assert_eq!(join_url("http://h:1", "generate"), "http://h:1/generate");
        assert_eq!(
            join_url("http://u:p@h:1?key=s", "/v1/completions"),
            "http://u:p@h:1/v1/completions?key=s"
        );
        assert_eq!(
            join_url("http://h/base/?key=s", "/v1/x?api-version=2"),
            "http://h/base/v1/x?key=s&api-version=2"
        );
    }
}
