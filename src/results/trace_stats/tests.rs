//! The analysis on hand-built traces whose figures are known: the LRU cache's hit rate, the
//! unbounded reuse, the rate's windows, sessions, and the reader's refusals by line.

use std::path::{Path, PathBuf};

use super::*;

fn spec(cache_blocks: Vec<u64>) -> Spec {
    Spec {
        block: 2,
        window_s: 1.0,
        cache_blocks,
    }
}

fn write(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("t.jsonl");
    std::fs::write(&p, body).unwrap();
    p
}

fn words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

/// Four requests of two whole blocks of 2 tokens: [1,2], [1,3], [1,2], [1,3]. By hand:
/// - 1 block: every block evicts the one before it, nothing is ever hit: 0 of 16 tokens;
/// - 2 blocks: request 2 hits [1] (2 tokens), and its [1,3] evicts [1,2]; request 3 hits [1]
///   only and evicts [1,3]; request 4 hits [1] only: 6 of 16;
/// - 3 blocks or more: nothing is evicted: 2 + 4 + 4 = 10 of 16, the unbounded reuse.
#[test]
fn an_lru_cache_hits_what_was_worked_out_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let body = "{\"timestamp\": 0, \"hash_ids\": [1, 2]}\n\
                {\"timestamp\": 1000, \"hash_ids\": [1, 3]}\n\
                {\"timestamp\": 2000, \"hash_ids\": [1, 2]}\n\
                {\"timestamp\": 3000, \"hash_ids\": [1, 3]}\n";
    let lines = read(&write(dir.path(), body), 2, &words).unwrap();
    let a = analyze("t", &lines, &spec(vec![1, 2, 3, 100]));
    let rates: Vec<(u64, u64)> = a
        .cache
        .iter()
        .map(|r| (r.cache_blocks, r.hit_tokens))
        .collect();
    assert_eq!(rates, [(1, 0), (2, 6), (3, 10), (100, 10)]);
    assert_eq!(a.cache[1].hit_rate, 6.0 / 16.0);
    let r = a.reuse.unwrap();
    assert_eq!((r.blocks, r.distinct, r.prompt_tokens), (8, 3, 16));
    assert_eq!(r.reused_block_share, 5.0 / 8.0);
    assert_eq!(r.reused_token_share, 10.0 / 16.0);
    // Without sizes: 1/8, 1/4, 1/2 and all of the 3 distinct blocks (at least 1 each).
    let a = analyze("t", &lines, &spec(vec![]));
    let sizes: Vec<u64> = a.cache.iter().map(|r| r.cache_blocks).collect();
    assert_eq!(sizes, [1, 3]);
}

/// A partial last block counts its own tokens; a cached block held shorter than a later
/// request needs is hit for what it holds and ends the request's hit.
#[test]
fn a_partial_block_counts_its_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let body = "{\"timestamp\": 0, \"input_length\": 3, \"hash_ids\": [1, 2]}\n\
                {\"timestamp\": 1, \"input_length\": 4, \"hash_ids\": [1, 2]}\n";
    let lines = read(&write(dir.path(), body), 2, &words).unwrap();
    assert_eq!(lines[0].blocks, [(1, 2), (2, 1)]);
    let a = analyze("t", &lines, &spec(vec![10]));
    assert_eq!(a.input.max, 4.0);
    // 2 + 1 of the second request's 4 tokens were sent before.
    assert_eq!(a.cache[0].hit_tokens, 3);
    assert_eq!(a.reuse.unwrap().reused_token_share, 3.0 / 7.0);
}

#[test]
fn lengths_rate_and_sessions_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    // Out of order in the file: read in time order. Windows of 1 s: 2, 0, 1 requests.
    let body = "{\"timestamp\": 12500, \"input_length\": 30, \"output_length\": 3, \"session_id\": \"b\"}\n\
                {\"timestamp\": 10000, \"input_length\": 10, \"output_length\": 1, \"session_id\": \"a\"}\n\
                \n\
                {\"timestamp\": 10400, \"prompt\": \"four words of text\", \"session_id\": \"a\"}\n";
    let lines = read(&write(dir.path(), body), 512, &words).unwrap();
    let a = analyze("t", &lines, &spec(vec![]));
    assert_eq!(a.requests, 3);
    assert_eq!(a.duration_s, 2.5);
    assert_eq!(
        (a.input.count, a.input.mean, a.input.max),
        (3, 44.0 / 3.0, 30.0)
    );
    assert_eq!(a.input.p50, 10.0);
    let out = a.output.unwrap();
    assert_eq!((out.count, out.mean), (2, 2.0));
    assert_eq!(a.rate.windows, 3);
    assert_eq!(a.rate.per_window.as_deref(), Some(&[2, 0, 1][..]));
    assert_eq!((a.rate.peak_per_s, a.rate.peak_at_s), (2.0, 0.0));
    assert_eq!(a.rate.mean_per_s, 1.0);
    let s = a.sessions.unwrap();
    assert_eq!((s.count, s.turns.max, s.turns.mean), (2, 2.0, 1.5));
    assert!(a.reuse.is_none() && a.cache.is_empty());
}

#[test]
fn a_bad_line_is_refused_by_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "{\"timestamp\": 0, \"input_length\": 1}\n{}\n",
            "line 2: not a trace line",
        ),
        (
            "{\"timestamp\": -5, \"input_length\": 1}\n",
            "line 1: timestamp -5",
        ),
        ("{\"timestamp\": 0}\n", "line 1: needs"),
        (
            "{\"timestamp\": 0, \"input_length\": 5, \"hash_ids\": [1, 2]}\n",
            "line 1: input_length 5 does not fit",
        ),
        (
            "{\"timestamp\": 0, \"input_length\": 1}\n{\"timestamp\": 7e8, \"input_length\": 1}\n",
            "line 2: timestamp",
        ),
        (
            "{\"timestamp\": 0, \"input_length\": 1, \"session_id\": []}\n",
            "line 1: \"session_id\"",
        ),
        ("\n", "holds no request"),
    ];
    for (body, want) in cases {
        let e = read(&write(dir.path(), body), 2, &words)
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.jsonl") && e.contains(want), "{body:?}: {e}");
    }
    let e = read(dir.path(), 2, &words).unwrap_err().to_string();
    assert!(e.contains("not a regular file"), "{e}");
    for bad in [
        Spec {
            block: 0,
            ..spec(vec![])
        },
        Spec {
            window_s: 0.0,
            ..spec(vec![])
        },
        spec(vec![0]),
    ] {
        assert!(bad.check().is_err());
    }
}
