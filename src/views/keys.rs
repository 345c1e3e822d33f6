//! Which keys of a vLLM-style JSON object are figures ([`numeric_keys`]): vLLM's run figures
//! and its latency-shaped keys (`mean_X_ms`, `median_X_ms`, `std_X_ms`, `pNN_X_ms`), read as
//! `config::figure::FigureKey`s; one servebench does not know (from a newer vLLM) is kept
//! under its name as `FigureKey::Other`, never judged. Other keys (the config, per-request
//! lists, metadata) are not figures.
//!
//! A figure's unit, direction and reading order are the key's (`config::figure`), not this
//! file's. Pure functions over a JSON object: no file, no view. To read one more figure, give
//! it a `FigureKey`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::config::figure::FigureKey;

/// The finite numeric figures of a vLLM-style object (`null`s and non-numbers are skipped).
pub fn numeric_keys(map: &serde_json::Map<String, Value>) -> BTreeMap<FigureKey, f64> {
    map.iter()
        .filter_map(|(k, v)| Some((figure(k)?, v.as_f64().filter(|x| x.is_finite())?)))
        .collect()
}

/// The figure a key names: a run figure, or a latency-shaped key.
fn figure(k: &str) -> Option<FigureKey> {
    let latency_shaped = k.ends_with("_ms")
        && ["mean_", "median_", "std_", "p"]
            .iter()
            .any(|p| k.starts_with(p));
    match FigureKey::named(k) {
        // A statistic servebench knows is a figure whatever its unit (`p99_output_tps_per_user`).
        known @ (FigureKey::Run(_) | FigureKey::Latency(_)) => Some(known),
        key => latency_shaped.then_some(key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_kept_and_the_rest_skipped() {
        let o = serde_json::json!({
            "completed": 10, "output_throughput": 5.5, "p99_ttft_ms": 3.0,
            "mean_foo_ms": 1.0, "model_id": "m", "num_prompts": 10, "ttfts": [0.1],
            "std_itl_ms": null, "request_rate": "inf", "usd_per_1m_output_tokens": 0.5,
            "mean_ttft_part_prefill_ms": 2.0, "p99_output_tps_per_user": 40.0,
        });
        let keys = numeric_keys(o.as_object().unwrap());
        let names: Vec<String> = keys.keys().map(FigureKey::name).collect();
        assert_eq!(
            names,
            [
                "completed",
                "output_throughput",
                "p99_ttft_ms",
                "p99_output_tps_per_user",
                "mean_foo_ms",
                "mean_ttft_part_prefill_ms"
            ]
        );
        assert_eq!(
            keys.keys().nth(4),
            Some(&FigureKey::Other("mean_foo_ms".into()))
        );
    }
}
