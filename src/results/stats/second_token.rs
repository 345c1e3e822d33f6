//! Two per-request figures users of other tools ask for (definitions in docs/metrics.md,
//! "Time to second token" and "Output tokens/s per user"): the time from the first output
//! token's arrival to the second's, and the output rate one user sees (1000 / TPOT).

use crate::measure::record::RequestRecord;

/// Time to second token of one successful record, nanoseconds in the record's clock: the
/// second output token's arrival − the first's (AIPerf's definition: second response − first
/// response, both after the send).
///
/// `output_tokens` is the request's N. `None` when N < 2 or no chunk arrived. When the first
/// chunk carried 2 or more tokens (its per-chunk count known and ≥ 2), or a single chunk
/// carried all N ≥ 2 tokens, the second token arrived with the first: 0. Otherwise the second
/// token is the first of the second chunk: `chunk[1] − chunk[0]`.
pub fn ttst_ns(r: &RequestRecord, output_tokens: u64) -> Option<u64> {
    if output_tokens < 2 {
        return None;
    }
    let first = *r.chunk_ns.first()?;
    let counts = (r.chunk_tokens.as_deref()).filter(|c| c.len() == r.chunk_ns.len());
    if counts.is_some_and(|c| c[0] >= 2) {
        return Some(0);
    }
    Some(
        r.chunk_ns
            .get(1)
            .map_or(0, |&second| second.saturating_sub(first)),
    )
}

/// Output tokens per second one user sees, from a request's TPOT in ms: `1000 / TPOT`.
/// `None` without a TPOT (N < 2) or with a TPOT of 0 (every token in one chunk: no rate).
pub fn tps_per_user(tpot_ms: Option<f64>) -> Option<f64> {
    tpot_ms
        .filter(|t| t.is_finite() && *t > 0.0)
        .map(|t| 1000.0 / t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(chunks: &[u64], counts: Option<Vec<u32>>) -> RequestRecord {
        RequestRecord {
            chunk_ns: chunks.to_vec(),
            chunk_tokens: counts,
            ..RequestRecord::default()
        }
    }

    #[test]
    fn ttst_is_the_gap_to_the_second_chunk_when_chunks_are_tokens() {
        let r = record(&[1_000, 4_000, 9_000], None);
        assert_eq!(ttst_ns(&r, 3), Some(3_000));
    }

    #[test]
    fn ttst_is_zero_when_the_first_chunk_carried_two_tokens() {
        let r = record(&[1_000, 4_000], Some(vec![2, 1]));
        assert_eq!(ttst_ns(&r, 3), Some(0));
        // One token first, then three: the second token is the second chunk's first.
        let r = record(&[1_000, 4_000], Some(vec![1, 3]));
        assert_eq!(ttst_ns(&r, 4), Some(3_000));
        // Counts that do not match the chunks are not believed: chunks count as tokens.
        let r = record(&[1_000, 4_000], Some(vec![5]));
        assert_eq!(ttst_ns(&r, 6), Some(3_000));
    }

    #[test]
    fn ttst_is_zero_for_one_chunk_of_many_tokens_and_none_for_one_token() {
        assert_eq!(ttst_ns(&record(&[7_000], None), 5), Some(0));
        assert_eq!(ttst_ns(&record(&[7_000], None), 1), None);
        assert_eq!(ttst_ns(&record(&[], None), 5), None);
    }

    #[test]
    fn per_user_rate_is_a_thousand_over_tpot() {
        assert_eq!(tps_per_user(Some(20.0)), Some(50.0));
        assert_eq!(tps_per_user(Some(0.5)), Some(2000.0));
        assert_eq!(tps_per_user(None), None);
        assert_eq!(tps_per_user(Some(0.0)), None);
        assert_eq!(tps_per_user(Some(f64::NAN)), None);
    }
}
