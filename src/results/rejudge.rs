//! Re-judging a saved run under other goodput SLOs (`report --goodput`, `plan --goodput`):
//! its good requests, goodput and SLO attainment recomputed from its records file, the one
//! place every request's times are kept, when it was measured under other SLOs or none
//! (docs/metrics.md, "Re-judged goodput"). The result is marked ([`Rejudged`]) so no view
//! passes the figures off as measured under these SLOs.

use std::path::Path;

use crate::config::Slo;
use crate::measure::record::{read_jsonl, records_next_to};
use crate::results::document::BenchResult;
use crate::results::error::ResultsError;
pub use crate::results::rejudged::Rejudged;
use crate::results::stats::{Summarizer, SummaryOptions};

/// The same SLOs, in any order.
fn same(a: &[Slo], b: &[Slo]) -> bool {
    a.len() == b.len() && a.iter().all(|s| b.contains(s))
}

/// Re-judges the result saved at `path` under `slos`: nothing to do (false) when it was
/// measured under them; else its good requests and goodput are recomputed from its records
/// (the summarizer's own rule, warm-ups skipped) and it is marked. A records file that is
/// missing, unreadable, or holds another number of measured requests than the result counts
/// is refused in one line naming it.
pub fn rejudge(path: &Path, r: &mut BenchResult, slos: &[Slo]) -> Result<bool, ResultsError> {
    if same(&r.config.goodput, slos) {
        return Ok(false);
    }
    let named = r.records_file.as_deref();
    let Some(file) = records_next_to(path, named) else {
        let want = named.map_or_else(|| path.with_extension("records.jsonl"), Path::to_path_buf);
        return Err(ResultsError::Invalid {
            path: path.to_path_buf(),
            why: format!(
                "its records file {} is missing: re-judging under other SLOs needs every request's times",
                want.display()
            ),
        });
    };
    let read_err = |source| ResultsError::Read {
        path: file.clone(),
        source,
    };
    let opts = SummaryOptions {
        percentiles: r.config.metric_percentiles.clone(),
        goodput: slos.to_vec(),
        time_scale: r.config.time_scale,
        valid_output: r.config.goodput_valid_output,
    };
    let mut s = Summarizer::new(&opts);
    read_jsonl(&file)
        .map_err(read_err)?
        .for_each(|record| s.add(&record));
    let measured = r.summary.completed + r.summary.failed;
    if s.measured() != measured {
        return Err(ResultsError::Invalid {
            path: file,
            why: format!(
                "holds {} measured requests, but {} counts {measured}: not its records, so its goodput cannot be re-judged",
                s.measured(),
                path.display()
            ),
        });
    }
    let again = s.finish();
    r.summary.good_requests = again.good_requests;
    r.summary.request_goodput = again.request_goodput;
    r.vllm.insert(
        "request_goodput".into(),
        serde_json::json!(again.request_goodput),
    );
    r.rejudged = Some(Rejudged {
        measured_under: std::mem::replace(&mut r.config.goodput, slos.to_vec()),
        slos: slos.to_vec(),
        records_file: file,
    });
    Ok(true)
}
