//! Several endpoints (`--base-url` given more than once): the figures of each endpoint's
//! requests ([`EndpointFigures`], docs/metrics.md, "Several endpoints"), each computed as the
//! run's are (one [`Summarizer`] per endpoint over the records that name it, as
//! `adapters.rs` does for adapters), rates over the whole run's duration so the endpoints'
//! throughputs and counts add up to the run's.

use serde::{Deserialize, Serialize};

use super::adapters::{group_figures, AdapterFigures};
use super::summarizer::Summarizer;
use super::summary::SummaryOptions;
use crate::measure::record::RequestRecord;

/// One endpoint's figures in a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndpointFigures {
    /// Its index among the run's `--base-url`s, from 0 (the records' `endpoint`).
    pub endpoint: u32,
    /// Its URL as saved (redacted: no credentials).
    pub url: String,
    /// Its requests' counts, throughputs and latencies (`sent` counts successful and failed).
    #[serde(flatten)]
    pub figures: AdapterFigures,
    /// When `--failover` stopped sending to it: s on the records' time axis (the run's clock);
    /// absent while it kept receiving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at_s: Option<f64>,
}

/// The figures of each of `urls` (the run's endpoints, as saved) from the measured `records`
/// that name an endpoint, rates over `duration_s`; `stopped`: when `--failover` stopped each
/// (clock ns). Empty for a run of one endpoint.
pub fn per_endpoint(
    records: impl IntoIterator<Item = RequestRecord>,
    opts: &SummaryOptions,
    duration_s: f64,
    urls: &[String],
    stopped: &[Option<u64>],
) -> Vec<EndpointFigures> {
    if urls.len() < 2 {
        return Vec::new();
    }
    let mut by: Vec<Summarizer> = urls.iter().map(|_| Summarizer::new(opts)).collect();
    let mut measured = 0u64;
    for r in records {
        if r.warmup {
            continue;
        }
        measured += 1;
        if let Some(s) = r.endpoint.and_then(|i| by.get_mut(i as usize)) {
            s.add(&r);
        }
    }
    (by.into_iter().zip(urls).enumerate())
        .map(|(i, (s, url))| EndpointFigures {
            endpoint: i as u32,
            url: url.clone(),
            figures: group_figures(s.finish(), measured, duration_s),
            stopped_at_s: stopped.get(i).copied().flatten().map(|ns| ns as f64 / 1e9),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::{FailureKind, Outcome};

    fn record(id: u64, endpoint: Option<u32>, ok: bool) -> RequestRecord {
        RequestRecord {
            id,
            scheduled_ns: 0,
            sent_ns: 1_000_000,
            chunk_ns: if ok {
                vec![5_000_000, 7_000_000]
            } else {
                vec![]
            },
            end_ns: 10_000_000,
            outcome: match ok {
                true => Outcome::Ok,
                false => Outcome::failed(FailureKind::Connect, "refused"),
            },
            output_tokens: ok.then_some(2),
            endpoint,
            ..RequestRecord::default()
        }
    }

    /// Each endpoint counts its own records, and their counts add up to the run's.
    #[test]
    fn endpoints_count_their_own_records_and_add_up() {
        let records = vec![
            record(0, Some(0), true),
            record(1, Some(1), true),
            record(2, Some(1), false),
            record(3, Some(0), true),
        ];
        let urls = ["http://a".to_string(), "http://b".to_string()];
        let opts = SummaryOptions::default();
        let e = per_endpoint(
            records.clone(),
            &opts,
            2.0,
            &urls,
            &[None, Some(3_000_000_000)],
        );
        assert_eq!(e.len(), 2);
        assert_eq!(
            (
                e[0].figures.sent,
                e[0].figures.completed,
                e[0].figures.failed
            ),
            (2, 2, 0)
        );
        assert_eq!(
            (
                e[1].figures.sent,
                e[1].figures.completed,
                e[1].figures.failed
            ),
            (2, 1, 1)
        );
        assert_eq!(e[1].stopped_at_s, Some(3.0));
        assert_eq!(e[0].figures.output_throughput, 2.0);
        let run = crate::results::stats::summarize(&records, &opts);
        let sum: u64 = e.iter().map(|e| e.figures.completed).sum();
        assert_eq!(sum, run.completed);
        // TTFT: sent → first chunk, 4 ms.
        assert_eq!(e[0].figures.ttft_ms.as_ref().unwrap().median, 4.0);
        assert!(per_endpoint(records, &opts, 2.0, &urls[..1], &[]).is_empty());
    }
}
