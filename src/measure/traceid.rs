//! A request's W3C trace context (`traceparent`), derived from its id alone, so the client
//! that sends it (`client`, with `--otel-file`/`--otel-endpoint`) and the export of the run's
//! spans afterwards (`results::otlp`) name the same trace and span without keeping either: a
//! server that traces (vLLM does, from `traceparent`) then puts its spans under the client's.

/// FNV-1a, 64 bits, of `parts` one after another.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.iter().flat_map(|p| p.iter()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The trace id (never 0) of the request `request_id`.
pub fn trace_id(request_id: &str) -> u128 {
    let hi = fnv1a(&[request_id.as_bytes(), b"#trace-hi"]);
    let lo = fnv1a(&[request_id.as_bytes(), b"#trace-lo"]);
    (u128::from(hi) << 64 | u128::from(lo)).max(1)
}

/// The id (never 0) of the request's span called `name` (`request` is the root).
pub fn span_id(request_id: &str, name: &str) -> u64 {
    fnv1a(&[request_id.as_bytes(), b"#", name.as_bytes()]).max(1)
}

/// The `traceparent` header's value: the request's trace, its root span as the parent, sampled.
pub fn traceparent(request_id: &str) -> String {
    format!(
        "00-{:032x}-{:016x}-01",
        trace_id(request_id),
        span_id(request_id, "request")
    )
}

#[cfg(test)]
mod tests {
    /// One id gives one context, in W3C's shape; two ids give two.
    #[test]
    fn traceparent_is_the_request_s_own() {
        let a = super::traceparent("sb0123456789ab-7");
        assert_eq!(a, super::traceparent("sb0123456789ab-7"));
        assert_ne!(a, super::traceparent("sb0123456789ab-8"));
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [2, 32, 16, 2]
        );
        assert!(a.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit()));
    }
}
