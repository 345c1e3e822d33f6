//! Traces people can share, with the binary as a user runs it: `trace anonymize` keeps no
//! word of its input, `trace analyze` of what it wrote gives the input's lengths back, the
//! built-in exact simulator replays it as `--dataset-name trace` with the same prompt
//! lengths, and bad files are refused in one line naming the file and the line (exit 2).

use std::path::Path;

use serde_json::Value;

use crate::common;

use common::{path_str, read_records, run_fails, run_ok};

/// Distinctive words: none is a JSON key, a number or a word servebench prints.
const WORDS: [&str; 6] = [
    "zebrafinch",
    "quokkamoon",
    "xylophonic",
    "marzipanda",
    "glockenspud",
    "wombatique",
];

/// A jsonl file of four prompts (two sharing their first eight words), a conversation of two
/// turns and a chat line; their word counts and output lengths, in the order written.
fn input(dir: &Path) -> (std::path::PathBuf, Vec<u64>, Vec<u64>) {
    let shared = [WORDS; 2].concat().join(" ");
    let lines = [
        format!("{{\"prompt\": \"{shared} alpha\", \"output_len\": 3, \"timestamp\": 0}}"),
        format!("{{\"prompt\": \"{shared} beta gamma\", \"output_len\": 4, \"timestamp\": 40}}"),
        format!(
            "{{\"turns\": [\"{} {}\", {{\"prompt\": \"{}\", \"output_len\": 6}}], \"output_len\": 5, \"timestamp\": 80}}",
            WORDS[0], WORDS[1], WORDS[2]
        ),
        format!(
            "{{\"messages\": [{{\"role\": \"user\", \"content\": \"{} {} {}\"}}], \"output_len\": 2, \"timestamp\": 120}}",
            WORDS[3], WORDS[4], WORDS[5]
        ),
    ];
    let p = dir.join("prompts.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    (p, vec![13, 14, 2, 1, 3], vec![3, 4, 5, 6, 2])
}

fn anonymized(dir: &Path) -> (std::path::PathBuf, Vec<u64>, Vec<u64>) {
    let (input, ins, outs) = input(dir);
    let out = dir.join("shared.jsonl");
    let (_, err) = run_ok(&[
        "trace",
        "anonymize",
        path_str(&input),
        path_str(&out),
        "--trace-block-size",
        "4",
    ]);
    assert!(err.contains("5 requests from 4 lines, 1 sessions"), "{err}");
    (out, ins, outs)
}

#[test]
fn an_anonymized_trace_keeps_no_word_and_shares_its_prefixes() {
    let dir = tempfile::tempdir().unwrap();
    let (out, ins, outs) = anonymized(dir.path());
    let text = std::fs::read_to_string(&out).unwrap();
    for w in WORDS.iter().chain(&["alpha", "beta", "gamma", "user"]) {
        assert!(!text.contains(w), "{w} survived: {text}");
    }
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lens: Vec<u64> = lines
        .iter()
        .map(|l| l["input_length"].as_u64().unwrap())
        .collect();
    assert_eq!(lens, ins);
    let o: Vec<u64> = lines
        .iter()
        .map(|l| l["output_length"].as_u64().unwrap())
        .collect();
    assert_eq!(o, outs);
    let ids = |i: usize| -> Vec<u64> {
        (lines[i]["hash_ids"].as_array().unwrap().iter())
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    // 13 and 14 words in blocks of 4: 4 blocks each, the first 3 (12 shared words) shared.
    assert_eq!((ids(0).len(), ids(1).len()), (4, 4));
    assert_eq!(ids(0)[..3], ids(1)[..3]);
    assert_ne!(ids(0)[3], ids(1)[3]);
    let sessions: Vec<Option<u64>> = lines.iter().map(|l| l["session_id"].as_u64()).collect();
    assert_eq!(sessions, [None, None, Some(0), Some(0), None]);
}

#[test]
fn trace_analyze_of_an_anonymized_trace_gives_the_input_s_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let (out, ins, outs) = anonymized(dir.path());
    let json = run_ok(&[
        "trace",
        "analyze",
        path_str(&out),
        "--trace-block-size",
        "4",
        "--cache-blocks",
        "2,100",
        "--format",
        "json",
    ])
    .0;
    let a: Value = serde_json::from_str(&json).unwrap();
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len() as f64;
    assert_eq!(a["requests"], 5);
    assert_eq!(a["input"]["count"], 5);
    assert_eq!(a["input"]["mean"].as_f64().unwrap(), mean(&ins));
    assert_eq!(a["input"]["max"].as_f64().unwrap(), 14.0);
    assert_eq!(a["output"]["mean"].as_f64().unwrap(), mean(&outs));
    assert_eq!(a["sessions"]["count"], 1);
    assert_eq!(a["sessions"]["turns"]["max"].as_f64().unwrap(), 2.0);
    // Blocks: 4 + 4 + 1 + 1 + 1 = 11, of which 3 were sent before; the unbounded cache hits
    // the second prompt's 12 shared words of 33 tokens with blocks.
    assert_eq!(a["reuse"]["blocks"], 11);
    assert_eq!(a["reuse"]["distinct"], 8);
    assert_eq!(
        a["reuse"]["reused_token_share"].as_f64().unwrap(),
        12.0 / 33.0
    );
    assert_eq!(a["cache"][1]["hit_tokens"], 12);
    let text = run_ok(&[
        "trace",
        "analyze",
        path_str(&out),
        "--trace-block-size",
        "4",
    ])
    .0;
    assert!(
        text.contains("Trace analysis") && text.contains("LRU prefix cache"),
        "{text}"
    );
}

#[test]
fn the_simulator_replays_an_anonymized_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (out, ins, _) = anonymized(dir.path());
    let results = dir.path().join("results");
    run_ok(&[
        "run",
        "--sim-preset",
        "exact",
        "--dataset-name",
        "trace",
        "--dataset-path",
        path_str(&out),
        "--trace-block-size",
        "4",
        "--num-prompts",
        "5",
        "--result-dir",
        path_str(&results),
        "--result-filename",
        "replay.json",
        "--quiet",
    ]);
    let mut rs = read_records(&results.join("replay.records.jsonl"));
    rs.retain(|r| !r.warmup);
    assert_eq!(rs.len(), 5);
    let mut got: Vec<u64> = rs.iter().filter_map(|r| r.prompt_tokens).collect();
    got.sort_unstable();
    let mut want = ins.clone();
    want.sort_unstable();
    // The conversation's second turn carries its history: at least its own word.
    assert_eq!(got.len(), 5);
    assert!(
        got.iter().sum::<u64>() >= want.iter().sum::<u64>(),
        "{got:?} {want:?}"
    );
    for n in [13, 14, 2, 3] {
        assert!(got.contains(&n), "{got:?}");
    }
}

#[test]
fn bad_trace_files_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"prompt\": \"fine\"}\n{\"prompt\": 12}\n").unwrap();
    let out = dir.path().join("out.jsonl");
    let err = run_fails(&["trace", "anonymize", path_str(&bad), path_str(&out)]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.jsonl line 2: \"prompt\" must be a string"),
        "{err}"
    );
    assert!(!out.exists());
    std::fs::write(
        &bad,
        "{\"timestamp\": 0, \"input_length\": 1}\n{\"timestamp\": \"x\"}\n",
    )
    .unwrap();
    let err = run_fails(&["trace", "analyze", path_str(&bad)]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.jsonl line 2: not a trace line"), "{err}");
    let err = run_fails(&["trace", "analyze", path_str(&bad), "--format", "csv"]);
    assert!(
        err.contains("a trace analysis prints as text or json"),
        "{err}"
    );
    let err = run_fails(&["trace", "analyze", path_str(&bad), "--window-s", "0"]);
    assert!(err.contains("--window-s 0"), "{err}");
}
