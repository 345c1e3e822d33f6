//! Tests of the `graph` dataset: each refusal names the file, the line and the reason; a
//! job's calls are ordered and numbered so that every call comes after those it waits for;
//! splices follow the new numbers; an `input_len` call's text is exact.

use std::path::{Path, PathBuf};

use super::*;
use crate::measure::job::CallPlace;

/// Counted in whitespace words, as the simulator counts.
fn words() -> Text<'static> {
    Text {
        make: &|len, rng| Ok(crate::workload::words::text(len, rng)),
        count: &|t| t.split_whitespace().count(),
    }
}

fn file(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("jobs.jsonl");
    std::fs::write(&p, body).unwrap();
    p
}

fn built(body: &str, n: usize) -> Result<Vec<Prompt>, DatasetError> {
    let dir = tempfile::tempdir().unwrap();
    build(&file(dir.path(), body), &words(), 7, n, 1)
}

fn place(call: u32, of: u32, after: &[u32], splice: &[u32], gap_ms: f64) -> CallPlace {
    CallPlace {
        call,
        of,
        after: after.to_vec(),
        splice: splice.to_vec(),
        gap_ms,
    }
}

const GOOD: &str = r#"{"calls": [{"id": "plan", "prompt": "Plan a trip.", "output_len": 64}, {"id": "a", "after": ["plan"], "gap_ms": 250, "input_len": 40, "splice": ["plan"], "output_len": 32}]}"#;

#[test]
fn the_documented_line_builds_its_calls() {
    let p = built(GOOD, 1).unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].text.as_str(), p[0].input_len), ("Plan a trip.", 3));
    assert_eq!(p[0].output_len, 64);
    assert_eq!(p[0].call, Some(place(0, 2, &[], &[], 0.0)));
    assert_eq!(p[1].input_len, 40);
    assert_eq!(p[1].text.split_whitespace().count(), 40);
    assert_eq!(p[1].output_len, 32);
    assert_eq!(p[1].call, Some(place(1, 2, &[0], &[0], 250.0)));
    // A call without output_len takes --output-len's (7 here).
    let one = built(r#"{"calls": [{"id": "x", "prompt": "hi"}]}"#, 1).unwrap();
    assert_eq!(one[0].output_len, 7);
}

/// Every refusal: one line naming the file, the line (3: after a good line and a blank
/// one) and what is wrong.
#[test]
fn each_bad_job_is_refused_naming_the_file_line_and_reason() {
    let many: Vec<String> = (0..100_000)
        .map(|i| format!(r#"{{"id": "c{i}", "input_len": 1}}"#))
        .collect();
    let many = format!(r#"{{"calls": [{}]}}"#, many.join(","));
    let cases: Vec<(&str, &str)> = vec![
        (
            r#"{"calls": [{"id": "a", "after": ["c"], "input_len": 1}, {"id": "b", "after": ["a"], "input_len": 1}, {"id": "c", "after": ["b"], "input_len": 1}]}"#,
            r#"cycle: "a" -> "c" -> "b" -> "a""#,
        ),
        (
            r#"{"calls": [{"id": "a", "input_len": 1}, {"id": "b", "after": ["b"], "input_len": 1}]}"#,
            r#"cycle: "b" -> "b""#,
        ),
        (
            r#"{"calls": [{"id": "a", "after": ["z"], "input_len": 1}]}"#,
            r#"call "a": "after" names "z", which is no call"#,
        ),
        (
            r#"{"calls": [{"id": "a", "input_len": 1}, {"id": "b", "after": ["a"], "splice": ["q"], "input_len": 1}]}"#,
            r#"call "b": "splice" names "q", which is no call"#,
        ),
        (
            r#"{"calls": [{"id": "a", "input_len": 1}, {"id": "a", "input_len": 2}]}"#,
            r#"two calls have the id "a""#,
        ),
        (
            r#"{"calls": [{"id": "r", "input_len": 1}, {"id": "a", "after": ["r"], "input_len": 1}, {"id": "b", "after": ["r"], "splice": ["a"], "input_len": 1}]}"#,
            r#"call "b" splices "a", which is not upstream"#,
        ),
        (
            r#"{"calls": [{"id": "a", "input_len": 1}, {"id": "b", "after": ["a", "a"], "input_len": 1}]}"#,
            r#""after" names "a" twice"#,
        ),
        (&many, "100000 calls, more than 10000"),
        (
            r#"{"calls": [{"id": "a", "input_len": 1, "gap_ms": 604800001}]}"#,
            r#"call "a": "gap_ms" must be a number of ms in [0, 604800000] (a week), got 604800001"#,
        ),
        (
            r#"{"calls": [{"id": "a", "input_len": 1, "gap_ms": -1}]}"#,
            "got -1",
        ),
        (
            r#"{"calls": [{"id": "a", "input_len": 1, "gap_ms": "5"}]}"#,
            r#""gap_ms" must be a number"#,
        ),
        (
            r#"{"calls": [{"id": "a", "output_len": 3}]}"#,
            r#"call "a": give exactly one of "prompt""#,
        ),
        (
            r#"{"calls": [{"id": "a", "prompt": "hi", "input_len": 3}]}"#,
            r#"call "a": give exactly one of "prompt""#,
        ),
        (
            r#"{"calls": [{"id": "a", "input_len": 0}]}"#,
            "input_len must be a whole number in 1..=10000000 (as --input-len), got 0",
        ),
        (
            r#"{"calls": [{"id": "a", "input_len": 100000000000}]}"#,
            "got 100000000000",
        ),
        (
            r#"{"calls": [{"id": "a", "input_len": 2, "output_len": 0}]}"#,
            "output_len must be a whole number in 1..=10000000 (as --output-len), got 0",
        ),
        (
            r#"{"calls": [{"id": "a", "prompt": "   "}]}"#,
            r#"call "a": its "prompt" is 0 tokens"#,
        ),
        (
            r#"{"calls": [{"id": "a", "prompt": 5}]}"#,
            r#""prompt" must be a string"#,
        ),
        (r#"{"calls": []}"#, r#""calls" must be a non-empty array"#),
        (r#"{"jobs": []}"#, r#"unknown key "jobs""#),
        (
            r#"{"calls": [{"id": "a", "input_len": 1, "afer": ["b"]}]}"#,
            r#"call "a": unknown key "afer""#,
        ),
        (
            r#"{"calls": [{"input_len": 1}]}"#,
            r#"call 0 (from 0): "id""#,
        ),
        (
            r#"{"calls": [{"id": "a", "input_len": 1, "after": "b"}]}"#,
            r#""after" must be an array of call ids"#,
        ),
        (r#"{"calls": [3]}"#, "call 0 (from 0) must be a JSON object"),
        ("[1, 2]", "expected a JSON object"),
        (r#"{"calls": [{"id": "a""#, "not valid JSON"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (line, says) in cases {
        let path = file(dir.path(), &format!("{GOOD}\n\n{line}\n"));
        let e = build(&path, &words(), 7, 3, 1).unwrap_err().to_string();
        let short = &line[..line.len().min(80)];
        assert!(!e.contains('\n'), "{short}: {e}");
        assert!(e.len() < 400, "{short}: {e}");
        assert!(e.contains("jobs.jsonl line 3: "), "{short}: {e}");
        assert!(e.contains(says), "{short}: wanted {says:?} in {e}");
    }
}

/// Only the lines the run's jobs need are read: a bad line after them is never parsed; a
/// file of fewer jobs is used again from the start (as `jsonl` is), fresh random text each
/// time; an empty file is refused.
#[test]
fn only_the_jobs_a_run_needs_are_read_and_a_short_file_is_used_again() {
    let p = built(&format!("{GOOD}\nnot json\n"), 1).unwrap();
    assert_eq!(p.len(), 2);
    let p = built(GOOD, 3).unwrap();
    assert_eq!(p.len(), 6);
    assert_eq!(p[4].text, "Plan a trip.");
    assert_eq!(p[5].call, Some(place(1, 2, &[0], &[0], 250.0)));
    assert_ne!(p[1].text, p[3].text, "a random call's text is drawn again");
    let e = built("\n  \n", 2).unwrap_err().to_string();
    assert!(e.contains("is empty"), "{e}");
}

/// A line past the limit is refused before it is parsed (and without holding more of it).
#[test]
fn a_line_past_its_byte_limit_is_refused_by_number() {
    let long = format!(
        r#"{{"calls": [{{"id": "a", "prompt": "{}"}}]}}"#,
        "x".repeat(MAX_LINE_BYTES)
    );
    let e = built(&format!("{GOOD}\n{long}\n"), 2)
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 2: longer than 16777216 bytes"), "{e}");
}

/// The jobs' tokens are bounded before any text is made: 200 calls of ten million tokens.
#[test]
fn the_jobs_tokens_are_bounded_before_text_is_made() {
    let calls: Vec<String> = (0..200)
        .map(|i| format!(r#"{{"id": "c{i}", "input_len": 10000000}}"#))
        .collect();
    let line = format!(r#"{{"calls": [{}]}}"#, calls.join(","));
    let e = built(&line, 1).unwrap_err().to_string();
    assert!(
        e.contains("2000000000 prompt tokens, more than the 1000000000"),
        "{e}"
    );
    // Two jobs of a file of one: the file's job used again.
    let calls: Vec<String> = (0..60)
        .map(|i| format!(r#"{{"id": "c{i}", "input_len": 10000000}}"#))
        .collect();
    let line = format!(r#"{{"calls": [{}]}}"#, calls.join(","));
    let e = built(&line, 2).unwrap_err().to_string();
    assert!(e.contains("its 1 jobs used again"), "{e}");
}

/// Calls out of order in the file are put in an order where each comes after those it waits
/// for, the file's own order kept among the ready ones, and every `after` and `splice`
/// renumbered (a splice keeps its order).
#[test]
fn calls_are_put_in_topological_order_and_renumbered() {
    let line = r#"{"calls": [
        {"id": "join", "after": ["left", "right"], "splice": ["right", "root", "left"], "prompt": "join"},
        {"id": "right", "after": ["root"], "gap_ms": 5, "prompt": "right"},
        {"id": "root", "prompt": "root"},
        {"id": "left", "after": ["root"], "prompt": "left"},
        {"id": "alone", "prompt": "alone"}
    ]}"#
    .replace('\n', " ");
    let p = built(&line, 1).unwrap();
    let texts: Vec<&str> = p.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(texts, ["root", "right", "left", "join", "alone"]);
    assert_eq!(p[0].call, Some(place(0, 5, &[], &[], 0.0)));
    assert_eq!(p[1].call, Some(place(1, 5, &[0], &[], 5.0)));
    assert_eq!(p[2].call, Some(place(2, 5, &[0], &[], 0.0)));
    assert_eq!(p[3].call, Some(place(3, 5, &[2, 1], &[1, 0, 2], 0.0)));
    assert_eq!(p[4].call, Some(place(4, 5, &[], &[], 0.0)));
    // A file already in such an order keeps it.
    let ordered = r#"{"calls": [{"id": "b", "prompt": "b"}, {"id": "a", "prompt": "a"}, {"id": "c", "after": ["a"], "prompt": "c"}]}"#;
    let p = built(ordered, 1).unwrap();
    let texts: Vec<&str> = p.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(texts, ["b", "a", "c"]);
    assert_eq!(p[2].call, Some(place(2, 3, &[1], &[], 0.0)));
}

/// Under a real tokenizer an `input_len` call's text is exactly that many tokens and a
/// prompt's length is the tokenizer's count of it.
#[test]
fn input_len_is_exact_under_a_tokenizer() {
    let tok = crate::tokenizer::testutil::cl100k();
    let dir = tempfile::tempdir().unwrap();
    let line = r#"{"calls": [{"id": "p", "prompt": "Plan a trip to Zürich, then rest."}, {"id": "a", "after": ["p"], "input_len": 37, "splice": ["p"]}, {"id": "b", "after": ["p"], "input_len": 1}]}"#;
    let d = crate::config::Dataset::Graph {
        path: file(dir.path(), line),
        output_len: Some(9),
    };
    let p = super::super::build(&d, &tok, 2, 3).unwrap();
    assert_eq!(p.len(), 6);
    for q in &p {
        assert_eq!(tok.count(&q.text) as u64, q.input_len, "{:?}", q.text);
        assert_eq!(q.output_len, 9);
    }
    assert_eq!(p[1].input_len, 37);
    assert_eq!(p[2].input_len, 1);
    assert_eq!(p[3].text, "Plan a trip to Zürich, then rest.");
}
