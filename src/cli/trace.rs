//! `servebench run`'s flags for joining each request with the server's own account of it
//! (`servebench join`): the header each request's id is sent in (`--request-id-header`), and where
//! the run's own spans go (`--otel-file`, `--otel-endpoint`). Set into
//! `RunConfig` by [`TraceArgs::apply`]; the name's syntax is checked here, where the flag is.
//! And `servebench join`'s arguments ([`JoinArgs`]).

use std::path::PathBuf;

use clap::Args;

use super::heading;

use super::error::FlagError;
use crate::config::RunConfig;
use crate::drive::otel::OtelTarget;
use crate::render::print::Format;

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Header each request's id is sent in (unique in the run; the id the server returns in
    /// the same header is kept beside it in the records, for `servebench join`); `none`: send
    /// no id.
    #[arg(help_heading = heading::ADVANCED, hide_short_help = true, long, value_name = "NAME", default_value = "x-request-id",
          value_parser = parse_id_header)]
    pub request_id_header: IdHeader,
    /// Write each run's own per-request spans (client queue, connect, response; send, first
    /// and last token) to FILE as OTLP JSON, one document per line, after the run; each
    /// request then also carries its W3C `traceparent`.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_name = "FILE")]
    pub otel_file: Option<PathBuf>,
    /// POST those spans to this OTLP/HTTP endpoint as JSON (a collector's
    /// http://HOST:4318/v1/traces), after the run.
    #[arg(help_heading = heading::OUTPUT, hide_short_help = true, long, value_name = "URL", value_parser = parse_endpoint)]
    pub otel_endpoint: Option<String>,
}

/// `servebench join RESULT TRACE`.
#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The run's result file (its .records.jsonl beside it).
    pub result: PathBuf,
    /// The server's trace: an OTLP JSON file (vLLM's spans through an OpenTelemetry
    /// Collector's file exporter, one document per line or one in all; `servebench sim`'s
    /// `GET /sim/otlp`).
    pub trace: PathBuf,
    /// text, csv (a row per joined request), json (the whole join) or html (one page).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Write to this file instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also keep the join's figures (the counts and the TTFT split) in RESULT under `join`,
    /// for `servebench report`, its CSV and HTML (RESULT is rewritten, atomically).
    #[arg(long)]
    pub save: bool,
}

/// `--request-id-header`'s value: a header name, lowercase, or none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdHeader(pub Option<String>);

/// Headers servebench sets itself or that frame the request: never a request id's.
const RESERVED: [&str; 7] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "authorization",
    "x-api-key",
];

/// Longest header name taken.
const MAX_NAME: usize = 64;

fn parse_id_header(s: &str) -> Result<IdHeader, FlagError> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(IdHeader(None));
    }
    // RFC 9110's token characters.
    let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if s.is_empty() || s.len() > MAX_NAME || !s.bytes().all(tchar) {
        return Err(FlagError::IdHeaderName(MAX_NAME));
    }
    let name = s.to_ascii_lowercase();
    if RESERVED.contains(&name.as_str()) {
        return Err(FlagError::ReservedHeader(name));
    }
    Ok(IdHeader(Some(name)))
}

fn parse_endpoint(s: &str) -> Result<String, FlagError> {
    if s.starts_with("http://") || s.starts_with("https://") {
        Ok(s.to_string())
    } else {
        Err(FlagError::OtlpEndpoint)
    }
}

impl TraceArgs {
    /// `cfg` with these flags.
    pub fn apply(&self, mut cfg: RunConfig) -> RunConfig {
        cfg.request_id_header = self.request_id_header.0.clone();
        cfg.propagate_trace = self.otel().is_set() && cfg.request_id_header.is_some();
        cfg
    }

    /// Where the runs' spans go.
    pub fn otel(&self) -> OtelTarget {
        OtelTarget {
            file: self.otel_file.clone(),
            endpoint: self.otel_endpoint.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_id_header, IdHeader};

    /// A header name is taken in any case and kept lowercase; `none` sends no
    /// id; what is not a name, or is a header servebench sets, is refused naming why.
    #[test]
    fn request_id_header_takes_names_only() {
        assert_eq!(
            parse_id_header("X-Request-Id"),
            Ok(IdHeader(Some("x-request-id".into())))
        );
        assert_eq!(parse_id_header("none"), Ok(IdHeader(None)));
        for bad in ["", "x request", "x:y", "é", &"x".repeat(65)] {
            let e = parse_id_header(bad).expect_err(bad).to_string();
            assert!(e.contains("not a header name"), "{bad}: {e}");
        }
        let e = (parse_id_header("Content-Length").expect_err("reserved")).to_string();
        assert!(e.contains("content-length"), "{e}");
    }
}
