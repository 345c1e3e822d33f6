use std::path::{Path, PathBuf};

use super::common::read_file;
use super::*;
use crate::config::Dataset;
use crate::tokenizer::testutil::{cl100k, real_gguf_tokenizer};

/// The tokenizers every exactness test runs under: cl100k_base and, unless skipped, the real
/// SmolLM2 GGUF.
fn tokenizers() -> Vec<Tokenizer> {
    let mut v = vec![cl100k()];
    v.extend(real_gguf_tokenizer());
    v
}

/// A long deterministic pseudo-English text: sentences, punctuation, digits, newlines,
/// paragraphs and a few non-ASCII words. About 1.3 tokens per word.
pub(crate) fn pseudo_book(words: usize) -> String {
    const W: &[&str] = &[
        "the",
        "of",
        "and",
        "to",
        "in",
        "a",
        "is",
        "was",
        "for",
        "on",
        "that",
        "with",
        "as",
        "by",
        "at",
        "from",
        "his",
        "her",
        "it",
        "an",
        "were",
        "which",
        "this",
        "river",
        "house",
        "winter",
        "letter",
        "captain",
        "morning",
        "garden",
        "silence",
        "promise",
        "journey",
        "window",
        "mountain",
        "station",
        "whisper",
        "evening",
        "kingdom",
        "lantern",
        "harbour",
        "merchant",
        "quietly",
        "suddenly",
        "never",
        "always",
        "beneath",
        "across",
        "although",
        "remembered",
        "wondered",
        "carried",
        "opened",
        "followed",
        "answered",
        "believed",
        "café",
        "naïve",
        "Zürich",
        "façade",
        "über",
        "déjà",
        "São",
        "東京",
        "Ελλάδα",
        "😀",
    ];
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move |m: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m as u64) as usize
    };
    let mut out = String::with_capacity(words * 7);
    let mut in_sentence = 0usize;
    for _ in 0..words {
        let r = next(100);
        let w = if r < 4 {
            format!("{}", next(100_000))
        } else if r < 5 {
            format!("{}.{}", next(100), next(100))
        } else {
            W[next(W.len())].to_string()
        };
        if in_sentence == 0 {
            let mut c = w.chars();
            if let Some(f) = c.next() {
                out.extend(f.to_uppercase());
                out.push_str(c.as_str());
            }
        } else {
            out.push_str(&w);
        }
        in_sentence += 1;
        let end = in_sentence > 4 && next(12) == 0;
        if end {
            out.push_str([".", ".", ".", "!", "?", "...", "\"", ";"][next(8)]);
            in_sentence = 0;
            match next(10) {
                0 => out.push_str("\n\n"),
                1 => out.push('\n'),
                _ => out.push(' '),
            }
        } else {
            match next(30) {
                0 | 1 => out.push_str(", "),
                2 => out.push_str(" — "),
                3 => out.push_str(": "),
                4 => out.push_str(" ("),
                _ => out.push(' '),
            }
        }
    }
    out.push_str(".\n");
    out
}

fn write_book(dir: &Path, words: usize) -> PathBuf {
    let p = dir.join("book.txt");
    std::fs::write(&p, pseudo_book(words)).unwrap();
    p
}

fn assert_exact(tok: &Tokenizer, prompts: &[Prompt], target: u64) {
    for (i, p) in prompts.iter().enumerate() {
        assert_eq!(p.input_len, target, "{} prompt {i}", tok.name());
        assert_eq!(
            tok.count(&p.text) as u64,
            p.input_len,
            "{} prompt {i} does not re-tokenize to its input_len",
            tok.name()
        );
    }
}

#[test]
fn random_prompts_are_exact_at_80_10k_and_128k() {
    for tok in tokenizers() {
        for (target, n) in [(80u64, 64usize), (10_000, 4), (128_000, 1)] {
            let spec = Dataset::Random {
                input_len: target,
                output_len: Some(128),
                range_ratio: 0.0,
            };
            let prompts = build(&spec, &tok, n, 7).unwrap();
            assert_eq!(prompts.len(), n);
            assert_exact(&tok, &prompts, target);
            assert!(prompts.iter().all(|p| p.output_len == 128));
        }
    }
}

#[test]
fn book_prompts_are_exact_at_80_10k_and_128k() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_book(dir.path(), 140_000);
    for tok in tokenizers() {
        for (target, n) in [(80u64, 64usize), (10_000, 4), (128_000, 1)] {
            let spec = Dataset::Book {
                path: path.clone(),
                input_len: target,
                output_len: Some(64),
                range_ratio: 0.0,
            };
            let prompts = build(&spec, &tok, n, 11).unwrap();
            assert_eq!(prompts.len(), n);
            assert_exact(&tok, &prompts, target);
            for w in prompts.windows(2) {
                assert_ne!(
                    w[0].text, w[1].text,
                    "consecutive prompts start at the same offset"
                );
            }
        }
    }
}

#[test]
fn book_prompts_wrap_around_a_short_book() {
    let tok = cl100k();
    let dir = tempfile::tempdir().unwrap();
    let path = write_book(dir.path(), 400);
    let book_tokens = tok.count(&std::fs::read_to_string(&path).unwrap()) as u64;
    let target = book_tokens - 3;
    let spec = Dataset::Book {
        path,
        input_len: target,
        output_len: Some(8),
        range_ratio: 0.0,
    };
    let prompts = build(&spec, &tok, 20, 3).unwrap();
    assert_exact(&tok, &prompts, target);
}

#[test]
fn range_ratio_bounds_hold_and_lengths_vary() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_book(dir.path(), 3_000);
    let tok = cl100k();
    for spec in [
        Dataset::Random {
            input_len: 101,
            output_len: Some(40),
            range_ratio: 0.5,
        },
        Dataset::Book {
            path: path.clone(),
            input_len: 101,
            output_len: Some(40),
            range_ratio: 0.5,
        },
    ] {
        let prompts = build(&spec, &tok, 300, 5).unwrap();
        let (mut lo, mut hi) = (u64::MAX, 0);
        for p in &prompts {
            assert!((50..=152).contains(&p.input_len), "{}", p.input_len);
            assert!((20..=60).contains(&p.output_len), "{}", p.output_len);
            assert_eq!(tok.count(&p.text) as u64, p.input_len);
            lo = lo.min(p.input_len);
            hi = hi.max(p.input_len);
        }
        assert!(lo < 60 && hi > 140, "lengths do not spread: {lo}..{hi}");
    }
    for bad in [1.0, -0.1, f64::NAN] {
        let spec = Dataset::Random {
            input_len: 10,
            output_len: Some(10),
            range_ratio: bad,
        };
        let err = build(&spec, &tok, 1, 0).unwrap_err().to_string();
        assert!(err.contains("range ratio"), "{err}");
    }
}

#[test]
fn builds_are_reproducible_by_seed() {
    let tok = cl100k();
    let spec = Dataset::Random {
        input_len: 50,
        output_len: Some(10),
        range_ratio: 0.2,
    };
    let a = build(&spec, &tok, 8, 42).unwrap();
    let b = build(&spec, &tok, 8, 42).unwrap();
    let c = build(&spec, &tok, 8, 43).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn book_errors_name_the_file() {
    let tok = cl100k();
    let dir = tempfile::tempdir().unwrap();
    let spec = |path: PathBuf, input_len| Dataset::Book {
        path,
        input_len,
        output_len: Some(1),
        range_ratio: 0.0,
    };
    let missing = dir.path().join("missing.txt");
    let err = build(&spec(missing, 10), &tok, 1, 0)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot read") && err.contains("missing.txt"),
        "{err}"
    );

    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, " \n").unwrap();
    let err = build(&spec(empty, 10), &tok, 1, 0).unwrap_err().to_string();
    assert!(
        err.contains("empty.txt") && err.contains("is empty"),
        "{err}"
    );

    let short = dir.path().join("short.txt");
    std::fs::write(&short, "Only a few words here.").unwrap();
    let err = build(&spec(short, 1000), &tok, 1, 0)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("short.txt") && err.contains("fewer than the 1000"),
        "{err}"
    );
    assert!(!err.contains('\n'));
}

#[test]
fn prefix_prompts_share_their_prefix_verbatim_and_are_exact() {
    for tok in tokenizers() {
        let spec = Dataset::Prefix {
            prefix_len: 50,
            input_len: 30,
            output_len: Some(16),
            num_prefixes: 2,
        };
        let prompts = build(&spec, &tok, 6, 9).unwrap();
        assert_exact(&tok, &prompts, 80);
        let common = |a: &str, b: &str| {
            let n = a
                .char_indices()
                .zip(b.chars())
                .take_while(|((_, x), y)| x == y)
                .last()
                .map(|((i, x), _)| i + x.len_utf8())
                .unwrap_or(0);
            // Cut back to the space where the suffixes begin.
            a[..n]
                .rfind(' ')
                .map(|i| a[..i].to_string())
                .unwrap_or_default()
        };
        // Prompts 0, 2, 4 share prefix 0; 1, 3, 5 share prefix 1.
        for (a, b) in [(0, 2), (2, 4), (1, 3), (3, 5)] {
            let shared = common(&prompts[a].text, &prompts[b].text);
            assert!(
                tok.count(&shared) >= 49,
                "{}: {a} and {b} share {shared:?}",
                tok.name()
            );
        }
        assert!(tok.count(&common(&prompts[0].text, &prompts[1].text)) < 10);
        let suffixes: std::collections::HashSet<_> = prompts.iter().map(|p| &p.text).collect();
        assert_eq!(suffixes.len(), 6);
    }
}

const SHAREGPT: &str = r#"[
  {"id": "a", "conversations": [
    {"from": "human", "value": "Explain how a rainbow forms, in two sentences please."},
    {"from": "gpt", "value": "Sunlight enters raindrops, bends, reflects inside and bends again on the way out. Each colour bends by a different amount, so they fan out into a bow."}]},
  {"id": "one-turn", "conversations": [
    {"from": "human", "value": "This conversation has a single turn and must be skipped."}]},
  {"id": "short-prompt", "conversations": [
    {"from": "human", "value": "Hi"},
    {"from": "gpt", "value": "Hello! How can I help you today with anything at all?"}]},
  {"id": "short-answer", "conversations": [
    {"from": "human", "value": "Say yes or no: is water wet in the usual sense?"},
    {"from": "gpt", "value": "Yes."}]},
  {"id": "system-first", "conversations": [
    {"from": "system", "value": "You are terse."},
    {"from": "human", "value": "Name three primary colours of light, separated by commas."},
    {"from": "gpt", "value": "Red, green and blue are the primary colours of light."}]},
  {"id": "no-conversations"}
]"#;

#[test]
fn sharegpt_filters_like_vllm_and_oversamples() {
    let tok = cl100k();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sharegpt.json");
    std::fs::write(&path, SHAREGPT).unwrap();

    let prompts = build(
        &Dataset::ShareGpt {
            path: path.clone(),
            output_len: None,
            multi_turn: false,
        },
        &tok,
        5,
        1,
    )
    .unwrap();
    assert_eq!(prompts.len(), 5);
    let mut distinct: Vec<&str> = prompts.iter().map(|p| p.text.as_str()).collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 2, "{distinct:?}");
    assert!(distinct
        .iter()
        .any(|t| t.starts_with("Explain how a rainbow")));
    assert!(distinct.iter().any(|t| t.starts_with("Name three primary")));
    for p in &prompts {
        assert_eq!(p.input_len, tok.count(&p.text) as u64);
        assert!(p.output_len >= SHAREGPT_MIN_LEN);
    }

    // A fixed output length lifts the minimum-answer check ("Yes." now passes).
    let fixed = build(
        &Dataset::ShareGpt {
            path: path.clone(),
            output_len: Some(100),
            multi_turn: false,
        },
        &tok,
        10,
        1,
    )
    .unwrap();
    assert!(fixed.iter().all(|p| p.output_len == 100));
    assert!(fixed.iter().any(|p| p.text.starts_with("Say yes or no")));

    std::fs::write(&path, "{\"not\": \"an array\"}").unwrap();
    let err = build(
        &Dataset::ShareGpt {
            path,
            output_len: None,
            multi_turn: false,
        },
        &tok,
        1,
        0,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("sharegpt.json") && err.contains("JSON array"),
        "{err}"
    );
}

#[test]
fn jsonl_prompts_messages_and_line_errors() {
    let tok = cl100k();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prompts.jsonl");
    std::fs::write(
        &path,
        concat!(
            "{\"prompt\": \"Write a haiku about tokenizers.\"}\n",
            "\n",
            "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, ",
            "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Hi there\"}]}], ",
            "\"output_len\": 7}\n",
        ),
    )
    .unwrap();
    let prompts = build(
        &Dataset::Jsonl {
            path: path.clone(),
            output_len: Some(50),
        },
        &tok,
        3,
        0,
    )
    .unwrap();
    assert_eq!(prompts.len(), 3);
    assert_eq!(prompts[0].text, "Write a haiku about tokenizers.");
    assert_eq!(prompts[0].output_len, 50);
    assert!(prompts[0].messages.is_none());
    assert_eq!(prompts[1].text, "Be brief.\nHi there");
    assert_eq!(prompts[1].output_len, 7);
    assert!(prompts[1].messages.as_ref().is_some_and(|m| m.is_array()));
    assert_eq!(prompts[2], prompts[0]);
    for p in &prompts {
        assert_eq!(p.input_len, tok.count(&p.text) as u64);
    }

    std::fs::write(&path, "{\"prompt\": \"ok\"}\n{\"prompt\": 3}\n").unwrap();
    let spec = Dataset::Jsonl {
        path: path.clone(),
        output_len: Some(1),
    };
    let err = build(&spec, &tok, 2, 0).unwrap_err().to_string();
    assert!(
        err.contains("prompts.jsonl line 2") && err.contains("string"),
        "{err}"
    );
    std::fs::write(&path, "{\"prompt\": \"ok\"}\n\n{oops\n").unwrap();
    let err = build(&spec, &tok, 2, 0).unwrap_err().to_string();
    assert!(
        err.contains("line 3") && err.contains("not valid JSON"),
        "{err}"
    );
    std::fs::write(&path, "{\"text\": \"no prompt key\"}\n").unwrap();
    let err = build(&spec, &tok, 1, 0).unwrap_err().to_string();
    assert!(
        err.contains("line 1") && err.contains("\"prompt\""),
        "{err}"
    );
    // A conversation line: its turns, numbered, each a counted prompt; bad turns are named.
    std::fs::write(
        &path,
        "{\"turns\": [\"a b\", {\"prompt\": \"c\", \"output_len\": 2}]}\n",
    )
    .unwrap();
    let talk = build(&spec, &tok, 2, 0).unwrap();
    let turns: Vec<_> = talk.iter().map(|p| (p.turn, p.output_len)).collect();
    assert_eq!(
        turns,
        [(Some(0), 1), (Some(1), 2), (Some(0), 1), (Some(1), 2)]
    );
    assert_eq!(talk[0].input_len, tok.count("a b") as u64);
    for (line, why) in [
        ("{\"turns\": []}", "non-empty"),
        ("{\"turns\": [3]}", "turn 0 must be"),
        (
            "{\"turns\": [{\"prompt\": \"x\", \"output_len\": 0}]}",
            "turn 0: output_len",
        ),
    ] {
        std::fs::write(&path, line).unwrap();
        let err = build(&spec, &tok, 1, 0).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains(why), "{err}");
    }
}

#[test]
fn tiny_and_varied_lengths_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_book(dir.path(), 20_000);
    for tok in tokenizers() {
        for (input_len, r) in [(100u64, 0.99), (3, 0.9), (1, 0.0)] {
            for spec in [
                Dataset::Random {
                    input_len,
                    output_len: Some(1),
                    range_ratio: r,
                },
                Dataset::Book {
                    path: path.clone(),
                    input_len,
                    output_len: Some(1),
                    range_ratio: r,
                },
            ] {
                for p in build(&spec, &tok, 400, 21).unwrap() {
                    assert_eq!(
                        tok.count(&p.text) as u64,
                        p.input_len,
                        "{}: {spec:?}",
                        tok.name()
                    );
                    assert!(!p.text.contains('\u{FFFD}'));
                }
            }
        }
    }
}

#[test]
fn absurd_lengths_are_rejected_not_allocated() {
    let tok = cl100k();
    let spec = Dataset::Random {
        input_len: 1 << 40,
        output_len: Some(10),
        range_ratio: 0.0,
    };
    let err = build(&spec, &tok, 1, 0).unwrap_err().to_string();
    assert!(err.contains("above the limit"), "{err}");
    let spec = Dataset::Prefix {
        prefix_len: 10,
        input_len: 10,
        output_len: Some(10),
        num_prefixes: 0,
    };
    let err = build(&spec, &tok, 1, 0).unwrap_err().to_string();
    assert!(err.contains("number of prefixes"), "{err}");
}

/// A dataset file that is not text, and a tokenizer file that is not a tokenizer,
/// are one line naming the file and what is wrong, never a panic.
#[test]
fn files_that_are_not_what_they_claim_fail_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("book.txt");
    std::fs::write(&binary, b"Once upon \xff\xfe a time").unwrap();
    let e = read_file(&binary).unwrap_err().to_string();
    assert!(
        e.contains("book.txt") && e.contains("not UTF-8") && e.contains("offset 10"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    let fake = dir.path().join("tokenizer.json");
    std::fs::write(&fake, br#"{"model": {"type": "nothing we know"}}"#).unwrap();
    let e = Tokenizer::load(fake.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("tokenizer.json"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

/// The committed Mooncake-style trace under each tokenizer: every prompt is exactly
/// its `input_length`; lines whose leading `hash_ids` agree have identical leading tokens for
/// every shared 512-token block (and differ right after, where their ids differ); the send
/// times are the timestamps less the first; the designed reuse counts the shared blocks.
#[test]
fn trace_blocks_share_exact_token_prefixes() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mooncake_trace.jsonl");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids = |i: usize| -> Vec<u64> {
        lines[i]["hash_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    let spec = Dataset::Trace {
        path: path.clone(),
        block_size: 512,
        speedup: 1.0,
        output_len: Some(4),
    };
    for tok in tokenizers() {
        let prompts = build(&spec, &tok, lines.len(), 1).unwrap();
        assert_eq!(prompts.len(), lines.len());
        let t0 = lines[0]["timestamp"].as_f64().unwrap();
        let mut pairs = 0;
        for (i, p) in prompts.iter().enumerate() {
            assert_eq!(p.input_len, lines[i]["input_length"].as_u64().unwrap());
            assert_eq!(tok.count(&p.text) as u64, p.input_len, "{}", tok.name());
            assert_eq!(p.at_ms, Some(lines[i]["timestamp"].as_f64().unwrap() - t0));
        }
        // Pairs of lines sharing their first k ids, each with more of its own after them.
        for i in 0..60 {
            for j in i + 1..60 {
                let (a, b) = (ids(i), ids(j));
                let k = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
                if k == 0 || k == a.len() || k == b.len() {
                    continue;
                }
                let (ta, tb) = (tok.encode(&prompts[i].text), tok.encode(&prompts[j].text));
                assert_eq!(ta[..k * 512], tb[..k * 512], "{} lines {i} {j}", tok.name());
                let after = k * 512..k * 512 + 8;
                assert_ne!(
                    ta.get(after.clone()),
                    tb.get(after),
                    "{} lines {i} {j}",
                    tok.name()
                );
                // The later line repeats the k whole blocks the earlier one sent.
                assert!(prompts[j].designed_cached.unwrap() >= k as u64 * 512);
                pairs += 1;
            }
        }
        assert!(pairs > 5, "{pairs} pairs share a prefix");
        assert!(prompts
            .iter()
            .all(|p| p.designed_cached.unwrap() <= p.input_len));
    }
}

/// A trace line that cannot be replayed is one error naming the file and the line.
#[test]
fn bad_trace_lines_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let tok = cl100k();
    for (body, says) in [
        (
            "{\"timestamp\": 0, \"input_length\": 600, \"hash_ids\": [1]}\n",
            "does not fit 1 hash_ids",
        ),
        ("{\"timestamp\": 0}\n", "needs \"hash_ids\""),
        ("not json\n", "not a trace line"),
        (
            "{\"timestamp\": -5, \"input_length\": 3}\n",
            "is not a time in ms",
        ),
    ] {
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            format!("{{\"timestamp\": 1, \"input_length\": 4}}\n{body}"),
        )
        .unwrap();
        let spec = Dataset::Trace {
            path: path.clone(),
            block_size: 512,
            speedup: 1.0,
            output_len: Some(4),
        };
        let e = build(&spec, &tok, 10, 0).unwrap_err().to_string();
        assert!(e.contains("t.jsonl line 2") && e.contains(says), "{e}");
    }
}

/// A dataset that needs the model's tokenizer is never built in words (without
/// one, a book, ShareGPT, jsonl or prefix workload came back as random words).
#[test]
fn a_dataset_that_needs_a_tokenizer_is_not_built_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_book(dir.path(), 2_000);
    let book = Dataset::Book {
        path,
        input_len: 16,
        output_len: None,
        range_ratio: 0.0,
    };
    let prefix = Dataset::Prefix {
        prefix_len: 4,
        num_prefixes: 2,
        input_len: 8,
        output_len: Some(2),
    };
    for dataset in [book, prefix] {
        let name = dataset.name();
        let spec = crate::config::WorkloadSpec {
            dataset,
            tokenizer: None,
        };
        let e = crate::workload::build_requests(&spec, None, 2, 0, 1, false).unwrap_err();
        assert!(
            matches!(e, DatasetError::NeedsTokenizer(n) if n == name),
            "{e}"
        );
    }
    let random = crate::config::WorkloadSpec::random(6, 2);
    let words = crate::workload::build_requests(&random, None, 2, 0, 1, false).unwrap();
    assert_eq!(words[1].prompt.split(' ').count(), 6);
}

/// A bad line of a jsonl file or a trace is a typed error that names its line.
#[test]
fn a_bad_line_is_a_typed_error_naming_it() {
    let tok = cl100k();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    std::fs::write(&path, "{\"prompt\": \"ok\"}\n{\"prompt\": 3}\n").unwrap();
    let jsonl = Dataset::Jsonl {
        path: path.clone(),
        output_len: None,
    };
    // Two prompts: a jsonl file is read only as far as the run uses it.
    let e = build(&jsonl, &tok, 2, 0).unwrap_err();
    assert!(
        matches!(
            e,
            DatasetError::BadJsonlLine {
                line: 2,
                reason: JsonlLineError::PromptNotText,
                ..
            }
        ),
        "{e:?}"
    );
    std::fs::write(
        &path,
        "{\"timestamp\": 0, \"input_length\": 4}\n{\"timestamp\": -1}\n",
    )
    .unwrap();
    let trace = Dataset::Trace {
        path,
        output_len: None,
        block_size: 16,
        speedup: 1.0,
    };
    let e = build(&trace, &tok, 1, 0).unwrap_err();
    assert!(
        matches!(
            e,
            DatasetError::BadTraceLine {
                line: 2,
                reason: TraceLineError::BadTimestamp(t),
                ..
            } if t == -1.0
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .ends_with("line 2: timestamp -1 is not a time in ms"),
        "{e}"
    );
}
