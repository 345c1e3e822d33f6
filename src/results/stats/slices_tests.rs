//! Tests of the time slices against hand-computed windows: a request spanning windows, empty
//! windows, the last partial window, too few samples, and the windows summing to the run.

use super::slices::*;
use super::summarizer::summarize;
use super::summary::SummaryOptions;
use crate::config::limits::MAX_TIME_SLICES;
use crate::config::{Slo, SloMetric};
use crate::measure::record::{FailureKind, Outcome, RequestRecord, TokenSource};

const MS: u64 = 1_000_000;

/// A successful record sent at `sent` ms with chunks at the given ms, N tokens from usage,
/// ending 1 ms after its last chunk.
fn rec(sent: u64, chunks: &[u64], n: u64) -> RequestRecord {
    RequestRecord {
        scheduled_ns: sent * MS,
        sent_ns: sent * MS,
        chunk_ns: chunks.iter().map(|c| c * MS).collect(),
        end_ns: chunks.last().copied().unwrap_or(sent) * MS + MS,
        output_tokens: Some(n),
        output_tokens_source: Some(TokenSource::ServerUsage),
        ..RequestRecord::default()
    }
}

fn failed(sent: u64, end: u64) -> RequestRecord {
    RequestRecord {
        scheduled_ns: sent * MS,
        sent_ns: sent * MS,
        end_ns: end * MS,
        outcome: Outcome::failed(FailureKind::HttpStatus, "503"),
        ..RequestRecord::default()
    }
}

fn cut(records: &[RequestRecord], seconds: f64) -> Slices {
    slice(|| records, seconds, &SummaryOptions::default()).unwrap()
}

#[test]
fn a_request_spanning_windows_counts_its_tokens_where_they_arrived_and_its_latency_where_it_ended()
{
    // Sent at 0.5 s, chunks at 0.9, 1.2, 1.4 and 2.2 s (N = 8: 2 tokens a chunk), ended at
    // 2.201 s. A second request, from 0 to 0.1 s, starts the run at 0.
    let records = vec![rec(500, &[900, 1200, 1400, 2200], 8), rec(0, &[50, 100], 2)];
    let s = cut(&records, 1.0);
    assert_eq!(s.windows.len(), 3);
    let w = &s.windows;
    assert_eq!(
        w.iter().map(|w| w.output_tokens).collect::<Vec<_>>(),
        [2.0 + 2.0, 4.0, 2.0]
    );
    // Both started in window 0; the short one ended there, the long one in window 2.
    assert_eq!(w.iter().map(|w| w.started).collect::<Vec<_>>(), [2, 0, 0]);
    assert_eq!(w.iter().map(|w| w.completed).collect::<Vec<_>>(), [1, 0, 1]);
    assert_eq!(w.iter().map(|w| w.in_flight).collect::<Vec<_>>(), [1, 1, 0]);
    // TTFT (400 ms) and E2EL (1700 ms) of the long request are in window 2, its ITL gaps too.
    assert_eq!(w[2].ttft_ms.count, 1);
    assert_eq!(w[2].ttft_ms.mean, Some(400.0));
    assert_eq!(w[2].e2el_ms.mean, Some(1700.0));
    assert_eq!(w[2].itl_ms.count, 3);
    assert!((w[2].itl_ms.mean.unwrap() - 1300.0 / 3.0).abs() < 1e-9);
    assert_eq!(w[1].ttft_ms.count, 0);
    assert_eq!(w[1].ttft_ms.mean, None);
    // The last window ends at the run's last end, 2.201 s.
    assert!((w[2].end_s - 2.201).abs() < 1e-9, "{}", w[2].end_s);
    assert!((w[2].output_throughput - 2.0 / 0.201).abs() < 1e-6);
    assert_eq!(w[0].output_throughput, 4.0);
}

#[test]
fn per_chunk_counts_are_used_when_they_sum_to_n_else_n_is_spread_evenly() {
    let mut r = rec(0, &[100, 1500], 5);
    r.chunk_tokens = Some(vec![1, 4]);
    let s = cut(std::slice::from_ref(&r), 1.0);
    assert_eq!(s.windows[0].output_tokens, 1.0);
    assert_eq!(s.windows[1].output_tokens, 4.0);
    // Counts that do not sum to N (the server's usage says 6): N spread over the chunks.
    r.output_tokens = Some(6);
    let s = cut(std::slice::from_ref(&r), 1.0);
    assert_eq!(s.windows[0].output_tokens, 3.0);
    assert_eq!(s.windows[1].output_tokens, 3.0);
}

#[test]
fn empty_windows_are_kept_with_zero_counts_and_no_latency() {
    // Two requests 3 s apart: windows 1 and 2 of 1 s have nothing.
    let records = vec![rec(0, &[100], 1), rec(3000, &[3100], 1)];
    let s = cut(&records, 1.0);
    assert_eq!(s.windows.len(), 4);
    for w in &s.windows[1..3] {
        assert_eq!(
            (w.started, w.completed, w.failed, w.in_flight),
            (0, 0, 0, 0)
        );
        assert_eq!((w.output_tokens, w.output_throughput), (0.0, 0.0));
        assert_eq!(w.ttft_ms, SliceStat::default());
        assert_eq!(w.good_requests, None);
    }
    assert_eq!(s.windows[3].start_s, 3.0);
}

#[test]
fn the_last_window_is_partial_and_its_rates_are_over_its_own_width() {
    // One request a 100 ms from 0 to 2.4 s, each 50 ms long: the run spans 2.451 s.
    let records: Vec<_> = (0..25).map(|i| rec(i * 100, &[i * 100 + 50], 1)).collect();
    let s = cut(&records, 1.0);
    assert_eq!(s.windows.len(), 3);
    let last = &s.windows[2];
    assert_eq!(last.start_s, 2.0);
    assert!((last.end_s - 2.451).abs() < 1e-9);
    assert_eq!(last.completed, 5);
    assert!((last.request_throughput - 5.0 / 0.451).abs() < 1e-6);
    assert_eq!(s.windows[0].request_throughput, 10.0);
}

#[test]
fn windows_with_too_few_samples_say_so_rather_than_give_percentiles() {
    // Window 0: 3 requests; window 1: 10.
    let mut records: Vec<_> = (0..3).map(|i| rec(i * 100, &[i * 100 + 20], 1)).collect();
    records.extend((0..10).map(|i| rec(1000 + i * 50, &[1000 + i * 50 + 10 + i], 1)));
    let s = cut(&records, 1.0);
    let few = &s.windows[0].ttft_ms;
    assert_eq!((few.count, few.too_few), (3, true));
    assert_eq!(few.mean, Some(20.0));
    assert_eq!((few.p50, few.p90, few.p99), (None, None, None));
    let enough = &s.windows[1].ttft_ms;
    assert_eq!((enough.count, enough.too_few), (10, false));
    // TTFTs 10..19 ms: numpy's linear p50 = 14.5, p90 = 18.1, p99 = 18.91.
    assert!((enough.p50.unwrap() - 14.5).abs() < 1e-9);
    assert!((enough.p90.unwrap() - 18.1).abs() < 1e-9);
    assert!((enough.p99.unwrap() - 18.91).abs() < 1e-9);
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["windows"][0]["ttft_ms"]["too_few"], true);
    assert_eq!(json["min_samples"], MIN_PERCENTILE_SAMPLES);
}

#[test]
fn errors_goodput_and_in_flight_per_window() {
    let opts = SummaryOptions {
        goodput: vec![Slo {
            metric: SloMetric::Ttft,
            max_ms: 50.0,
        }],
        ..SummaryOptions::default()
    };
    let records = vec![
        rec(0, &[20], 1),      // good, window 0
        rec(100, &[200], 1),   // TTFT 100 ms: not good, window 0
        failed(200, 1500),     // failed in window 1
        rec(900, &[1950], 1),  // in flight at 1 s and ends in window 1
        rec(1200, &[1230], 1), // good, window 1
    ];
    let s = slice(|| &records, 1.0, &opts).unwrap();
    let (a, b) = (&s.windows[0], &s.windows[1]);
    assert_eq!(
        (a.started, a.completed, a.failed, a.in_flight),
        (4, 2, 0, 2)
    );
    assert_eq!(
        (b.started, b.completed, b.failed, b.in_flight),
        (1, 2, 1, 0)
    );
    assert_eq!(b.failures_by_kind.get("http_status"), Some(&1));
    assert_eq!((a.good_requests, b.good_requests), (Some(1), Some(1)));
    assert_eq!(a.request_goodput, Some(1.0));
}

#[test]
fn the_windows_add_up_to_the_run_in_any_record_order_and_warm_ups_are_left_out() {
    let mut records: Vec<_> = (0..40)
        .map(|i| {
            rec(
                i * 37,
                &[i * 37 + 15, i * 37 + 60, i * 37 + 61 + i],
                3 + i % 4,
            )
        })
        .collect();
    records.push(failed(500, 900));
    let mut warm = rec(0, &[5], 100);
    warm.warmup = true;
    records.push(warm);
    let s = cut(&records, 0.25);
    let summary = summarize(&records, &SummaryOptions::default());
    let sum = |f: fn(&Window) -> u64| s.windows.iter().map(f).sum::<u64>();
    assert_eq!(sum(|w| w.completed), summary.completed);
    assert_eq!(sum(|w| w.failed), summary.failed);
    assert_eq!(sum(|w| w.started), summary.completed + summary.failed);
    let tokens: f64 = s.windows.iter().map(|w| w.output_tokens).sum();
    assert!((tokens - summary.total_output_tokens as f64).abs() < 1e-9);
    assert_eq!(sum(|w| w.itl_ms.count), summary.itl_ms.unwrap().count);
    let last = s.windows.last().unwrap();
    assert!((last.end_s - summary.duration_s).abs() < 1e-12);
    // The records in another order (a merge's union, lanes' interleaving): the same windows,
    // the tokens up to the order of a float sum.
    let mut shuffled = records.clone();
    shuffled.reverse();
    let other = cut(&shuffled, 0.25);
    assert_eq!(other.windows.len(), s.windows.len());
    for (a, b) in other.windows.iter().zip(&s.windows) {
        assert!((a.output_tokens - b.output_tokens).abs() < 1e-9);
        let same = |w: &Window| Window {
            output_tokens: 0.0,
            output_throughput: 0.0,
            ..w.clone()
        };
        assert_eq!(same(a), same(b));
    }
}

#[test]
fn the_time_scale_stretches_windows_and_latencies_alike() {
    // A simulator 10× faster: 100 ms of record time are 1 s of the server's.
    let records = vec![rec(0, &[10], 1), rec(150, &[160], 1)];
    let opts = SummaryOptions {
        time_scale: 10.0,
        ..SummaryOptions::default()
    };
    let s = slice(|| &records, 1.0, &opts).unwrap();
    assert_eq!(s.windows.len(), 2);
    assert_eq!(s.windows[1].ttft_ms.mean, Some(100.0));
    // The run ends at 161 ms of record time: 1.61 s of the server's.
    assert!((s.windows[1].end_s - 1.61).abs() < 1e-9);
}

#[test]
fn a_width_out_of_bounds_is_refused_and_too_many_windows_are_not_kept() {
    let records = vec![rec(0, &[10], 1), rec(200_000, &[200_010], 1)];
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 0.001, 1e9] {
        assert!(
            slice(|| &records, bad, &SummaryOptions::default()).is_err(),
            "{bad}"
        );
    }
    // 200 s in windows of 10 ms: 20,002 windows, more than are kept.
    let s = cut(&records, 0.01);
    assert!(s.windows.is_empty());
    assert!(s.too_many_windows.unwrap() > MAX_TIME_SLICES);
    // No records: no windows.
    let none: Vec<RequestRecord> = Vec::new();
    assert!(cut(&none, 1.0).windows.is_empty());
}

#[test]
fn the_server_queue_is_sliced_only_when_known() {
    let mut r = rec(0, &[100], 1);
    let s = cut(std::slice::from_ref(&r), 1.0);
    assert_eq!(s.windows[0].server_queue_ms, None);
    r.server_request_metrics = Some(serde_json::json!({"queue_time_ms": 12.5}));
    let s = cut(std::slice::from_ref(&r), 1.0);
    let q = s.windows[0].server_queue_ms.as_ref().unwrap();
    assert_eq!((q.count, q.mean, q.too_few), (1, Some(12.5), true));
}
