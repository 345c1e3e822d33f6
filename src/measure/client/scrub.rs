//! Secrets kept out of what a server sends back: a server may echo the request's
//! headers (a 500 body, an error event in the stream, generated text, a side channel's JSON),
//! and everything the client stores or prints quotes what the server sent. [`Scrubber`] replaces
//! every secret the user gave — the API key, each `--header` value, the userinfo and query
//! values of `--base-url` and `--endpoint` as given — with `***`, in each form a server is
//! likely to echo it (as sent, JSON-escaped, percent-decoded, and a userinfo's Basic
//! authorization), before a record, a message or a side channel's answer leaves the client.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;

/// What stands in for a secret.
const HIDDEN: &str = "***";

/// Values shorter than this are not treated as secrets: no credential is that short, and
/// replacing every `1` or `on` would make every message unreadable.
pub const MIN_SECRET_BYTES: usize = 4;

/// Replaces the user's secrets in text and JSON.
pub struct Scrubber {
    /// `None` when there is no secret to look for.
    finder: Option<AhoCorasick>,
}

impl Scrubber {
    /// For `values` given as they are (the API key, header values) and the secrets within
    /// `urls` as given (`--base-url`, `--endpoint`).
    pub fn new<'a>(
        values: impl IntoIterator<Item = &'a str>,
        urls: impl IntoIterator<Item = &'a str>,
    ) -> Scrubber {
        let mut found: Vec<String> = values.into_iter().map(str::to_string).collect();
        for url in urls {
            found.extend(url_secrets(url));
        }
        let mut patterns: Vec<String> = Vec::new();
        for s in found {
            let s = s.trim().to_string();
            if s.len() < MIN_SECRET_BYTES {
                continue;
            }
            // JSON-escaped (an echo inside a JSON body) and percent-decoded (a URL part the
            // server decoded).
            let escaped = serde_json::to_string(&s).unwrap_or_default();
            let escaped = escaped.trim_matches('"').to_string();
            patterns.extend([percent_decoded(&s), escaped, s]);
        }
        patterns.retain(|p| p.len() >= MIN_SECRET_BYTES);
        patterns.sort();
        patterns.dedup();
        let finder = (!patterns.is_empty())
            .then(|| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&patterns)
                    .ok()
            })
            .flatten();
        Scrubber { finder }
    }

    /// `text` with every secret replaced by `***`.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.finder {
            Some(f) if f.is_match(text) => {
                Cow::Owned(f.replace_all(text, &vec![HIDDEN; f.patterns_len()]))
            }
            _ => Cow::Borrowed(text),
        }
    }

    /// Replaces secrets in `text` in place.
    pub fn string(&self, text: &mut String) {
        if let Cow::Owned(clean) = self.text(text) {
            *text = clean;
        }
    }

    /// Every string of a JSON value (object keys included) with its secrets replaced.
    pub fn json(&self, v: &mut Value) {
        if self.finder.is_none() {
            return;
        }
        match v {
            Value::String(s) => self.string(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.json(i)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (mut k, mut item) in entries {
                    self.string(&mut k);
                    self.json(&mut item);
                    map.insert(k, item);
                }
            }
            _ => {}
        }
    }
}

/// The secrets of a URL as given: its userinfo (whole, each part, and as the Basic
/// authorization reqwest sends for it) and every query and fragment value (as `redact_url`
/// hides them).
fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (url, None),
    };
    out.extend(fragment.map(str::to_string));
    let (before_query, query) = match before_fragment.split_once('?') {
        Some((u, q)) => (u, Some(q)),
        None => (before_fragment, None),
    };
    for param in query.into_iter().flat_map(|q| q.split('&')) {
        let value = param.split_once('=').map_or(param, |(_, v)| v);
        out.push(value.to_string());
    }
    if let Some((_, rest)) = before_query.split_once("://") {
        let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            out.push(userinfo.to_string());
            let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            out.extend([user.to_string(), password.to_string()]);
            let plain = format!("{}:{}", percent_decoded(user), percent_decoded(password));
            out.push(base64(plain.as_bytes()));
        }
    }
    out
}

/// `%XX` escapes decoded (where they decode to UTF-8; else `s` as it is).
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied(), b.get(i + 2).copied()) {
            (b'%', Some(h), Some(l)) if hex(h).is_some() && hex(l).is_some() => {
                let (h, l) = (hex(h).unwrap_or(0), hex(l).unwrap_or(0));
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// Standard base64 with padding (the Basic authorization's encoding).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scrubber() -> Scrubber {
        Scrubber::new(
            ["sk-TOPSECRET1", "TOP\"SECRET3", "1"],
            ["http://us%40er:pa%3Ass@127.0.0.1:9/v1?key=TOPSECRET2&flag"],
        )
    }

    /// Each secret, in each form a server echoes it, is replaced; a value
    /// too short to be a secret is left alone.
    #[test]
    fn secrets_are_replaced_in_every_form() {
        let s = scrubber();
        let echoed = r#"headers: {"authorization": "Bearer sk-TOPSECRET1", "x-custom": "TOP\"SECRET3", "x-priority": "1"} url /v1?key=TOPSECRET2 user us@er pass pa:ss basic dXNAZXI6cGE6c3M= raw TOP"SECRET3"#;
        let clean = s.text(echoed);
        for secret in ["TOPSECRET", "us@er", "pa:ss", "dXNAZXI6cGE6c3M"] {
            assert!(!clean.contains(secret), "{secret} in {clean}");
        }
        assert!(clean.contains(r#""x-priority": "1""#), "{clean}");
        assert!(clean.contains("Bearer ***"), "{clean}");
        let mut v = json!({"echo": ["sk-TOPSECRET1", {"TOPSECRET2": 3}], "n": 1});
        s.json(&mut v);
        assert_eq!(v, json!({"echo": ["***", {"***": 3}], "n": 1}));
        assert!(matches!(s.text("nothing here"), Cow::Borrowed(_)));
        assert_eq!(base64(b"user:pw"), "dXNlcjpwdw==");
        assert_eq!(base64(b"ab"), "YWI=");
    }

    #[test]
    fn without_secrets_nothing_changes() {
        let s = Scrubber::new([], []);
        assert!(s.finder.is_none());
        assert_eq!(s.text("Bearer x"), "Bearer x");
    }
}
