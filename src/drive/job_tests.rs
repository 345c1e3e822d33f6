//! Tests of `drive::job`'s graph: what waits for what, what a failure leaves unsent, what
//! a spliced prompt holds and how long a reply is kept.

use super::*;
use crate::config::shape::HistoryLimits;
use crate::config::workload::AgenticShape;
use crate::workload::dataset::agentic::places;

fn job(fanout: u32, depth: u32) -> Vec<RequestSpec> {
    let shape = AgenticShape {
        fanout,
        depth,
        gap_ms: 0.0,
    };
    (places(&shape).into_iter())
        .map(|p| RequestSpec {
            prompt: format!("own text of call {}", p.call),
            input_len: Some(5),
            call: Some(p),
            ..RequestSpec::default()
        })
        .collect()
}

const LIMITS: HistoryLimits = HistoryLimits {
    bytes: 1 << 20,
    tokens: 1 << 20,
};

#[test]
fn a_failed_call_leaves_exactly_what_waits_for_it_unsent() {
    // Two levels of two, then a third level: a failure at level 0 dooms levels 1 and 2 (all
    // of them wait for both calls of level 0), nothing else.
    let calls = job(2, 3);
    let mut g = Graph::new(&calls);
    assert_eq!(g.roots(), vec![0, 1]);
    g.state[0] = State::Ended;
    g.state[1] = State::Launched;
    let mut talked = Talked::default();
    g.drop_downstream(0, Why::UpstreamFailed, &mut talked);
    assert_eq!(talked.unsent.upstream_failed, 4);
    assert_eq!(g.state[1], State::Launched, "not downstream: it still runs");
    assert!(g.state[2..].iter().all(|&s| s == State::Dropped));
    // Dropped calls splice nothing any more: no reply is kept for them.
    assert!(g.needed.iter().all(|&n| n == 0), "{:?}", g.needed);
}

#[test]
fn a_level_waits_for_its_slowest_upstream_call() {
    let calls = job(2, 2);
    let mut g = Graph::new(&calls);
    assert!(g.ended(0, 100).is_empty(), "call 1 has not ended yet");
    let ready = g.ended(1, 250);
    assert_eq!(ready, vec![2, 3]);
    assert_eq!((g.latest_end[2], g.latest_end[3]), (250, 250));
}

#[test]
fn a_spliced_prompt_is_its_text_then_each_reply_and_counts_their_words() {
    let calls = job(2, 2);
    let mut g = Graph::new(&calls);
    assert_eq!(g.needed[..2], [2, 2]);
    g.replies[0] = Some(("alpha beta".into(), 2));
    g.replies[1] = Some((" gamma delta epsilon".into(), 3));
    let (text, words) = g.spliced(2, &calls[2], LIMITS, true).unwrap();
    assert_eq!(
        text,
        "own text of call 2\n\nalpha beta\n\n gamma delta epsilon"
    );
    assert_eq!(words, Some(5 + 2 + 3));
    assert_eq!(text.split_whitespace().count() as u64 + 1, 5 + 2 + 3 + 1);
    // Under a tokenizer the count is the built prompt's, made elsewhere.
    assert_eq!(g.spliced(3, &calls[3], LIMITS, false).unwrap().1, None);
    // Each reply is kept while an unbuilt call splices it: two calls splice both.
    g.release(2);
    assert!(g.replies[0].is_some());
    g.release(3);
    assert!(g.replies[0].is_none() && g.replies[1].is_none());
}

#[test]
fn a_spliced_prompt_past_the_history_limits_is_a_named_failure() {
    let calls = job(2, 2);
    let mut g = Graph::new(&calls);
    g.replies[0] = Some(("w ".repeat(600), 600));
    g.replies[1] = Some(("w".into(), 1));
    let tight = HistoryLimits {
        bytes: 1 << 20,
        tokens: 100,
    };
    let why = g.spliced(2, &calls[2], tight, true).unwrap_err();
    assert!(why.contains("606 tokens") && why.contains("--max-history-tokens 100"));
    let tight = HistoryLimits {
        bytes: 64,
        tokens: 1 << 20,
    };
    let why = g.spliced(2, &calls[2], tight, true).unwrap_err();
    assert!(why.contains("--max-history-bytes 64"), "{why}");
    // A reply not there (its call never answered) is named, not spliced as nothing.
    g.replies[1] = None;
    let why = g.spliced(3, &calls[3], LIMITS, true).unwrap_err();
    assert!(why.contains("call 3 carries the reply of call 1"), "{why}");
}

#[test]
fn a_place_naming_a_later_call_is_refused_when_built() {
    let mut calls = job(1, 2);
    calls[0].call.as_mut().unwrap().after = vec![1];
    let mut g = Graph::new(&calls);
    // It waits for nothing it can wait for: it is a root, refused when built.
    assert_eq!(g.roots(), vec![0]);
    let why = g.spliced(0, &calls[0], LIMITS, true).unwrap_err();
    assert!(
        why.contains("names call 1, which is not before it"),
        "{why}"
    );
}
