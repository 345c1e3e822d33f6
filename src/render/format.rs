//! Number formatting shared by the text, compare, plot and HTML outputs: a figure's value for
//! tables ([`fmt_value`], by the figure's unit) and a load value for labels ([`fmt_load`], the
//! views' own, so titles and tables agree).
//!
//! Formatting only: nothing here chooses what is shown, and a figure's kind comes from its
//! typed key (`config::figure::FigureKey::unit`), never from its spelling. To format one more
//! kind of value, add a function here and use it from every output, so the text and HTML
//! tables agree.

use crate::config::figure::{FigureKey, Unit};

pub use crate::views::model::fmt_load;

/// A figure's value for tables: counts (requests, token totals) as integers, prices and
/// energy with four decimals, everything else with two, like vLLM's report.
pub fn fmt_value(key: &FigureKey, v: f64) -> String {
    match key.unit() {
        Some(u) if u.is_count() && v.fract() == 0.0 && v.abs() < 1e15 => {
            format!("{}", v as i64)
        }
        Some(Unit::UsdPerMillionTokens | Unit::JoulesPerToken) => format!("{v:.4}"),
        Some(Unit::Fraction) => format!("{v:.4}"),
        _ => format!("{v:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_formatted_by_their_unit() {
        let v = |name: &str, x| fmt_value(&FigureKey::named(name), x);
        assert_eq!(v("completed", 40.0), "40");
        assert_eq!(v("completed", 40.5), "40.50");
        assert_eq!(v("total_output_tokens", 640.0), "640");
        assert_eq!(v("max_concurrent_requests", 64.0), "64");
        assert_eq!(v("llmperf_mean_number_output_tokens", 150.0), "150.00");
        assert_eq!(v("usd_per_1m_output_tokens", 1.30221), "1.3022");
        assert_eq!(v("joules_per_output_token", 0.5), "0.5000");
        assert_eq!(v("p99_ttft_ms", 51.476), "51.48");
        assert_eq!(v("mean_foo_ms", 7.0), "7.00");
        assert_eq!(fmt_load(f64::INFINITY), "inf");
        assert_eq!(fmt_load(2.5), "2.5");
        assert_eq!(fmt_load(4.0), "4");
    }
}
