//! What the import formats share: a view's label and the load parameter its steps vary.
//!
//! Used by every importer in `views::import`; it reads no file and knows no format. To share
//! one more helper between formats, put it here (not in `import/mod.rs`, which calls the
//! formats and so must not be called back by them).

use std::path::Path;

use crate::config::sweep::LoadParameter;
use crate::views::model::{file_stem, Step};

pub fn label_of(server: Option<&str>, model: Option<&str>, path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    parts.extend(server.map(str::to_string));
    parts.extend(model.map(str::to_string));
    parts.push(format!("({})", file_stem(path)));
    parts.join(" ")
}

/// The load parameter that varies across steps (num_prompts when nothing does).
pub fn varying_parameter(steps: &[Step]) -> LoadParameter {
    let distinct = |p: LoadParameter| {
        let mut v: Vec<i64> = steps
            .iter()
            .filter_map(|s| s.load_value(p))
            .map(|x| {
                if x.is_finite() {
                    x.round() as i64
                } else {
                    i64::MAX
                }
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    for p in LoadParameter::ALL {
        if distinct(p) > 1 {
            return p;
        }
    }
    LoadParameter::NumPrompts
}

/// At most 40 characters of a value from a foreign file, for an error line (Debug-quote it).
pub fn clip(s: &str) -> String {
    s.chars().take(40).collect()
}

/// Percentiles computed from imported per-request samples (AIPerf's records).
pub const SAMPLE_PERCENTILES: [f64; 5] = [50.0, 75.0, 90.0, 95.0, 99.0];

/// The figures of `metric` computed from per-request `samples` (servebench's percentile
/// method), each with its 95% interval where one exists.
pub fn put_samples(
    m: &mut std::collections::BTreeMap<crate::config::figure::FigureKey, f64>,
    intervals: &mut std::collections::BTreeMap<crate::config::figure::FigureKey, [f64; 2]>,
    metric: crate::config::Metric,
    samples: &mut [f64],
) {
    use crate::config::figure::FigureKey;
    use crate::config::metric::{MetricKey, Stat};
    let Some(d) = crate::results::stats::Distribution::of(samples, &SAMPLE_PERCENTILES) else {
        return;
    };
    let key = |stat| FigureKey::from(MetricKey::new(stat, metric));
    let mut stats = vec![
        (Stat::Mean, d.mean),
        (Stat::Median, d.median),
        (Stat::Std, d.std),
    ];
    stats.extend(d.percentiles.iter().map(|&(p, v)| (Stat::Percentile(p), v)));
    for (stat, v) in stats {
        m.insert(key(stat), v);
        if let Some(ci) = d.ci95(stat) {
            intervals.insert(key(stat), ci);
        }
    }
}
