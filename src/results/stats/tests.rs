//! Tests of the statistics against hand-computed values, numpy's percentiles and the
//! invariants between the figures.

use super::distribution::*;
use super::request::*;
use super::samples::*;
use super::summarizer::*;
use super::summary::*;
use crate::config::{Slo, SloMetric};
use crate::measure::record::{FailureKind, Outcome};
use crate::measure::record::{RequestRecord, TokenSource};
use proptest::prelude::*;

const MS: u64 = 1_000_000;

/// A successful record: sent at `sent` ms, chunks at the given ms, N tokens from usage.
fn rec(sent: u64, chunks: &[u64], n: u64) -> RequestRecord {
    RequestRecord {
        scheduled_ns: sent * MS,
        sent_ns: sent * MS,
        chunk_ns: chunks.iter().map(|c| c * MS).collect(),
        end_ns: chunks.last().copied().unwrap_or(sent) * MS + MS,
        output_tokens: Some(n),
        output_tokens_source: Some(TokenSource::ServerUsage),
        prompt_tokens: Some(10),
        prompt_tokens_source: Some(TokenSource::ServerUsage),
        ..RequestRecord::default()
    }
}

#[test]
fn percentile_matches_numpy_linear() {
    // numpy.percentile([1, 2, 3, 4], [0, 25, 50, 90, 99, 100]) =
    // [1.0, 1.75, 2.5, 3.7, 3.97, 4.0]
    let s = [1.0, 2.0, 3.0, 4.0];
    let expect = [
        (0.0, 1.0),
        (25.0, 1.75),
        (50.0, 2.5),
        (90.0, 3.7),
        (99.0, 3.97),
        (100.0, 4.0),
    ];
    for (p, v) in expect {
        assert!((percentile(&s, p).unwrap() - v).abs() < 1e-12, "p{p}");
    }
    assert_eq!(percentile(&[], 50.0), None);
    assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
}

#[test]
fn distribution_uses_population_std() {
    // numpy.std([2, 4, 4, 4, 5, 5, 7, 9]) = 2.0
    let mut s = vec![2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
    let d = Distribution::of(&mut s, &[50.0]).unwrap();
    assert_eq!(d.mean, 5.0);
    assert_eq!(d.std, 2.0);
    assert_eq!(d.median, 4.5);
    assert_eq!(d.at(50.0), Some(4.5));
}

#[test]
fn hand_computed_request_metrics() {
    // Sent at 0; chunks at 100, 110, 130 ms; 5 tokens (chunks carried several).
    let r = rec(0, &[100, 110, 130], 5);
    let m = RequestMetrics::of(&r).unwrap();
    assert_eq!(m.ttft_ns, 100 * MS);
    assert_eq!(m.e2el_ns, 130 * MS);
    assert_eq!(m.tpot_ms, Some(30.0 / 4.0));
    assert!((m.output_throughput - 5.0 / 0.130).abs() < 1e-9);
    assert_eq!(itl_gaps_ns(&r).collect::<Vec<_>>(), vec![10 * MS, 20 * MS]);
}

#[test]
fn per_token_itl_spreads_each_gap_over_its_tokens() {
    // Chunks at 100, 110, 130 ms carrying 2, 1, 4 tokens (N = 7).
    let mut r = rec(0, &[100, 110, 130], 7);
    r.chunk_tokens = Some(vec![2, 1, 4]);
    let got: Vec<f64> = itl_per_token_ns(&r).map(|g| g / NS_PER_MS).collect();
    assert_eq!(got, vec![0.0, 10.0, 5.0, 5.0, 5.0, 5.0]);
    // N − 1 samples whose mean is TPOT; per-chunk ITL is unchanged.
    let tpot = RequestMetrics::of(&r).unwrap().tpot_ms.unwrap();
    assert!((got.iter().sum::<f64>() / got.len() as f64 - tpot).abs() < 1e-12);
    assert_eq!(itl_gaps_ns(&r).count(), 2);
    // Unknown per-chunk counts: no per-token samples.
    r.chunk_tokens = None;
    assert_eq!(itl_per_token_ns(&r).count(), 0);
}

#[test]
fn one_token_request_has_no_tpot_and_passes_tpot_slo() {
    let m = RequestMetrics::of(&rec(0, &[40], 1)).unwrap();
    assert_eq!(m.tpot_ms, None);
    let slo = Slo {
        metric: SloMetric::Tpot,
        max_ms: 1.0,
    };
    assert!(m.meets(&[slo]));
}

#[test]
fn hand_computed_summary() {
    let mut failed = rec(5, &[], 0);
    failed.outcome = Outcome::failed(FailureKind::HttpStatus, "HTTP 500");
    failed.end_ns = 300 * MS;
    let mut warm = rec(0, &[1, 2], 2);
    warm.warmup = true;
    warm.end_ns = 10_000 * MS; // would stretch the duration if it counted
    let records = vec![
        rec(0, &[100, 110, 130], 5),
        rec(0, &[200, 220], 3),
        failed,
        warm,
    ];
    let slos = vec![Slo {
        metric: SloMetric::Ttft,
        max_ms: 150.0,
    }];
    let s = summarize(
        &records,
        &SummaryOptions {
            percentiles: vec![50.0, 99.0],
            goodput: slos.clone(),
            time_scale: 1.0,
            valid_output: false,
        },
    );
    // The same records from a simulator at --time-scale 10: every duration reads 10×
    // longer, token counts do not change.
    let slow = summarize(
        &records,
        &SummaryOptions {
            percentiles: vec![50.0],
            goodput: slos,
            time_scale: 10.0,
            valid_output: false,
        },
    );
    assert!((slow.duration_s - 3.0).abs() < 1e-9);
    assert_eq!(slow.ttft_ms.as_ref().unwrap().mean, 1500.0);
    assert_eq!(slow.tpot_ms.as_ref().unwrap().mean, 87.5);
    assert!((slow.output_throughput - 8.0 / 3.0).abs() < 1e-9);
    assert_eq!(slow.total_output_tokens, 8);
    assert_eq!(
        slow.good_requests,
        Some(0),
        "TTFT 1000 and 2000 ms both break ttft:150"
    );
    assert_eq!((s.completed, s.failed), (2, 1));
    assert_eq!(s.failures_by_kind.get("http_status"), Some(&1));
    // Duration: first scheduled (0) → last end (failed request ended at 300 ms).
    assert!((s.duration_s - 0.3).abs() < 1e-12);
    assert_eq!(s.total_output_tokens, 8);
    assert_eq!(s.total_input_tokens, 20);
    assert!((s.output_throughput - 8.0 / 0.3).abs() < 1e-9);
    assert!((s.request_throughput - 2.0 / 0.3).abs() < 1e-9);
    assert!((s.total_token_throughput - 28.0 / 0.3).abs() < 1e-9);
    assert_eq!(s.good_requests, Some(1));
    assert!((s.request_goodput.unwrap() - 1.0 / 0.3).abs() < 1e-9);
    let ttft = s.ttft_ms.as_ref().unwrap();
    assert_eq!((ttft.mean, ttft.median), (150.0, 150.0));
    // TPOT: 30/4 = 7.5 and 20/2 = 10.
    assert_eq!(s.tpot_ms.as_ref().unwrap().mean, 8.75);
    // ITL pooled: 10, 20, 20.
    let itl = s.itl_ms.as_ref().unwrap();
    assert_eq!((itl.count, itl.median), (3, 20.0));
    assert!((itl.mean - 50.0 / 3.0).abs() < 1e-12);
    assert_eq!(s.e2el_ms.as_ref().unwrap().mean, 175.0);
    assert_eq!(s.schedule_lag_ms.as_ref().unwrap().count, 3);
}

#[test]
fn server_timings_are_summarized_next_to_tpot() {
    let timed = |chunks: &[u64], n: u64, timings: serde_json::Value| RequestRecord {
        server_timings: Some(timings),
        ..rec(0, chunks, n)
    };
    let records = vec![
        // TPOT 30/3 = 10 ms; the server says 9.5 ms per token.
        timed(
            &[50, 60, 70, 80],
            4,
            serde_json::json!({"prompt_ms": 40.0, "predicted_n": 4, "predicted_per_token_ms": 9.5}),
        ),
        // TPOT 40/4 = 10 ms; the server says 8.0.
        timed(
            &[20, 30, 40, 50, 60],
            5,
            serde_json::json!({"prompt_ms": 10.0, "predicted_per_token_ms": 8.0}),
        ),
        // One predicted token: llama.cpp reports 0 per token, which is not a decode time.
        timed(
            &[30],
            1,
            serde_json::json!({"prompt_ms": 25.0, "predicted_n": 1, "predicted_per_token_ms": 0.0}),
        ),
        // No timings at all (another server).
        rec(0, &[10, 20], 2),
    ];
    let s = summarize(&records, &SummaryOptions::default());
    let decode = s.server_decode_per_token_ms.as_ref().unwrap();
    assert_eq!((decode.count, decode.median), (2, 8.75));
    let prompt = s.server_prompt_ms.as_ref().unwrap();
    assert_eq!((prompt.count, prompt.median), (3, 25.0));
    let diff = s.tpot_minus_server_decode_ms.as_ref().unwrap();
    assert_eq!((diff.count, diff.min, diff.max), (2, 0.5, 2.0));
    let none = summarize(&[rec(0, &[10, 20], 2)], &SummaryOptions::default());
    assert_eq!(none.server_decode_per_token_ms, None);
    assert_eq!(none.tpot_minus_server_decode_ms, None);
}

/// Records with varied latencies (two tokens per chunk on every other one, a failure
/// every 17th, server timings every 5th so some TPOT − decode differences are negative).
fn varied_records(n: u64) -> Vec<RequestRecord> {
    (0..n)
        .map(|i| {
            let ttft = 20 + (i * 7919) % 500;
            let chunks: Vec<u64> = (0..1 + i % 6)
                .map(|c| i + ttft + c * (3 + i % 11))
                .collect();
            let mut r = rec(i, &chunks, chunks.len() as u64 + i % 3);
            r.chunk_tokens = (i % 2 == 0).then(|| vec![1; chunks.len()]);
            if i % 17 == 0 {
                r.outcome = Outcome::failed(FailureKind::Timeout, "slow");
            }
            if i % 5 == 0 {
                let decode = (i % 13) as f64;
                r.server_timings = Some(serde_json::json!({"predicted_per_token_ms": decode}));
            }
            r
        })
        .collect()
}

fn distributions(s: &RunSummary) -> Vec<Option<&Distribution>> {
    vec![
        s.ttft_ms.as_ref(),
        s.tpot_ms.as_ref(),
        s.itl_ms.as_ref(),
        s.e2el_ms.as_ref(),
        s.schedule_lag_ms.as_ref(),
        s.tpot_minus_server_decode_ms.as_ref(),
        s.output_len_received.as_ref(),
        s.itl_per_token_ms.as_ref(),
    ]
}

#[test]
fn summarizer_merge_equals_adding_everything() {
    let records = varied_records(400);
    let opts = SummaryOptions {
        percentiles: vec![50.0, 90.0, 99.0],
        ..SummaryOptions::default()
    };
    let whole = summarize(&records, &opts);
    let mut a = Summarizer::new(&opts);
    let mut b = Summarizer::new(&opts);
    records.iter().take(150).for_each(|r| a.add(r));
    records.iter().skip(150).for_each(|r| b.add(r));
    a.merge(b);
    assert_eq!(a.finish(), whole, "exact mode: bit-identical");

    // HDR mode (limit 50): same counts and percentiles; moments equal up to rounding.
    let hdr = |rs: &[RequestRecord]| {
        let mut s = Summarizer::with_exact_limit(&opts, 50);
        rs.iter().for_each(|r| s.add(r));
        s
    };
    let all = hdr(&records).finish();
    let mut a = hdr(&records[..150]);
    a.merge(hdr(&records[150..]));
    let merged = a.finish();
    assert_eq!(
        (merged.completed, merged.failed),
        (all.completed, all.failed)
    );
    for (m, w) in distributions(&merged).into_iter().zip(distributions(&all)) {
        let (m, w) = (m.unwrap(), w.unwrap());
        assert_eq!(m.percentile_method, PercentileMethod::Hdr);
        assert_eq!((m.count, m.min, m.max), (w.count, w.min, w.max));
        assert_eq!((m.median, &m.percentiles), (w.median, &w.percentiles));
        assert!((m.mean - w.mean).abs() <= 1e-9 * w.mean.abs().max(1.0));
        assert!((m.std - w.std).abs() <= 1e-9 * w.std.max(1.0));
    }
}

#[test]
fn hdr_percentiles_are_within_the_stated_bound_of_exact_ones() {
    let records = varied_records(3000);
    let opts = SummaryOptions {
        percentiles: vec![0.0, 1.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 100.0],
        ..SummaryOptions::default()
    };
    let exact = summarize(&records, &opts);
    let mut s = Summarizer::with_exact_limit(&opts, 100);
    records.iter().for_each(|r| s.add(r));
    let hdr = s.finish();
    let samples = metric_samples(&records);
    let all = distributions(&hdr).into_iter().zip(distributions(&exact));
    for ((h, e), mut sorted) in all.zip(samples) {
        let (h, e) = (h.unwrap(), e.unwrap());
        assert_eq!(e.percentile_method, PercentileMethod::Exact);
        assert_eq!(h.percentile_method, PercentileMethod::Hdr);
        assert_eq!((h.count, h.min, h.max), (e.count, e.min, e.max));
        assert!((h.mean - e.mean).abs() <= 1e-9 * e.mean.abs().max(1.0));
        assert!((h.std - e.std).abs() <= 1e-9 * e.std.max(1.0));
        // The bound of docs/metrics.md: relative to the larger of the two order
        // statistics interpolated between, plus half a histogram unit of rounding.
        sorted.sort_unstable_by(f64::total_cmp);
        assert_eq!(sorted.len() as u64, e.count);
        let pairs = std::iter::once((50.0, h.median, e.median)).chain(
            h.percentiles
                .iter()
                .zip(&e.percentiles)
                .map(|(a, b)| (a.0, a.1, b.1)),
        );
        for (p, got, want) in pairs {
            let rank = p / 100.0 * (sorted.len() - 1) as f64;
            let scale = sorted[rank.floor() as usize]
                .abs()
                .max(sorted[rank.ceil() as usize].abs());
            let bound = HDR_RELATIVE_ERROR * scale + 0.5 / HDR_UNITS;
            assert!(
                (got - want).abs() <= bound,
                "p{p}: {got} vs {want} (bound {bound})"
            );
        }
    }
    assert!(exact.hdr_figures().is_empty());
    assert_eq!(hdr.hdr_figures().len(), 14, "{:?}", hdr.hdr_figures());
    assert!(hdr.tpot_minus_server_decode_ms.unwrap().min < 0.0);
}

/// Every sample of each metric of `distributions`, in the same order (time scale 1).
fn metric_samples(records: &[RequestRecord]) -> Vec<Vec<f64>> {
    let ok = |f: &dyn Fn(&RequestRecord, &RequestMetrics) -> Vec<f64>| -> Vec<f64> {
        records
            .iter()
            .filter_map(|r| RequestMetrics::of(r).map(|m| f(r, &m)))
            .flatten()
            .collect()
    };
    vec![
        ok(&|_, m| vec![m.ttft_ns as f64 / NS_PER_MS]),
        ok(&|_, m| m.tpot_ms.into_iter().collect()),
        ok(&|r, _| itl_gaps_ns(r).map(|g| g as f64 / NS_PER_MS).collect()),
        ok(&|_, m| vec![m.e2el_ns as f64 / NS_PER_MS]),
        records
            .iter()
            .map(|r| (r.began_ns() - r.scheduled_ns) as f64 / NS_PER_MS)
            .collect(),
        ok(&|r, m| {
            let d = ServerTimings::of(r).decode_per_token_ms;
            m.tpot_ms.zip(d).map(|(t, d)| t - d).into_iter().collect()
        }),
        ok(&|_, m| vec![m.output_tokens as f64]),
        ok(&|r, _| itl_per_token_ns(r).map(|g| g / NS_PER_MS).collect()),
    ]
}

proptest! {
    /// The invariants of docs/metrics.md hold for any successful record:
    /// TTFT + Σ ITL = E2EL exactly; TPOT × (N − 1) + TTFT = E2EL; throughput = N / E2EL.
    #[test]
    fn invariants_hold(sent in 0u64..1_000_000_000, gaps in proptest::collection::vec(0u64..50_000_000, 1..200), extra in 0u64..50) {
        let mut t = sent;
        let chunk_ns: Vec<u64> = gaps.iter().map(|g| { t += g; t }).collect();
        let n = chunk_ns.len() as u64 + extra;
        let r = RequestRecord { sent_ns: sent, scheduled_ns: sent, end_ns: t, chunk_ns, output_tokens: Some(n), ..RequestRecord::default() };
        let m = RequestMetrics::of(&r).unwrap();
        prop_assert_eq!(m.ttft_ns + itl_gaps_ns(&r).sum::<u64>(), m.e2el_ns);
        if let Some(tpot) = m.tpot_ms {
            let rebuilt = tpot * (n - 1) as f64 + m.ttft_ns as f64 / NS_PER_MS;
            prop_assert!((rebuilt - m.e2el_ns as f64 / NS_PER_MS).abs() < 1e-6);
        }
        if m.e2el_ns > 0 {
            prop_assert!((m.output_throughput * m.e2el_ns as f64 / NS_PER_S - n as f64).abs() < 1e-6);
        }
    }

    #[test]
    fn percentiles_are_monotone(mut xs in proptest::collection::vec(-1e6f64..1e6, 1..100), a in 0f64..100.0, b in 0f64..100.0) {
        xs.sort_unstable_by(f64::total_cmp);
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        prop_assert!(percentile(&xs, lo).unwrap() <= percentile(&xs, hi).unwrap());
    }
}

/// The connection figures of docs/metrics.md by hand: TTFT counts from the first
/// byte written; a new connection's setup is its own figure; "TTFT including connection
/// setup" and the schedule lag count from when the client began (the connect).
#[test]
fn connection_setup_is_timed_apart_from_ttft() {
    // Scheduled at 0; connect 2..5 ms; request written at 5 ms; first chunk at 55 ms.
    let mut new = rec(5, &[55, 65], 2);
    new.scheduled_ns = 0;
    (new.connect_start_ns, new.connect_end_ns) = (Some(2 * MS), Some(5 * MS));
    new.connection_reused = Some(false);
    // Reused: scheduled and written at 10 ms, first chunk at 60 ms.
    let mut reused = rec(10, &[60, 70], 2);
    reused.connection_reused = Some(true);
    // A transport that cannot tell (reqwest): in neither count.
    let unknown = rec(20, &[70, 80], 2);
    let s = summarize(&[new.clone(), reused, unknown], &SummaryOptions::default());
    assert_eq!((s.new_connections, s.reused_connections), (1, 1));
    assert_eq!(s.ttft_ms.as_ref().unwrap().mean, 50.0);
    let setup = s.connection_setup_ms.as_ref().unwrap();
    assert_eq!((setup.count, setup.mean), (1, 3.0));
    let with_setup = s.ttft_with_setup_ms.as_ref().unwrap();
    assert_eq!((with_setup.min, with_setup.max), (50.0, 53.0));
    let lag = s.schedule_lag_ms.as_ref().unwrap();
    assert_eq!((lag.min, lag.max), (0.0, 2.0));
    assert!(new.times_are_ordered());
    new.connect_end_ns = Some(6 * MS);
    assert!(
        !new.times_are_ordered(),
        "setup ends after the request was written"
    );
}

/// The TTFT breakdown of docs/metrics.md by hand: a vLLM request with per-request
/// metrics, a llama.cpp request with `timings`, and one that says nothing.
#[test]
fn ttft_breakdown_parts_by_hand() {
    // Scheduled at 0, connect 2..5 ms, written at 5, first chunk at 105: TTFT 100 ms.
    let mut vllm = rec(5, &[105, 115], 2);
    vllm.scheduled_ns = 0;
    (vllm.connect_start_ns, vllm.connect_end_ns) = (Some(2 * MS), Some(5 * MS));
    vllm.connection_reused = Some(false);
    vllm.server_request_metrics = Some(serde_json::json!({
        "time_to_first_token_ms": 96.0, "queue_time_ms": 30.0, "mean_itl_ms": 10.0
    }));
    // Reused connection, written at 10 (scheduled 8), llama.cpp prefill 40 ms.
    let mut llama = rec(10, &[70, 80], 2);
    llama.scheduled_ns = 8 * MS;
    llama.connection_reused = Some(true);
    llama.server_timings = Some(serde_json::json!({"prompt_ms": 40.0, "cache_n": 0}));
    let silent = rec(20, &[70, 80], 2);
    let s = summarize(&[vllm, llama, silent], &SummaryOptions::default());
    let b = &s.ttft_breakdown;
    let d = |d: &Option<Distribution>| {
        let d = d.as_ref().unwrap();
        (d.count, d.min, d.max)
    };
    // Client queue: began (connect 2, written 10, written 20) − scheduled (0, 8, 20).
    assert_eq!(d(&b.client_queue_ms), (3, 0.0, 2.0));
    // Setup where the transport said: 3 ms new, 0 reused; the silent record is in neither.
    assert_eq!(d(&b.connection_setup_ms), (2, 0.0, 3.0));
    assert_eq!(d(&b.server_queue_ms), (1, 30.0, 30.0));
    // Prefill: vLLM 96 − 30; llama.cpp prompt_ms.
    assert_eq!(d(&b.prefill_ms), (2, 40.0, 66.0));
    // Transfer only where the server's own TTFT is known: 100 − 96.
    assert_eq!(d(&b.first_token_transfer_ms), (1, 4.0, 4.0));
}
