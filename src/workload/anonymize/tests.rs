//! The anonymizer's promises, checked on files written here: no word of the input survives,
//! shared leading blocks keep shared leading ids, lengths and sessions are kept, and a bad
//! line is refused naming the file and the line, leaving no output behind.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn lines(p: &Path) -> Vec<Value> {
    (std::fs::read_to_string(p).unwrap().lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ids(v: &Value) -> Vec<u64> {
    (v["hash_ids"].as_array().unwrap().iter())
        .map(|i| i.as_u64().unwrap())
        .collect()
}

/// Distinctive words, none of them a number or a JSON key.
const WORDS: [&str; 8] = [
    "zebrafinch",
    "quokkamoon",
    "xylophonic",
    "marzipanda",
    "glockenspud",
    "wombatique",
    "fjordlike",
    "quixotree",
];

#[test]
fn no_input_word_survives_and_lengths_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let a = WORDS.join(" ");
    let b = format!("{} {}", WORDS[3], WORDS[7]);
    let body = format!(
        "{{\"prompt\": \"{a}\", \"output_len\": 7, \"timestamp\": 1500}}\n\n\
         {{\"messages\": [{{\"role\": \"user\", \"content\": \"{b}\"}}], \"timestamp\": 2500.5}}\n"
    );
    let input = write(dir.path(), "in.jsonl", &body);
    let out = dir.path().join("out.jsonl");
    let s = anonymize(&input, &out, &Tokens::Words, 3, false).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    for w in WORDS {
        assert!(!text.contains(w), "{w} in {text}");
    }
    let got = lines(&out);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0]["input_length"], 8);
    assert_eq!(got[0]["output_length"], 7);
    assert_eq!(got[0]["timestamp"], 1500);
    // 8 words in blocks of 3: the last, partial block counts.
    assert_eq!(ids(&got[0]).len(), 3);
    assert_eq!(got[1]["input_length"], 2);
    assert!(got[1].get("output_length").is_none());
    assert_eq!(got[1]["timestamp"], 2500.5);
    assert!(got[0].get("session_id").is_none());
    let want = Summary {
        lines: 2,
        requests: 2,
        sessions: 0,
        tokens: 10,
        blocks: 4,
        distinct: 4,
    };
    assert_eq!(s, want);
}

#[test]
fn prompts_sharing_leading_blocks_share_leading_ids_and_differ_after() {
    let dir = tempfile::tempdir().unwrap();
    let shared = WORDS[..4].join(" ");
    let body = format!(
        "{{\"prompt\": \"{shared} alpha beta gamma\"}}\n\
         {{\"prompt\": \"{shared} delta epsilon zeta\"}}\n\
         {{\"prompt\": \"alpha beta {shared}\"}}\n"
    );
    let input = write(dir.path(), "in.jsonl", &body);
    let out = dir.path().join("out.jsonl");
    anonymize(&input, &out, &Tokens::Words, 2, false).unwrap();
    let got = lines(&out);
    let (a, b, c) = (ids(&got[0]), ids(&got[1]), ids(&got[2]));
    assert_eq!(a, [0, 1, 2, 3], "numbered in order of first appearance");
    assert_eq!(b[..2], a[..2]);
    assert!(b[2..].iter().all(|i| !a.contains(i)), "{a:?} {b:?}");
    // The same words at another place are another prefix: other ids.
    assert!(c.iter().all(|i| !a.contains(i) && !b.contains(i)), "{c:?}");
    // The same file again: the same ids (they are counts, not keyed hashes).
    let again = dir.path().join("again.jsonl");
    anonymize(&input, &again, &Tokens::Words, 2, false).unwrap();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&again).unwrap()
    );
}

#[test]
fn conversations_and_named_sessions_are_numbered() {
    let dir = tempfile::tempdir().unwrap();
    let body = "{\"turns\": [\"one two\", {\"prompt\": \"three\", \"output_len\": 5}], \"output_len\": 9, \"timestamp\": 10}\n\
                {\"session_id\": \"alice@example.com\", \"prompt\": \"four\", \"timestamp\": 20}\n\
                {\"session_id\": \"alice@example.com\", \"prompt\": \"five\", \"timestamp\": 30}\n";
    let input = write(dir.path(), "in.jsonl", body);
    let out = dir.path().join("out.jsonl");
    let s = anonymize(&input, &out, &Tokens::Words, 4, false).unwrap();
    let got = lines(&out);
    assert_eq!(s.sessions, 2);
    let sessions: Vec<u64> = got
        .iter()
        .map(|l| l["session_id"].as_u64().unwrap())
        .collect();
    assert_eq!(sessions, [0, 0, 1, 1]);
    let outs: Vec<u64> = got
        .iter()
        .filter_map(|l| l["output_length"].as_u64())
        .collect();
    assert_eq!(outs, [9, 5]);
    assert_eq!(
        got[1]["timestamp"], 10,
        "a conversation's turns share its time"
    );
    assert!(!std::fs::read_to_string(&out).unwrap().contains("alice"));
}

#[test]
fn a_bad_line_is_refused_by_file_and_line_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("{\"prompt\": \"a\"}\nnot json\n", "line 2: not valid JSON"),
        ("{\"prompt\": 3}\n", "line 1: \"prompt\" must be a string"),
        (
            "{\"hash_ids\": [1, 2]}\n",
            "line 1: has no text to anonymize",
        ),
        (
            "{\"prompt\": \"a\", \"timestamp\": -1}\n",
            "line 1: \"timestamp\"",
        ),
        (
            "{\"prompt\": \"a\", \"output_len\": 0}\n",
            "line 1: \"output_len\"",
        ),
        ("{\"prompt\": \" \"}\n", "line 1: a prompt has no tokens"),
        (
            "{\"prompt\": \"a\", \"timestamp\": 0}\n{\"prompt\": \"a\", \"timestamp\": 6.1e8}\n",
            "line 2: timestamp",
        ),
        ("\n\n", "holds no prompt"),
    ];
    for (body, want) in cases {
        let input = write(dir.path(), "bad.jsonl", body);
        let out = dir.path().join("out.jsonl");
        let e = anonymize(&input, &out, &Tokens::Words, 4, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.jsonl") && e.contains(want), "{body:?}: {e}");
        assert!(!e.contains('\n'), "{e}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "{body:?}"
        );
    }
    let long = "x".repeat(MAX_LINE_BYTES + 1);
    let input = write(dir.path(), "bad.jsonl", &long);
    let e = anonymize(&input, &dir.path().join("o"), &Tokens::Words, 4, false).unwrap_err();
    assert!(e.to_string().contains("line 1: longer than"), "{e}");
}

#[test]
fn an_existing_output_and_a_bad_block_size_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "in.jsonl", "{\"prompt\": \"a b\"}\n");
    let out = write(dir.path(), "out.jsonl", "keep");
    let e = anonymize(&input, &out, &Tokens::Words, 4, false).unwrap_err();
    assert!(e.to_string().contains("--overwrite"), "{e}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep");
    anonymize(&input, &out, &Tokens::Words, 4, true).unwrap();
    assert_eq!(lines(&out)[0]["input_length"], 2);
    let e = anonymize(&input, &out, &Tokens::Words, 0, true).unwrap_err();
    assert!(e.to_string().contains("--trace-block-size 0"), "{e}");
    let e = anonymize(dir.path(), &out, &Tokens::Words, 4, true).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
}

#[test]
fn a_file_past_the_distinct_block_bound_is_refused() {
    let mut ids = blocks::BlockIds::new(1);
    assert_eq!(ids.ids(&[1, 2, 3], 3).unwrap(), [0, 1, 2]);
    assert_eq!(ids.ids(&[1, 2, 3], 3).unwrap(), [0, 1, 2]);
    assert_eq!(ids.ids(&[1, 2, 4], 3), Err(blocks::Full));
}
