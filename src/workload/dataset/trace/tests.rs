//! Tests of the trace reader's limits: every field bounded before the work it asks
//! for, and a fuzz property over random lines.

use super::*;

use proptest::prelude::*;

/// The simulator's words: one token a word.
fn words() -> Vocab<'static> {
    Vocab {
        draw: &|rng| rand::RngExt::random_range(rng, 0..50u32),
        render: &|units| units.iter().map(|u| format!(" w{u}")).collect(),
        count: &|text| text.split_whitespace().count(),
        name: "words".into(),
    }
}

fn read(body: &str, block: u64, n: usize) -> Result<Vec<Prompt>, DatasetError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    std::fs::write(&path, body).unwrap();
    build(&path, &words(), block, 4, n, 0)
}

#[test]
fn a_small_trace_cannot_ask_for_huge_prompts() {
    // 300 ids of 2^20 tokens: 314 million tokens from one short line (it ran out of memory).
    let ids: Vec<String> = (0..300).map(|i| i.to_string()).collect();
    let line = format!("{{\"timestamp\": 0, \"hash_ids\": [{}]}}\n", ids.join(","));
    assert!(line.len() < 1500);
    let e = read(&line, MAX_BLOCK, 10).unwrap_err().to_string();
    assert!(
        e.contains("t.jsonl line 1") && e.contains("10000000"),
        "{e}"
    );
    // Lines each within the prompt limit, but past the run's total: refused before building.
    let line = format!(
        "{{\"timestamp\": 0, \"hash_ids\": [{}]}}\n",
        ids[..9].join(",")
    );
    let e = read(&line.repeat(120), MAX_BLOCK, 1000)
        .unwrap_err()
        .to_string();
    assert!(e.contains("1000000000") && !e.contains('\n'), "{e}");
    // A block is drawn only as far as a prompt uses it: ten lines of one token of ten
    // different 2^20-token blocks build ten tokens.
    let body: String = (0..10)
        .map(|i| format!("{{\"timestamp\": {i}, \"hash_ids\": [{i}], \"input_length\": 1}}\n"))
        .collect();
    let p = read(&body, MAX_BLOCK, 10).unwrap();
    assert_eq!(p.iter().map(|p| p.input_len).sum::<u64>(), 10);
    // The block size itself.
    let e = read(&body, MAX_BLOCK + 1, 10).unwrap_err().to_string();
    assert!(e.contains("--trace-block-size"), "{e}");
}

#[test]
fn trace_fields_are_capped_like_their_flags_and_named_by_line() {
    for (line, says) in [
        (
            r#"{"timestamp": 5, "input_length": 4, "output_length": 1000000000000000000}"#,
            "output_length 1000000000000000000",
        ),
        (
            r#"{"timestamp": 5, "input_length": 1000000000000000000}"#,
            "input_length 1000000000000000000",
        ),
        (
            r#"{"timestamp": 5, "hash_ids": [1], "input_length": 18446744073709551615}"#,
            "input_length",
        ),
        (
            r#"{"timestamp": 1e300, "input_length": 4}"#,
            "more than a week",
        ),
        (
            r#"{"timestamp": 604800001, "input_length": 4}"#,
            "more than a week",
        ),
    ] {
        let body = format!("{{\"timestamp\": 0, \"input_length\": 4}}\n{line}\n");
        let e = read(&body, 512, 10).unwrap_err().to_string();
        assert!(
            e.contains("t.jsonl line 2") && e.contains(says),
            "{says}: {e}"
        );
    }
    // A week exactly is a time span servebench waits.
    let body = "{\"timestamp\": 0, \"input_length\": 4}\n{\"timestamp\": 604800000, \"input_length\": 4, \"output_length\": 10000000}\n";
    let p = read(body, 512, 10).unwrap();
    assert_eq!(p[1].at_ms, Some(604_800_000.0));
    assert_eq!(p[1].output_len, 10_000_000);
}

/// One trace line: valid or not, with extreme numbers and long id lists.
fn line() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("1e300".to_string()),
        Just("NaN".to_string()),
        Just("18446744073709551616".to_string()),
        Just("10000000".to_string()),
        Just("10000001".to_string()),
        Just("604800000".to_string()),
        (0u64..5000).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|x| format!("{x:e}")),
    ];
    let ids = prop_oneof![
        Just(String::new()),
        (1usize..40).prop_map(|n| (0..n)
            .map(|i| (i % 7).to_string())
            .collect::<Vec<_>>()
            .join(",")),
        (1usize..1200).prop_map(|n| (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",")),
        Just("-3".to_string()),
        Just("1.5".to_string()),
    ];
    let field = prop_oneof![
        number.clone().prop_map(|v| format!("\"timestamp\": {v}")),
        number
            .clone()
            .prop_map(|v| format!("\"input_length\": {v}")),
        number.prop_map(|v| format!("\"output_length\": {v}")),
        ids.prop_map(|v| format!("\"hash_ids\": [{v}]")),
        Just("\"prompt\": \"a b c\"".to_string()),
        Just("\"session_id\": \"s\"".to_string()),
        Just("\"session_id\": 7".to_string()),
    ];
    prop_oneof![
        9 => prop::collection::vec(field, 0..5).prop_map(|f| format!("{{\"timestamp\": 1, {}}}", f.join(", ")).replace("1, }", "1}")),
        1 => Just("not json".to_string()),
        1 => "[ -~]{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Random trace lines never panic the reader: it returns one line naming what is wrong, or
    /// prompts within every limit.
    #[test]
    fn random_trace_lines_read_within_their_limits(
        lines in prop::collection::vec(line(), 1..8),
        block in prop_oneof![Just(1u64), Just(7), Just(512), Just(4096)],
    ) {
        match read(&(lines.join("\n") + "\n"), block, 100) {
            Ok(prompts) => {
                let total: u64 = prompts.iter().map(|p| p.input_len).sum();
                prop_assert!(total <= MAX_BUILT_TOKENS);
                for p in &prompts {
                    prop_assert!(p.input_len <= MAX_TOKENS && p.output_len <= MAX_TOKENS);
                    let at = p.at_ms.unwrap_or(0.0);
                    prop_assert!((0.0..=MAX_WAIT_S * 1e3).contains(&at), "{}", at);
                }
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n'), "{}", e),
        }
    }
}
