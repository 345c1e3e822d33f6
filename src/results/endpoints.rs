//! Several endpoints: each endpoint's figures of a run or a merge (`stats::endpoints`), from
//! its records file or its records.

use std::path::Path;

use crate::config::RunConfig;
use crate::measure::record::{read_jsonl, RequestRecord};
use crate::results::error::ResultsError;
use crate::results::stats::endpoints::{per_endpoint, EndpointFigures};
use crate::results::stats::SummaryOptions;

/// The run's endpoints as saved (redacted): its `base_url`, then the others in order.
pub fn urls_of(config: &RunConfig) -> Vec<String> {
    let more = config.routing.more_base_urls.iter().cloned();
    std::iter::once(config.base_url.clone())
        .chain(more)
        .collect()
}

/// Each endpoint's figures over `records`, rates over `duration_s`; `stopped`: when
/// `--failover` stopped each (clock ns). Empty for one endpoint.
pub fn of_records(
    records: impl IntoIterator<Item = RequestRecord>,
    config: &RunConfig,
    duration_s: f64,
    stopped: &[Option<u64>],
) -> Vec<EndpointFigures> {
    let opts = SummaryOptions {
        percentiles: config.metric_percentiles.clone(),
        goodput: config.goodput.clone(),
        time_scale: config.time_scale,
        valid_output: config.goodput_valid_output,
    };
    per_endpoint(records, &opts, duration_s, &urls_of(config), stopped)
}

/// [`of_records`] streamed from the records file at `path` (read only for several endpoints),
/// rates over `duration_s`, `stopped` as there.
pub fn from_records(
    path: &Path,
    config: &RunConfig,
    (duration_s, stopped): (f64, &[Option<u64>]),
) -> Result<Vec<EndpointFigures>, ResultsError> {
    if config.routing.endpoints() < 2 {
        return Ok(Vec::new());
    }
    let records = read_jsonl(path).map_err(|source| ResultsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(of_records(records, config, duration_s, stopped))
}
