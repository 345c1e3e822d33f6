//! `--bucket-by`: a run's figures per bucket of its requests' lengths ([`Buckets`],
//! docs/metrics.md, "Figures by length bucket"), each bucket's computed as the run's are (one
//! [`Summarizer`] over its records), its rates over the whole run's duration so the buckets'
//! throughputs add up to the run's, as adapters' do (`adapters.rs`).

use serde::{Deserialize, Serialize};

use super::adapters::{group_figures, AdapterFigures};
use super::summarizer::Summarizer;
use super::summary::SummaryOptions;
use crate::config::buckets::{BucketBy, BucketField};
use crate::measure::record::RequestRecord;

/// One bucket's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    /// `512-2047`, `8192+`.
    pub label: String,
    /// Its lengths, from `min` up to `max` inclusive (`None`: open above).
    pub min: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u64>,
    #[serde(flatten)]
    pub figures: AdapterFigures,
}

/// The run's figures by bucket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Buckets {
    /// The bucketing as given (`input_len:0,512,2048`).
    pub by: BucketBy,
    /// Every bucket, in order of length, empty ones too.
    pub buckets: Vec<Bucket>,
    /// Measured requests whose length is below the first edge (in no bucket).
    pub below: u64,
}

/// The length a record is bucketed by: its prompt tokens (else the built length), or its
/// output tokens (else the length asked for); `None` where neither is known.
fn length(r: &RequestRecord, field: BucketField) -> Option<u64> {
    match field {
        BucketField::InputLen => r.prompt_tokens.or(r.input_len_requested),
        BucketField::OutputLen => r.output_tokens.or(r.output_len_requested),
    }
}

/// The figures of each bucket of `by` over the measured `records`, rates over `duration_s`.
pub fn by_bucket(
    records: impl IntoIterator<Item = RequestRecord>,
    by: &BucketBy,
    opts: &SummaryOptions,
    duration_s: f64,
) -> Buckets {
    let mut sums: Vec<Summarizer> = by.edges.iter().map(|_| Summarizer::new(opts)).collect();
    let (mut measured, mut below) = (0u64, 0u64);
    for r in records.into_iter().filter(|r| !r.warmup) {
        measured += 1;
        match length(&r, by.field).and_then(|n| by.bucket(n)) {
            Some(i) => sums[i].add(&r),
            None => below += 1,
        }
    }
    let buckets = (sums.into_iter().enumerate())
        .map(|(i, s)| Bucket {
            label: by.label(i),
            min: by.edges[i],
            max: by.edges.get(i + 1).map(|e| e - 1),
            figures: group_figures(s.finish(), measured, duration_s),
        })
        .collect();
    Buckets {
        by: by.clone(),
        buckets,
        below,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::Outcome;

    /// A successful request of `prompt` tokens with a TTFT of `ttft` ms and 2 output tokens.
    fn ok(prompt: u64, ttft: u64) -> RequestRecord {
        let ms = 1_000_000;
        RequestRecord {
            prompt_tokens: Some(prompt),
            sent_ns: 0,
            chunk_ns: vec![ttft * ms, (ttft + 10) * ms],
            end_ns: (ttft + 10) * ms,
            output_tokens: Some(2),
            outcome: Outcome::Ok,
            ..RequestRecord::default()
        }
    }

    /// Each request is in the bucket of its length, each bucket's figures are its requests'
    /// alone, shares and throughputs add up, and a length below the first edge is counted apart.
    #[test]
    fn each_bucket_holds_its_lengths_figures() {
        let by: BucketBy = "input_len:100,1000".parse().unwrap();
        let records = vec![
            ok(50, 5),
            ok(100, 10),
            ok(999, 30),
            ok(1000, 100),
            ok(5000, 300),
        ];
        let b = by_bucket(records, &by, &SummaryOptions::default(), 1.0);
        assert_eq!(b.below, 1);
        let labels: Vec<_> = b.buckets.iter().map(|x| x.label.as_str()).collect();
        assert_eq!(labels, ["100-999", "1000+"]);
        let (lo, hi) = (&b.buckets[0].figures, &b.buckets[1].figures);
        assert_eq!((lo.sent, hi.sent), (2, 2));
        assert_eq!(lo.ttft_ms.as_ref().unwrap().mean, 20.0);
        assert_eq!(hi.ttft_ms.as_ref().unwrap().mean, 200.0);
        assert!((lo.share + hi.share - 0.8).abs() < 1e-12);
        assert_eq!(lo.output_throughput + hi.output_throughput, 8.0);
        assert_eq!(b.buckets[1].max, None);
        assert_eq!(b.buckets[0].max, Some(999));
    }
}
