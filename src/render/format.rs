//! Number formatting shared by the text, compare, plot and HTML outputs: a metric value for
//! tables ([`fmt_value`]) and a load value for labels ([`fmt_load`]).
//!
//! Formatting only: nothing here chooses what is shown. To format one more kind of value, add a
//! function here and use it from every output, so the text and HTML tables agree.

/// A metric value for tables: counts as integers, everything else with two decimals, like
/// vLLM's report.
pub fn fmt_value(key: &str, v: f64) -> String {
    let count = matches!(
        key,
        "completed"
            | "failed"
            | "total_input_tokens"
            | "total_output_tokens"
            | "max_concurrent_requests"
    );
    if count && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if key.starts_with("usd_") || key.starts_with("joules_") {
        format!("{v:.4}")
    } else {
        format!("{v:.2}")
    }
}

/// A load value for labels: `inf`, integers plain, else up to 3 decimals.
pub fn fmt_load(v: f64) -> String {
    if v.is_infinite() {
        "inf".into()
    } else if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}
