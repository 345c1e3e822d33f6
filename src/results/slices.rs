//! A run cut into time slices from its records file (`run --time-slice`, and `report
//! --time-slice` re-slicing a saved run): the file is streamed twice through
//! `stats::slices::slice`, never held, with the summary's options of the run's config.

use std::path::Path;

use crate::config::RunConfig;
use crate::measure::record::read_jsonl;
use crate::results::error::ResultsError;
use crate::results::stats::slices::{slice, Slices};
use crate::results::stats::SummaryOptions;

/// The slices of width `seconds` of the run `config` describes, from its records at `path`.
pub fn from_records(path: &Path, seconds: f64, config: &RunConfig) -> Result<Slices, ResultsError> {
    // Opened once here so that a missing file is an error, not a run without records.
    read_jsonl(path).map_err(|source| ResultsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let opts = SummaryOptions {
        percentiles: config.metric_percentiles.clone(),
        goodput: config.goodput.clone(),
        time_scale: config.time_scale,
        valid_output: config.goodput_valid_output,
    };
    let records = || read_jsonl(path).into_iter().flatten();
    Ok(slice(records, seconds, &opts)?)
}

/// `report --time-slice`: the slices of width `seconds` of the result saved at `path`, from
/// its records file (beside it, or where it says). Refused in one line when it has none, or
/// when the run spans more windows than are kept.
pub fn reslice(
    path: &Path,
    result: &crate::results::document::BenchResult,
    seconds: f64,
) -> Result<Slices, ResultsError> {
    let invalid = |why: String| ResultsError::Invalid {
        path: path.to_path_buf(),
        why,
    };
    let records = crate::measure::record::records_next_to(path, result.records_file.as_deref())
        .ok_or_else(|| {
            invalid("its records file is not beside it nor where it says: --time-slice re-slices a run from its records".into())
        })?;
    let slices = from_records(&records, seconds, &result.config)?;
    if let Some(n) = slices.too_many_windows {
        return Err(invalid(format!(
            "--time-slice {seconds}: the run spans {n} windows of {seconds} s, more than {}; give a wider slice",
            crate::config::limits::MAX_TIME_SLICES
        )));
    }
    Ok(slices)
}
